package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	temporal "go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/prometheus/client_golang/prometheus"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
)

// WorkflowHealth watches the workflows that keep a test bed going, its Admission and
// TestBed workflows and those of the Schedulings on it, for a workflow task that fails again
// and again: Temporal retries such a task for ever, and meanwhile the workflow does nothing
// (a bed whose Admission does not run admits no job; a Scheduling that cannot finish a task
// starts none of its jobs). Every CheckEvery, and when the test bed is made, it writes the
// TestBed condition WorkflowsHealthy (v1alpha1.ConditionWorkflowsHealthy), sets the gauge
// slotplane_workflow_task_failing, and logs at error level, with the failure's message,
// when a workflow's task has failed twice in a row.
type WorkflowHealth struct {
	// Client reads the test beds (the manager's cache) and writes their status.
	Client   client.Client
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
	Log *slog.Logger
	// CheckEvery is how often a test bed is looked at again (default 30 s).
	CheckEvery time.Duration
}

var _ reconcile.Reconciler = (*WorkflowHealth)(nil)

// workflowTaskFailing counts a test bed's workflows of each kind whose task has failed twice
// in a row and not completed since.
var workflowTaskFailing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "slotplane_workflow_task_failing",
	Help: "How many of the test bed's workflows of the kind (admission, testbed, scheduling) have failed their task twice in a row and are being retried: they make no progress.",
}, []string{"namespace", "testbed", "workflow"})

func init() { ctrlmetrics.Registry.MustRegister(workflowTaskFailing) }

// taskFailure is what a workflow's failing task says: how many times it was tried, since
// when, and the failure of its last recorded attempt.
type taskFailure struct {
	attempts int32
	since    time.Time
	message  string
	// ended is how the workflow ended, when it ended in failure ("" while it runs).
	ended string
}

