package standin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// retryAfter is how soon a reconcile that waits for a pod to go is run again. Pod events
// bring it back sooner; this is the floor if one is missed.
const retryAfter = 250 * time.Millisecond

// played is one application the stand-in plays the operator of, as every pass sees it: a
// leading pod (Spark's driver, Flink's JobManager) that is launched first, and workers
// (executors, TaskManagers) that the leader asks for once it runs.
type played interface {
	leader() (role, name string)
	workerRole() string
	// keepStatus notes the status as read, for settle, statuses and changed.
	keepStatus()
	// ended: the application is over; fresh: it was never launched.
	ended() bool
	fresh() bool
	launch(ctx context.Context, r *reconciler, now metav1.Time) (reconcile.Result, error)
	// launched marks it launched (a pass made the leader, and its status write was lost).
	launched(now metav1.Time)
	// lost fails it: its leader pod is gone.
	lost(leader string, now metav1.Time)
	endWorkers(ctx context.Context, r *reconciler, workers []corev1.Pod) error
	follow(ctx context.Context, r *reconciler, leader *corev1.Pod, workers []corev1.Pod, now metav1.Time) (reconcile.Result, error)
	// settle derives what the status shows of the workers.
	settle(workers []corev1.Pod)
	statuses() (old, cur any)
	changed() bool
	logChange(log *slog.Logger)
}

// pass plays one reconcile of the operator for the application of req, read into obj (p's
// own object). Every step can be taken twice: pods have fixed names, a pod that exists
// already is the one made before, and the status is derived from the pods that exist, so a
// pass cut short (or a restart of the stand-in) is finished by the next one.
func (r *reconciler) pass(ctx context.Context, req reconcile.Request, obj client.Object, p played) (reconcile.Result, error) {
	byRole, done, result, err := r.begin(ctx, req, obj)
	if done {
		return result, err
	}
	role, name := p.leader()
	lead := podNamed(byRole[role], name)
	workers := byRole[p.workerRole()]
	p.keepStatus()
	now := metav1.NewTime(r.now())
	switch {
	case p.ended():
		err = p.endWorkers(ctx, r, workers)
	case lead == nil && p.fresh():
		result, err = p.launch(ctx, r, now)
	case lead == nil:
		// Launched, but the cache has no leader: made a moment ago, or gone.
		var gone bool
		gone, err = r.goneLive(ctx, obj.GetNamespace(), name, obj.GetUID())
		if err == nil && gone {
			p.lost(name, now)
			err = p.endWorkers(ctx, r, workers)
		}
	default:
		if p.fresh() {
			p.launched(now)
		}
		result, err = p.follow(ctx, r, lead, workers, now)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	p.settle(workers)
	old, cur := p.statuses()
	written, err := r.writeStatus(ctx, obj, old, cur)
	if written && p.changed() {
		p.logChange(r.log)
	}
	return result, err
}

// workers are the pods a leader asks for, numbered from 1: Spark's executors, Flink's
// TaskManagers.
type workers struct {
	what  string
	of    client.Object
	count int
	have  []corev1.Pod
	name  func(n int) string
	pod   func(n int) (*corev1.Pod, error)
	// deleteEnded: a worker whose pod ended is deleted, and so replaced under its old name
	// once the old pod is gone (Spark keeps ended executors when deleteOnTermination is
	// false).
	deleteEnded bool
	// leader is the driver or JobManager: it is told when all workers run
	// (WorkersRunningAnnotation).
	leader *corev1.Pod
}

// ensureWorkers creates the workers that are missing and deletes ended ones as w says. It
// asks to come back while a pod it made is not in the cache yet.
func (r *reconciler) ensureWorkers(ctx context.Context, w workers) (reconcile.Result, error) {
	again := false
	for n := 1; n <= w.count; n++ {
		if p := podNamed(w.have, w.name(n)); p != nil {
			if finished(p) && w.deleteEnded {
				if err := r.deletePods(ctx, []corev1.Pod{*p}); err != nil {
					return reconcile.Result{}, err
				}
			}
			continue
		}
		pod, err := w.pod(n)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("%s %d of %s/%s: %w", w.what, n, w.of.GetNamespace(), w.of.GetName(), err)
		}
		created, err := r.ensurePod(ctx, pod)
		if err != nil {
			return reconcile.Result{}, err
		}
		again = again || !created
	}
	if again {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	return reconcile.Result{}, r.markWorkersRunning(ctx, w)
}

// markWorkersRunning annotates the leader once all its workers run, the first time only.
func (r *reconciler) markWorkersRunning(ctx context.Context, w workers) error {
	if w.leader == nil || w.leader.Annotations[WorkersRunningAnnotation] != "" {
		return nil
	}
	for n := 1; n <= w.count; n++ {
		p := podNamed(w.have, w.name(n))
		if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			return nil
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, w.leader.UID, WorkersRunningAnnotation, r.now().UTC().Format(time.RFC3339Nano))
	err := r.client.Patch(ctx, w.leader, client.RawPatch(types.MergePatchType, patch))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("tell %s/%s its %ss run: %w", w.leader.Namespace, w.leader.Name, w.what, err)
	}
	return nil
}

