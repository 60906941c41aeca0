package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobManagerDeploymentStatus is the observed state of the JobManager deployment.
// +kubebuilder:validation:Enum=READY;DEPLOYED_NOT_READY;DEPLOYING;MISSING;ERROR
type JobManagerDeploymentStatus string

const (
	// JobManagerDeploymentReady: the JobManager runs and answers REST calls.
	JobManagerDeploymentReady JobManagerDeploymentStatus = "READY"
	// JobManagerDeploymentDeployedNotReady: the JobManager runs but does not answer REST
	// calls yet.
	JobManagerDeploymentDeployedNotReady JobManagerDeploymentStatus = "DEPLOYED_NOT_READY"
	// JobManagerDeploymentDeploying: the JobManager is starting.
	JobManagerDeploymentDeploying JobManagerDeploymentStatus = "DEPLOYING"
	// JobManagerDeploymentMissing: no JobManager deployment exists (not started, or deleted).
	// It is the operator's starting value.
	JobManagerDeploymentMissing JobManagerDeploymentStatus = "MISSING"
	// JobManagerDeploymentError: a terminal error; only a spec change lets reconciliation go on.
	JobManagerDeploymentError JobManagerDeploymentStatus = "ERROR"
)

// ResourceLifecycleState is where the FlinkDeployment is in the operator's lifecycle. The
// operator derives it from the rest of the status (reconciliation state, last reconciled and
// stable specs, job state, error) each time it writes the status; it is there to be read.
// +kubebuilder:validation:Enum=CREATED;SUSPENDED;UPGRADING;DEPLOYED;STABLE;ROLLING_BACK;ROLLED_BACK;FAILED;DELETING;DELETED
type ResourceLifecycleState string

const (
	// LifecycleStateCreated: stored, not yet deployed by the operator.
	LifecycleStateCreated ResourceLifecycleState = "CREATED"
	// LifecycleStateSuspended: the job is suspended (spec.job.state: suspended was
	// reconciled).
	LifecycleStateSuspended ResourceLifecycleState = "SUSPENDED"
	// LifecycleStateUpgrading: being moved to a new spec.
	LifecycleStateUpgrading ResourceLifecycleState = "UPGRADING"
	// LifecycleStateDeployed: submitted, not yet considered stable, so it may still be
	// rolled back.
	LifecycleStateDeployed ResourceLifecycleState = "DEPLOYED"
	// LifecycleStateStable: deployed and considered stable; no rollback will happen.
	LifecycleStateStable ResourceLifecycleState = "STABLE"
	// LifecycleStateRollingBack: going back to the last stable spec.
	LifecycleStateRollingBack ResourceLifecycleState = "ROLLING_BACK"
	// LifecycleStateRolledBack: running the last stable spec after a rollback.
	LifecycleStateRolledBack ResourceLifecycleState = "ROLLED_BACK"
	// LifecycleStateFailed: the job failed terminally, or the first deployment failed.
	LifecycleStateFailed ResourceLifecycleState = "FAILED"
	// LifecycleStateDeleting: being deleted.
	LifecycleStateDeleting ResourceLifecycleState = "DELETING"
	// LifecycleStateDeleted: deleted.
	LifecycleStateDeleted ResourceLifecycleState = "DELETED"
)

// FlinkJobState is the state of the job as Flink itself reports it. The operator's status
// holds Flink's own job status enum here (org.apache.flink.api.common.JobStatus of the Flink
// 1.20 the operator is built against), so the released CRD lists its values as an enum.
// Besides copying what the JobManager reports, the operator writes RECONCILING itself while
// it cannot tell: right after it submits the cluster, when the JobManager deployment is
// missing or failing, and when a job it saw running can no longer be found.
// +kubebuilder:validation:Enum=INITIALIZING;CREATED;RUNNING;FAILING;FAILED;CANCELLING;CANCELED;FINISHED;RESTARTING;SUSPENDED;RECONCILING
type FlinkJobState string

