package standin

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// spark plays the Spark operator and spark-submit for one SparkApplication (pass).
func (r *reconciler) spark(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	a := &sparkPlayed{}
	return r.pass(ctx, req, &a.app, a)
}

// sparkPlayed is a SparkApplication as a pass sees it: the driver leads, executors work.
type sparkPlayed struct {
	app sparkv1beta2.SparkApplication
	old *sparkv1beta2.SparkApplicationStatus
}

func (a *sparkPlayed) leader() (role, name string) { return RoleDriver, SparkDriverName(&a.app) }
func (a *sparkPlayed) workerRole() string          { return RoleExecutor }
func (a *sparkPlayed) keepStatus()                 { a.old = a.app.Status.DeepCopy() }
func (a *sparkPlayed) ended() bool                 { return sparkEnded(a.app.Status.AppState.State) }
func (a *sparkPlayed) fresh() bool {
	return a.app.Status.AppState.State == sparkv1beta2.ApplicationStateNew
}
func (a *sparkPlayed) launch(ctx context.Context, r *reconciler, now metav1.Time) (reconcile.Result, error) {
	if sparkSuspendAsked(&a.app) {
		// A suspended application is not submitted.
		sparkEnd(&a.app.Status, sparkv1beta2.ApplicationStateSuspended, "", now)
		return reconcile.Result{}, nil
	}
	return r.submitSpark(ctx, &a.app, now)
}
func (a *sparkPlayed) launched(now metav1.Time) { sparkSubmitted(&a.app.Status, &a.app, now) }
func (a *sparkPlayed) lost(name string, now metav1.Time) {
	st := &a.app.Status
	switch st.AppState.State {
	case sparkv1beta2.ApplicationStateSuspending:
		sparkEnd(st, sparkv1beta2.ApplicationStateSuspended, "", now) // its pods are gone
	case sparkv1beta2.ApplicationStateFailedSubmission:
		// With restart policy Never, a failed submission is not retried: FAILED, with why.
		sparkEnd(st, sparkv1beta2.ApplicationStateFailed, st.AppState.ErrorMessage, now)
	default:
		sparkEnd(st, sparkv1beta2.ApplicationStateFailed, fmt.Sprintf("driver pod %s not found", name), now)
	}
}
func (a *sparkPlayed) endWorkers(ctx context.Context, r *reconciler, executors []corev1.Pod) error {
	return r.endExecutors(ctx, &a.app, executors)
}
func (a *sparkPlayed) follow(ctx context.Context, r *reconciler, driver *corev1.Pod, executors []corev1.Pod, now metav1.Time) (reconcile.Result, error) {
	return r.followDriver(ctx, &a.app, driver, executors, now)
}
func (a *sparkPlayed) settle(executors []corev1.Pod) {
	st := &a.app.Status
	st.ExecutorState = sparkExecutorStates(a.old.ExecutorState, executors, st.AppState.State)
}
func (a *sparkPlayed) statuses() (old, cur any) { return a.old, &a.app.Status }
func (a *sparkPlayed) changed() bool            { return a.app.Status.AppState.State != a.old.AppState.State }
func (a *sparkPlayed) logChange(log *slog.Logger) {
	st := a.app.Status
	log.Info("spark application", "namespace", a.app.Namespace, "app", a.app.Name, "state", st.AppState.State, "message", st.AppState.ErrorMessage)
}

// submitSpark does what spark-submit does: it reads the whole configuration, then creates the
// driver pod. A configuration spark-submit would refuse, or a pod the API server refuses, is
// a failed submission.
func (r *reconciler) submitSpark(ctx context.Context, app *sparkv1beta2.SparkApplication, now metav1.Time) (reconcile.Result, error) {
	// Submit only what the API server, not a lagging cache, shows unsubmitted: an application
	// whose submission failed a moment ago must not get a driver after all.
	var current sparkv1beta2.SparkApplication
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(app), &current); err != nil {
		return reconcile.Result{}, ignoreStale(err, "get %s/%s", app.Namespace, app.Name)
	}
	if current.Status.AppState.State != sparkv1beta2.ApplicationStateNew || current.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the cache catches up and brings the application back
	}
	return r.launch(ctx, "submit", app, func() (*corev1.Pod, error) {
		driver, err := SparkDriverPod(app)
		if err == nil {
			_, err = SparkExecutorPod(app, driver, 1)
		}
		return driver, err
	}, func(err error) { sparkSubmissionFailed(&app.Status, err, now) }, func() { sparkSubmitted(&app.Status, app, now) })
}

