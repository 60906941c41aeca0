// Package apitypes holds the REST API's wire types: the requests, answers, change-feed
// events and errors of /api/v1, as JSON carries them. It imports only slotplane's CRD types
// and the Kubernetes API machinery, so a client (apiclient, an external scheduler) can use
// them without the server's dependencies; package api serves them.
package apitypes

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"slotplane/crds/v1alpha1"
)

// The codes an answer can carry.
const (
	CodeBadRequest      = "bad_request"       // the body is not one JSON object of the right shape
	CodeInvalid         = "invalid"           // well formed, but fields break the rules (Fields says which)
	CodeUnauthorized    = "unauthorized"      // no token, or one nobody issued
	CodeForbidden       = "forbidden"         // the caller may not do this
	CodeNotFound        = "not_found"         // the object named in the path does not exist
	CodeConflict        = "conflict"          // it exists already, or changed since it was read
	CodeTooLarge        = "too_large"         // the body is over the limit
	CodeTooManyRequests = "too_many_requests" // a cap on connections or requests is reached (Retry-After says when to try again)
	CodeUnavailable     = "unavailable"       // Kubernetes or Temporal did not answer
	CodeInternal        = "internal"          // a fault of slotplane's
)

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Resync   EventType = "RESYNC"
)

// The kinds the feed carries, as events name them, and as ?kinds= selects them.
const (
	KindScheduling = "Scheduling"
	KindBatchJob   = "BatchJob"
	KindTestBed    = "TestBed"
	KindSlotSlice  = "SlotSlice"
)

// Subprotocol is the feed's websocket subprotocol. A browser, which cannot set the
// Authorization header on a websocket, offers its token as a second subprotocol,
// "bearer.<token>"; the server answers with Subprotocol only.
const Subprotocol = "slotplane.v1"

// User is who a request comes from, with the groups queue ACLs test. UID and Extra are
// what a cluster's TokenReview says besides, passed on to its SubjectAccessReviews.
type User struct {
	Name   string              `json:"name"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
	// Scope is what a token file's token may do (TokenScopes); nil for other users.
	Scope *TokenScope `json:"scope,omitempty"`
}

// TokenScope is what a token-file token may do: act in some namespaces (all if Namespaces
// holds "*"), and submit or claim jobs as other users and groups (ActAs, ActAsGroups; "*"
// is anyone). Nothing else: a plain token acts for its own user in its namespaces.
type TokenScope struct {
	Namespaces  []string `json:"namespaces"`
	ActAs       []string `json:"actAs,omitempty"`
	ActAsGroups []string `json:"actAsGroups,omitempty"`
}

// Error is every failed answer's body: a stable code a program can switch on, a message
// for people, and the request fields at fault, if any.
type Error struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields,omitempty"`
	// Status is the answer's HTTP status, which the server sets; it is not in the body.
	Status int `json:"-"`
}

// FieldError names one field of the request and what is wrong with it. Field is a path
// into the request body (jobs[2].slotIDs) or a query parameter.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// EventType is what happened to an object, or RESYNC: the whole picture, sent first and
// again whenever a client cannot be told the changes one by one.
type EventType string

// Event is one message of the change feed. A change carries the object as the REST API
// shows it (Scheduling, Job or TestBed). A RESYNC carries every object the client watches in
// Items, each as its latest change (ADDED or MODIFIED) carried it, and Reason says why it
// was sent; the client replaces what it knows with it. ResourceVersion is where a
// client resumes from (?resourceVersion=): a change's is its object's, a RESYNC's is that of
// the last change it includes (empty before the first change the feed saw).
type Event struct {
	Type            EventType `json:"type"`
	Kind            string    `json:"kind,omitempty"`
	ResourceVersion string    `json:"resourceVersion"`
	Object          any       `json:"object,omitempty"`
	Items           []Event   `json:"items,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	// Feed names, on a RESYNC, the API replica's feed that sent it. A client names it with
	// the resourceVersion it resumes from: each replica sends its changes in its own order,
	// so only the same one can resume (another sends a RESYNC).
	Feed string `json:"feed,omitempty"`
}

// Job is a BatchJob as the API shows it.
type Job struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion"`
	// Labels are the BatchJob's labels (a scheduler selects its jobs by them).
	Labels map[string]string `json:"labels,omitempty"`
	// CreatedAt is when the BatchJob was made: a job's arrival, to a scheduler.
	CreatedAt       *metav1.Time         `json:"createdAt,omitempty"`
	Framework       v1alpha1.Framework   `json:"framework"`
	Application     v1alpha1.Application `json:"application"`
	DriverResources corev1.ResourceList  `json:"driverResources,omitempty"`
	Queue           string               `json:"queue,omitempty"`
	Priority        int32                `json:"priority,omitempty"`
	User            string               `json:"user,omitempty"`
	Groups          []string             `json:"groups,omitempty"`
	// SuspendedOutcome is how a run ends whose application is suspended ("": Completed).
	SuspendedOutcome v1alpha1.RunOutcome `json:"suspendedOutcome,omitempty"`
	// Scheduling is the Scheduling that holds the job now; empty once it is released.
	Scheduling string `json:"scheduling,omitempty"`
	// SchedulerData are the notes external schedulers keep on the job (the annotations
	// under v1alpha1.SchedulerDataPrefix); slotplane never changes them.
	SchedulerData map[string]string       `json:"schedulerData,omitempty"`
	Status        v1alpha1.BatchJobStatus `json:"status"`
}

