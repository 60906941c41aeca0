package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Framework is the engine a BatchJob runs on, and so the operator that runs its application.
// +kubebuilder:validation:Enum=spark;flink
type Framework string

const (
	// FrameworkSpark runs the job as a SparkApplication (sparkoperator.k8s.io/v1beta2).
	FrameworkSpark Framework = "spark"
	// FrameworkFlink runs the job as a FlinkDeployment in application mode
	// (flink.apache.org/v1beta1).
	FrameworkFlink Framework = "flink"
)

// BatchJobSpec is what a user persists about a job; what depends on the scheduling (slots,
// replication, executor size) is added when the application is created.
// +kubebuilder:validation:XValidation:rule="!has(self.sparkApplication) || self.framework == 'spark'",message="sparkApplication is only allowed when framework is spark"
// +kubebuilder:validation:XValidation:rule="!has(self.flinkDeployment) || self.framework == 'flink'",message="flinkDeployment is only allowed when framework is flink"
// +kubebuilder:validation:XValidation:rule="!has(self.application.type) || self.framework == 'spark'",message="application.type is only allowed when framework is spark"
type BatchJobSpec struct {
	// Framework is spark or flink. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="framework is immutable"
	Framework Framework `json:"framework"`

	// Application is the part of the job that is the same on every run.
	Application Application `json:"application"`

	// DriverResources are the requests (and limits) of the Spark driver or the Flink
	// JobManager. Executors and TaskManagers always get the size of the slot they run in.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(r, quantity(string(self[r])).isGreaterThan(quantity('0')))",message="every quantity in driverResources must be greater than zero"
	// +optional
	DriverResources corev1.ResourceList `json:"driverResources,omitempty"`

	// Queue is the queue the job is submitted to, as a dotted path (root.analytics.daily);
	// empty leaves the choice to the placement rules.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_-]+(\\\\.[A-Za-z0-9_-]+)*$')",message="queue must be a dotted path of names made of letters, digits, '-' and '_', such as root.analytics"
	// +optional
	Queue string `json:"queue,omitempty"`

	// User is who the job runs for: queue ACLs, per-user limits and placement rules use it.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	User string `json:"user,omitempty"`

	// Groups are the user's groups, the first being the primary one: queue ACLs and the
	// primaryGroup and secondaryGroup placement rules use them. The REST API sets user and
	// groups from the caller's identity. With kubectl, the admission policy
	// slotplane-batchjob-identity lets a maker name only itself and its own groups, unless
	// it may impersonate (or submit-as, in slotplane.io) the users and groups it names.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`

	// Priority orders the job among the waiting jobs of its leaf queue: a higher priority
	// goes first, before submission order, in every policy. Preemption takes slots from the
	// lowest priority first. Default 0.
	// +kubebuilder:validation:Minimum=-1000000
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// ExpectedDuration is how long the job is expected to run once it has its slots. Only
	// backfill reads it: in a queue with backfill on, a job with an expected duration may
	// start before the reserving head of a strict queue when it cannot delay the head.
	// +optional
	ExpectedDuration *metav1.Duration `json:"expectedDuration,omitempty"`

	// SparkApplication is an optional SparkApplication spec (sparkoperator.k8s.io/v1beta2) to
	// start from. slotplane overwrites the fields it controls: image, main class and file,
	// arguments, driver resources, and the whole executor placement (size, instances,
	// scheduler, priority class, affinity, slot ids). Only the fields on slotplane's
	// allow-list may be set (no service accounts, secrets, volumes or pod templates unless
	// the namespace's ConfigMap slotplane-job-policy allows them); condition SpecAllowed
	// names any other.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	SparkApplication *runtime.RawExtension `json:"sparkApplication,omitempty"`

	// FlinkDeployment is an optional FlinkDeployment spec (flink.apache.org/v1beta1) to start
	// from, with the same overwrite rule and allow-list as SparkApplication.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	FlinkDeployment *runtime.RawExtension `json:"flinkDeployment,omitempty"`

	// SuspendedOutcome is how a run ends whose application is suspended or stopped before it
	// finished: a FlinkDeployment whose job.state is set to suspended (a streaming job stopped
	// with its state kept), or a SparkApplication whose suspend is set. Completed (the
	// default: a planned stop) or Failed.
	// +kubebuilder:validation:Enum=Completed;Failed
	// +optional
	SuspendedOutcome RunOutcome `json:"suspendedOutcome,omitempty"`
}

// SparkType is the language of a Spark application.
// +kubebuilder:validation:Enum=Java;Scala;Python;R
type SparkType string

