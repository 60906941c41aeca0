package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkVersion is the Flink version of the image, in the operator's vMAJOR_MINOR notation.
// The enum holds every value the operator's reference lists, including the versions it no
// longer supports (v1_13, v1_14) or has deprecated (v1_15 to v1_18): the CRD accepts them
// and the operator's validation rejects or warns.
// +kubebuilder:validation:Enum=v1_13;v1_14;v1_15;v1_16;v1_17;v1_18;v1_19;v1_20;v2_0;v2_1;v2_2;v2_3;v2_4
type FlinkVersion string

const (
	FlinkVersionV1_13 FlinkVersion = "v1_13"
	FlinkVersionV1_14 FlinkVersion = "v1_14"
	FlinkVersionV1_15 FlinkVersion = "v1_15"
	FlinkVersionV1_16 FlinkVersion = "v1_16"
	FlinkVersionV1_17 FlinkVersion = "v1_17"
	FlinkVersionV1_18 FlinkVersion = "v1_18"
	FlinkVersionV1_19 FlinkVersion = "v1_19"
	FlinkVersionV1_20 FlinkVersion = "v1_20"
	FlinkVersionV2_0  FlinkVersion = "v2_0"
	FlinkVersionV2_1  FlinkVersion = "v2_1"
	FlinkVersionV2_2  FlinkVersion = "v2_2"
	FlinkVersionV2_3  FlinkVersion = "v2_3"
	FlinkVersionV2_4  FlinkVersion = "v2_4"
)

// KubernetesDeploymentMode says how the operator starts the Flink cluster.
// +kubebuilder:validation:Enum=native;standalone
type KubernetesDeploymentMode string

const (
	// DeploymentModeNative uses Flink's own Kubernetes integration: the JobManager creates
	// the TaskManager pods.
	DeploymentModeNative KubernetesDeploymentMode = "native"
	// DeploymentModeStandalone has the operator create the TaskManagers as a Deployment.
	DeploymentModeStandalone KubernetesDeploymentMode = "standalone"
)

// JobState is the state the user wants the job in.
// +kubebuilder:validation:Enum=running;suspended
type JobState string

const (
	// JobStateRunning: the job should process data.
	JobStateRunning JobState = "running"
	// JobStateSuspended: the job should be stopped, to be resumed later.
	JobStateSuspended JobState = "suspended"
)

// UpgradeMode says how the operator carries the job's state across a spec change.
// +kubebuilder:validation:Enum=stateless;savepoint;last-state
type UpgradeMode string

const (
	// UpgradeModeStateless restarts the job from empty state (what batch jobs use).
	UpgradeModeStateless UpgradeMode = "stateless"
	// UpgradeModeSavepoint stops the job with a savepoint and restores from it.
	UpgradeModeSavepoint UpgradeMode = "savepoint"
	// UpgradeModeLastState restores from the latest checkpoint or savepoint.
	UpgradeModeLastState UpgradeMode = "last-state"
)