// SchedulerDataPatch changes a job's scheduler data (PATCH /jobs/{name}/scheduler-data) as a
// JSON merge patch does: a name with a value sets it, a name with null removes it, names
// left out stay.
type SchedulerDataPatch map[string]*string

// TestBed is a test bed with its slots. GET /testbeds/{name} gives every slot; the feed's
// TestBed events give the counts only (Slots empty), and its SlotSlice events the slots.
type TestBed struct {
	Name            string               `json:"name"`
	Namespace       string               `json:"namespace"`
	ResourceVersion string               `json:"resourceVersion"`
	Spec            v1alpha1.TestBedSpec `json:"spec"`
	Status          TestBedStatus        `json:"status"`
}

// TestBedStatus is a test bed's counts and conditions, with its slots.
type TestBedStatus struct {
	v1alpha1.TestBedStatus
	// Slots are the bed's slots, ordered by position.
	Slots []v1alpha1.SlotStatus `json:"slots,omitempty"`
}

// SlotSlice is one of a test bed's slot slices: the slots at positions Index*100 to
// Index*100+99 (v1alpha1.SlotsPerSlice). The feed carries a bed's slots as these, so that a
// change of one slot sends a hundred slots, not the whole bed.
type SlotSlice struct {
	Name            string                `json:"name"`
	Namespace       string                `json:"namespace"`
	ResourceVersion string                `json:"resourceVersion"`
	TestBed         string                `json:"testBed"`
	Index           int32                 `json:"index"`
	Slots           []v1alpha1.SlotStatus `json:"slots"`
}

// Slots is the slots of a test bed's slices, ordered by position.
func Slots(in []SlotSlice) []v1alpha1.SlotStatus {
	var out []v1alpha1.SlotStatus
	for _, s := range in {
		out = append(out, s.Slots...)
	}
	slices.SortFunc(out, func(a, b v1alpha1.SlotStatus) int { return cmp.Compare(a.Position, b.Position) })
	return out
}

// JobRequest creates a BatchJob. It runs as the caller, with the caller's groups, for queue
// ACLs, user limits and placement rules. A caller that may impersonate (an external
// scheduler submitting for its users) names another User and its Groups.
type JobRequest struct {
	Name            string               `json:"name"`
	Framework       v1alpha1.Framework   `json:"framework"`
	Application     v1alpha1.Application `json:"application"`
	DriverResources corev1.ResourceList  `json:"driverResources,omitempty"`
	Queue           string               `json:"queue,omitempty"`
	// Priority orders the job in its leaf queue before submission order (higher first), and
	// makes it preemption's victim after lower ones; -1,000,000 to 1,000,000, default 0.
	Priority int32 `json:"priority,omitempty"`
	// User and Groups, when given and not the caller's, need the caller to be allowed to
	// impersonate that user and each group.
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// Labels and Annotations are put on the BatchJob; slotplane's own protocol keys are
	// refused, and so are scheduler data annotations: SchedulerData sets those.
	Labels           map[string]string     `json:"labels,omitempty"`
	Annotations      map[string]string     `json:"annotations,omitempty"`
	SchedulerData    map[string]string     `json:"schedulerData,omitempty"`
	SparkApplication *runtime.RawExtension `json:"sparkApplication,omitempty"`
	FlinkDeployment  *runtime.RawExtension `json:"flinkDeployment,omitempty"`
	// SuspendedOutcome is how a run ends whose application is suspended: Completed (the
	// default) or Failed.
	SuspendedOutcome v1alpha1.RunOutcome `json:"suspendedOutcome,omitempty"`
}

// SchedulingList is the answer of GET /schedulings.
type SchedulingList struct {
	Items           []Scheduling `json:"items"`
	ResourceVersion string       `json:"resourceVersion"`
	// Continue, when set, asks for the next page (?continue=); the last page has none.
	Continue string `json:"continue,omitempty"`
}

