package standin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
)

// flink plays the Flink operator, and Flink's native Kubernetes integration, for one
// FlinkDeployment in application mode (pass).
func (r *reconciler) flink(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d := &flinkPlayed{}
	return r.pass(ctx, req, &d.dep, d)
}

// flinkPlayed is a FlinkDeployment as a pass sees it: the JobManager leads, TaskManagers work.
type flinkPlayed struct {
	dep flinkv1beta1.FlinkDeployment
	old *flinkv1beta1.FlinkDeploymentStatus
}

func (d *flinkPlayed) leader() (role, name string) {
	return RoleJobManager, FlinkJobManagerName(&d.dep)
}
func (d *flinkPlayed) workerRole() string { return RoleTaskManager }
func (d *flinkPlayed) keepStatus()        { d.old = d.dep.Status.DeepCopy() }
func (d *flinkPlayed) ended() bool {
	return flinkEnded(d.dep.Status.JobStatus.State) || d.dep.Status.LifecycleState == flinkv1beta1.LifecycleStateSuspended
}
func (d *flinkPlayed) fresh() bool { return d.dep.Status.JobStatus.State == "" }
func (d *flinkPlayed) launch(ctx context.Context, r *reconciler, now metav1.Time) (reconcile.Result, error) {
	if flinkSuspendAsked(&d.dep) {
		// A deployment made suspended is not deployed.
		flinkSuspended(&d.dep.Status, now)
		return reconcile.Result{}, nil
	}
	return r.deployFlink(ctx, &d.dep, now)
}
func (d *flinkPlayed) launched(now metav1.Time) { flinkDeployed(&d.dep.Status, &d.dep, now) }
func (d *flinkPlayed) lost(name string, now metav1.Time) {
	d.dep.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentMissing
	if flinkSuspendAsked(&d.dep) {
		flinkSuspended(&d.dep.Status, now) // its JobManager went because it was suspended
		return
	}
	flinkFail(&d.dep.Status, fmt.Sprintf("JobManager pod %s not found", name), now)
}
func (d *flinkPlayed) endWorkers(ctx context.Context, r *reconciler, tms []corev1.Pod) error {
	return r.deletePods(ctx, tms)
}
func (d *flinkPlayed) follow(ctx context.Context, r *reconciler, jm *corev1.Pod, tms []corev1.Pod, now metav1.Time) (reconcile.Result, error) {
	return r.followJobManager(ctx, &d.dep, jm, tms, now)
}
func (d *flinkPlayed) settle([]corev1.Pod)      {}
func (d *flinkPlayed) statuses() (old, cur any) { return d.old, &d.dep.Status }
func (d *flinkPlayed) changed() bool {
	return d.dep.Status.JobStatus.State != d.old.JobStatus.State || d.dep.Status.LifecycleState != d.old.LifecycleState
}
func (d *flinkPlayed) logChange(log *slog.Logger) {
	st := d.dep.Status
	log.Info("flink deployment", "namespace", d.dep.Namespace, "app", d.dep.Name, "job", st.JobStatus.State, "lifecycle", st.LifecycleState,
		"jobManager", st.JobManagerDeploymentStatus, "error", st.Error)
}

// deployFlink deploys the application cluster: it reads the whole configuration, then
// creates the JobManager. A deployment that cannot be made fails its job, so that whoever
// waits for the job learns of it (the operator would leave the job alone and report the
// error only).
func (r *reconciler) deployFlink(ctx context.Context, dep *flinkv1beta1.FlinkDeployment, now metav1.Time) (reconcile.Result, error) {
	// Deploy only what the API server, not a lagging cache, shows undeployed.
	var current flinkv1beta1.FlinkDeployment
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(dep), &current); err != nil {
		return reconcile.Result{}, ignoreStale(err, "get %s/%s", dep.Namespace, dep.Name)
	}
	if current.Status.JobStatus.State != "" || current.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the cache catches up and brings the deployment back
	}
	return r.launch(ctx, "deploy", dep, func() (*corev1.Pod, error) {
		jm, err := FlinkJobManagerPod(dep)
		if err == nil {
			_, err = FlinkTaskManagerPod(dep, jm, 1)
		}
		return jm, err
	}, func(err error) { flinkDeployFailed(&dep.Status, err, now) }, func() { flinkDeployed(&dep.Status, dep, now) })
}

