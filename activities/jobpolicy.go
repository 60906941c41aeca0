package activities

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// ReadJobPolicy reads a namespace's policy on wrapped specs (ConfigMap
// v1alpha1.JobPolicyConfigMap). No ConfigMap means the default list. One that does not parse
// leaves the default list in force too, with Broken saying why (so a refusal names it):
// a broken widening must not widen anything. Only a failed read is an error.
func ReadJobPolicy(ctx context.Context, c client.Reader, namespace string) (operatorapp.JobPolicy, error) {
	var cm corev1.ConfigMap
	// From the API server's watch cache: a job's workflow reads the policy once or twice a
	// run (twice for a job with a wrapped spec), and most namespaces have none, which etcd
	// was asked each time to confirm. A policy written a few milliseconds ago may not count
	// yet, as it would not for a job created a moment before it.
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: v1alpha1.JobPolicyConfigMap}, &cm,
		&client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if apierrors.IsNotFound(err) {
		return operatorapp.JobPolicy{}, nil
	}
	if err != nil {
		return operatorapp.JobPolicy{}, fmt.Errorf("get configmap %s/%s: %w", namespace, v1alpha1.JobPolicyConfigMap, err)
	}
	p, err := operatorapp.ParseJobPolicy(cm.Data)
	if err != nil {
		return operatorapp.JobPolicy{Broken: err.Error()}, nil
	}
	return p, nil
}
