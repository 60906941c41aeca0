package operatorapp

import (
	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
)

// Outcome is where an application is, read from the status its operator writes.
type Outcome struct {
	// State is the operator's own word for it (Spark applicationState; Flink job state, or
	// its lifecycle state where that decides).
	State string
	// Terminal: the application has ended and will not run again.
	Terminal bool
	// Succeeded: it ended well (Spark COMPLETED, Flink FINISHED, or suspended with the job's
	// suspendedOutcome Completed).
	Succeeded bool
	// Suspended: it ended because it was suspended or stopped, not by itself.
	Suspended bool
	// Message is the operator's error text, if any.
	Message string
}

// suspendedSucceeds reads the job's suspendedOutcome from the application (operatorapp writes
// it from the BatchJob): only Failed makes a suspension a failure.
func suspendedSucceeds(annotations map[string]string) bool {
	return annotations[v1alpha1.SuspendedOutcomeAnnotation] != string(v1alpha1.RunFailed)
}

// SparkOutcome reads a SparkApplication's status. The Spark operator's states (v2.5):
//
//   - "" (new), SUBMITTED, RUNNING: on its way.
//   - SUCCEEDING, FAILING: the driver ended. With restart policy Never (slotplane's; an
//     empty type reads the same) the operator's next state is COMPLETED or FAILED and
//     nothing else, so they are that end already: a success, a failure. Waiting for the
//     next state cost every job one more pass of the operator (about 60 ms on the bench's
//     platform) between its end and its slots going to the next job. Under OnFailure or
//     Always the operator may run the application again: not an end.
//   - PENDING_RERUN, INVALIDATING, RESUMING: the operator submits the application again
//     (a changed spec, a resumed suspension): not an end.
//   - UNKNOWN: the driver pod's state cannot be read for now: not an end.
//   - SUSPENDING: on its way to SUSPENDED.
//   - COMPLETED: a success. FAILED: a failure.
//   - SUBMISSION_FAILED: spark-submit failed; with restart policy Never the operator's next
//     state is FAILED, so it is a failure already.
//   - SUSPENDED: spec.suspend stopped it; it ends the job as its suspendedOutcome says.
//
// A state this list does not know (a later operator's) is not an end.
func SparkOutcome(app *sparkv1beta2.SparkApplication) Outcome {
	st := app.Status.AppState
	o := Outcome{State: string(st.State), Message: st.ErrorMessage}
	switch st.State {
	case sparkv1beta2.ApplicationStateCompleted:
		o.Terminal, o.Succeeded = true, true
	case sparkv1beta2.ApplicationStateFailed, sparkv1beta2.ApplicationStateFailedSubmission:
		o.Terminal = true
	case sparkv1beta2.ApplicationStateSucceeding:
		o.Terminal = neverRerun(app)
		o.Succeeded = o.Terminal
	case sparkv1beta2.ApplicationStateFailing:
		o.Terminal = neverRerun(app)
	case sparkv1beta2.ApplicationStateSuspended:
		o.Terminal, o.Suspended, o.Succeeded = true, true, suspendedSucceeds(app.Annotations)
	}
	return o
}

// neverRerun says whether the operator will not run the application again once its driver
// ended: restart policy Never, or none (the operator retries only under OnFailure and
// Always).
func neverRerun(app *sparkv1beta2.SparkApplication) bool {
	t := app.Spec.RestartPolicy.Type
	return t == "" || t == sparkv1beta2.RestartPolicyNever
}

// FlinkOutcome reads a FlinkDeployment's status: the job's state first, then the resource's
// lifecycle state, as the Flink Kubernetes operator (1.15) publishes them.
//
// Job states (Flink's own): FINISHED is a success; FAILED and CANCELED are failures (an
// application-mode job does not come back); INITIALIZING, CREATED, RUNNING, FAILING,
// RESTARTING, CANCELLING and RECONCILING (the operator's word while it deploys or has lost
// sight of the job) are on their way. SUSPENDED is an end only when the deployment was
// suspended (its lifecycle state SUSPENDED, or job.state suspended in its spec): during an
// upgrade the job is suspended for a moment too.
//
// Lifecycle states: SUSPENDED ends the job as its suspendedOutcome says; FAILED (a job that
// failed, or a deployment that could not be made) and DELETED are failures; CREATED,
// DEPLOYED, STABLE, UPGRADING, ROLLING_BACK, ROLLED_BACK and DELETING decide nothing by
// themselves.
func FlinkOutcome(dep *flinkv1beta1.FlinkDeployment) Outcome {
	st := dep.Status
	o := Outcome{State: string(st.JobStatus.State), Message: st.Error}
	suspendedSpec := dep.Spec.Job != nil && dep.Spec.Job.State == flinkv1beta1.JobStateSuspended
	suspend := func() {
		o.Terminal, o.Suspended, o.Succeeded = true, true, suspendedSucceeds(dep.Annotations)
	}
	switch st.JobStatus.State {
	case flinkv1beta1.FlinkJobFinished:
		o.Terminal, o.Succeeded = true, true
		return o
	case flinkv1beta1.FlinkJobFailed:
		o.Terminal = true
		return o
	case flinkv1beta1.FlinkJobCanceled:
		if st.LifecycleState == flinkv1beta1.LifecycleStateSuspended || suspendedSpec {
			// A stateless job is cancelled when its deployment is suspended.
			suspend()
			return o
		}
		o.Terminal = true
		return o
	case flinkv1beta1.FlinkJobSuspended:
		if st.LifecycleState == flinkv1beta1.LifecycleStateSuspended || (st.LifecycleState == "" && suspendedSpec) {
			suspend()
			return o
		}
	}
	switch st.LifecycleState {
	case flinkv1beta1.LifecycleStateSuspended:
		o.State = string(st.LifecycleState)
		suspend()
	case flinkv1beta1.LifecycleStateFailed, flinkv1beta1.LifecycleStateDeleted:
		o.State = string(st.LifecycleState)
		o.Terminal = true
	}
	return o
}