// followDriver moves the application along with its driver: running, it asks for the
// executors; ended, the application ends and the executors go.
//
// As the operator does, an ended driver first makes the application SUCCEEDING or FAILING
// (its executors are let go of), and the next pass COMPLETED or FAILED (restart policy
// Never). spec.suspend set, or a run time up with SimOutcomeSuspended, suspends it:
// SUSPENDING while its pods go, then SUSPENDED. A detour (SimDetourAnnotation) shows its
// states while the driver runs.
func (r *reconciler) followDriver(ctx context.Context, app *sparkv1beta2.SparkApplication, driver *corev1.Pod, executors []corev1.Pod, now metav1.Time) (reconcile.Result, error) {
	st := &app.Status
	if sparkSuspendAsked(app) || st.AppState.State == sparkv1beta2.ApplicationStateSuspending ||
		driver.Status.Phase == corev1.PodSucceeded && suspendedByOutcome(app.Annotations) {
		st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateSuspending}
		if err := r.deletePods(ctx, append([]corev1.Pod{*driver}, executors...)); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: retryAfter}, nil // SUSPENDED once the driver is gone (lost)
	}
	switch driver.Status.Phase {
	case corev1.PodRunning:
		if wait := executorsDue(app, driver, now.Time); wait > 0 {
			st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateRunning}
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		res, err := r.ensureExecutors(ctx, app, driver, executors)
		state, next := detour(app.Annotations, driver, now.Time)
		st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateRunning}
		if state != "" {
			st.AppState.State = sparkv1beta2.ApplicationStateType(state)
			if res.RequeueAfter == 0 || next < res.RequeueAfter {
				res.RequeueAfter = next
			}
		} else if _, ok := workersRunningSince(driver); !ok && app.Annotations[SimDetourAnnotation] != "" && res.RequeueAfter == 0 {
			res.RequeueAfter = retryAfter // the detour starts once the executors run
		}
		return res, err
	case corev1.PodSucceeded:
		if st.AppState.State == sparkv1beta2.ApplicationStateSucceeding {
			sparkEnd(st, sparkv1beta2.ApplicationStateCompleted, "", now)
			return reconcile.Result{}, nil
		}
		st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateSucceeding}
		return reconcile.Result{RequeueAfter: retryAfter}, r.endExecutors(ctx, app, executors)
	case corev1.PodFailed:
		msg := "driver pod failed"
		if code, reason, ok := exitOf(driver, SparkDriverContainer); ok {
			msg = fmt.Sprintf("driver container failed with ExitCode: %d, Reason: %s", code, reason)
		}
		if st.AppState.State == sparkv1beta2.ApplicationStateFailing {
			sparkEnd(st, sparkv1beta2.ApplicationStateFailed, msg, now)
			return reconcile.Result{}, nil
		}
		st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateFailing, ErrorMessage: msg}
		return reconcile.Result{RequeueAfter: retryAfter}, r.endExecutors(ctx, app, executors)
	}
	return reconcile.Result{}, nil // pending: still SUBMITTED
}

// executorsDue is how long the running driver still initialises before it asks for its
// executors (SimExecutorsAfterAnnotation, from the driver's start); 0 when they are due. A
// value that is no duration asks at once.
func executorsDue(app *sparkv1beta2.SparkApplication, driver *corev1.Pod, now time.Time) time.Duration {
	after, err := time.ParseDuration(app.Annotations[SimExecutorsAfterAnnotation])
	if err != nil || after <= 0 || driver.Status.StartTime == nil {
		return 0
	}
	return max(0, driver.Status.StartTime.Add(after).Sub(now))
}

// sparkSuspendAsked is spec.suspend.
func sparkSuspendAsked(app *sparkv1beta2.SparkApplication) bool {
	return app.Spec.Suspend != nil && *app.Spec.Suspend
}

// ensureExecutors creates the executors the driver asks for. An executor whose pod ended
// while the driver runs is lost; Spark asks for a new one, which here takes the old name once
// the old pod is gone.
func (r *reconciler) ensureExecutors(ctx context.Context, app *sparkv1beta2.SparkApplication, driver *corev1.Pod, executors []corev1.Pod) (reconcile.Result, error) {
	return r.ensureWorkers(ctx, workers{
		what: "executor", of: app, count: SparkExecutorCount(app), have: executors,
		name:        func(n int) string { return SparkExecutorName(app, n) },
		pod:         func(n int) (*corev1.Pod, error) { return SparkExecutorPod(app, driver, n) },
		deleteEnded: sparkDeletesExecutors(app),
		leader:      driver,
	})
}