// FlinkDeploymentSpec is the part of the operator's spec that slotplane models.
//
// The upstream spec has more fields (ingress, and on newer operators jobManager and
// taskManager resources). PreserveUnknownFields keeps them when an object that sets them is
// stored through the CRD generated from this type, instead of the API server pruning them.
// +kubebuilder:pruning:PreserveUnknownFields
type FlinkDeploymentSpec struct {
	// Image is the Flink image of the JobManager and TaskManager pods.
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy is the pull policy of Image.
	// +optional
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// ServiceAccount is the Kubernetes service account of the Flink pods.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`

	// FlinkVersion is the Flink version of Image.
	// +optional
	FlinkVersion FlinkVersion `json:"flinkVersion,omitempty"`

	// FlinkConfiguration overrides Flink configuration keys (flat keys such as
	// taskmanager.numberOfTaskSlots with string values). Newer operators also accept nested
	// YAML here; this package keeps to the flat form.
	// +optional
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`

	// LogConfiguration overrides logging files: file name (log4j-console.properties) to its
	// content.
	// +optional
	LogConfiguration map[string]string `json:"logConfiguration,omitempty"`

	// Mode is native or standalone.
	// +optional
	Mode KubernetesDeploymentMode `json:"mode,omitempty"`

	// PodTemplate is the base pod template of the JobManager and TaskManager pods; the
	// per-component templates are merged over it.
	//
	// The upstream CRD spells out the whole Pod schema here (thousands of lines). To keep the
	// generated CRD small, the schema only says "object" and preserves unknown fields, the
	// same schema controller-gen gives a runtime.RawExtension; the Go type stays a typed
	// PodTemplateSpec so slotplane can build it without hand-written JSON.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`

	// JobManager describes the JobManager pods.
	// +optional
	JobManager *JobManagerSpec `json:"jobManager,omitempty"`

	// TaskManager describes the TaskManager pods.
	// +optional
	TaskManager *TaskManagerSpec `json:"taskManager,omitempty"`

	// Job is the application-mode job; a deployment without it is a session cluster.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// RestartNonce restarts the cluster (and job) whenever it changes to a new non-null value.
	// +optional
	RestartNonce *int64 `json:"restartNonce,omitempty"`
}

// Resource is the CPU, memory and ephemeral storage of one JobManager or TaskManager pod.
type Resource struct {
	// CPU is the number of cores, fractions allowed (0.5). It is a JSON number in the
	// operator's API, so it is a float here. controller-gen refuses floats unless
	// crd:allowDangerousTypes is set, so the field is schemaless and its type given by hand.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=number
	// +optional
	CPU *float64 `json:"cpu,omitempty"`

	// Memory is the pod's memory in Flink's size notation, such as 1024m or 2g.
	// +optional
	Memory string `json:"memory,omitempty"`

	// EphemeralStorage is the pod's ephemeral storage, such as 1024m or 2G.
	// +optional
	EphemeralStorage string `json:"ephemeralStorage,omitempty"`
}

// JobManagerSpec describes the JobManager pods.
// +kubebuilder:pruning:PreserveUnknownFields
type JobManagerSpec struct {
	// Resource is the size of each JobManager pod.
	// +optional
	Resource *Resource `json:"resource,omitempty"`

	// Replicas is the number of JobManagers; more than one needs high availability. The
	// operator defaults it to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PodTemplate is merged over spec.podTemplate for the JobManager pods. Its schema is an
	// unknown-field-preserving object for the reason given on FlinkDeploymentSpec.PodTemplate.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// TaskManagerSpec describes the TaskManager pods.
// +kubebuilder:pruning:PreserveUnknownFields
type TaskManagerSpec struct {
	// Resource is the size of each TaskManager pod.
	// +optional
	Resource *Resource `json:"resource,omitempty"`

	// Replicas is the number of TaskManagers. When set it wins over the count the operator
	// derives from the job's parallelism and the slots per TaskManager. It is also the
	// replica count of the scale subresource.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PodTemplate is merged over spec.podTemplate for the TaskManager pods. Its schema is an
	// unknown-field-preserving object for the reason given on FlinkDeploymentSpec.PodTemplate.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate,omitempty"`
}

// JobSpec is the job an application-mode deployment runs.
// +kubebuilder:pruning:PreserveUnknownFields
type JobSpec struct {
	// JarURI is the job jar inside the image, such as local:///opt/flink/usrlib/app.jar;
	// without it the jar must already be on the classpath.
	// +optional
	JarURI string `json:"jarURI,omitempty"`

	// Parallelism is the job's default parallelism.
	// +optional
	Parallelism int32 `json:"parallelism,omitempty"`

	// EntryClass is the fully qualified main class.
	// +optional
	EntryClass string `json:"entryClass,omitempty"`

	// Args are passed to the main class in order.
	// +optional
	Args []string `json:"args,omitempty"`

	// State is running (the operator's default) or suspended.
	// +optional
	State JobState `json:"state,omitempty"`

	// UpgradeMode is stateless (the operator's default), savepoint or last-state.
	// +optional
	UpgradeMode UpgradeMode `json:"upgradeMode,omitempty"`

	// InitialSavepointPath is the savepoint the job starts from on its first deployment and
	// on savepoint redeployments.
	// +optional
	InitialSavepointPath string `json:"initialSavepointPath,omitempty"`

	// AllowNonRestoredState lets the job start from a savepoint with state it cannot map.
	// +optional
	AllowNonRestoredState *bool `json:"allowNonRestoredState,omitempty"`

	// SavepointTriggerNonce triggers a savepoint when changed (deprecated upstream in favour
	// of FlinkStateSnapshot resources).
	// +optional
	SavepointTriggerNonce *int64 `json:"savepointTriggerNonce,omitempty"`

	// CheckpointTriggerNonce triggers a checkpoint when changed (deprecated upstream in
	// favour of FlinkStateSnapshot resources).
	// +optional
	CheckpointTriggerNonce *int64 `json:"checkpointTriggerNonce,omitempty"`

	// SavepointRedeployNonce redeploys the job from InitialSavepointPath when changed.
	// +optional
	SavepointRedeployNonce *int64 `json:"savepointRedeployNonce,omitempty"`

	// AutoscalerResetNonce clears the autoscaler's history and overrides when changed.
	// +optional
	AutoscalerResetNonce *int64 `json:"autoscalerResetNonce,omitempty"`
}

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
	JobManagerDeploymentMissing JobManagerDeploymentStatus = "MISSING"
	// JobManagerDeploymentError: a terminal error; only a spec change lets reconciliation go on.
	JobManagerDeploymentError JobManagerDeploymentStatus = "ERROR"
)

