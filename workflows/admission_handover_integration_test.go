//go:build integration

package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/installation"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/queue"
	"slotplane/workflows"
)

// slowHandOver makes the task that continues as new last hold: a local activity that sleeps
// runs inside it, as a long hand-over on a busy worker would.
type slowHandOver struct {
	interceptor.WorkerInterceptorBase
	hold time.Duration
}

func (s *slowHandOver) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &slowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, s: s}
}

type slowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	s *slowHandOver
}

func (i *slowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&slowOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, s: i.s})
}

type slowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	s *slowHandOver
}

func (o *slowOutbound) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	hold := o.s.hold
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 2 * hold})
	if err := workflow.ExecuteLocalActivity(lctx, func(context.Context) error { time.Sleep(hold); return nil }).Get(ctx, nil); err != nil {
		return err
	}
	return o.Next.NewContinueAsNewError(ctx, wfn, args...)
}

// runEvents is the history of one run of the workflow id.
func runEvents(t *testing.T, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var out []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// The resync timer fires while the task that continues as new runs: the server takes the
// hand-over all the same (the task cancels the timer, which drops its firing), so no
// worker replays the whole run for it.
func TestAdmission_AResyncDuringTheHandOverDoesNotFailIt(t *testing.T) {
	_, c := temporaltest.Start(t)
	const taskQueue = "admission-handover"
	wk := sdkworker.New(c, taskQueue, sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&slowHandOver{hold: 3 * time.Second}}})
	wk.RegisterWorkflow(workflows.AdmissionWorkflow)
	wk.RegisterActivity(&shiftingBed{})
	require.NoError(t, wk.Start())
	t.Cleanup(wk.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// One step a run (WorkPerRun 1): the run hands over once it has taken the request in.
	id := installation.Default.AdmissionID("ns", "bed")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue},
		workflows.AdmissionWorkflow, workflows.AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 2 * time.Second, WorkPerRun: 1})
	require.NoError(t, err)
	defer func() { _ = c.TerminateWorkflow(context.Background(), id, "", "test over") }()
	has := func(events []*historypb.HistoryEvent, kind enumspb.EventType) bool {
		for _, e := range events {
			if e.GetEventType() == kind {
				return true
			}
		}
		return false
	}
	// The request comes once the run waits with its resync timer running, which fires
	// about two seconds later: during the three-second hand-over.
	require.Eventually(t, func() bool { return has(runEvents(t, c, id, run.GetRunID()), enumspb.EVENT_TYPE_TIMER_STARTED) },
		10*time.Second, 20*time.Millisecond, "the run never waited")
	key := queue.JobKey{Scheduling: "sa", SchedulingUID: "uid-sa", Job: "etl", Run: 1}
	_, err = activities.Update(ctx, c, id, workflows.AdmissionRequestUpdate, workflows.AdmissionRequest{JobKey: key, User: "u", Slots: 1})
	require.NoError(t, err)

	var events []*historypb.HistoryEvent
	require.Eventually(t, func() bool {
		events = runEvents(t, c, id, run.GetRunID())
		return has(events, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)
	}, 30*time.Second, 100*time.Millisecond, "the run never handed over")
	require.True(t, has(events, enumspb.EVENT_TYPE_TIMER_CANCELED), "the hand-over cancels the resync timer")
	for _, e := range events {
		require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "a task failed: %v", e.GetWorkflowTaskFailedEventAttributes())
	}
}