const (
	// FlinkJobInitializing: the JobManager received the job and is setting it up.
	FlinkJobInitializing FlinkJobState = "INITIALIZING"
	// FlinkJobCreated: the job is set up but no task has been scheduled yet.
	FlinkJobCreated FlinkJobState = "CREATED"
	// FlinkJobRunning: some tasks are scheduled or running.
	FlinkJobRunning FlinkJobState = "RUNNING"
	// FlinkJobFailing: the job failed and waits for its tasks to stop.
	FlinkJobFailing FlinkJobState = "FAILING"
	// FlinkJobFailed: the job failed for good (a terminal state).
	FlinkJobFailed FlinkJobState = "FAILED"
	// FlinkJobCancelling: the job is being cancelled.
	FlinkJobCancelling FlinkJobState = "CANCELLING"
	// FlinkJobCanceled: the job was cancelled (a terminal state).
	FlinkJobCanceled FlinkJobState = "CANCELED"
	// FlinkJobFinished is how a bounded (batch) job ends successfully (a terminal state).
	FlinkJobFinished FlinkJobState = "FINISHED"
	// FlinkJobRestarting: the job is being restarted after a failure.
	FlinkJobRestarting FlinkJobState = "RESTARTING"
	// FlinkJobSuspended: the job was stopped without being ended, for example by a
	// savepoint stop; it ends only on this JobManager.
	FlinkJobSuspended FlinkJobState = "SUSPENDED"
	// FlinkJobReconciling: the job is being recovered by a new JobManager; the operator also
	// uses it while it does not know the job's state (see FlinkJobState).
	FlinkJobReconciling FlinkJobState = "RECONCILING"
)

// ReconciliationState is the deployment state of the last reconciled spec.
// +kubebuilder:validation:Enum=DEPLOYED;UPGRADING;ROLLING_BACK;ROLLED_BACK
type ReconciliationState string

const (
	// ReconciliationDeployed: the last reconciled spec is deployed.
	ReconciliationDeployed ReconciliationState = "DEPLOYED"
	// ReconciliationUpgrading: the spec is being upgraded. It is the operator's starting value.
	ReconciliationUpgrading ReconciliationState = "UPGRADING"
	// ReconciliationRollingBack: going back to the last stable spec.
	ReconciliationRollingBack ReconciliationState = "ROLLING_BACK"
	// ReconciliationRolledBack: the last stable spec was restored.
	ReconciliationRolledBack ReconciliationState = "ROLLED_BACK"
)

// SnapshotTriggerType says what started a savepoint or checkpoint.
// +kubebuilder:validation:Enum=MANUAL;PERIODIC;UPGRADE;UNKNOWN
type SnapshotTriggerType string

const (
	// SnapshotTriggerManual: the user changed a trigger nonce.
	SnapshotTriggerManual SnapshotTriggerType = "MANUAL"
	// SnapshotTriggerPeriodic: the operator's periodic snapshot setting.
	SnapshotTriggerPeriodic SnapshotTriggerType = "PERIODIC"
	// SnapshotTriggerUpgrade: a stateful upgrade.
	SnapshotTriggerUpgrade SnapshotTriggerType = "UPGRADE"
	// SnapshotTriggerUnknown: not started by the operator, such as a savepoint found on the
	// job.
	SnapshotTriggerUnknown SnapshotTriggerType = "UNKNOWN"
)

// SavepointFormatType is the format of a savepoint.
// +kubebuilder:validation:Enum=CANONICAL;NATIVE;UNKNOWN
type SavepointFormatType string

const (
	// SavepointFormatCanonical: the format every state backend reads.
	SavepointFormatCanonical SavepointFormatType = "CANONICAL"
	// SavepointFormatNative: the state backend's own format.
	SavepointFormatNative SavepointFormatType = "NATIVE"
	// SavepointFormatUnknown: the operator did not take the savepoint, so it cannot tell.
	SavepointFormatUnknown SavepointFormatType = "UNKNOWN"
)

// CheckpointType is the format of a checkpoint.
// +kubebuilder:validation:Enum=FULL;INCREMENTAL;UNKNOWN
type CheckpointType string

