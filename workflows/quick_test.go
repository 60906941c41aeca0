package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
)

// readSlotsQuickly reads a bed's slots as a quick call.
func readSlotsQuickly(ctx workflow.Context) (activities.TestBedSlots, error) {
	var out activities.TestBedSlots
	err := quick(ctx, acts.ReadSlots, activities.TestBedRef{Namespace: "ns", Name: "bed"}).Get(ctx, &out)
	return out, err
}

// A quick call that keeps failing for longer than one attempt may take is tried again, and
// the workflow goes on once it answers: a slow or absent API server must not fail a
// Scheduling or Admission for good.
func TestQuick_RetriesPastItsFirstAttempt(t *testing.T) {
	env := workflowEnv(readSlotsQuickly)
	failures := 0
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(func(context.Context, activities.TestBedRef) (activities.TestBedSlots, error) {
		if failures < 8 { // backoffs of 1+2+4+8+16+30+30 s: past quickTimeout
			failures++
			return activities.TestBedSlots{}, errors.New("the API server is away")
		}
		return activities.TestBedSlots{Exists: true}, nil
	})
	env.ExecuteWorkflow(readSlotsQuickly)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var got activities.TestBedSlots
	require.NoError(t, env.GetWorkflowResult(&got))
	require.True(t, got.Exists)
	require.Equal(t, 8, failures)
}
