package jobapp

import (
	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// Outcome is where an application is, read from the status its operator writes.
type Outcome struct {
	// State is the operator's own word for it (Spark applicationState, Flink job state).
	State string
	// Terminal: the application has ended and will not run again.
	Terminal bool
	// Succeeded: it ended well (Spark COMPLETED, Flink FINISHED).
	Succeeded bool
	// Message is the operator's error text, if any.
	Message string
}

// SparkOutcome reads a SparkApplication's status: COMPLETED is a success; FAILED and
// SUBMISSION_FAILED are failures (slotplane asks for no restarts).
func SparkOutcome(app *sparkv1beta2.SparkApplication) Outcome {
	st := app.Status.AppState
	o := Outcome{State: string(st.State), Message: st.ErrorMessage}
	switch st.State {
	case sparkv1beta2.ApplicationStateCompleted:
		o.Terminal, o.Succeeded = true, true
	case sparkv1beta2.ApplicationStateFailed, sparkv1beta2.ApplicationStateFailedSubmission:
		o.Terminal = true
	}
	return o
}

// FlinkOutcome reads a FlinkDeployment's job status: FINISHED is a success; FAILED and
// CANCELED are failures.
func FlinkOutcome(dep *flinkv1beta1.FlinkDeployment) Outcome {
	o := Outcome{State: string(dep.Status.JobStatus.State), Message: dep.Status.Error}
	switch dep.Status.JobStatus.State {
	case flinkv1beta1.FlinkJobFinished:
		o.Terminal, o.Succeeded = true, true
	case flinkv1beta1.FlinkJobFailed, flinkv1beta1.FlinkJobCanceled:
		o.Terminal = true
	}
	return o
}