const (
	// CheckpointTypeFull: the checkpoint holds the whole state.
	CheckpointTypeFull CheckpointType = "FULL"
	// CheckpointTypeIncremental: the checkpoint holds what changed since the previous one.
	CheckpointTypeIncremental CheckpointType = "INCREMENTAL"
	// CheckpointTypeUnknown: the operator did not take the checkpoint, so it cannot tell.
	CheckpointTypeUnknown CheckpointType = "UNKNOWN"
)

// Savepoint is one savepoint the operator knows of.
type Savepoint struct {
	// TimeStamp is when the savepoint was started, in epoch milliseconds.
	// +optional
	TimeStamp int64 `json:"timeStamp,omitempty"`

	// Location is where the savepoint is stored; a job can be restored from it.
	// +optional
	Location string `json:"location,omitempty"`

	// TriggerType says what started the savepoint.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`

	// FormatType is the savepoint's format.
	// +optional
	FormatType SavepointFormatType `json:"formatType,omitempty"`

	// TriggerNonce is the savepointTriggerNonce that started a manual savepoint; unset for
	// the other kinds.
	// +optional
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// Checkpoint is one checkpoint the operator started.
type Checkpoint struct {
	// TimeStamp is when the checkpoint was started, in epoch milliseconds.
	// +optional
	TimeStamp int64 `json:"timeStamp,omitempty"`

	// TriggerType says what started the checkpoint.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`

	// FormatType is the checkpoint's format.
	// +optional
	FormatType CheckpointType `json:"formatType,omitempty"`

	// TriggerNonce is the checkpointTriggerNonce that started a manual checkpoint; unset for
	// the other kinds.
	// +optional
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// SavepointInfo is the operator's record of the job's savepoints: the pending one and the
// past ones. Upstream deprecates it in favour of FlinkStateSnapshot resources; the operator
// fills it only when those are turned off.
type SavepointInfo struct {
	// LastSavepoint is the newest savepoint the operator completed.
	// +optional
	LastSavepoint *Savepoint `json:"lastSavepoint,omitempty"`

	// TriggerID is Flink's id of the savepoint in progress.
	// +optional
	TriggerID string `json:"triggerId,omitempty"`

	// TriggerTimestamp is when the savepoint in progress was started, in epoch milliseconds.
	// +optional
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`

	// TriggerType says what started the savepoint in progress.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`

	// FormatType is the format of the savepoint in progress.
	// +optional
	FormatType SavepointFormatType `json:"formatType,omitempty"`

	// SavepointHistory lists recent savepoints, oldest first.
	// +optional
	SavepointHistory []Savepoint `json:"savepointHistory,omitempty"`

	// LastPeriodicSavepointTimestamp is when the last periodic savepoint was started, in
	// epoch milliseconds.
	// +optional
	LastPeriodicSavepointTimestamp int64 `json:"lastPeriodicSavepointTimestamp,omitempty"`
}

// CheckpointInfo is the operator's record of the checkpoints it started: the pending one and
// the last one. Deprecated upstream like SavepointInfo.
type CheckpointInfo struct {
	// LastCheckpoint is the newest checkpoint the operator completed.
	// +optional
	LastCheckpoint *Checkpoint `json:"lastCheckpoint,omitempty"`

	// TriggerID is Flink's id of the checkpoint in progress.
	// +optional
	TriggerID string `json:"triggerId,omitempty"`

	// TriggerTimestamp is when the checkpoint in progress was started, in epoch milliseconds.
	// +optional
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`

	// TriggerType says what started the checkpoint in progress.
	// +optional
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`

	// FormatType is the format of the checkpoint in progress.
	// +optional
	FormatType CheckpointType `json:"formatType,omitempty"`

	// LastPeriodicCheckpointTimestamp is when the last periodic checkpoint was started, in
	// epoch milliseconds.
	// +optional
	LastPeriodicCheckpointTimestamp int64 `json:"lastPeriodicCheckpointTimestamp,omitempty"`
}

// JobStatus is the last observed state of the Flink job.
type JobStatus struct {
	// JobName is the job's name.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// JobID is Flink's job id.
	// +optional
	JobID string `json:"jobId,omitempty"`

	// State is Flink's job state.
	// +optional
	State FlinkJobState `json:"state,omitempty"`

	// StartTime is when the job started, as the operator writes it (epoch milliseconds in a
	// string).
	// +optional
	StartTime string `json:"startTime,omitempty"`

	// UpdateTime is when the job status last changed, in the same form as StartTime.
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`

	// UpgradeSavepointPath is the savepoint taken for the last stateful upgrade.
	// +optional
	UpgradeSavepointPath string `json:"upgradeSavepointPath,omitempty"`

	// SavepointInfo records the job's savepoints (deprecated upstream).
	// +optional
	SavepointInfo *SavepointInfo `json:"savepointInfo,omitempty"`

	// CheckpointInfo records the checkpoints the operator started (deprecated upstream).
	// +optional
	CheckpointInfo *CheckpointInfo `json:"checkpointInfo,omitempty"`
}

// ReconciliationStatus describes the operator's last reconcile step.
type ReconciliationStatus struct {
	// ReconciliationTimestamp is the epoch time (milliseconds) of the last successful
	// reconcile.
	// +optional
	ReconciliationTimestamp int64 `json:"reconciliationTimestamp,omitempty"`

	// LastReconciledSpec is the last deployed spec, serialized as JSON by the operator
	// together with some of the resource's metadata. The operator tells a deployment that
	// has not happened yet by its absence.
	// +optional
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`

	// LastStableSpec is the last spec considered stable, serialized the same way; the one a
	// rollback returns to. It equals LastReconciledSpec once the deployment is stable.
	// +optional
	LastStableSpec string `json:"lastStableSpec,omitempty"`

	// State is the deployment state of LastReconciledSpec.
	// +optional
	State ReconciliationState `json:"state,omitempty"`
}

// TaskManagerInfo is what the scale subresource reads about the TaskManagers.
type TaskManagerInfo struct {
	// LabelSelector selects the TaskManager pods, in label selector string form.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`

	// Replicas is the TaskManager count when the spec sets one.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// Condition is one condition of the deployment, in the shape the operator writes (that of
// Kubernetes' Condition, all fields optional). The operator keeps one, of type Running: True
// while the job runs (application mode) or the JobManager is ready (session mode), its
// reason the job state in CamelCase (Running, Finished, ...) or the JobManager's state.
//
// The fields are those of metav1.Condition, in its order, so a Condition converts to one
// (metav1.Condition(c)) for the helpers in k8s.io/apimachinery/pkg/api/meta.
type Condition struct {
	// Type is the condition's name, such as Running.
	// +optional
	Type string `json:"type,omitempty"`

	// Status is True, False or Unknown.
	// +optional
	Status metav1.ConditionStatus `json:"status,omitempty"`

	// ObservedGeneration is the metadata.generation the condition was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastTransitionTime is when Status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a CamelCase word for why the condition has its status.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message tells a human why.
	// +optional
	Message string `json:"message,omitempty"`
}

// FlinkDeploymentStatus is what the operator reports about a deployment.
type FlinkDeploymentStatus struct {
	// JobStatus is the last observed state of the job.
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`

	// Error is the operator's last error about this resource.
	// +optional
	Error string `json:"error,omitempty"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LifecycleState is where the resource is in the operator's lifecycle.
	// +optional
	LifecycleState ResourceLifecycleState `json:"lifecycleState,omitempty"`

	// ClusterInfo holds facts the running cluster reports: flink-version, flink-revision,
	// total-cpu, total-memory, state-size, and the operator's own health record.
	// +optional
	ClusterInfo map[string]string `json:"clusterInfo,omitempty"`

	// JobManagerDeploymentStatus is the last observed state of the JobManager deployment.
	// +optional
	JobManagerDeploymentStatus JobManagerDeploymentStatus `json:"jobManagerDeploymentStatus,omitempty"`

	// ReconciliationStatus describes the last reconcile step.
	// +optional
	ReconciliationStatus ReconciliationStatus `json:"reconciliationStatus,omitempty"`

	// TaskManager feeds the scale subresource.
	// +optional
	TaskManager *TaskManagerInfo `json:"taskManager,omitempty"`

	// Conditions holds the Running condition (see Condition).
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
}