// ResourceLifecycleState is where the FlinkDeployment is in the operator's lifecycle.
// +kubebuilder:validation:Enum=CREATED;SUSPENDED;UPGRADING;DEPLOYED;STABLE;ROLLING_BACK;ROLLED_BACK;FAILED;DELETING;DELETED
type ResourceLifecycleState string

const (
	// LifecycleStateCreated: stored, not yet handled by the operator.
	LifecycleStateCreated ResourceLifecycleState = "CREATED"
	// LifecycleStateSuspended: the job is suspended.
	LifecycleStateSuspended ResourceLifecycleState = "SUSPENDED"
	// LifecycleStateUpgrading: being moved to a new spec.
	LifecycleStateUpgrading ResourceLifecycleState = "UPGRADING"
	// LifecycleStateDeployed: submitted, not yet considered stable.
	LifecycleStateDeployed ResourceLifecycleState = "DEPLOYED"
	// LifecycleStateStable: deployed and considered stable.
	LifecycleStateStable ResourceLifecycleState = "STABLE"
	// LifecycleStateRollingBack: going back to the last stable spec.
	LifecycleStateRollingBack ResourceLifecycleState = "ROLLING_BACK"
	// LifecycleStateRolledBack: running the last stable spec.
	LifecycleStateRolledBack ResourceLifecycleState = "ROLLED_BACK"
	// LifecycleStateFailed: the job failed terminally.
	LifecycleStateFailed ResourceLifecycleState = "FAILED"
	// LifecycleStateDeleting: being deleted.
	LifecycleStateDeleting ResourceLifecycleState = "DELETING"
	// LifecycleStateDeleted: deleted.
	LifecycleStateDeleted ResourceLifecycleState = "DELETED"
)

// FlinkJobState is the state of the job as Flink itself reports it (Flink's JobStatus).
// +kubebuilder:validation:Enum=INITIALIZING;CREATED;RUNNING;FAILING;FAILED;CANCELLING;CANCELED;FINISHED;RESTARTING;SUSPENDED;RECONCILING
type FlinkJobState string

const (
	FlinkJobInitializing FlinkJobState = "INITIALIZING"
	FlinkJobCreated      FlinkJobState = "CREATED"
	FlinkJobRunning      FlinkJobState = "RUNNING"
	FlinkJobFailing      FlinkJobState = "FAILING"
	FlinkJobFailed       FlinkJobState = "FAILED"
	FlinkJobCancelling   FlinkJobState = "CANCELLING"
	FlinkJobCanceled     FlinkJobState = "CANCELED"
	// FlinkJobFinished is how a bounded (batch) job ends successfully.
	FlinkJobFinished    FlinkJobState = "FINISHED"
	FlinkJobRestarting  FlinkJobState = "RESTARTING"
	FlinkJobSuspended   FlinkJobState = "SUSPENDED"
	FlinkJobReconciling FlinkJobState = "RECONCILING"
)