// Reconcile checks one test bed's workflows and writes what it found.
func (h *WorkflowHealth) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	every := h.CheckEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	var tb v1alpha1.TestBed
	if err := h.Client.Get(ctx, req.NamespacedName, &tb); err != nil {
		if apierrors.IsNotFound(err) {
			for _, w := range []string{"admission", "testbed", "scheduling"} {
				workflowTaskFailing.DeleteLabelValues(req.Namespace, req.Name, w)
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	// The bed's own workflows, then those of the Schedulings that run jobs on it, or clean
	// up after them.
	type checked struct{ kind, id string }
	list := []checked{{"admission", h.IDs.AdmissionID(req.Namespace, req.Name)}, {"testbed", h.IDs.TestBedID(req.Namespace, req.Name)}}
	var scheds v1alpha1.SchedulingList
	if err := h.Client.List(ctx, &scheds, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list schedulings of %s: %w", req.Namespace, err)
	}
	for _, sc := range scheds.Items {
		// An ended Scheduling's workflow only waits for its deletion, and has no task to
		// fail until then: a bed that keeps its history of Schedulings costs no calls.
		if sc.Spec.TestBed == req.Name && (!sc.Status.State.Ended() || sc.DeletionTimestamp != nil) {
			list = append(list, checked{"scheduling", h.IDs.SchedulingID(sc.Namespace, sc.Name)})
		}
	}
	count := map[string]int{"admission": 0, "testbed": 0, "scheduling": 0}
	var failing []string
	for _, c := range list {
		f, err := h.taskFailure(ctx, c.id, c.kind == "scheduling")
		if err != nil {
			return reconcile.Result{}, err
		}
		if f == nil {
			continue
		}
		count[c.kind]++
		if f.ended != "" {
			failing = append(failing, fmt.Sprintf("the %s workflow %s ended %s at %s: %s", c.kind, c.id, f.ended, f.since.UTC().Format(time.RFC3339), f.message))
			h.logger().Error("a workflow of a test bed ended in failure", "testbed", req.NamespacedName.String(), "workflow", c.id, "ended", f.ended, "why", f.message)
			continue
		}
		failing = append(failing, fmt.Sprintf("the %s workflow %s has failed its workflow task %d times since %s: %s", c.kind, c.id, f.attempts, f.since.UTC().Format(time.RFC3339), f.message))
		h.logger().Error("a workflow of a test bed makes no progress", "testbed", req.NamespacedName.String(), "workflow", c.id, "attempts", f.attempts, "why", f.message)
	}
	for kind, n := range count {
		workflowTaskFailing.WithLabelValues(req.Namespace, req.Name, kind).Set(float64(n))
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionWorkflowsHealthy, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonTasksComplete,
		Message: "the Admission and TestBed workflows, and those of the Schedulings on the test bed, complete their tasks", ObservedGeneration: tb.Generation}
	if len(failing) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonWorkflowTaskFailing, clip(strings.Join(failing, "; "), 1024)
	}
	updated := tb.DeepCopy()
	if meta.SetStatusCondition(&updated.Status.Conditions, cond) {
		if err := h.Client.Status().Update(ctx, updated); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{RequeueAfter: every}, nil
}

// taskFailure says whether the workflow's pending task has failed, or, when mustRun, whether
// the workflow ended in failure (nil: neither, or there is no such workflow).
func (h *WorkflowHealth) taskFailure(ctx context.Context, id string, mustRun bool) (*taskFailure, error) {
	d, err := h.Temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, fmt.Errorf("describe workflow %s: %w", id, err)
	}
	switch st := d.GetWorkflowExecutionInfo().GetStatus(); st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		// A bed's Admission and TestBed workflows are started again by the next message
		// to them; nothing starts a Scheduling's again while the Scheduling lives, and its
		// jobs stay claimed and queued with nobody to run them.
		if !mustRun {
			return nil, nil
		}
		return h.endedInFailure(ctx, id, d), nil
	default:
		return nil, nil
	}
	// One failed attempt may be a worker that went away; two in a row is a workflow that
	// cannot go on.
	task := d.GetPendingWorkflowTask()
	if task == nil || task.GetAttempt() <= 2 {
		return nil, nil
	}
	f := &taskFailure{attempts: task.GetAttempt() - 1, since: task.GetOriginalScheduledTime().AsTime(), message: "(the failure was not recorded)"}
	// The first failure of a run of attempts is the last WorkflowTaskFailed event; later
	// attempts are not recorded. A run's history is bounded by its steps per run, and it is
	// read only while its task fails.
	exec := d.GetWorkflowExecutionInfo().GetExecution()
	it := h.Temporal.GetWorkflowHistory(ctx, id, exec.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return f, nil // what is failing is known; why is a detail
		}
		switch a := ev.GetWorkflowTaskFailedEventAttributes(); {
		case a != nil:
			f.message = fmt.Sprintf("%s: %s", strings.TrimPrefix(a.GetCause().String(), "WORKFLOW_TASK_FAILED_CAUSE_"), a.GetFailure().GetMessage())
		case ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			f.message = "the workflow task timed out (no worker finished it in time)"
		}
	}
	return f, nil
}

// endedInFailure is what the close event of a workflow that ended in failure says.
func (h *WorkflowHealth) endedInFailure(ctx context.Context, id string, d *workflowservice.DescribeWorkflowExecutionResponse) *taskFailure {
	info := d.GetWorkflowExecutionInfo()
	f := &taskFailure{ended: strings.ToLower(strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
		since: info.GetCloseTime().AsTime(), message: "(the failure was not recorded)"}
	it := h.Temporal.GetWorkflowHistory(ctx, id, info.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return f
		}
		if a := ev.GetWorkflowExecutionFailedEventAttributes(); a != nil {
			f.message = a.GetFailure().GetMessage()
		}
		if a := ev.GetWorkflowExecutionTerminatedEventAttributes(); a != nil {
			f.message = "terminated: " + a.GetReason()
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT {
			f.message = "its run timed out"
		}
	}
	return f
}

func (h *WorkflowHealth) logger() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
