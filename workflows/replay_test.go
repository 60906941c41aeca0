package workflows_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/workflows"
)

// Recorded histories must replay on today's code: a change to a workflow's logic that
// would break a running workflow fails here. The histories of today's code are under
// testdata; each release keeps its own under testdata/releases/<version>, replayed by
// every later build until the patches they need are removed (docs/operations.md,
// "Upgrades").
func TestReplay_RecordedHistories(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TestBedWorkflow, workflow.RegisterOptions{Name: "TestBedWorkflow"})
	r.RegisterWorkflow(workflows.BatchJobWorkflow)
	r.RegisterWorkflow(workflows.SchedulingWorkflow)
	r.RegisterWorkflow(workflows.AdmissionWorkflow)
	kept, err := filepath.Glob("testdata/releases/*/*.json")
	require.NoError(t, err)
	for _, file := range append(currentHistories(), kept...) {
		t.Run(file, func(t *testing.T) {
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}

// currentHistories are the histories recorded by today's code, one per workflow.
func currentHistories() []string {
	return []string{"testdata/testbed.json", "testdata/batchjob.json", "testdata/scheduling.json", "testdata/admission.json"}
}

// The replayer really checks: a history of a different workflow logic fails.
func TestReplay_IncompatibleHistoryFails(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.TestBedWorkflow, workflow.RegisterOptions{Name: "TestBedWorkflow"})
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/testbed-incompatible.json")
	require.ErrorContains(t, err, "nondeterministic")
}

// Before the first release each workflow has one code path: no recorded run has a version
// marker.
func TestReplay_NoRunRecordsAVersionMarker(t *testing.T) {
	for _, file := range currentHistories() {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(file)
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
