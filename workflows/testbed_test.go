package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(TestBedWorkflow)
	env.RegisterActivity(&activities.Activities{})
	return env
}

var bedInput = TestBedInput{Namespace: "ns", Name: "bed", Resync: time.Minute, Retry: time.Second}

// passTimes records, in workflow time, when each reconcile pass ran, answering from results
// in turn and Gone once they run out.
func passTimes(env *testsuite.TestWorkflowEnvironment, results ...activities.ReconcileTestBedResult) *[]time.Duration {
	var times []time.Duration
	start := env.Now()
	env.OnActivity(acts.ReconcileTestBed, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.TestBedRef) (activities.ReconcileTestBedResult, error) {
			if in.Namespace != "ns" || in.Name != "bed" {
				return activities.ReconcileTestBedResult{}, errors.New("wrong test bed")
			}
			times = append(times, env.Now().Sub(start).Round(time.Second))
			if len(times) > len(results) {
				return activities.ReconcileTestBedResult{Gone: true}, nil
			}
			return results[len(times)-1], nil
		})
	return &times
}

func TestTestBedWorkflow_ResyncsWhenSettledAndRetriesSoonOtherwise(t *testing.T) {
	env := newEnv(t)
	times := passTimes(env,
		activities.ReconcileTestBedResult{Created: 8},       // changed: retry after 1s
		activities.ReconcileTestBedResult{InProgress: true}, // in progress: retry after 1s
		activities.ReconcileTestBedResult{Settled: true},    // settled: resync after 1m
		activities.ReconcileTestBedResult{Settled: true},
	)
	env.ExecuteWorkflow(TestBedWorkflow, bedInput)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, 62 * time.Second, 122 * time.Second}, *times)
	var out TestBedOutput
	require.NoError(t, env.GetWorkflowResult(&out))
	require.Equal(t, 5, out.Passes)
}

func TestTestBedWorkflow_SignalTriggersAPassAtOnce(t *testing.T) {
	env := newEnv(t)
	times := passTimes(env, activities.ReconcileTestBedResult{Settled: true}, activities.ReconcileTestBedResult{Settled: true})
	// A burst of three signals, ten seconds in, makes one pass, not three.
	for _, at := range []time.Duration{10 * time.Second, 10*time.Second + 200*time.Millisecond, 10*time.Second + 500*time.Millisecond} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(TestBedChangedSignal, nil) }, at)
	}
	env.ExecuteWorkflow(TestBedWorkflow, bedInput)
	require.NoError(t, env.GetWorkflowError())
	// The pass comes after the 1s debounce, and the next resync a minute after it.
	require.Equal(t, []time.Duration{0, 11 * time.Second, 71 * time.Second}, *times)
}

func TestTestBedWorkflow_ContinuesAsNewToBoundHistory(t *testing.T) {
	env := newEnv(t)
	passTimes(env, activities.ReconcileTestBedResult{Settled: true}, activities.ReconcileTestBedResult{Settled: true}, activities.ReconcileTestBedResult{Settled: true})
	in := bedInput
	in.PassesPerRun = 2
	env.ExecuteWorkflow(TestBedWorkflow, in)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	require.Equal(t, "TestBedWorkflow", can.WorkflowType.Name)
}

func TestTestBedWorkflow_RetriesAFailedPass(t *testing.T) {
	env := newEnv(t)
	env.OnActivity(acts.ReconcileTestBed, mock.Anything, mock.Anything).
		Return(activities.ReconcileTestBedResult{}, errors.New("apiserver down")).Times(1)
	env.OnActivity(acts.ReconcileTestBed, mock.Anything, mock.Anything).
		Return(activities.ReconcileTestBedResult{Gone: true}, nil)
	env.ExecuteWorkflow(TestBedWorkflow, bedInput)
	// The retry policy absorbs a failing pass: the workflow goes on to the next attempt.
	require.NoError(t, env.GetWorkflowError())
}