// Application is the persistent part of a job: its image, entry point, arguments and data.
type Application struct {
	// Image is the container image holding the application.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Image string `json:"image"`

	// Version is the engine version: the Spark version (3.5.3) or the Flink version as the
	// Flink operator names it (v1_20). Empty takes slotplane's default for the framework.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Version string `json:"version,omitempty"`

	// Type is the language of a Spark application; Flink jobs have none.
	// +optional
	Type SparkType `json:"type,omitempty"`

	// MainClass is the entry class (Spark mainClass, Flink job.entryClass).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	MainClass string `json:"mainClass,omitempty"`

	// MainApplicationFile is the jar or script to run (Spark mainApplicationFile, Flink
	// job.jarURI), such as local:///opt/app/app.jar.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	MainApplicationFile string `json:"mainApplicationFile"`

	// Arguments are passed to the main class in order.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Arguments []string `json:"arguments,omitempty"`

	// Dataset is where the input data lives (hdfs://..., s3a://..., file:///...). The
	// application receives it in the environment variable SLOTPLANE_DATASET.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Dataset string `json:"dataset,omitempty"`
}

// BatchJobState is where a job is in its lifecycle:
// Ready -> InQueue -> Submitted -> Running -> Completed | Failed, and back to Ready when its
// Scheduling releases it.
// +kubebuilder:validation:Enum=Ready;InQueue;Submitted;Running;Completed;Failed
type BatchJobState string

const (
	// JobReady: no Scheduling holds the job.
	JobReady BatchJobState = "Ready"
	// JobInQueue: a Scheduling holds the job and has not yet asked for its application.
	JobInQueue BatchJobState = "InQueue"
	// JobSubmitted: the application exists; not all its pods are placed yet. A run whose
	// pods are all placed within a second of its application's creation goes from InQueue
	// to Running without it (status.phases.applicationCreatedAt keeps the time).
	JobSubmitted BatchJobState = "Submitted"
	// JobRunning: the application's pods run in their slots.
	JobRunning BatchJobState = "Running"
	// JobCompleted: the application finished successfully.
	JobCompleted BatchJobState = "Completed"
	// JobFailed: the application failed, or could not be created.
	JobFailed BatchJobState = "Failed"
)

// Ended: a run in this state is over (Completed or Failed).
func (s BatchJobState) Ended() bool { return s == JobCompleted || s == JobFailed }

// ApplicationRef names the SparkApplication or FlinkDeployment a job created.
type ApplicationRef struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid,omitempty"`
}

// RunPhases are the moments of one run of a job as slotplane saw them, to the microsecond.
// Each is set once per run, when the worker first saw it: a worker restart in between
// stamps what it finds already done at the time it finds it.
type RunPhases struct {
	// AdmittedAt is when the test bed's Admission granted the run its slots (the Scheduling
	// took the grant).
	// +optional
	AdmittedAt *metav1.MicroTime `json:"admittedAt,omitempty"`
	// ApplicationCreatedAt is when the SparkApplication or FlinkDeployment was created.
	// +optional
	ApplicationCreatedAt *metav1.MicroTime `json:"applicationCreatedAt,omitempty"`
	// DriverRunningAt is when the driver or JobManager pod was first seen running.
	// +optional
	DriverRunningAt *metav1.MicroTime `json:"driverRunningAt,omitempty"`
	// ExecutorsPlacedAt are the moments the executors or TaskManagers were seen bound in
	// their slots, in order: the first is the first executor's.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4096
	// +optional
	ExecutorsPlacedAt []metav1.MicroTime `json:"executorsPlacedAt,omitempty"`
	// RunningAt is when every executor or TaskManager ran in its slot.
	// +optional
	RunningAt *metav1.MicroTime `json:"runningAt,omitempty"`
	// EndedAt is when the application was seen completed or failed.
	// +optional
	EndedAt *metav1.MicroTime `json:"endedAt,omitempty"`
}

// BatchJobStatus is the observed lifecycle of a job.
type BatchJobStatus struct {
	// State is Ready, InQueue, Submitted, Running, Completed or Failed. A job no Scheduling
	// has touched reads as Ready (a schema default applied when the object is read).
	// +kubebuilder:default=Ready
	// +optional
	State BatchJobState `json:"state,omitempty"`
	// Scheduling is the name of the Scheduling (same namespace) that holds the job.
	// +optional
	Scheduling string `json:"scheduling,omitempty"`
	// TestBed is the test bed whose slots the job runs in.
	// +optional
	TestBed string `json:"testBed,omitempty"`
	// Slots are the slot ids the job's executors or TaskManagers were given.
	// +listType=atomic
	// +optional
	Slots []int32 `json:"slots,omitempty"`
	// Run is the number of the creation request the job carried out last (0: none).
	// +optional
	Run int32 `json:"run,omitempty"`
	// Application is the SparkApplication or FlinkDeployment the job created.
	// +optional
	Application *ApplicationRef `json:"application,omitempty"`
	// QueuedAt is when a Scheduling claimed the job (Ready -> InQueue).
	// +optional
	QueuedAt *metav1.Time `json:"queuedAt,omitempty"`
	// SubmittedAt is when the application was created.
	// +optional
	SubmittedAt *metav1.Time `json:"submittedAt,omitempty"`
	// RunningAt is when the application's pods were all placed.
	// +optional
	RunningAt *metav1.Time `json:"runningAt,omitempty"`
	// FinishedAt is when the application completed or failed.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Phases are the moments of the current run, to the microsecond: where the time
	// between a grant and running pods goes, and when the run ended.
	// +optional
	Phases *RunPhases `json:"phases,omitempty"`
	// History are the job's ended runs, oldest first: the last MaxRunHistory of them (fewer
	// when their slots and nodes are many, see MaxHistoryBytes). A run is added when it
	// completes, fails, or is released before it ended. The current run is not in it.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	History []RunRecord `json:"history,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions follow the Kubernetes conventions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Message says, for a person, why the job is in its state.
	// +optional
	Message string `json:"message,omitempty"`
	// Reason says, for a program, why the job is in its state, when a cause other than its
	// application's own end put it there: Killed (a person killed the run; see Message).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Queue is the leaf queue the job is in now: where its test bed's Admission placed it
	// (spec.queue, or what the placement rules chose), or where a move took it since.
	// The claim of a Scheduling writes the queue the placement rules put the job in (what
	// it asks for, spec.queue else the Scheduling's, as placed), and Admission the one it
	// chose where that differs; it stays once the run ended, and goes when no Scheduling
	// holds the job.
	// +optional
	Queue string `json:"queue,omitempty"`
}