// followJobManager moves the job along with its JobManager: ready, the job runs and the
// TaskManagers are asked for; ended, the job ends and the TaskManagers go. spec.job.state
// suspended, or a run time up with SimOutcomeSuspended, suspends it: its pods go, the job is
// SUSPENDED and so is the lifecycle. A detour (SimDetourAnnotation) shows its job and
// lifecycle states while the job runs.
func (r *reconciler) followJobManager(ctx context.Context, dep *flinkv1beta1.FlinkDeployment, jm *corev1.Pod, tms []corev1.Pod, now metav1.Time) (reconcile.Result, error) {
	st := &dep.Status
	if flinkSuspendAsked(dep) || jm.Status.Phase == corev1.PodSucceeded && suspendedByOutcome(dep.Annotations) {
		flinkSuspended(st, now)
		return reconcile.Result{}, r.deletePods(ctx, append([]corev1.Pod{*jm}, tms...))
	}
	switch {
	case jm.Status.Phase == corev1.PodSucceeded:
		st.JobStatus.State, st.JobStatus.UpdateTime = flinkv1beta1.FlinkJobFinished, epochMillis(now)
		return reconcile.Result{}, r.deletePods(ctx, tms)
	case jm.Status.Phase == corev1.PodFailed:
		msg := "JobManager pod failed"
		if code, reason, ok := exitOf(jm, FlinkMainContainer); ok {
			msg = fmt.Sprintf("JobManager container failed with exit code %d (%s)", code, reason)
		}
		flinkFail(st, msg, now)
		return reconcile.Result{}, r.deletePods(ctx, tms)
	case ready(jm):
		st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentReady
		res, err := r.ensureTaskManagers(ctx, dep, jm, tms)
		job, life := flinkv1beta1.FlinkJobRunning, flinkv1beta1.LifecycleStateStable
		if state, next := detour(dep.Annotations, jm, now.Time); state != "" {
			if s, ok := strings.CutPrefix(state, "job="); ok {
				job = flinkv1beta1.FlinkJobState(s)
			} else if s, ok := strings.CutPrefix(state, "lifecycle="); ok {
				life = flinkv1beta1.ResourceLifecycleState(s)
			}
			if res.RequeueAfter == 0 || next < res.RequeueAfter {
				res.RequeueAfter = next
			}
		} else if _, ok := workersRunningSince(jm); !ok && dep.Annotations[SimDetourAnnotation] != "" && res.RequeueAfter == 0 {
			res.RequeueAfter = retryAfter // the detour starts once the TaskManagers run
		}
		st.LifecycleState = life
		if st.JobStatus.StartTime == "" {
			st.JobStatus.StartTime = epochMillis(now)
		}
		if st.JobStatus.State != job {
			st.JobStatus.State, st.JobStatus.UpdateTime = job, epochMillis(now)
		}
		return res, err
	default:
		st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentDeployedNotReady
		return reconcile.Result{}, nil
	}
}

// ensureTaskManagers creates the TaskManagers the JobManager asks for. One whose pod ended
// while the job runs is replaced under its old name once the old pod is gone.
func (r *reconciler) ensureTaskManagers(ctx context.Context, dep *flinkv1beta1.FlinkDeployment, jm *corev1.Pod, tms []corev1.Pod) (reconcile.Result, error) {
	return r.ensureWorkers(ctx, workers{
		what: "TaskManager", of: dep, count: TaskManagers(dep), have: tms,
		name:        func(n int) string { return FlinkTaskManagerName(dep, n) },
		pod:         func(n int) (*corev1.Pod, error) { return FlinkTaskManagerPod(dep, jm, n) },
		deleteEnded: true,
		leader:      jm,
	})
}

// flinkEnded says whether a job state is final: an application-mode job does not come back.
func flinkEnded(s flinkv1beta1.FlinkJobState) bool {
	switch s {
	case flinkv1beta1.FlinkJobFinished, flinkv1beta1.FlinkJobFailed, flinkv1beta1.FlinkJobCanceled:
		return true
	}
	return false
}

// flinkDeployed records a deployment the way the operator does.
func flinkDeployed(st *flinkv1beta1.FlinkDeploymentStatus, dep *flinkv1beta1.FlinkDeployment, now metav1.Time) {
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentDeploying
	st.LifecycleState = flinkv1beta1.LifecycleStateDeployed
	st.Error = ""
	st.ObservedGeneration = dep.Generation
	// The operator says RECONCILING until it sees the job in the new cluster.
	st.JobStatus = flinkv1beta1.JobStatus{
		JobName: dep.Name, JobID: flinkJobID(dep), State: flinkv1beta1.FlinkJobReconciling, UpdateTime: epochMillis(now),
	}
	st.ReconciliationStatus.State = flinkv1beta1.ReconciliationDeployed
	st.ReconciliationStatus.ReconciliationTimestamp = now.UnixMilli()
	st.TaskManager = &flinkv1beta1.TaskManagerInfo{
		Replicas:      int32(TaskManagers(dep)),
		LabelSelector: "app=" + labelValue(dep.Name) + ",component=" + RoleTaskManager + ",type=flink-native-kubernetes",
	}
}

// flinkDeployFailed marks a deployment that could not be made: the JobManager deployment is
// in ERROR and the job failed.
func flinkDeployFailed(st *flinkv1beta1.FlinkDeploymentStatus, err error, now metav1.Time) {
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentError
	flinkFail(st, err.Error(), now)
}

func flinkFail(st *flinkv1beta1.FlinkDeploymentStatus, msg string, now metav1.Time) {
	st.JobStatus.State, st.JobStatus.UpdateTime = flinkv1beta1.FlinkJobFailed, epochMillis(now)
	st.LifecycleState = flinkv1beta1.LifecycleStateFailed
	st.Error = msg
}

// flinkSuspendAsked is spec.job.state suspended.
func flinkSuspendAsked(dep *flinkv1beta1.FlinkDeployment) bool {
	return dep.Spec.Job != nil && dep.Spec.Job.State == flinkv1beta1.JobStateSuspended
}

// flinkSuspended marks a suspended deployment as the operator does for a job whose state is
// kept (upgrade mode last-state or savepoint): the job SUSPENDED, the lifecycle SUSPENDED,
// no JobManager.
func flinkSuspended(st *flinkv1beta1.FlinkDeploymentStatus, now metav1.Time) {
	st.JobStatus.State, st.JobStatus.UpdateTime = flinkv1beta1.FlinkJobSuspended, epochMillis(now)
	st.LifecycleState = flinkv1beta1.LifecycleStateSuspended
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploymentMissing
}