// launch creates an application's first pod (the driver, the JobManager) as its submitter
// would: the pod is built from the whole configuration first (with one executor or
// TaskManager, so that their configuration is read too). A pod that cannot be built, or
// that the API server refuses, fails the launch (failed); a pod made now is launched. A
// pod that exists already waits for the cache to show it.
func (r *reconciler) launch(ctx context.Context, verb string, obj client.Object, first func() (*corev1.Pod, error), failed func(error), launched func()) (reconcile.Result, error) {
	pod, err := first()
	if err != nil {
		failed(err)
		return reconcile.Result{}, nil
	}
	created, err := r.ensurePod(ctx, pod)
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		failed(err)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("%s %s/%s: %w", verb, obj.GetNamespace(), obj.GetName(), err)
	}
	if !created {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	launched()
	return reconcile.Result{}, nil
}

// begin reads the application of req into obj and takes the steps every pass starts with:
// a deleted application is finalized, a new one gets the finalizer. done says the pass ends
// there, with result and err; otherwise it goes on with the application's pods by role.
func (r *reconciler) begin(ctx context.Context, req reconcile.Request, obj client.Object) (byRole map[string][]corev1.Pod, done bool, result reconcile.Result, err error) {
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return nil, true, reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.behind(obj) {
		// The floor, should the write's event be missed.
		return nil, true, reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		result, err := r.finalize(ctx, obj)
		return nil, true, result, err
	}
	if ok, err := r.ensureFinalizer(ctx, obj); !ok || err != nil {
		return nil, true, reconcile.Result{}, err
	}
	byRole, err = r.podsByRole(ctx, obj.GetNamespace(), obj.GetUID())
	return byRole, err != nil, reconcile.Result{}, err
}

// reconciler holds what the Spark and Flink reconcilers share.
type reconciler struct {
	// client reads from the cache and writes to the API server.
	client client.Client
	// live reads the API server itself, for the few questions a cache that lags must not
	// answer: is a pod really gone, does a name belong to a pod of ours.
	live client.Reader
	log  *slog.Logger
	now  func() time.Time
	// replaced holds, per application UID, the resourceVersion that the stand-in's last
	// write of it replaced, until a pass sees a newer one (behind).
	replaced sync.Map
}

// wrote notes that a write of obj, read at version base, succeeded: until the cache shows
// a newer version, a pass would work on the copy the write replaced (behind).
func (r *reconciler) wrote(obj client.Object, base string) {
	if v := obj.GetResourceVersion(); v != "" && v != base {
		r.replaced.Store(obj.GetUID(), base)
	}
}

// behind says whether the cache still shows the version of obj that the stand-in's last
// write replaced. A pass on it would write on an outdated copy and be refused (a 409: 1.8
// a job in the long run, a fifth of the stand-in's status requests); the write's own
// event brings the next pass.
func (r *reconciler) behind(obj client.Object) bool {
	base, ok := r.replaced.Load(obj.GetUID())
	if !ok {
		return false
	}
	if base == obj.GetResourceVersion() {
		return true
	}
	r.replaced.Delete(obj.GetUID())
	return false
}

// appPodsIndex indexes the cached pods by the application they belong to (AppUIDLabel).
const appPodsIndex = "standin.slotplane.io/app-uid"

// podsByRole lists the cached pods of the application with this UID, by role.
func (r *reconciler) podsByRole(ctx context.Context, namespace string, uid types.UID) (map[string][]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{appPodsIndex: string(uid)}); err != nil {
		return nil, fmt.Errorf("list pods of application %s: %w", uid, err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		out[p.Labels[RoleLabel]] = append(out[p.Labels[RoleLabel]], p)
	}
	return out, nil
}

