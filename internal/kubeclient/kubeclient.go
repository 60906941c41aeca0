// Package kubeclient is the one place that says how slotplane's components see the cluster:
// the scheme of the types they read and write, the shape of their informer caches (only the
// pods of test beds, never every pod of the cluster), and how fast they may ask the API
// server.
package kubeclient

import (
	"errors"
	"flag"
	"fmt"
	"math"
	goruntime "runtime"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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

// The request rates of every slotplane process that talks to the API server: the worker,
// bridge, API and extender in a cluster (their -kube-qps and -kube-burst flags), and the same
// components on the local platform and in tests (localcluster's Config), so benchmarks run at
// the rates a cluster sees.
//
// client-go's own default, 5 requests/s with a burst of 10, is far too slow, and so was the
// 100/s (burst 200) slotplane had before: a 1,000-job Scheduling writes two requests per job
// at its start (its claim, and the job's InQueue status), and the long run measured its
// claims at exactly one batch of 100 a second, the first job running 47 s after the
// Scheduling was created. 500/s with a burst of 1,000 are the rates deploy/ gives the
// slot-scheduler (kube-scheduler's clientConnection), and half of what YuniKorn's shim
// takes by default. A shared API server is protected by its own API Priority and Fairness,
// which queues a busy client's requests by flow schema, not by each client throttling itself
// to a guess: the limit here only keeps a runaway loop from flooding it.
//
// client-go enforces the rate per REST client, and controller-runtime's client makes one per
// resource type: these bound each kind's requests of one client, not the process's total.
const (
	DefaultQPS   = 500
	DefaultBurst = 1000
)

// Rates are the requests per second a client may send to the API server, and the burst it
// may send at once above that rate.
type Rates struct {
	QPS   float64
	Burst int
}

// DefaultRates are DefaultQPS and DefaultBurst.
func DefaultRates() Rates { return Rates{QPS: DefaultQPS, Burst: DefaultBurst} }

// RateFlags registers -kube-qps and -kube-burst on fs, defaulting to DefaultRates, and
// returns where their values land. Check them with Validate (Config does).
func RateFlags(fs *flag.FlagSet) *Rates {
	r := DefaultRates()
	fs.Float64Var(&r.QPS, "kube-qps", r.QPS, "requests per second to the Kubernetes API server, per resource type (client-go's own default of 5 cannot claim a 1,000-job Scheduling in time)")
	fs.IntVar(&r.Burst, "kube-burst", r.Burst, "requests to the Kubernetes API server that may go out at once above -kube-qps")
	return &r
}

// Validate refuses rates client-go would not apply as written: a QPS of 0 means its default
// of 5, a negative one no limit at all, and a burst below 1 stalls every request.
func (r Rates) Validate() error {
	var errs []error
	if qps := float32(r.QPS); !(qps > 0) || math.IsInf(float64(qps), 0) {
		errs = append(errs, fmt.Errorf("-kube-qps must be a positive, finite number of requests per second, got %v", r.QPS))
	}
	if r.Burst <= 0 {
		errs = append(errs, fmt.Errorf("-kube-burst must be a positive number of requests, got %d", r.Burst))
	}
	return errors.Join(errs...)
}

// Apply sets r on cfg, once Validate accepts it.
func (r Rates) Apply(cfg *rest.Config) error {
	if err := r.Validate(); err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(r.QPS), r.Burst
	return nil
}

// Config is the configuration of a component's clients: from the kubeconfig file (empty:
// the pod's service account, in cluster) with the rates r, which are checked first, and the
// component's user agent (ForComponent).
func Config(kubeconfig, component string, r Rates) (*rest.Config, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cfg = ForComponent(cfg, component)
	return cfg, r.Apply(cfg)
}

// ForComponent is a copy of cfg whose requests name the component in their User-Agent
// header ("slotplane-worker/v0.3.1 (linux/amd64)"): the API server's audit log, and
// whoever reads it, can then tell slotplane's processes apart, where client-go's default
// would name the binary alone. An empty component leaves the header as cfg has it.
func ForComponent(cfg *rest.Config, component string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if component != "" {
		cfg.UserAgent = fmt.Sprintf("slotplane-%s/%s (%s/%s)", component, moduleVersion(), goruntime.GOOS, goruntime.GOARCH)
	}
	return cfg
}

// moduleVersion is the version of slotplane's module this binary was built from, or
// "devel" for a build from a working tree.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
