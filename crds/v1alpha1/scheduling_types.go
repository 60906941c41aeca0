package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"unicode/utf8"
)

// SchedulingMode says how a Scheduling maps its jobs onto slots.
// +kubebuilder:validation:Enum=SlotBased;QueueBased
type SchedulingMode string

const (
	// SlotBased: every job names the exact slots it runs in, and waits until those are free.
	SlotBased SchedulingMode = "SlotBased"
	// QueueBased: every job asks for a number of slots; the queue policies decide who gets
	// free slots next.
	QueueBased SchedulingMode = "QueueBased"
)

// SchedulingSpec is an ordered queue of jobs to run on one test bed. Jobs may be appended
// while the Scheduling runs (online scheduling).
// +kubebuilder:validation:XValidation:rule="self.mode != 'SlotBased' || self.jobs.all(j, has(j.slotIDs))",message="every job of a SlotBased scheduling needs slotIDs"
// +kubebuilder:validation:XValidation:rule="self.mode != 'SlotBased' || self.jobs.all(j, !has(j.slotIDs) || size(j.slotIDs) == j.replication)",message="a job of a SlotBased scheduling needs exactly as many slotIDs as its replication"
// +kubebuilder:validation:XValidation:rule="self.mode != 'QueueBased' || self.jobs.all(j, !has(j.slotIDs))",message="slotIDs are only allowed in a SlotBased scheduling"
// +kubebuilder:validation:XValidation:rule="has(self.ttlSecondsAfterFinished) == has(oldSelf.ttlSecondsAfterFinished) && (!has(self.ttlSecondsAfterFinished) || self.ttlSecondsAfterFinished == oldSelf.ttlSecondsAfterFinished)",message="ttlSecondsAfterFinished is immutable"
type SchedulingSpec struct {
	// TestBed is the name of the test bed (same namespace) whose slots the jobs run in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="testBed is immutable"
	TestBed string `json:"testBed"`

	// Mode is SlotBased or QueueBased. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mode is immutable"
	Mode SchedulingMode `json:"mode"`

	// Queue is the queue the jobs are submitted to when they do not name their own, as a
	// dotted path (root.analytics).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_-]+(\\\\.[A-Za-z0-9_-]+)*$')",message="queue must be a dotted path of names made of letters, digits, '-' and '_', such as root.analytics"
	// +optional
	Queue string `json:"queue,omitempty"`

	// User is who runs the Scheduling, and Groups that user's groups. A Scheduling may claim
	// a BatchJob of another user only if User may submit jobs for that user (Kubernetes'
	// impersonate on the user, or slotplane's submit-as on users.slotplane.io); a job of
	// User's own, or of no user, it may always claim. The REST API sets both from the
	// caller. With kubectl, the admission policy slotplane-scheduling-identity lets a maker
	// name only itself and its own groups, and leave User empty only if it may submit for
	// anyone; an empty User claims any job.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="user is immutable"
	// +optional
	User string `json:"user,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="groups are immutable"
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`

	// Jobs is the ordered queue. A job appears at most once. At most 1000 jobs
	// (MaxSchedulingJobs) of at most 16384 slots together (MaxSchedulingSlots).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:XValidation:rule="self.map(j, j.replication).sum() <= 16384",message="a scheduling's jobs have at most 16384 slots together"
	// +listType=map
	// +listMapKey=name
	Jobs []SchedulingJob `json:"jobs"`

	// TTLSecondsAfterFinished, when set, deletes the Scheduling this many seconds after it
	// ended (Completed or Failed), as the field of the same name does for a Kubernetes Job:
	// its jobs are released and its workflow ends. It is counted from status.finishedAt; 0
	// deletes it as soon as it ends. Unset, an ended Scheduling stays, holding its jobs,
	// until it is deleted. It cannot change: the workflow takes it when the Scheduling
	// starts.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// MaxTTLSecondsAfterFinished is the longest TTLSecondsAfterFinished: a year.
const MaxTTLSecondsAfterFinished = 365 * 24 * 60 * 60

// The sizes a Scheduling may reach. A Scheduling of MaxSchedulingJobs jobs with the longest
// names, MaxSchedulingSlots slots and every status message at MaxJobMessage stays under 1 MB
// as an object (etcd's limit is 1.5 MB) and as what its workflow carries across
// continue-as-new (Temporal's limit on a payload is 2 MB): TestSchedulingSizesFit checks
// both. The schema's markers repeat the numbers.
const (
	MaxSchedulingJobs  = 1000
	MaxReplication     = 1024
	MaxSchedulingSlots = 16384
	// MaxJobMessage is the most characters of a job's message in the Scheduling's status;
	// a longer one is cut (the BatchJob keeps it whole).
	MaxJobMessage = 256
)

// ClipMessage keeps a message slotplane writes on an object within MaxJobMessage bytes,
// cut at a character boundary and marked "...".
func ClipMessage(m string) string {
	if len(m) <= MaxJobMessage {
		return m
	}
	cut := MaxJobMessage - len("...")
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return m[:cut] + "..."
}

// SchedulingJob is one entry of a Scheduling's queue.
type SchedulingJob struct {
	// Name is the BatchJob (same namespace).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Replication is the number of executors (Spark) or TaskManagers (Flink), one per slot.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="replication must be at least 1"
	// +kubebuilder:validation:XValidation:rule="self <= 1024",message="replication must be at most 1024"
	Replication int32 `json:"replication"`

	// SlotIDs are the slot positions the job runs in (SlotBased mode only), one per replica.
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:Minimum=0
	// +listType=set
	// +optional
	SlotIDs []int32 `json:"slotIDs,omitempty"`
}

// SchedulingState is where a Scheduling is in its lifecycle:
// Acquiring -> Scheduling -> AwaitingCompletion -> Completed | Failed | Cancelled.
// +kubebuilder:validation:Enum=Acquiring;Scheduling;AwaitingCompletion;Completed;Failed;Cancelled
type SchedulingState string

const (
	// SchedulingAcquiring: claiming the jobs.
	SchedulingAcquiring SchedulingState = "Acquiring"
	// SchedulingScheduling: jobs are being admitted into slots as they free up.
	SchedulingScheduling SchedulingState = "Scheduling"
	// SchedulingAwaitingCompletion: the queue is empty; waiting for the last jobs to end.
	SchedulingAwaitingCompletion SchedulingState = "AwaitingCompletion"
	// SchedulingCompleted: every job ended.
	SchedulingCompleted SchedulingState = "Completed"
	// SchedulingFailed: the Scheduling could not run (a job or the test bed is missing).
	SchedulingFailed SchedulingState = "Failed"
	// SchedulingCancelled: the Scheduling was cancelled; its claims were released.
	SchedulingCancelled SchedulingState = "Cancelled"
)

// Ended: a Scheduling in this state is done for good (Completed, Failed or Cancelled).
func (s SchedulingState) Ended() bool {
	return s == SchedulingCompleted || s == SchedulingFailed || s == SchedulingCancelled
}

// SchedulingJobStatus is the progress of one job of the queue.
type SchedulingJobStatus struct {
	// Name is the BatchJob.
	Name string `json:"name"`
	// State mirrors the BatchJob's state as this Scheduling last saw it.
	// +optional
	State BatchJobState `json:"state,omitempty"`
	// Slots are the slot ids the job was given.
	// +listType=atomic
	// +optional
	Slots []int32 `json:"slots,omitempty"`
	// Message says why the job is in its state.
	// +optional
	Message string `json:"message,omitempty"`
	// WaitTime is how long the job waited in this Scheduling's queue: from the Scheduling's
	// start to the creation of its application.
	// +optional
	WaitTime *metav1.Duration `json:"waitTime,omitempty"`
	// RunTime is how long its application took, from creation to its end.
	// +optional
	RunTime *metav1.Duration `json:"runTime,omitempty"`
}

// SchedulingStatus is the observed progress of a Scheduling.
type SchedulingStatus struct {
	// State is Acquiring, Scheduling, AwaitingCompletion, Completed, Failed or Cancelled.
	// +optional
	State SchedulingState `json:"state,omitempty"`
	// The list is atomic: slotplane alone writes it, whole, and a merge by name would cost
	// the API server a managed-fields entry per job: with 1,000 jobs, each status write took
	// about twice as long (230-290 against 110-160 ms on an idle test API server).

	// Jobs has the progress of every job, in queue order.
	// +listType=atomic
	// +optional
	Jobs []SchedulingJobStatus `json:"jobs,omitempty"`
	// TotalJobs, RunningJobs and FinishedJobs count the queue's jobs.
	// +optional
	TotalJobs int32 `json:"totalJobs,omitempty"`
	// +optional
	RunningJobs int32 `json:"runningJobs,omitempty"`
	// +optional
	FinishedJobs int32 `json:"finishedJobs,omitempty"`
	// StartedAt and FinishedAt bound the Scheduling's run.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions follow the Kubernetes conventions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Message says, for a person, why the Scheduling is in its state.
	// +optional
	Message string `json:"message,omitempty"`
}

// Scheduling runs an ordered queue of BatchJobs on a test bed, slot-based or queue-based.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sched,categories=slotplane
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="TestBed",type=string,JSONPath=`.spec.testBed`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Jobs",type=integer,JSONPath=`.status.totalJobs`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.runningJobs`
// +kubebuilder:printcolumn:name="Finished",type=integer,JSONPath=`.status.finishedJobs`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Scheduling struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SchedulingSpec `json:"spec"`
	// +optional
	Status SchedulingStatus `json:"status,omitempty"`
}

// SchedulingList is a list of Schedulings.
// +kubebuilder:object:root=true
type SchedulingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Scheduling `json:"items"`
}
