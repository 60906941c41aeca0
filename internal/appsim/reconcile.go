package appsim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// spark plays the Spark operator and spark-submit for one SparkApplication.
func (r *reconciler) spark(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var app sparkv1beta2.SparkApplication
	if err := r.client.Get(ctx, req.NamespacedName, &app); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	byRole, err := r.pods(ctx, app.Namespace, sparkv1beta2.SparkApplicationKind, app.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if app.DeletionTimestamp != nil {
		return r.finalize(ctx, &app, byRole)
	}
	if controllerutil.AddFinalizer(&app, Finalizer) {
		if err := r.client.Update(ctx, &app); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	st := app.Status.DeepCopy()
	now := metav1.Now()
	terminal := st.AppState.State == sparkv1beta2.ApplicationStateCompleted || st.AppState.State == sparkv1beta2.ApplicationStateFailed ||
		st.AppState.State == sparkv1beta2.ApplicationStateFailedSubmission
	drivers, executors := byRole["driver"], byRole["executor"]

	switch {
	case terminal:
		// Done: executors go, the driver stays as the record of the run.
		if err := r.deleteAll(ctx, executors); err != nil {
			return reconcile.Result{}, err
		}
	case len(drivers) == 0:
		driver, err := SparkDriverPod(&app)
		if err != nil {
			st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateFailedSubmission, ErrorMessage: err.Error()}
			st.TerminationTime = now
			break
		}
		if err := r.create(ctx, driver); err != nil {
			return reconcile.Result{}, err
		}
		st.AppState.State = sparkv1beta2.ApplicationStateSubmitted
		st.SparkApplicationID = sparkAppID(&app)
		st.SubmissionAttempts++
		st.LastSubmissionAttemptTime = now
		st.DriverInfo.PodName = driver.Name
	default:
		driver := &drivers[0]
		switch driver.Status.Phase {
		case corev1.PodRunning:
			st.AppState.State = sparkv1beta2.ApplicationStateRunning
			want := 1
			if app.Spec.Executor.Instances != nil {
				want = int(*app.Spec.Executor.Instances)
			}
			have := map[string]bool{}
			for _, e := range executors {
				have[e.Name] = true
			}
			for n := 1; n <= want; n++ {
				pod, err := SparkExecutorPod(&app, driver, n)
				if err != nil {
					return reconcile.Result{}, err
				}
				if !have[pod.Name] {
					if err := r.create(ctx, pod); err != nil {
						return reconcile.Result{}, err
					}
				}
			}
		case corev1.PodSucceeded, corev1.PodFailed:
			st.AppState.State = sparkv1beta2.ApplicationStateCompleted
			if driver.Status.Phase == corev1.PodFailed {
				st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateFailed, ErrorMessage: "driver pod failed"}
			}
			st.TerminationTime = now
			if err := r.deleteAll(ctx, executors); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	st.ExecutorState = map[string]sparkv1beta2.ExecutorState{}
	for _, e := range executors {
		st.ExecutorState[e.Name] = executorState(e, st.AppState.State)
	}
	return reconcile.Result{}, r.writeStatus(ctx, &app, func() bool {
		if equality.Semantic.DeepEqual(app.Status.AppState, st.AppState) && equality.Semantic.DeepEqual(app.Status.ExecutorState, st.ExecutorState) {
			return false
		}
		app.Status = *st
		return true
	})
}

func executorState(p corev1.Pod, app sparkv1beta2.ApplicationStateType) sparkv1beta2.ExecutorState {
	switch {
	case app == sparkv1beta2.ApplicationStateCompleted || app == sparkv1beta2.ApplicationStateFailed || p.DeletionTimestamp != nil:
		return sparkv1beta2.ExecutorStateCompleted
	case p.Status.Phase == corev1.PodRunning:
		return sparkv1beta2.ExecutorStateRunning
	case p.Status.Phase == corev1.PodFailed:
		return sparkv1beta2.ExecutorStateFailed
	case p.Status.Phase == corev1.PodSucceeded:
		return sparkv1beta2.ExecutorStateCompleted
	default:
		return sparkv1beta2.ExecutorStatePending
	}
}

// flink plays the Flink operator for one FlinkDeployment in application mode.
func (r *reconciler) flink(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var dep flinkv1beta1.FlinkDeployment
	if err := r.client.Get(ctx, req.NamespacedName, &dep); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	byRole, err := r.pods(ctx, dep.Namespace, flinkv1beta1.FlinkDeploymentKind, dep.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if dep.DeletionTimestamp != nil {
		return r.finalize(ctx, &dep, byRole)
	}
	if controllerutil.AddFinalizer(&dep, Finalizer) {
		if err := r.client.Update(ctx, &dep); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	st := dep.Status.DeepCopy()
	job := &st.JobStatus
	terminal := job.State == flinkv1beta1.FlinkJobFinished || job.State == flinkv1beta1.FlinkJobFailed || job.State == flinkv1beta1.FlinkJobCanceled
	jms, tms := byRole["jobmanager"], byRole["taskmanager"]

	switch {
	case terminal:
		if err := r.deleteAll(ctx, tms); err != nil {
			return reconcile.Result{}, err
		}
	case len(jms) == 0:
		jm, err := FlinkJobManagerPod(&dep)
		if err != nil {
			st.Error = err.Error()
			job.State = flinkv1beta1.FlinkJobFailed
			break
		}
		if err := r.create(ctx, jm); err != nil {
			return reconcile.Result{}, err
		}
		st.JobManagerDeploymentStatus = "DEPLOYING"
		st.LifecycleState = "DEPLOYED"
		job.State = flinkv1beta1.FlinkJobCreated
		job.JobName = dep.Name
		job.JobID = fmt.Sprintf("%032x", []byte(dep.UID)[:min(16, len(dep.UID))])
	default:
		jm := &jms[0]
		switch jm.Status.Phase {
		case corev1.PodRunning:
			st.JobManagerDeploymentStatus = "READY"
			st.LifecycleState = "STABLE"
			if job.State != flinkv1beta1.FlinkJobRunning {
				job.State = flinkv1beta1.FlinkJobRunning
				job.StartTime = fmt.Sprint(time.Now().UnixMilli())
			}
			have := map[string]bool{}
			for _, t := range tms {
				have[t.Name] = true
			}
			for n := 1; n <= TaskManagers(&dep); n++ {
				pod, err := FlinkTaskManagerPod(&dep, jm, n)
				if err != nil {
					return reconcile.Result{}, err
				}
				if !have[pod.Name] {
					if err := r.create(ctx, pod); err != nil {
						return reconcile.Result{}, err
					}
				}
			}
			st.TaskManager = &flinkv1beta1.TaskManagerInfo{Replicas: int32(TaskManagers(&dep)), LabelSelector: "component=taskmanager,app=" + dep.Name}
		case corev1.PodSucceeded:
			job.State = flinkv1beta1.FlinkJobFinished
		case corev1.PodFailed:
			job.State = flinkv1beta1.FlinkJobFailed
			st.Error = "the JobManager pod failed"
		default:
			st.JobManagerDeploymentStatus = "DEPLOYED_NOT_READY"
		}
		if job.State == flinkv1beta1.FlinkJobFinished || job.State == flinkv1beta1.FlinkJobFailed {
			job.UpdateTime = fmt.Sprint(time.Now().UnixMilli())
			if err := r.deleteAll(ctx, tms); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return reconcile.Result{}, r.writeStatus(ctx, &dep, func() bool {
		if equality.Semantic.DeepEqual(dep.Status.JobStatus.State, st.JobStatus.State) && dep.Status.JobManagerDeploymentStatus == st.JobManagerDeploymentStatus &&
			dep.Status.Error == st.Error && equality.Semantic.DeepEqual(dep.Status.TaskManager, st.TaskManager) {
			return false
		}
		dep.Status = *st
		return true
	})
}

// writeStatus writes obj's status when change (which applies it) says it changed.
func (r *reconciler) writeStatus(ctx context.Context, obj client.Object, change func() bool) error {
	if !change() {
		return nil
	}
	if err := r.client.Status().Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err) // a conflict is returned: the request is retried
	}
	return nil
}
