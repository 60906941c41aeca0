// Package standin stands in for the Spark and Flink operators on the local platform, where the
// real ones cannot run. On the fields slotplane uses it behaves like them:
//
//   - A SparkApplication gets a driver pod, then, once the driver runs, its executor pods. Its
//     status moves SUBMITTED -> RUNNING -> COMPLETED | FAILED with the driver, and the
//     executors are deleted when the driver ends.
//   - A FlinkDeployment (application mode) gets a JobManager, then, once it runs, its
//     TaskManagers. Its job moves CREATED -> RUNNING -> FINISHED | FAILED with the JobManager,
//     and the TaskManagers are deleted when the job ends.
//
// Pods are built from the spec as spark-submit and Flink's native Kubernetes integration build
// them: names, labels, resources (Spark's memory overhead included), scheduler, priority
// class, affinity, tolerations, node selector, and the extra resources of the pod templates
// (the slot resource). The pure builders live in spark.go, flink.go and pods.go; the
// reconcilers only create, delete and write statuses.
//
// How long an application runs is simulated. The application's slotplane.io/sim-duration
// annotation goes onto its driver or JobManager pod, and kwok (the fake kubelet, configured by
// internal/localplatform/localcluster) ends that pod after that long, Failed if slotplane.io/sim-outcome is
// Failed. slotplane's own code never knows whether this or a real operator runs, and this
// package must never be needed by it: only the local platform and tests start it.
//
// There is no garbage collector on the local platform, so the stand-in deletes what it made:
// an application carries the stand-in's finalizer until its pods are gone.
package standin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/kubeclient"
)

// Annotations of an application that say how its simulated run goes. The kwok pod stages in
// internal/localplatform/localcluster/kwok-stages.yaml spell the same keys and value.
const (
	// SimDurationAnnotation is how long the driver or JobManager runs, as a Go duration
	// ("20s", "1m30s"). Without it the application runs until it is deleted.
	SimDurationAnnotation = "slotplane.io/sim-duration"
	// SimOutcomeAnnotation is SimOutcomeFailed to make the run fail, SimOutcomeSuspended to
	// end it as a suspension (states.go), or SimOutcomeSucceeded (the same as leaving it out).
	SimOutcomeAnnotation = "slotplane.io/sim-outcome"
	SimOutcomeFailed     = "Failed"
	SimOutcomeSucceeded  = "Succeeded"
	// SimExecutorsAfterAnnotation is how long a Spark driver runs before it asks for its
	// executors, as a Go duration: a driver that initialises for a while (loads a model,
	// reads its inputs) before it makes its SparkContext. Without it, at once.
	SimExecutorsAfterAnnotation = "slotplane.io/sim-executors-after"
	// WorkersRunningAnnotation is put on the driver or JobManager when all its executors or
	// TaskManagers run (the time, RFC 3339). A real Spark or Flink job does its work once
	// they are there, so the run's length counts from then: the annotation changes the pod,
	// and kwok measures the duration from a pod's last change. Workers that never all run
	// leave the duration counted from the leader's start.
	WorkersRunningAnnotation = "slotplane.io/sim-workers-running"

	// Finalizer lets the stand-in delete an application's pods before the application goes.
	Finalizer = "standin.slotplane.io/cleanup"
)

// Labels and an annotation the stand-in puts on the pods it makes, besides the operators' own.
const (
	// AppUIDLabel holds the UID of the application a pod belongs to. The stand-in's cache sees
	// only pods carrying it, and a pod left over from an earlier application of the same name
	// is told apart by it.
	AppUIDLabel = "standin.slotplane.io/app-uid"
	// RoleLabel is RoleDriver, RoleExecutor, RoleJobManager or RoleTaskManager.
	RoleLabel = "standin.slotplane.io/role"
	// AppAnnotation names the application a pod belongs to (an annotation, because a name
	// may be longer than a label value).
	AppAnnotation = "standin.slotplane.io/app"
)

// The values of RoleLabel.
const (
	RoleDriver      = "driver"
	RoleExecutor    = "executor"
	RoleJobManager  = "jobmanager"
	RoleTaskManager = "taskmanager"
)