// ReconciliationState is the deployment state of the last reconciled spec.
// +kubebuilder:validation:Enum=DEPLOYED;UPGRADING;ROLLING_BACK;ROLLED_BACK
type ReconciliationState string

const (
	ReconciliationDeployed    ReconciliationState = "DEPLOYED"
	ReconciliationUpgrading   ReconciliationState = "UPGRADING"
	ReconciliationRollingBack ReconciliationState = "ROLLING_BACK"
	ReconciliationRolledBack  ReconciliationState = "ROLLED_BACK"
)

// JobStatus is the last observed state of the Flink job.
// +kubebuilder:pruning:PreserveUnknownFields
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
}

// ReconciliationStatus describes the operator's last reconcile step.
// +kubebuilder:pruning:PreserveUnknownFields
type ReconciliationStatus struct {
	// ReconciliationTimestamp is the epoch time (milliseconds) of the last successful
	// reconcile.
	// +optional
	ReconciliationTimestamp int64 `json:"reconciliationTimestamp,omitempty"`

	// LastReconciledSpec is the last deployed spec, serialized as JSON by the operator.
	// +optional
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`

	// LastStableSpec is the last spec considered stable, serialized the same way.
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

// FlinkDeploymentStatus is what the operator reports about a deployment.
//
// The upstream status has more fields (conditions, and job savepoint and checkpoint
// information). PreserveUnknownFields keeps them through the CRD generated from this type.
// +kubebuilder:pruning:PreserveUnknownFields
type FlinkDeploymentStatus struct {
	// JobStatus is the last observed state of the job.
	// +optional
	JobStatus JobStatus `json:"jobStatus,omitempty"`

	// JobManagerDeploymentStatus is the last observed state of the JobManager deployment.
	// +optional
	JobManagerDeploymentStatus JobManagerDeploymentStatus `json:"jobManagerDeploymentStatus,omitempty"`

	// LifecycleState is where the resource is in the operator's lifecycle.
	// +optional
	LifecycleState ResourceLifecycleState `json:"lifecycleState,omitempty"`

	// Error is the operator's last error about this resource.
	// +optional
	Error string `json:"error,omitempty"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ClusterInfo holds facts the running cluster reports (Flink version and revision,
	// total CPU and memory, ...).
	// +optional
	ClusterInfo map[string]string `json:"clusterInfo,omitempty"`

	// ReconciliationStatus describes the last reconcile step.
	// +optional
	ReconciliationStatus ReconciliationStatus `json:"reconciliationStatus,omitempty"`

	// TaskManager feeds the scale subresource.
	// +optional
	TaskManager *TaskManagerInfo `json:"taskManager,omitempty"`
}

// FlinkDeployment is one Flink cluster (here: an application-mode job) run by the Flink
// Kubernetes Operator.
//
// The scale subresource matches upstream: it scales spec.taskManager.replicas.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.taskManager.replicas,selectorpath=.status.taskManager.labelSelector
// +kubebuilder:resource:scope=Namespaced,shortName=flinkdep,singular=flinkdeployment
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=`.status.jobStatus.state`
// +kubebuilder:printcolumn:name="Lifecycle State",type=string,JSONPath=`.status.lifecycleState`
// +kubebuilder:printcolumn:name="JobManager",type=string,JSONPath=`.status.jobManagerDeploymentStatus`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FlinkDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec FlinkDeploymentSpec `json:"spec,omitempty"`
	// +optional
	Status FlinkDeploymentStatus `json:"status,omitempty"`
}

// FlinkDeploymentList is a list of FlinkDeployments.
// +kubebuilder:object:root=true
type FlinkDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkDeployment `json:"items"`
}
