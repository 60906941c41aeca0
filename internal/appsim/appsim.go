// Package appsim stands in for the Spark and Flink operators on the local platform, where the
// real ones cannot run. On the fields slotplane uses it behaves like them: a SparkApplication
// gets a driver pod, then, once the driver runs, its executor pods, and its status moves
// SUBMITTED -> RUNNING -> COMPLETED | FAILED with the driver; a FlinkDeployment gets a
// JobManager, then its TaskManagers, and its job moves CREATED -> RUNNING -> FINISHED |
// FAILED with the JobManager. Pods are built from the spec as the operators build them
// (names, labels, resources including Spark's memory overhead, scheduler, priority class,
// affinity, tolerations, pod template extras such as the slot resource).
//
// How long an application runs is simulated: the application's slotplane.io/sim-duration
// annotation goes onto its driver or JobManager pod, and kwok (the fake kubelet, configured
// by internal/testcluster) ends that pod after that long, Failed if slotplane.io/sim-outcome
// is Failed. slotplane's own code never knows whether this or a real operator runs.
package appsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/kubeclient"
)

// Annotations of an application that say how its simulated run goes.
const (
	// SimDurationAnnotation is how long the driver or JobManager runs (a Go duration).
	// Without it the application runs until it is deleted.
	SimDurationAnnotation = "slotplane.io/sim-duration"
	// SimOutcomeAnnotation "Failed" makes the run fail; anything else, or none, succeeds.
	SimOutcomeAnnotation = "slotplane.io/sim-outcome"
	// Finalizer lets the stand-in delete an application's pods before the application goes
	// (the local platform has no garbage collector).
	Finalizer = "appsim.slotplane.io/cleanup"
)

// Options tune the stand-in.
type Options struct {
	// Logger receives controller-runtime's logs; nil discards them.
	Logger *slog.Logger
}

// Sim is a running stand-in.
type Sim struct {
	cancel context.CancelFunc
	done   chan error
}

// Start runs the stand-in until Stop.
func Start(ctx context.Context, cfg *rest.Config, log *slog.Logger, _ Options) (*Sim, error) {
	ours, err := labels.NewRequirement(AppLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 kubeclient.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.FromSlogHandler(log.Handler()),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.NewSelector().Add(*ours)},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("appsim manager: %w", err)
	}
	podsOf := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			app, ok := o.GetLabels()[AppLabel]
			prefix := appLabel(kind, "")
			if !ok || len(app) <= len(prefix) || app[:len(prefix)] != prefix {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: app[len(prefix):]}}}
		})
	}
	r := &reconciler{client: mgr.GetClient(), log: log}
	// A process may start the stand-in again after Stop (tests do); the names stay the same.
	skip := true
	opts := controller.Options{SkipNameValidation: &skip}
	if err := ctrl.NewControllerManagedBy(mgr).Named("appsim-spark").WithOptions(opts).For(&sparkv1beta2.SparkApplication{}).
		Watches(&corev1.Pod{}, podsOf(sparkv1beta2.SparkApplicationKind)).Complete(reconcile.Func(r.spark)); err != nil {
		return nil, fmt.Errorf("appsim spark controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("appsim-flink").WithOptions(opts).For(&flinkv1beta1.FlinkDeployment{}).
		Watches(&corev1.Pod{}, podsOf(flinkv1beta1.FlinkDeploymentKind)).Complete(reconcile.Func(r.flink)); err != nil {
		return nil, fmt.Errorf("appsim flink controller: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Sim{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- mgr.Start(runCtx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.New("appsim caches did not sync within a minute")
	}
	return s, nil
}

// Stop ends the stand-in.
func (s *Sim) Stop() error {
	s.cancel()
	return <-s.done
}

type reconciler struct {
	client client.Client
	log    *slog.Logger
}

// pods lists an application's pods by role.
func (r *reconciler) pods(ctx context.Context, namespace, kind, name string) (map[string][]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{AppLabel: appLabel(kind, name)}); err != nil {
		return nil, fmt.Errorf("list pods of %s %s: %w", kind, name, err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Labels[RoleLabel]] = append(out[p.Labels[RoleLabel]], p)
	}
	return out, nil
}

// create makes a pod; one that exists already is the one made before.
func (r *reconciler) create(ctx context.Context, pod *corev1.Pod) error {
	if err := r.client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	return nil
}

func (r *reconciler) deleteAll(ctx context.Context, pods []corev1.Pod) error {
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, &pods[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete pod %s: %w", pods[i].Name, err)
		}
	}
	return nil
}

// finalize deletes every pod of a deleted application, then lets the application go.
func (r *reconciler) finalize(ctx context.Context, obj client.Object, byRole map[string][]corev1.Pod) (reconcile.Result, error) {
	var all []corev1.Pod
	for _, pods := range byRole {
		all = append(all, pods...)
	}
	if len(all) > 0 {
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, r.deleteAll(ctx, all)
	}
	if controllerutil.RemoveFinalizer(obj, Finalizer) {
		return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, obj))
	}
	return reconcile.Result{}, nil
}

func phaseOf(pods []corev1.Pod) corev1.PodPhase {
	if len(pods) == 0 {
		return ""
	}
	return pods[0].Status.Phase
}