// Options tune the stand-in. The zero value serves neither metrics nor health probes.
type Options struct {
	// MetricsAddr is where controller-runtime's Prometheus metrics are served
	// ("127.0.0.1:8080"); empty serves none.
	MetricsAddr string
	// HealthAddr is where /healthz and /readyz are served; empty serves none.
	HealthAddr string
	// Now is the clock of the times written into statuses; nil means time.Now.
	Now func() time.Time
}

// Workers is how many applications of each kind the stand-in reconciles at once.
const Workers = 10

// Sim is a running stand-in.
type Sim struct {
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	stopErr  error
}

// Start runs the stand-in in the background until Stop, and returns once its caches have
// synced. ctx bounds only the start; log receives the stand-in's and controller-runtime's logs
// (nil discards them).
func Start(ctx context.Context, cfg *rest.Config, log *slog.Logger, opts Options) (*Sim, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ours, err := labels.NewRequirement(AppUIDLabel, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("standin pod selector: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 kubeclient.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: addrOrOff(opts.MetricsAddr)},
		HealthProbeBindAddress: addrOrOff(opts.HealthAddr),
		Logger:                 logr.FromSlogHandler(log.Handler()),
		// Only the stand-in's own pods; slotplane's shared cache shape (test bed pods) does
		// not cover drivers and JobManagers.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*ours)},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("standin manager: %w", err)
	}
	if opts.HealthAddr != "" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("standin health check: %w", err)
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, fmt.Errorf("standin readiness check: %w", err)
		}
	}

	// An application's pods are a lookup in the cache, not a walk over every pod the cache keeps: the
	// pods of ended applications stay (as the operators keep a finished driver), and in the
	// 1,000-job run the walk was 4% of the whole test process.
	err = mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, appPodsIndex, func(o client.Object) []string {
		return []string{o.GetLabels()[AppUIDLabel]}
	})
	if err != nil {
		return nil, fmt.Errorf("standin pod index: %w", err)
	}
	r := &reconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), log: log, now: opts.Now}
	// A process may start the stand-in again after Stop (tests do); the names stay the same.
	// Applications are played side by side, as the operators do (the Spark operator's
	// controller runs 10 workers by default): one at a time, a burst of eight jobs starting
	// together waited up to 200 ms for the stand-in alone.
	skip := true
	copts := controller.Options{SkipNameValidation: &skip, MaxConcurrentReconciles: Workers}
	if err := ctrl.NewControllerManagedBy(mgr).Named("standin-spark").WithOptions(copts).
		For(&sparkv1beta2.SparkApplication{}).
		Watches(&corev1.Pod{}, podsOf(RoleDriver, RoleExecutor)).
		Complete(reconcile.Func(r.spark)); err != nil {
		return nil, fmt.Errorf("standin spark controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("standin-flink").WithOptions(copts).
		For(&flinkv1beta1.FlinkDeployment{}).
		Watches(&corev1.Pod{}, podsOf(RoleJobManager, RoleTaskManager)).
		Complete(reconcile.Func(r.flink)); err != nil {
		return nil, fmt.Errorf("standin flink controller: %w", err)
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Sim{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- mgr.Start(runCtx) }()

	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(syncCtx) }()
	select {
	case ok := <-synced:
		if !ok {
			cancel()
			<-s.done
			return nil, errors.New("standin caches did not sync within a minute (are the operator CRDs installed?)")
		}
	case err := <-s.done:
		cancel()
		return nil, fmt.Errorf("standin manager stopped while starting: %w", err)
	}
	return s, nil
}

// Stop ends the stand-in and waits until it has stopped. Calling it again returns the same
// result.
func (s *Sim) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		if err := <-s.done; err != nil {
			s.stopErr = fmt.Errorf("standin manager: %w", err)
		}
	})
	return s.stopErr
}

// addrOrOff is a bind address, or controller-runtime's "0" for none.
func addrOrOff(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

// podsOf maps an event of one of the stand-in's pods with one of these roles to the
// application the pod belongs to.
func podsOf(roles ...string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		role, name := o.GetLabels()[RoleLabel], o.GetAnnotations()[AppAnnotation]
		for _, want := range roles {
			if role == want && name != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
			}
		}
		return nil
	})
}
