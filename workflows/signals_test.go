package workflows

import (
	"context"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"slotplane/activities"
)

// onSignals answers the SignalWorkflows local activity, by which the workflows signal each
// other: deliver[name] gets each signal of that name, in order (others are dropped), and an
// error from it means the target workflow does not run.
func onSignals(env *testsuite.TestWorkflowEnvironment, deliver map[string]func(id string, arg any) error) {
	env.OnActivity(acts.SignalWorkflows, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
			var out activities.SignalWorkflowsResult
			for i, s := range in.Signals {
				if f := deliver[s.Name]; f != nil {
					if err := f(s.WorkflowID, s.Arg); err != nil {
						out.NotRunning = append(out.NotRunning, i)
					}
				}
			}
			return out, nil
		})
}