// TestBedList is the answer of GET /testbeds: the beds with their counts and conditions,
// without their slots (GET /testbeds/{name} has them).
type TestBedList struct {
	Items           []TestBed `json:"items"`
	ResourceVersion string    `json:"resourceVersion"`
	// Continue, when set, asks for the next page (?continue=); the last page has none.
	Continue string `json:"continue,omitempty"`
}

// JobList is the answer of GET /jobs.
type JobList struct {
	Items           []Job  `json:"items"`
	ResourceVersion string `json:"resourceVersion"`
	// Continue, when set, asks for the next page (?continue=); the last page has none.
	Continue string `json:"continue,omitempty"`
}

// Resources is an exact amount, as the queues count it: memory in bytes and cpu in
// millicores (a driver of 250m and 512Mi is 250 and 536870912).
type Resources struct {
	MemoryBytes int64 `json:"memoryBytes"`
	MilliCores  int64 `json:"milliCores"`
}

// QueueTree is a test bed's queues as Admission sees them now.
type QueueTree struct {
	TestBed string `json:"testBed"`
	// ConfigVersion is the allocation file in force (the ConfigMap's resourceVersion);
	// ConfigError, when set, says why a newer file was refused.
	ConfigVersion string `json:"configVersion,omitempty"`
	ConfigError   string `json:"configError,omitempty"`
	// Ignored lists the settings of the file in force that slotplane accepts, as the Fair
	// Scheduler does, and does not act on, each with where and why ("line 13,
	// <maxContainerAllocation> of root.etl: ...").
	Ignored []string `json:"ignored,omitempty"`
	// Deprecated lists the elements of the file in force read under an old name the Fair
	// Scheduler still takes ("line 4, <schedulingMode> of root.etl: the old name of
	// <schedulingPolicy>, read as it").
	Deprecated []string `json:"deprecated,omitempty"`
	// Warnings say where the file in force does not do what it seems to, such as root's
	// ACLs leaving every queue open to every user, and what to set instead.
	Warnings []string `json:"warnings,omitempty"`
	// Settings are the scheduler-wide settings in force, as the yarn-site.xml properties of
	// the queues ConfigMap name them (the defaults for those it does not set).
	Settings []Setting `json:"settings,omitempty"`
	Queues   []Queue   `json:"queues"`
	// Waiting and Running are the first jobs of each list, in submission order, as many as
	// ?limit= asked for (500 unless asked); MoreWaiting and MoreRunning count those left
	// out. Each queue's counts include every job.
	Waiting     []QueuedJob `json:"waiting"`
	Running     []QueuedJob `json:"running"`
	MoreWaiting int         `json:"moreWaiting,omitempty"`
	MoreRunning int         `json:"moreRunning,omitempty"`
}

// Setting is one scheduler-wide setting in force: a yarn-site.xml property and its value.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Queue is one queue of the tree: its shares, what it uses and what waits in it.
type Queue struct {
	Path          string    `json:"path"`
	Leaf          bool      `json:"leaf"`
	SteadyShare   Resources `json:"steadyShare"`
	FairShare     Resources `json:"fairShare"`
	Usage         Resources `json:"usage"`
	Demand        Resources `json:"demand"`
	PendingDemand Resources `json:"pendingDemand"`
	MinResources  Resources `json:"minResources"`
	MaxResources  Resources `json:"maxResources"`
	RunningJobs   int       `json:"runningJobs"`
	WaitingJobs   int       `json:"waitingJobs"`
}

// The queues as the YARN ResourceManager's scheduler answer (GET /ws/v1/cluster/scheduler)
// shows a Fair Scheduler's, field for field, so a dashboard written for YARN reads a test
// bed's queues: GET /testbeds/{name}/queues?format=yarn. Amounts are in YARN's units, whole
// MB (of 2^20 bytes) and whole vcores, each rounded to the nearest: a 250m driver is 0
// vcores there, though the queues count it exactly.

// YARNScheduler is the whole answer: {"scheduler":{"schedulerInfo":{...}}}.
type YARNScheduler struct {
	Scheduler YARNSchedulerWrapper `json:"scheduler"`
}

// YARNSchedulerWrapper holds the scheduler's description, as YARN nests it.
type YARNSchedulerWrapper struct {
	SchedulerInfo YARNSchedulerInfo `json:"schedulerInfo"`
}

// YARNSchedulerInfo names the scheduler ("fairScheduler") and holds the queue tree.
type YARNSchedulerInfo struct {
	Type      string    `json:"type"`
	RootQueue YARNQueue `json:"rootQueue"`
}

