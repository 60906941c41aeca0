package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names that other components agree on. They are part of the API: changing one breaks running
// clusters.
const (
	// SlotResource is the extended resource every slot pod (ghost or real) requests exactly one
	// of. The scheduler extender manages it (ignoredByScheduler), so only slot pods reach the
	// extender and ordinary pods are never slowed down by it.
	SlotResource = GroupName + "/slot"

	// SlotSchedulerName is the kube-scheduler profile whose pods are placed into slots.
	SlotSchedulerName = "slot-scheduler"
)

// The protocol between the test bed, its pods and the extender.
const (
	// TestBedLabel names, on a slot pod (ghost or real), the test bed whose slot it takes.
	TestBedLabel = GroupName + "/testbed"
	// SlotClaimAnnotation is "<position>/<pod UID>": the slot a real pod holds, the
	// extender's durable record of it. The extender writes it into the pod's binding, so
	// the pod is bound and its slot recorded in one write (and, on the preemption path, by a
	// patch when it reserves the slot, before the victim's eviction). A pod's UID is given
	// by the API server at creation, so no one can put the right value on a pod before it
	// exists: a pod made with a copied or invented claim never matches its own UID.
	SlotClaimAnnotation = GroupName + "/slot-claim"
	// GhostLabel is "true" on ghost pods.
	GhostLabel = GroupName + "/ghost"
	// PositionOnNodeLabel is a ghost's position on its node, which, with the node, says
	// which slot it holds even when a reshaped test bed renumbers the slots.
	PositionOnNodeLabel = GroupName + "/position-on-node"
	// SuspendedOutcomeAnnotation, on a job's application, is the job's suspendedOutcome, which
	// the job's wait reads when the application is suspended or stopped. slotplane writes it
	// from the BatchJob's spec and drops a value the job's own annotations carry.
	SuspendedOutcomeAnnotation = GroupName + "/suspended-outcome"
	// SlotIDsAnnotation lists, comma-separated, the slot positions a real pod may take. All
	// pods of one application carry the same list; the extender gives each its own slot.
	SlotIDsAnnotation = GroupName + "/slot-ids"
)

// IsReservedKey reports whether a label or annotation key belongs to slotplane: its domain,
// slotplane.io, or a subdomain of it. Such keys on a pod are what the extender and the ghost
// reconciler trust (which test bed, which slot, which job), so slotplane drops them from every
// label and annotation a user hands it for a pod, and sets its own.
func IsReservedKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	// The API server refuses upper case in a key's prefix, but keys read from a Spark or
	// Flink configuration reach it only later, through the operator: compare as it would.
	prefix = strings.ToLower(prefix)
	return found && (prefix == GroupName || strings.HasSuffix(prefix, "."+GroupName))
}

// IsSlotplanesOwn reports whether a label or annotation key of a BatchJob, a Scheduling or a
// TestBed is one that only slotplane's components write: a key under slotplane.io/, save the
// stand-in operators' notes (slotplane.io/sim-*) that users set on the local platform.
// Scheduler data (SchedulerDataPrefix) is not: schedulers write it. The admission policy
// slotplane-own-keys (deploy/admission-policies.yaml) holds the same rule for kubectl.
func IsSlotplanesOwn(key string) bool {
	rest, ok := strings.CutPrefix(key, GroupName+"/")
	return ok && !strings.HasPrefix(rest, "sim-")
}

