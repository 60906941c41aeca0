package v1beta1

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkVersion is the Flink version of the image, in the operator's vMAJOR_MINOR notation.
//
// The enum is the one of the CRD the 1.15.0 release ships: every version the operator has
// ever named, including the ones it no longer supports (v1_13, v1_14) or has deprecated
// (v1_15 to v1_18), which the CRD accepts and the operator's validation rejects or warns
// about. The operator's Java enum at that tag also lists v2_3 and v2_4, but the CRD in the
// release's Helm chart was not regenerated after they were added, so an API server with the
// released CRD refuses them; so does this one.
// +kubebuilder:validation:Enum=v1_13;v1_14;v1_15;v1_16;v1_17;v1_18;v1_19;v1_20;v2_0;v2_1;v2_2
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

// FlinkDeploymentSpec is what the user asks of the operator: an application cluster (with
// Job) or a session cluster (without).
type FlinkDeploymentSpec struct {
	// Job is the application-mode job; a deployment without it is a session cluster.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// RestartNonce restarts the cluster (and job) whenever it changes to a new non-null value.
	// +optional
	RestartNonce *int64 `json:"restartNonce,omitempty"`

	// FlinkConfiguration overrides Flink configuration keys. The operator takes flat keys
	// (taskmanager.numberOfTaskSlots: "2") and nested YAML alike, with any JSON values, so
	// the schema leaves the field open; in Go it is the flat string form Flink reads in the
	// end (see FlinkConfiguration).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	FlinkConfiguration FlinkConfiguration `json:"flinkConfiguration,omitempty"`

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

	// Ingress, when set, has the operator expose the JobManager's web UI and REST API
	// through an Ingress.
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// PodTemplate is the base pod of the JobManager and TaskManager pods; the per-component
	// templates are merged over it.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`

	// JobManager describes the JobManager pods.
	// +optional
	JobManager *JobManagerSpec `json:"jobManager,omitempty"`

	// TaskManager describes the TaskManager pods.
	// +optional
	TaskManager *TaskManagerSpec `json:"taskManager,omitempty"`

	// LogConfiguration overrides logging files: file name (log4j-console.properties) to its
	// content.
	// +optional
	LogConfiguration map[string]string `json:"logConfiguration,omitempty"`

	// Mode is native or standalone.
	// +optional
	Mode KubernetesDeploymentMode `json:"mode,omitempty"`
}

// IngressSpec is the Ingress the operator puts in front of the JobManager's REST service.
type IngressSpec struct {
	// Template is the host and path of the Ingress rule. It may hold {{name}} and
	// {{namespace}}, which the operator fills in, such as "{{name}}.flink.example.com" or
	// "/{{namespace}}/{{name}}(/|$)(.*)".
	// +optional
	Template string `json:"template,omitempty"`

	// ClassName is the IngressClass of the Ingress.
	// +optional
	ClassName string `json:"className,omitempty"`

	// Annotations go on the Ingress, for the ingress controller to read.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels go on the Ingress.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// TLS lists the hosts served over TLS and the secret with their certificate.
	// +optional
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
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
type JobManagerSpec struct {
	// Resource is the size of each JobManager pod.
	// +optional
	Resource *Resource `json:"resource,omitempty"`

	// Replicas is the number of JobManagers; more than one needs high availability. The
	// operator defaults it to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PodTemplate is merged over spec.podTemplate for the JobManager pods.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// TaskManagerSpec describes the TaskManager pods.
type TaskManagerSpec struct {
	// Resource is the size of each TaskManager pod.
	// +optional
	Resource *Resource `json:"resource,omitempty"`

	// Replicas is the number of TaskManagers. When set it wins over the count the operator
	// derives from the job's parallelism and the slots per TaskManager. It is also the
	// replica count of the scale subresource.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PodTemplate is merged over spec.podTemplate for the TaskManager pods.
	// +optional
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
}

// JobSpec is the job an application-mode deployment runs.
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

	// SavepointTriggerNonce triggers a savepoint when changed (deprecated upstream in favour
	// of FlinkStateSnapshot resources).
	// +optional
	SavepointTriggerNonce *int64 `json:"savepointTriggerNonce,omitempty"`

	// InitialSavepointPath is the savepoint the job starts from on its first deployment and
	// on savepoint redeployments.
	// +optional
	InitialSavepointPath string `json:"initialSavepointPath,omitempty"`

	// CheckpointTriggerNonce triggers a checkpoint when changed (deprecated upstream in
	// favour of FlinkStateSnapshot resources).
	// +optional
	CheckpointTriggerNonce *int64 `json:"checkpointTriggerNonce,omitempty"`

	// UpgradeMode is stateless (the operator's default), savepoint or last-state.
	// +optional
	UpgradeMode UpgradeMode `json:"upgradeMode,omitempty"`

	// AllowNonRestoredState lets the job start from a savepoint with state it cannot map.
	// +optional
	AllowNonRestoredState *bool `json:"allowNonRestoredState,omitempty"`

	// SavepointRedeployNonce redeploys the job from InitialSavepointPath when changed; the
	// operator cannot roll such a redeployment back.
	// +optional
	SavepointRedeployNonce *int64 `json:"savepointRedeployNonce,omitempty"`

	// AutoscalerResetNonce clears the autoscaler's history and overrides when changed.
	// +optional
	AutoscalerResetNonce *int64 `json:"autoscalerResetNonce,omitempty"`
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
