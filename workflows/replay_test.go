package workflows_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
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
	for _, file := range []string{"testbed-v1.json", "batchjob.json",
		"batchjob-baseline.json", "batchjob-baseline2.json",
		"batchjob-baseline3.json", "scheduling-baseline3.json", "admission-baseline3.json"} {
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

// A run recorded since BaselineChange records the baseline first and no other version
// marker, but Admission's decision rules, which the baseline leaves out, and the changes
// made after it; the runs recorded before it recorded one per change they met. A run
// recorded since Baseline2Change or Baseline3Change records that one alone, but the decision
// rules.
func TestReplay_ABaselineRunRecordsOneMarker(t *testing.T) {
	for file, want := range map[string][]string{
		"batchjob-baseline.json": {workflows.BaselineChange},
		// The second baseline takes those in (and QuietSubmitChange, StatusPaceSlowerChange).
		"batchjob-baseline2.json": {workflows.Baseline2Change},
		// The third takes that one in (and FirstWaitInTaskChange).
		"batchjob-baseline3.json":   {workflows.Baseline3Change},
		"scheduling-baseline3.json": {workflows.Baseline3Change},
		"admission-baseline3.json":  {workflows.Baseline3Change, workflows.AdmissionRulesChange},
	} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open("testdata/" + file)
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			var changes []string
			upserts := 0
			for _, ev := range h.GetEvents() {
				if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
					var id string
					require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["change-id"], &id))
					changes = append(changes, id)
				}
				if ev.GetEventType() == enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
					upserts++
				}
			}
			require.Equal(t, want, changes)
			require.Equal(t, len(want), upserts, "one search attribute upsert per marker")
		})
	}
}

// A replay of one Admission run, as a worker without the run's state makes it: the recorded
// history, or the file SLOTPLANE_REPLAY_HISTORY names (the probe of `make test-scale`, with
// SCALE_PROFILE, saves the run of Admission's longest task there).
func BenchmarkReplay_AdmissionRun(b *testing.B) {
	file := os.Getenv("SLOTPLANE_REPLAY_HISTORY")
	if file == "" {
		file = "testdata/admission-baseline3.json"
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.AdmissionWorkflow)
	for b.Loop() {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
			b.Fatal(err)
		}
	}
}
