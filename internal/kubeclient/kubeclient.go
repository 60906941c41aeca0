// Package kubeclient is the one place that says how slotplane's components see the cluster:
// the scheme of the types they read and write, and the shape of their informer caches
// (only the pods of test beds, never every pod of the cluster).
package kubeclient

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
)

// Scheme holds the Kubernetes built-in types, slotplane's own, and the Spark and Flink
// operators' application types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// Both only register static types; an error here is a programming error.
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("register client-go types: %v", err))
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("register slotplane types: %v", err))
	}
	// The operators' application types, which slotplane creates and reads.
	if err := sparkv1beta2.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("register SparkApplication: %v", err))
	}
	if err := flinkv1beta1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("register FlinkDeployment: %v", err))
	}
	return s
}

// CacheOptions restricts a cache's pods to those carrying the test bed label.
func CacheOptions() cache.Options {
	slotPods, err := labels.NewRequirement(v1alpha1.TestBedLabel, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("slot pod selector: %v", err)) // a constant, valid label key
	}
	return cache.Options{
		Scheme: Scheme(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*slotPods)},
			// Only the allocation files: a cluster's ConfigMaps are many and large.
			&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", v1alpha1.QueuesConfigMap)},
		},
	}
}

// Live returns a client that reads the API server directly, as activities must: a decision
// taken on a cached, older picture could delete a ghost a preemption is about to remove.
func Live(cfg *rest.Config) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: Scheme()})
}