// The protocol between a Scheduling and the BatchJobs it runs (on the BatchJob, and on the
// TestBed a Scheduling holds). Labels make a claim visible to kubectl and selectable; the
// claim is written with optimistic concurrency, so two Schedulings never both hold a job.
const (
	// ActiveSchedulingLabel names the Scheduling (same namespace) that holds a BatchJob or a
	// TestBed. Removing it releases the object; a released job goes back to Ready and its
	// application is deleted.
	ActiveSchedulingLabel = GroupName + "/active-scheduling"
	// ExtendRefusedAnnotation, on a Scheduling, says that its workflow refused the job list
	// of a generation, and why: "<generation>: <reason>". The bridge asks again only once
	// the list changes.
	ExtendRefusedAnnotation = GroupName + "/extend-refused"
	// CreationRequestAnnotation is the Scheduling's request to create a job's application:
	// JSON of CreationRequest. Its run number makes each request a new application.
	CreationRequestAnnotation = GroupName + "/creation-request"
	// GrantedTestBedLabel, on a BatchJob, names the test bed of its creation request, from
	// the write of that request until its run has ended and its slots are handed over
	// (HandOverGrace). A test bed's pass reads its grants by this label, so what it reads
	// grows with the bed's running jobs, not with every job of the namespace.
	GrantedTestBedLabel = GroupName + "/granted-testbed"
	// BatchJobLabel names, on an application and its pods, the BatchJob it runs.
	BatchJobLabel = GroupName + "/batchjob"
	// CreatedAtAnnotation, on an application, is when slotplane asked for it (RFC 3339, to the
	// nanosecond): a retry that finds it made already reports that moment, not its own.
	CreatedAtAnnotation = GroupName + "/created-at"
	// AssignedSlotsAnnotation, on a BatchJob, lists the slots its running application holds
	// now, when they changed after the application was made (preemption took some back).
	// Comma-separated positions, possibly none. It overrides the slot ids on the job's pods:
	// the extender gives a new pod of the job only these. A new creation request removes it.
	AssignedSlotsAnnotation = GroupName + "/assigned-slots"
	// KillAnnotation, on a BatchJob, asks its workflow to end the run of the Scheduling it
	// names: JSON of KillRequest. The test bed's Admission writes it once it has checked the
	// caller's right (the job's user, or an administrator of its queue); the job's workflow
	// deletes the application and ends the job Failed with reason Killed. A new claim of the
	// job removes it.
	KillAnnotation = GroupName + "/kill"
	// SchedulingFinalizer keeps a deleted Scheduling until its workflow has released its
	// claims and deleted the applications it created.
	SchedulingFinalizer = GroupName + "/scheduling"
)

// CreationRequest is what a Scheduling asks of a job: run in these slots of this test bed.
type CreationRequest struct {
	// Scheduling is the name of the requesting Scheduling; it must hold the job.
	Scheduling string `json:"scheduling"`
	// TestBed is the test bed whose slots the application runs in.
	TestBed string `json:"testBed"`
	// Slots are the positions the executors or TaskManagers may take, one each.
	Slots []int32 `json:"slots"`
	// Run numbers the requests of one Scheduling for the job, from 1.
	Run int32 `json:"run"`
	// SchedulingUID is the UID of the requesting Scheduling: with the other fields it names
	// the run in its test bed's Admission, which the job's workflow tells directly when the
	// run ends.
	SchedulingUID string `json:"schedulingUID,omitempty"`
	// GrantedAt is when the Scheduling took Admission's grant of the slots. A slot granted
	// longer than its test bed's grantedSlotTimeout ago that no pod of the job holds gets its
	// ghost back. Every request has it: one without is no request.
	GrantedAt *metav1.MicroTime `json:"grantedAt,omitempty"`
	// Queue is the leaf queue Admission placed the job in, as the grant said.
	Queue string `json:"queue,omitempty"`
	// QuietStart: Admission needs no word of the run's start (its queue is not StateAware),
	// as the grant said. Absent, the job's workflow tells Admission when the run starts.
	QuietStart bool `json:"quietStart,omitempty"`
}

// CreationRequestOf reads the creation request among a BatchJob's annotations: nil when
// there is none, an error that names the annotation when it holds no whole CreationRequest
// (a Scheduling, a test bed, a run, slots and the moment of their grant). Every reader of
// the annotation goes through it, so they agree on what a request is.
func CreationRequestOf(annotations map[string]string) (*CreationRequest, error) {
	raw := annotations[CreationRequestAnnotation]
	if raw == "" {
		return nil, nil
	}
	var req CreationRequest
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		return nil, fmt.Errorf("annotation %s is not a creation request: %w", CreationRequestAnnotation, err)
	}
	var missing []string
	for _, f := range []struct {
		name string
		none bool
	}{{"scheduling", req.Scheduling == ""}, {"testBed", req.TestBed == ""}, {"run", req.Run < 1}, {"slots", len(req.Slots) == 0}, {"grantedAt", req.GrantedAt == nil}} {
		if f.none {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("annotation %s is not a whole creation request: it has no %s", CreationRequestAnnotation, strings.Join(missing, ", "))
	}
	return &req, nil
}

// KillRequest is a kill of one job's run in one Scheduling.
type KillRequest struct {
	// Scheduling names the Scheduling whose run of the job ends; a kill of another
	// Scheduling's run does nothing.
	Scheduling string `json:"scheduling"`
	// By is who killed the run, and As in what right: "the job's user" or "an administrator
	// of <queue>".
	By string `json:"by"`
	As string `json:"as"`
	// Reason is what the killer said, if anything.
	Reason string      `json:"reason,omitempty"`
	At     metav1.Time `json:"at"`
}

// SchedulerDataPrefix starts the annotations that hold a BatchJob's scheduler data: notes
// that external schedulers keep on a job for their next invocations (an estimate of its run
// time, the placement that served it best). slotplane never writes, changes or removes
// them, and does not copy them onto the job's application. The REST API shows them, without
// the prefix, as the job's schedulerData, and writes them through
// PATCH /jobs/{name}/scheduler-data; with kubectl they are plain annotations
// (scheduler.slotplane.io/estimate).
const SchedulerDataPrefix = "scheduler." + GroupName + "/"

