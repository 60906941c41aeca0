// Package installation names one slotplane installation's Temporal task queues and workflow
// ids, so that clusters sharing a Temporal namespace never run, signal or list each other's
// workflows.
package installation

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultTaskQueue is the task queue of an installation that names none.
const DefaultTaskQueue = "slotplane"

// admissionSuffix ends the name of an installation's Admission task queue.
const admissionSuffix = "-admission"

// Names are one installation's task queues and workflow ids inside a Temporal namespace.
// Two clusters that share a namespace each set their own. The zero value is the default
// installation: task queues "slotplane" and "slotplane-admission", ids without a prefix.
type Names struct {
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
var Default = Names{}

// Check refuses names that Temporal or the visibility queries slotplane makes cannot carry:
// both are short, and hold letters, digits and - _ . / : only.
func (in Names) Check() error {
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
func (in Names) Queue() string {
	if in.TaskQueue == "" {
		return DefaultTaskQueue
	}
	return in.TaskQueue
}

// AdmissionQueue is the task queue of the beds' Admission workflows.
func (in Names) AdmissionQueue() string { return in.Queue() + admissionSuffix }

// Queues are both task queues, the main one first.
func (in Names) Queues() []string { return []string{in.Queue(), in.AdmissionQueue()} }

// TestBedID is the id of a test bed's workflow; one runs per test bed.
func (in Names) TestBedID(namespace, name string) string {
	return in.id("testbed", namespace, name)
}

// AdmissionID is the id of a test bed's Admission workflow.
func (in Names) AdmissionID(namespace, testBed string) string {
	return in.id("admission", namespace, testBed)
}

// SchedulingID is the id of a Scheduling's workflow; the API and the bridge both start it
// under this id, so a second start is a no-op.
func (in Names) SchedulingID(namespace, name string) string {
	return in.id("scheduling", namespace, name)
}

// BatchJobID is the id of a job's workflow; one runs per BatchJob.
func (in Names) BatchJobID(namespace, name string) string {
	return in.id("batchjob", namespace, name)
}

func (in Names) id(kind, namespace, name string) string {
	return in.IDPrefix + kind + "/" + namespace + "/" + name
}

// OfRun is the installation of a workflow run started on task queue under id, where own is
// the run's id in the default installation (one of the ID methods' results) and admission
// says the run is an Admission, whose queue carries the suffix. A run started outside these
// names (a unit test's) is taken as the default installation's, on its task queue.
func OfRun(queue, id, own string, admission bool) Names {
	if admission {
		queue = strings.TrimSuffix(queue, admissionSuffix)
	}
	prefix, ok := strings.CutSuffix(id, own)
	if !ok {
		prefix = ""
	}
	return Names{TaskQueue: queue, IDPrefix: prefix}
}

// RunningQuery is the visibility query for the running workflows of a type (its registered
// name, e.g. "TestBedWorkflow") in the installation: on its task queue, under its id prefix.
// Its names hold no quote (Check).
func RunningQuery(in Names, workflowType string) string {
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