// podNamed is the pod of that name among pods, or nil.
func podNamed(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

// ensurePod creates pod unless it exists. It reports false when it cannot tell yet: the pod
// of that name belongs to an earlier application of the same name (it is deleted, so the
// name comes free), or it vanished between the create and the look. The caller tries again
// later.
func (r *reconciler) ensurePod(ctx context.Context, pod *corev1.Pod) (bool, error) {
	err := r.client.Create(ctx, pod)
	if err == nil {
		r.log.Debug("pod created", "namespace", pod.Namespace, "pod", pod.Name, "role", pod.Labels[RoleLabel])
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var found corev1.Pod
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(pod), &found); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if found.Labels[AppUIDLabel] == pod.Labels[AppUIDLabel] {
		return true, nil // made by an earlier pass or an earlier run of the stand-in
	}
	r.log.Info("deleting a pod left over from an earlier application of the same name",
		"namespace", found.Namespace, "pod", found.Name, "app", pod.Annotations[AppAnnotation])
	return false, r.deletePods(ctx, []corev1.Pod{found})
}

// goneLive says whether the pod of this name is gone for good, asking the API server: the
// cache may not have seen a pod created a moment ago. A pod of another application under the
// name counts as gone.
func (r *reconciler) goneLive(ctx context.Context, namespace, name string, uid types.UID) (bool, error) {
	var pod corev1.Pod
	err := r.live.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return pod.Labels[AppUIDLabel] != string(uid), nil
}

// deletePods deletes the pods that are not being deleted already. The UID precondition keeps
// a pod that took the name in the meantime safe.
func (r *reconciler) deletePods(ctx context.Context, pods []corev1.Pod) error {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		err := r.client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err == nil {
			r.log.Debug("pod deleted", "namespace", p.Namespace, "pod", p.Name, "role", p.Labels[RoleLabel])
		}
	}
	return nil
}

// stopPods makes pods that are still running end, as Spark's executors end with their driver
// when they are not to be deleted: a zero simulated run left for kwok to play. The pods stay.
func (r *reconciler) stopPods(ctx context.Context, pods []corev1.Pod) error {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || finished(p) || p.Annotations[SimDurationAnnotation] == "0s" {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[SimDurationAnnotation] = "0s"
		delete(p.Annotations, SimOutcomeAnnotation)
		if err := r.client.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("stop pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// ensureFinalizer puts the stand-in's finalizer on obj. It reports false when the write lost
// a race with another change; that change brings the object back.
func (r *reconciler) ensureFinalizer(ctx context.Context, obj client.Object) (bool, error) {
	if !controllerutil.AddFinalizer(obj, Finalizer) {
		return true, nil
	}
	base := obj.GetResourceVersion()
	if err := r.client.Update(ctx, obj); err != nil {
		return false, ignoreStale(err, "add finalizer to %s/%s", obj.GetNamespace(), obj.GetName())
	}
	r.wrote(obj, base)
	return true, nil
}

// finalize deletes every pod of a deleted application, asking the API server rather than the
// cache so that no pod created a moment ago is left behind, then lets the application go.
func (r *reconciler) finalize(ctx context.Context, obj client.Object) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return reconcile.Result{}, nil
	}
	var list corev1.PodList
	if err := r.live.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{AppUIDLabel: string(obj.GetUID())}); err != nil {
		return reconcile.Result{}, fmt.Errorf("list pods of deleted application %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if len(list.Items) > 0 {
		return reconcile.Result{RequeueAfter: retryAfter}, r.deletePods(ctx, list.Items)
	}
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.client.Update(ctx, obj); err != nil {
		return reconcile.Result{}, ignoreStale(err, "remove finalizer from %s/%s", obj.GetNamespace(), obj.GetName())
	}
	r.log.Info("application deleted with its pods", "namespace", obj.GetNamespace(), "app", obj.GetName())
	return reconcile.Result{}, nil
}

// writeStatus writes obj's status (status, already changed in obj) when it differs from old,
// and says whether it did. A write on an outdated copy is dropped: the newer version's event
// runs the reconcile again.
func (r *reconciler) writeStatus(ctx context.Context, obj client.Object, old, status any) (bool, error) {
	if equality.Semantic.DeepEqual(old, status) {
		return false, nil
	}
	base := obj.GetResourceVersion()
	if err := r.client.Status().Update(ctx, obj); err != nil {
		return false, ignoreStale(err, "write status of %s/%s", obj.GetNamespace(), obj.GetName())
	}
	r.wrote(obj, base)
	return true, nil
}

// ignoreStale drops the errors of a write on an outdated copy: a conflict means a newer
// version exists, whose event runs the reconcile again; not found means nothing is left to
// do. Other errors are wrapped with what was being done.
func ignoreStale(err error, format string, args ...any) error {
	if err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// finished says whether a pod's containers have ended for good.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ready says whether a pod runs and reports Ready.
func ready(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exitOf is the exit code and reason of a pod's container, if it has terminated.
func exitOf(p *corev1.Pod, container string) (int32, string, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container && s.State.Terminated != nil {
			return s.State.Terminated.ExitCode, s.State.Terminated.Reason, true
		}
	}
	return 0, "", false
}

// epochMillis is a time the way the Flink operator writes it: milliseconds since the epoch, as
// a string.
func epochMillis(t metav1.Time) string {
	return fmt.Sprint(t.UnixMilli())
}