// The bounds of one job's scheduler data: a few dozen notes, not a database.
const (
	MaxSchedulerDataKeys  = 64
	MaxSchedulerDataBytes = 64 << 10
)

// SchedulerData is the scheduler data among a job's annotations, keyed without the prefix
// (nil when there is none).
func SchedulerData(annotations map[string]string) map[string]string {
	var out map[string]string
	for k, v := range annotations {
		if name, ok := strings.CutPrefix(k, SchedulerDataPrefix); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// TestBedTaint is the taint key that dedicates nodes to test beds (any value, any effect).
// Ghosts and slot pods tolerate it; ordinary pods do not, so they can neither land on nor
// preempt ghosts on a dedicated node.
const TestBedTaint = GroupName + "/testbed"

// PriorityClasses of slot pods (deploy/priorityclasses.yaml).
const (
	// GhostPriorityClass is the lowest priority in the cluster: any slot pod preempts a ghost.
	GhostPriorityClass = "slotplane-ghost"
	// BatchPriorityClass is what executors and TaskManagers run with.
	BatchPriorityClass = "slotplane-batch"
)

// Condition types shared by the resources.
const (
	// ConditionReady is True when the object is in the state its spec asks for.
	ConditionReady = "Ready"
	// ConditionTestBedFound is False on a Scheduling whose test bed does not exist (reason
	// TestBedMissing): its jobs wait for it.
	ConditionTestBedFound = "TestBedFound"
)

// QueuesConfigMap is the ConfigMap, in a test bed's namespace, that holds the allocation file
// of the namespace's test beds, under the key QueuesConfigMapKey, and the scheduler-wide
// settings (Hadoop's yarn-site.xml properties of the Fair Scheduler) under
// QueuesSettingsKey.
const (
	QueuesConfigMap    = "slotplane-queues"
	QueuesConfigMapKey = "fair-scheduler.xml"
	QueuesSettingsKey  = "yarn-site.xml"
)

// ConditionSlotsFit is the TestBed condition that says whether every node's allocatable
// resources hold its slots (slotsPerNode times resourcesPerSlot). When not, the message names
// the nodes and what they lack; their slots beyond what fits get no ghost pod and go to no
// job.
const ConditionSlotsFit = "SlotsFit"

// ConditionQueuesConfigured is the TestBed condition that says what became of the
// namespace's queue configuration (ConfigMap QueuesConfigMap: the allocation file
// and its settings): True when it loads, with reason ReasonQueuesAccepted or, when root's
// ACLs leave every queue open to every user, ReasonOpenACLs; False when it does not load
// (ReasonQueuesRejected: the queues keep the last configuration that did) or when there is
// none (ReasonNoQueuesFile: the default queues). The bridge writes it (bridge.QueuesSignaller);
// no other writer owns it.
const (
	ConditionQueuesConfigured = "QueuesConfigured"

	ReasonQueuesAccepted = "Accepted"
	ReasonOpenACLs       = "OpenACLs"
	ReasonQueuesRejected = "Rejected"
	ReasonNoQueuesFile   = "NoFile"
)

// ConditionWorkflowsHealthy is the TestBed condition that says whether the workflows that
// keep the test bed going, its Admission and TestBed workflows and those of the Schedulings
// on it, complete their tasks: False
// (ReasonWorkflowTaskFailing, the failure in the message) while a workflow task fails again
// and again, which Temporal retries for ever while the workflow does nothing. The bridge
// writes it (bridge.WorkflowHealth); no other writer owns it.
const (
	ConditionWorkflowsHealthy = "WorkflowsHealthy"

	ReasonTasksComplete       = "TasksComplete"
	ReasonWorkflowTaskFailing = "WorkflowTaskFailing"
)

// JobPolicyConfigMap is the ConfigMap, in a namespace, with which its admins widen what the
// wrapped Spark and Flink specs of the namespace's BatchJobs may set (operatorapp.ParseJobPolicy).
// Whoever may write ConfigMaps in the namespace decides it: grant that as carefully as the
// rights it hands out (a service account, a secret).
const JobPolicyConfigMap = "slotplane-job-policy"

// ConditionSpecAllowed is the BatchJob condition that says whether its wrapped spec keeps to
// the allow-list (reason SpecRefused, with the fields in the message, when it does not).
const (
	ConditionSpecAllowed = "SpecAllowed"
	ReasonSpecRefused    = "SpecRefused"
	ReasonSpecAllowed    = "SpecAllowed"
)