// endExecutors ends the executors with their driver: deleted (Spark's default), or stopped
// and kept when executor.deleteOnTermination is false.
func (r *reconciler) endExecutors(ctx context.Context, app *sparkv1beta2.SparkApplication, executors []corev1.Pod) error {
	if sparkDeletesExecutors(app) {
		return r.deletePods(ctx, executors)
	}
	return r.stopPods(ctx, executors)
}

// sparkDeletesExecutors is executor.deleteOnTermination (spark.kubernetes.executor.
// deleteOnTermination), true unless set false.
func sparkDeletesExecutors(app *sparkv1beta2.SparkApplication) bool {
	if d := app.Spec.Executor.DeleteOnTermination; d != nil {
		return *d
	}
	return app.Spec.SparkConf["spark.kubernetes.executor.deleteOnTermination"] != "false"
}

// sparkEnded says whether an application state is final (slotplane asks for no reruns, and
// the stand-in does not resume a suspended application).
func sparkEnded(s sparkv1beta2.ApplicationStateType) bool {
	switch s {
	case sparkv1beta2.ApplicationStateCompleted, sparkv1beta2.ApplicationStateFailed, sparkv1beta2.ApplicationStateSuspended:
		return true
	}
	return false
}

// sparkSubmitted records a submission the way the operator does.
func sparkSubmitted(st *sparkv1beta2.SparkApplicationStatus, app *sparkv1beta2.SparkApplication, now metav1.Time) {
	st.AppState = sparkv1beta2.ApplicationState{State: sparkv1beta2.ApplicationStateSubmitted}
	st.SparkApplicationID = SparkAppID(app)
	st.SubmissionID = sparkSubmissionID(app)
	st.SubmissionAttempts++
	st.ExecutionAttempts++
	st.LastSubmissionAttemptTime = now
	st.DriverInfo.PodName = SparkDriverName(app)
}

func sparkSubmissionFailed(st *sparkv1beta2.SparkApplicationStatus, err error, now metav1.Time) {
	st.SubmissionAttempts++
	st.LastSubmissionAttemptTime = now
	sparkEnd(st, sparkv1beta2.ApplicationStateFailedSubmission, err.Error(), now)
}

func sparkEnd(st *sparkv1beta2.SparkApplicationStatus, state sparkv1beta2.ApplicationStateType, msg string, now metav1.Time) {
	st.AppState = sparkv1beta2.ApplicationState{State: state, ErrorMessage: msg}
	st.TerminationTime = now
}

// sparkExecutorStates is the executorState map after a pass: every executor ever seen keeps
// its entry, updated from its pod while there is one. An executor whose pod went while the
// application runs is UNKNOWN until its replacement shows; once the application has ended,
// every executor that did not fail is COMPLETED.
func sparkExecutorStates(prev map[string]sparkv1beta2.ExecutorState, executors []corev1.Pod, app sparkv1beta2.ApplicationStateType) map[string]sparkv1beta2.ExecutorState {
	out := maps.Clone(prev)
	if out == nil {
		out = map[string]sparkv1beta2.ExecutorState{}
	}
	seen := map[string]bool{}
	for i := range executors {
		out[executors[i].Name] = executorState(&executors[i])
		seen[executors[i].Name] = true
	}
	for name, s := range out {
		if !seen[name] && (s == sparkv1beta2.ExecutorStatePending || s == sparkv1beta2.ExecutorStateRunning) {
			out[name] = sparkv1beta2.ExecutorStateUnknown
		}
		if sparkEnded(app) && out[name] != sparkv1beta2.ExecutorStateFailed {
			out[name] = sparkv1beta2.ExecutorStateCompleted
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func executorState(p *corev1.Pod) sparkv1beta2.ExecutorState {
	switch p.Status.Phase {
	case corev1.PodRunning:
		return sparkv1beta2.ExecutorStateRunning
	case corev1.PodSucceeded:
		return sparkv1beta2.ExecutorStateCompleted
	case corev1.PodFailed:
		return sparkv1beta2.ExecutorStateFailed
	case corev1.PodUnknown:
		return sparkv1beta2.ExecutorStateUnknown
	}
	return sparkv1beta2.ExecutorStatePending
}
