package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"
)

// DefaultTaskQueue is the task queue of an installation that names none.
const DefaultTaskQueue = "slotplane"

// admissionSuffix ends the name of an installation's Admission task queue.
const admissionSuffix = "-admission"

// Installation names one slotplane installation's task queues and workflow ids inside a
// Temporal namespace. Two clusters that share a namespace each set their own, so neither
// polls, starts, signals or lists the other's workflows. The zero value is the default
// installation: task queues "slotplane" and "slotplane-admission", ids without a prefix.
type Installation struct {
	// TaskQueue carries the test beds', Schedulings' and jobs' workflows and their
	// activities ("": DefaultTaskQueue). The beds' Admission workflows run on
	// AdmissionQueue. A worker keeps one sticky queue per task queue, so an Admission's next
	// task does not wait behind the tasks of thousands of job workflows, nor past the sticky
	// timeout (then the task is replayed from history); and a worker process may poll
	// AdmissionQueue alone (slotplane worker -task-queues).
	TaskQueue string
	// IDPrefix starts every workflow id of the installation ("": none).
	IDPrefix string
}

// Default is the installation of a cluster that sets neither name.
var Default = Installation{}

// Check refuses names that Temporal or the visibility queries slotplane makes cannot carry:
// both are short, and hold letters, digits and - _ . / : only.
func (in Installation) Check() error {
	for _, f := range []struct{ flag, value string }{{"task queue", in.TaskQueue}, {"workflow id prefix", in.IDPrefix}} {
		if len(f.value) > 100 {
			return fmt.Errorf("the %s is %d characters long: at most 100", f.flag, len(f.value))
		}
		if i := strings.IndexFunc(f.value, func(r rune) bool { return !nameRune(r) }); i >= 0 {
			return fmt.Errorf("the %s %q holds %q: only letters, digits and - _ . / : are allowed", f.flag, f.value, f.value[i:i+1])
		}
	}
	if strings.HasPrefix(in.TaskQueue, "/") {
		return errors.New("the task queue starts with /, which Temporal keeps for its own queues")
	}
	return nil
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:", r)
}

// Queue is the task queue of the test beds', Schedulings' and jobs' workflows.
func (in Installation) Queue() string {
	if in.TaskQueue == "" {
		return DefaultTaskQueue
	}
	return in.TaskQueue
}

// AdmissionQueue is the task queue of the beds' Admission workflows.
func (in Installation) AdmissionQueue() string { return in.Queue() + admissionSuffix }

// Queues are both task queues, the main one first.
func (in Installation) Queues() []string { return []string{in.Queue(), in.AdmissionQueue()} }

// TestBedID is the id of a test bed's workflow; one runs per test bed.
func (in Installation) TestBedID(namespace, name string) string {
	return in.id("testbed", namespace, name)
}

// AdmissionID is the id of a test bed's Admission workflow.
func (in Installation) AdmissionID(namespace, testBed string) string {
	return in.id("admission", namespace, testBed)
}

// SchedulingID is the id of a Scheduling's workflow; the API and the bridge both start it
// under this id, so a second start is a no-op.
func (in Installation) SchedulingID(namespace, name string) string {
	return in.id("scheduling", namespace, name)
}

// BatchJobID is the id of a job's workflow; one runs per BatchJob.
func (in Installation) BatchJobID(namespace, name string) string {
	return in.id("batchjob", namespace, name)
}

func (in Installation) id(kind, namespace, name string) string {
	return in.IDPrefix + kind + "/" + namespace + "/" + name
}

// installationOf is the installation a workflow runs in, read from the run itself: the
// task queue it was started on and its id, which is own (one of the ID methods' results for
// the default installation) behind the installation's prefix. Both are in the run's first
// event, so every replay reads the same. A run started outside these names (a unit test's)
// is taken as the default installation's, on its task queue.
func installationOf(ctx workflow.Context, own string, admission bool) Installation {
	info := workflow.GetInfo(ctx)
	queue := info.TaskQueueName
	if admission {
		queue = strings.TrimSuffix(queue, admissionSuffix)
	}
	prefix, ok := strings.CutSuffix(info.WorkflowExecution.ID, own)
	if !ok {
		prefix = ""
	}
	return Installation{TaskQueue: queue, IDPrefix: prefix}
}

// RunningQuery is the visibility query for the running workflows of a type (its registered
// name, e.g. "TestBedWorkflow") in the installation: on its task queue, under its id prefix.
// Its names hold no quote (Check).
func RunningQuery(in Installation, workflowType string) string {
	queue := in.Queue()
	if workflowType == "AdmissionWorkflow" {
		queue = in.AdmissionQueue()
	}
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND TaskQueue = '%s'", workflowType, queue)
	if in.IDPrefix != "" {
		q += fmt.Sprintf(" AND WorkflowId STARTS_WITH '%s'", in.IDPrefix)
	}
	return q
}
