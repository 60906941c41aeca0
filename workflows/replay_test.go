package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/workflows"
)

// Recorded histories must replay on today's code: a change to a running workflow's logic
// that forgot workflow.GetVersion fails here.
func TestReplay_RecordedHistories(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TestBedWorkflow, workflow.RegisterOptions{Name: "TestBedWorkflow"})
	r.RegisterWorkflow(workflows.BatchJobWorkflow)
	r.RegisterWorkflow(workflows.SchedulingWorkflow)
	r.RegisterWorkflow(workflows.AdmissionWorkflow)
	for _, file := range []string{"testbed-v1.json", "batchjob.json", "scheduling.json", "admission.json", "admission-commit-before-telling.json"} {
		t.Run(file, func(t *testing.T) {
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}

// The replayer really checks: a history of a different workflow logic fails.
func TestReplay_IncompatibleHistoryFails(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TestBedWorkflow, workflow.RegisterOptions{Name: "TestBedWorkflow"})
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/testbed-incompatible.json")
	require.ErrorContains(t, err, "nondeterministic")
}
