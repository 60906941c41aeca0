package workflows_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/workflows"
)

// Recorded histories must replay on today's code: a change to a workflow's logic that
// would break a running workflow fails here. Until the first release, such a change is made
// directly and the histories are recorded again (`make record-histories`).
func TestReplay_RecordedHistories(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TestBedWorkflow, workflow.RegisterOptions{Name: "TestBedWorkflow"})
	r.RegisterWorkflow(workflows.BatchJobWorkflow)
	r.RegisterWorkflow(workflows.SchedulingWorkflow)
	r.RegisterWorkflow(workflows.AdmissionWorkflow)
	for _, file := range []string{"testbed.json", "batchjob.json", "scheduling.json", "admission.json"} {
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

// No recorded run has a version marker: each workflow has one code path.
func TestReplay_NoRunRecordsAVersionMarker(t *testing.T) {
	for _, file := range []string{"testbed.json", "batchjob.json", "scheduling.json", "admission.json"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open("testdata/" + file)
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			for _, ev := range h.GetEvents() {
				if m := ev.GetMarkerRecordedEventAttributes(); m != nil {
					require.NotEqual(t, "Version", m.GetMarkerName(), "event %d", ev.GetEventId())
				}
				require.NotEqual(t, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, ev.GetEventType(), "event %d", ev.GetEventId())
			}
		})
	}
}

// A replay of one Admission run, as a worker without the run's state makes it: the recorded
// history, or the file SLOTPLANE_REPLAY_HISTORY names (the probe of `make test-scale`, with
// SCALE_PROFILE, saves the run of Admission's longest task there).
func BenchmarkReplay_AdmissionRun(b *testing.B) {
	file := os.Getenv("SLOTPLANE_REPLAY_HISTORY")
	if file == "" {
		file = "testdata/admission.json"
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(workflows.AdmissionWorkflow)
	for b.Loop() {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
			b.Fatal(err)
		}
	}
}
