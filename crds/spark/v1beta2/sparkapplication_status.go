package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplicationStateType is the overall state of an application as the operator reports it.
type ApplicationStateType string

// The states of the operator's state machine. A new application has the empty state.
const (
	// ApplicationStateNew: not yet looked at by the operator.
	ApplicationStateNew ApplicationStateType = ""
	// ApplicationStateSubmitted: spark-submit succeeded; the driver pod may not run yet.
	ApplicationStateSubmitted ApplicationStateType = "SUBMITTED"
	// ApplicationStateRunning: the driver runs.
	ApplicationStateRunning ApplicationStateType = "RUNNING"
	// ApplicationStateCompleted: the application succeeded; final.
	ApplicationStateCompleted ApplicationStateType = "COMPLETED"
	// ApplicationStateFailed: the application failed and no retry is left; final.
	ApplicationStateFailed ApplicationStateType = "FAILED"
	// ApplicationStateFailedSubmission: spark-submit failed. Not final: the operator submits
	// again if the restart policy allows, else moves on to FAILED.
	ApplicationStateFailedSubmission ApplicationStateType = "SUBMISSION_FAILED"
	// ApplicationStatePendingRerun: the old run's resources are being cleaned up before the
	// application is submitted again.
	ApplicationStatePendingRerun ApplicationStateType = "PENDING_RERUN"
	// ApplicationStateInvalidating: the spec changed; the running application is torn down
	// to be resubmitted.
	ApplicationStateInvalidating ApplicationStateType = "INVALIDATING"
	// ApplicationStateSucceeding: the driver succeeded; the operator decides between
	// COMPLETED and a rerun.
	ApplicationStateSucceeding ApplicationStateType = "SUCCEEDING"
	// ApplicationStateFailing: the driver failed; the operator decides between FAILED and a
	// retry.
	ApplicationStateFailing ApplicationStateType = "FAILING"
	// ApplicationStateSuspending: spec.suspend was set; the pods are being deleted.
	ApplicationStateSuspending ApplicationStateType = "SUSPENDING"
	// ApplicationStateSuspended: suspended, no pods run.
	ApplicationStateSuspended ApplicationStateType = "SUSPENDED"
	// ApplicationStateResuming: spec.suspend was cleared; the application is submitted again.
	ApplicationStateResuming ApplicationStateType = "RESUMING"
	// ApplicationStateUnknown: the operator cannot tell, typically because the driver pod's
	// state is unknown.
	ApplicationStateUnknown ApplicationStateType = "UNKNOWN"
)

// ApplicationStates lists every state above, for tables that must cover them all.
var ApplicationStates = []ApplicationStateType{
	ApplicationStateNew, ApplicationStateSubmitted, ApplicationStateRunning, ApplicationStateCompleted, ApplicationStateFailed,
	ApplicationStateFailedSubmission, ApplicationStatePendingRerun, ApplicationStateInvalidating, ApplicationStateSucceeding,
	ApplicationStateFailing, ApplicationStateSuspending, ApplicationStateSuspended, ApplicationStateResuming, ApplicationStateUnknown,
}

// ApplicationState is the application's state and, after a failure, why.
type ApplicationState struct {
	State ApplicationStateType `json:"state"`
	// +optional
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// DriverState is the state of the driver pod. The operator's status has no field of this
// type (it derives the application state from the pod); the values are those of its API.
type DriverState string

const (
	DriverStatePending   DriverState = "PENDING"
	DriverStateRunning   DriverState = "RUNNING"
	DriverStateCompleted DriverState = "COMPLETED"
	DriverStateFailed    DriverState = "FAILED"
	DriverStateUnknown   DriverState = "UNKNOWN"
)

// ExecutorState is the state of one executor pod.
type ExecutorState string

const (
	ExecutorStatePending   ExecutorState = "PENDING"
	ExecutorStateRunning   ExecutorState = "RUNNING"
	ExecutorStateCompleted ExecutorState = "COMPLETED"
	ExecutorStateFailed    ExecutorState = "FAILED"
	ExecutorStateUnknown   ExecutorState = "UNKNOWN"
)

// DriverInfo tells where the driver runs and how to reach its web UI.
type DriverInfo struct {
	// +optional
	PodName string `json:"podName,omitempty"`
	// WebUIServiceName is the ClusterIP service in front of the Spark UI.
	// +optional
	WebUIServiceName string `json:"webUIServiceName,omitempty"`
	// WebUIAddress is the in-cluster address (host:port) of that service.
	// +optional
	WebUIAddress string `json:"webUIAddress,omitempty"`
	// +optional
	WebUIPort int32 `json:"webUIPort,omitempty"`
	// WebUIIngressName is set when the operator created an ingress for the UI.
	// +optional
	WebUIIngressName string `json:"webUIIngressName,omitempty"`
	// +optional
	WebUIIngressAddress string `json:"webUIIngressAddress,omitempty"`
}

// SparkApplicationStatus is what the operator reports about an application.
type SparkApplicationStatus struct {
	// SparkApplicationID is Spark's own application id (spark.app.id).
	// +optional
	SparkApplicationID string `json:"sparkApplicationId,omitempty"`

	// SubmissionID identifies the current submission of the application.
	// +optional
	SubmissionID string `json:"submissionID,omitempty"`

	// LastSubmissionAttemptTime is when the operator last tried to submit the application.
	// +nullable
	// +optional
	LastSubmissionAttemptTime metav1.Time `json:"lastSubmissionAttemptTime,omitempty"`

	// TerminationTime is when the application ended.
	// +nullable
	// +optional
	TerminationTime metav1.Time `json:"terminationTime,omitempty"`

	// DriverInfo describes the driver pod. The schema requires it in any status written
	// (as upstream's does); Go always writes it, if only as {}.
	DriverInfo DriverInfo `json:"driverInfo"`

	// AppState is the overall state.
	// +optional
	AppState ApplicationState `json:"applicationState,omitempty"`

	// ExecutorState maps executor pod names to their states.
	// +optional
	ExecutorState map[string]ExecutorState `json:"executorState,omitempty"`

	// ExecutionAttempts counts the runs of the submitted application; reset when the
	// application is invalidated.
	// +optional
	ExecutionAttempts int32 `json:"executionAttempts,omitempty"`

	// SubmissionAttempts counts the submissions; reset when the application is invalidated
	// or rerun.
	// +optional
	SubmissionAttempts int32 `json:"submissionAttempts,omitempty"`
}
