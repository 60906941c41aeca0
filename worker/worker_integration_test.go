//go:build integration

package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/installation"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/worker"
	"slotplane/workflows"
)

func quick(workflow.Context) error { return nil }

// runOnWorker runs wf to its end on slotplane's worker (worker.New, with wf registered
// besides), against an embedded Temporal server, and returns the run's history.
func runOnWorker(t *testing.T, opts client.StartWorkflowOptions, wf func(workflow.Context) error) []*historypb.HistoryEvent {
	t.Helper()
	_, c := temporaltest.Start(t)
	w := worker.New(c, &activities.Activities{}, installation.Default, nil)
	w.RegisterWorkflow(wf)
	require.NoError(t, w.Start())
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, opts, wf)
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, opts.ID, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		events = append(events, e)
	}
	return events
}

// The worker names its code to the server by BuildID, so the SDK hashes no executable at
// start: every workflow task it completes carries that name.
func TestNew_TheWorkerNamesItsBuild(t *testing.T) {
	id := worker.BuildID()
	require.True(t, strings.HasPrefix(id, "slotplane"), id)

	completed := 0
	for _, e := range runOnWorker(t, client.StartWorkflowOptions{ID: "quick", TaskQueue: installation.Default.Queue()}, quick) {
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			completed++
			require.Equal(t, id, a.GetWorkerVersion().GetBuildId(), "%v", a)
		}
	}
	require.Equal(t, 1, completed)
}

// stalled runs its code for longer than the SDK's default deadlock bound (a second) without
// yielding, as a decision does on a machine starved of CPU.
func stalled(workflow.Context) error {
	time.Sleep(1500 * time.Millisecond)
	return nil
}

// The worker's deadlock detector has the task timeout as its bound: a task that passes a
// second of wall time completes in its first attempt, with no failed workflow task.
func TestNew_ASlowTaskIsNotADeadlock(t *testing.T) {
	for _, e := range runOnWorker(t, client.StartWorkflowOptions{ID: "stalled", TaskQueue: installation.Default.Queue(), WorkflowTaskTimeout: workflows.TaskTimeout}, stalled) {
		require.Nil(t, e.GetWorkflowTaskFailedEventAttributes(), "a workflow task failed: %v", e)
		require.Nil(t, e.GetWorkflowTaskTimedOutEventAttributes(), "a workflow task timed out: %v", e)
	}
}