// ReasonKilled is the BatchJob status reason of a run that was killed
// (DELETE /api/v1/jobs/{name}/run, slotplane kill): its application was deleted and the job
// ended Failed.
const ReasonKilled = "Killed"

// RunOutcome is how a run of a job ended.
// +kubebuilder:validation:Enum=Completed;Failed;Released
type RunOutcome string

const (
	// RunCompleted: the application finished successfully.
	RunCompleted RunOutcome = "Completed"
	// RunFailed: the application failed, was deleted, or could not be created.
	RunFailed RunOutcome = "Failed"
	// RunReleased: its Scheduling let go of the job (or another took it) before the run
	// ended; its application was deleted.
	RunReleased RunOutcome = "Released"
)

// RunRecord is one ended run of a job: which Scheduling ran it, in which slots and on which
// nodes, next to which other jobs, when each phase came, and how it ended. External
// schedulers read it to learn from earlier runs (how long a job takes, which neighbours slow
// it down).
type RunRecord struct {
	// Run and Scheduling name the run: the creation request's run number, which counts the
	// requests of one Scheduling for the job.
	Run        int32  `json:"run"`
	Scheduling string `json:"scheduling"`
	// TestBed is the test bed whose slots it held.
	// +optional
	TestBed string `json:"testBed,omitempty"`
	// Slots are the slot positions its executors or TaskManagers were given.
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	// +optional
	Slots []int32 `json:"slots,omitempty"`
	// Nodes are the nodes of those slots, each once, in slot order.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	Nodes []string `json:"nodes,omitempty"`
	// SharedWith are the other BatchJobs (same namespace) whose runs held slots on one of
	// these nodes at some time while this run's application existed, sorted by name; at
	// most MaxSharedWith, SharedWithMore counts those left out.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +optional
	SharedWith []string `json:"sharedWith,omitempty"`
	// +optional
	SharedWithMore int32 `json:"sharedWithMore,omitempty"`
	// QueuedAt is when the Scheduling claimed the job; the phases follow RunPhases.
	// +optional
	QueuedAt *metav1.Time `json:"queuedAt,omitempty"`
	// +optional
	AdmittedAt *metav1.MicroTime `json:"admittedAt,omitempty"`
	// +optional
	ApplicationCreatedAt *metav1.MicroTime `json:"applicationCreatedAt,omitempty"`
	// +optional
	RunningAt *metav1.MicroTime `json:"runningAt,omitempty"`
	// +optional
	EndedAt *metav1.MicroTime `json:"endedAt,omitempty"`
	// Wait is how long the run waited for its slots: from the claim to the grant.
	// +optional
	Wait *metav1.Duration `json:"wait,omitempty"`
	// Outcome is Completed, Failed or Released.
	Outcome RunOutcome `json:"outcome"`
	// Message says why it ended so (at most MaxJobMessage bytes).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`
}

// The bounds of a job's run history. MaxHistoryBytes bounds what the records' slots, nodes
// and neighbours add to the object, so twenty runs of a job of a thousand slots still fit
// etcd's limit with room for the rest: older records go first.
const (
	MaxRunHistory   = 20
	MaxSharedWith   = 64
	MaxHistoryBytes = 256 << 10
)

// BatchJob is one Spark or Flink application that Schedulings run in test bed slots.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bj,categories=slotplane
// +kubebuilder:printcolumn:name="Framework",type=string,JSONPath=`.spec.framework`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.status.queue`
// +kubebuilder:printcolumn:name="Requested",type=string,JSONPath=`.spec.queue`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Scheduling",type=string,JSONPath=`.status.scheduling`
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.user`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BatchJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BatchJobSpec `json:"spec"`
	// +kubebuilder:default={}
	// +optional
	Status BatchJobStatus `json:"status,omitempty"`
}

// BatchJobList is a list of BatchJobs.
// +kubebuilder:object:root=true
type BatchJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BatchJob `json:"items"`
}
