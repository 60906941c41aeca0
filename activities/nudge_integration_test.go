//go:build integration

package activities_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"slotplane/activities"
	"slotplane/internal/localplatform/temporaltest"
)

// A batch of nudges reaches every workflow named, starting those not running, with the
// calls several at a time; a repeat of the batch starts none twice; and the nudges to one
// workflow arrive in the order given, as a Scheduling's request batches to Admission must.
func TestNudgeWorkflows_EveryWorkflowOnce(t *testing.T) {
	t.Parallel()
	_, tc := temporaltest.Start(t)
	a := &activities.Activities{Temporal: tc}
	in := activities.SignalWithStartInput{TaskQueue: "nobody-polls"}
	for i := range 250 {
		in.Signals = append(in.Signals, activities.SignalWithStart{WorkflowID: fmt.Sprintf("nudged-%03d", i), WorkflowType: "Nudged", Signal: "look"})
	}
	ctx := context.Background()
	require.NoError(t, a.NudgeWorkflows(ctx, in))
	require.NoError(t, a.NudgeWorkflows(ctx, in), "a repeat is harmless")
	for _, n := range in.Signals {
		d, err := tc.DescribeWorkflowExecution(ctx, n.WorkflowID, "")
		require.NoError(t, err, n.WorkflowID)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
		signals := 0
		it := tc.GetWorkflowHistory(ctx, n.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
				signals++
			}
		}
		require.Equal(t, 2, signals, "%s is one run, signalled by each batch", n.WorkflowID)
	}

	in = activities.SignalWithStartInput{TaskQueue: "nobody-polls"}
	for i := range 60 {
		id := "admission-like"
		if i%3 == 0 {
			id = fmt.Sprintf("other-%02d", i)
		}
		in.Signals = append(in.Signals, activities.SignalWithStart{WorkflowID: id, WorkflowType: "Nudged", Signal: "batch", SignalArg: i})
	}
	require.NoError(t, a.NudgeWorkflows(ctx, in))
	var got []int
	it := tc.GetWorkflowHistory(ctx, "admission-like", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			var v int
			require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &v))
			got = append(got, v)
		}
	}
	var want []int
	for i := range 60 {
		if i%3 != 0 {
			want = append(want, i)
		}
	}
	require.Equal(t, want, got, "one workflow's nudges in the order given")
}

// A nudge that names its own task queue starts its workflow there, the rest on the batch's:
// Schedulings start Admission on its own queue this way.
func TestNudgeWorkflows_ANudgeMayNameItsTaskQueue(t *testing.T) {
	t.Parallel()
	_, tc := temporaltest.Start(t)
	a := &activities.Activities{Temporal: tc}
	ctx := context.Background()
	require.NoError(t, a.NudgeWorkflows(ctx, activities.SignalWithStartInput{TaskQueue: "batch-queue", Signals: []activities.SignalWithStart{
		{WorkflowID: "own", WorkflowType: "Nudged", Signal: "look", TaskQueue: "own-queue"},
		{WorkflowID: "batch", WorkflowType: "Nudged", Signal: "look"},
	}}))
	for id, queue := range map[string]string{"own": "own-queue", "batch": "batch-queue"} {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		require.Equal(t, queue, d.GetExecutionConfig().GetTaskQueue().GetName(), id)
	}
}