// YARNQueue is one queue, parents included; a parent's used resources and applications are
// its subtree's.
type YARNQueue struct {
	// Type is "fairSchedulerLeafQueueInfo" for a leaf, as YARN marks them; empty for a parent.
	Type string `json:"type,omitempty"`
	// QueueName is the full path (root.analytics.daily).
	QueueName        string `json:"queueName"`
	SchedulingPolicy string `json:"schedulingPolicy"`
	// UsedResources is what the queue's jobs hold; FairResources its instantaneous fair
	// share, SteadyFairResources its steady one; DemandResources what its runnable jobs
	// need; ClusterResources the test bed.
	UsedResources       YARNResources `json:"usedResources"`
	MinResources        YARNResources `json:"minResources"`
	MaxResources        YARNResources `json:"maxResources"`
	FairResources       YARNResources `json:"fairResources"`
	SteadyFairResources YARNResources `json:"steadyFairResources"`
	DemandResources     YARNResources `json:"demandResources"`
	ClusterResources    YARNResources `json:"clusterResources"`
	// NumActiveApps are the jobs that hold slots, NumPendingApps those that wait for them.
	NumActiveApps  int `json:"numActiveApps"`
	NumPendingApps int `json:"numPendingApps"`
	// ChildQueues are a parent's queues, in file order ({"queue":[...]}, as YARN wraps
	// them); absent on a leaf.
	ChildQueues *YARNQueueList `json:"childQueues,omitempty"`
}

// YARNQueueList is YARN's wrapper of a list of queues.
type YARNQueueList struct {
	Queue []YARNQueue `json:"queue"`
}

// YARNResources is an amount in YARN's units: memory in MB, cpu in vcores.
type YARNResources struct {
	Memory int64 `json:"memory"`
	VCores int64 `json:"vCores"`
}

// QueuedJob is a job in the queues, waiting (with the reason) or running (with its slots).
type QueuedJob struct {
	Job        string  `json:"job"`
	Scheduling string  `json:"scheduling"`
	Queue      string  `json:"queue"`
	User       string  `json:"user,omitempty"`
	Slots      int32   `json:"slots"`
	SlotIDs    []int32 `json:"slotIDs,omitempty"`
	// Priority orders the job in its leaf (higher first; 0 when left out).
	Priority int32 `json:"priority,omitempty"`
	// Granted are the slots a running job holds.
	Granted []int32 `json:"granted,omitempty"`
	// State is a running job's start-up state under StateAware (Starting or Running).
	State     string `json:"state,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Preempted int32  `json:"preempted,omitempty"`
}

// MoveResult says where a move took a job.
type MoveResult struct {
	Job  string `json:"job"`
	From string `json:"from"`
	To   string `json:"to"`
}

// MoveRequest names the queue to move a job to.
type MoveRequest struct {
	Queue string `json:"queue"`
}

// SchedulingRequest creates a Scheduling: an ordered queue of BatchJobs for one test bed.
type SchedulingRequest struct {
	Name    string                   `json:"name"`
	TestBed string                   `json:"testBed"`
	Mode    v1alpha1.SchedulingMode  `json:"mode"`
	Queue   string                   `json:"queue,omitempty"`
	Jobs    []v1alpha1.SchedulingJob `json:"jobs"`
	// TTLSecondsAfterFinished deletes the Scheduling that long after it ended (its spec's
	// field of the same name); unset, it stays until it is deleted.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Scheduling is a Scheduling as the API shows it.
type Scheduling struct {
	Name                    string                    `json:"name"`
	Namespace               string                    `json:"namespace"`
	ResourceVersion         string                    `json:"resourceVersion"`
	TestBed                 string                    `json:"testBed"`
	Mode                    v1alpha1.SchedulingMode   `json:"mode"`
	Queue                   string                    `json:"queue,omitempty"`
	Jobs                    []v1alpha1.SchedulingJob  `json:"jobs"`
	TTLSecondsAfterFinished *int32                    `json:"ttlSecondsAfterFinished,omitempty"`
	Deleting                bool                      `json:"deleting,omitempty"`
	Status                  v1alpha1.SchedulingStatus `json:"status"`
}

// SchedulingPatch extends a running Scheduling: its jobs are appended to the queue, in
// order. ResourceVersion, if given, applies the change only to that version of the
// Scheduling (409 otherwise).
type SchedulingPatch struct {
	ResourceVersion string                   `json:"resourceVersion,omitempty"`
	Append          []v1alpha1.SchedulingJob `json:"append"`
}

func (e *Error) Error() string { return e.Message }

// KillResult says which run a kill ends. The job's workflow carries the kill out: the
// application goes, and the job ends Failed with status.reason Killed.
type KillResult struct {
	Job        string `json:"job"`
	Scheduling string `json:"scheduling"`
	Queue      string `json:"queue"`
	// As is the caller's right to kill: "the job's user" or "an administrator of <queue>".
	As string `json:"as"`
	// Running: the run held slots; otherwise the job was waiting in its queue.
	Running bool `json:"running"`
}
