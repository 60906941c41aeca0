//go:build integration

package workflows_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/workflows"
)

// TestRecordHistories re-records workflows/testdata from real runs on the embedded server.
// It runs only with SLOTPLANE_RECORD=1 (`make record-histories`); the replay tests then
// prove the current code still replays what was recorded.
func TestRecordHistories(t *testing.T) {
	if os.Getenv("SLOTPLANE_RECORD") != "1" {
		t.Skip("set SLOTPLANE_RECORD=1 to re-record workflow histories")
	}
	_, c := temporaltest.Start(t)

	passes := 0
	// A stand-in for the cluster: changed, in progress, settled, then the bed is gone.
	reconcile := func(context.Context, activities.TestBedRef) (activities.ReconcileTestBedResult, error) {
		passes++
		switch passes {
		case 1:
			return activities.ReconcileTestBedResult{Created: 2}, nil
		case 2:
			return activities.ReconcileTestBedResult{InProgress: true, Reason: "pod x is terminating"}, nil
		case 3, 4:
			return activities.ReconcileTestBedResult{Settled: true}, nil
		default:
			return activities.ReconcileTestBedResult{Gone: true}, nil
		}
	}
	in := workflows.TestBedInput{Namespace: "ns", Name: "bed", Resync: 2 * time.Second, Retry: 200 * time.Millisecond, Debounce: 100 * time.Millisecond}

	record := func(t *testing.T, file, queue string, wf any, signalAt time.Duration) {
		w := sdkworker.New(c, queue, sdkworker.Options{})
		w.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "TestBedWorkflow"})
		w.RegisterActivityWithOptions(reconcile, activity.RegisterOptions{Name: "ReconcileTestBed"})
		require.NoError(t, w.Start())
		defer w.Stop()
		passes = 0
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: file, TaskQueue: queue}, "TestBedWorkflow", in)
		require.NoError(t, err)
		if signalAt > 0 {
			time.Sleep(signalAt)
			require.NoError(t, c.SignalWorkflow(ctx, file, "", workflows.TestBedChangedSignal, nil))
		}
		require.NoError(t, run.Get(ctx, nil))
		saveHistory(t, c, file, run.GetRunID(), file+".json")
	}

	record(t, "testbed", "record-testbed", workflows.TestBedWorkflow, 2500*time.Millisecond)
	// A workflow that sleeps before its first pass: the replay of its history by the real
	// code must fail with a nondeterminism error.
	record(t, "testbed-incompatible", "record-bad", func(ctx workflow.Context, in workflows.TestBedInput) (workflows.TestBedOutput, error) {
		if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
			return workflows.TestBedOutput{}, err
		}
		return workflows.TestBedWorkflow(ctx, in)
	}, 0)
}
