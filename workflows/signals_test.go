package workflows

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
)

// onSignals answers the SignalWorkflows local activity, by which the workflows signal each
// other: deliver[name] gets each signal of that name, in order (others are dropped), and an
// error from it means the target workflow does not run.
func onSignals(env *testsuite.TestWorkflowEnvironment, deliver map[string]func(id string, arg any) error) {
	onSignalsCounting(env, deliver, nil)
}

// onSignalsCounting is onSignals that also appends to calls the grants each call carried.
// The environment runs concurrent calls on goroutines of their own; read calls after the
// workflow has ended.
func onSignalsCounting(env *testsuite.TestWorkflowEnvironment, deliver map[string]func(id string, arg any) error, calls *[]int) {
	var mu sync.Mutex
	env.OnActivity(acts.SignalWorkflows, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
			var out activities.SignalWorkflowsResult
			if calls != nil {
				n := 0
				for _, s := range in.Signals {
					switch arg := typedArg(s.Name, s.Arg).(type) {
					case []AdmissionGrant:
						n += len(arg)
					}
				}
				mu.Lock()
				*calls = append(*calls, n)
				mu.Unlock()
			}
			for i, s := range in.Signals {
				arg := typedArg(s.Name, s.Arg)
				if f := deliver[s.Name]; f != nil {
					if err := f(s.WorkflowID, arg); err != nil {
						out.NotRunning = append(out.NotRunning, i)
					}
				}
			}
			return out, nil
		})
}

// typedArg gives a signal's argument its type back when it crossed the data converter (an
// activity's input does; a local activity's, in the test environment, does not).
func typedArg(signal string, arg any) any {
	switch arg.(type) {
	case map[string]any, []any: // as the data converter left it
	default:
		return arg
	}
	var into any
	switch signal {
	case AdmittedBatchSignal:
		into = &[]AdmissionGrant{}
	case AdmissionReleaseUpdate, AdmissionEndedUpdate, AdmissionStartedUpdate, AdmissionNoExecutorsUpdate:
		into = &AdmissionKey{}
	case JobProgressSignal:
		into = &JobProgress{}
	default:
		return arg
	}
	raw, err := json.Marshal(arg)
	if err != nil || json.Unmarshal(raw, into) != nil {
		return arg
	}
	return reflect.ValueOf(into).Elem().Interface()
}

// continuedWith is the input the workflow run in env continued as new with; the test fails
// if the run ended otherwise.
func continuedWith[T any](t *testing.T, env *testsuite.TestWorkflowEnvironment) T {
	t.Helper()
	var next *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &next)
	var in T
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(next.Input, &in))
	return in
}
