package jobplan

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// The history keeps the newest MaxRunHistory runs, and fewer when their lists are large;
// the newest stays whatever its size; a run is recorded once.
func TestHistory_KeepsTheNewestWithinItsBounds(t *testing.T) {
	at := func(i int) *metav1.MicroTime {
		t := metav1.NewMicroTime(time.Date(2026, 11, 25, 0, i, 0, 0, time.UTC))
		return &t
	}
	st := v1alpha1.BatchJobStatus{Scheduling: "s", TestBed: "bed", State: v1alpha1.JobRunning}
	for i := 1; i <= 25; i++ {
		st.Run, st.Phases = int32(i), &v1alpha1.RunPhases{AdmittedAt: at(i), ApplicationCreatedAt: at(i), EndedAt: at(i + 1)}
		RecordRun(&st, v1alpha1.RunCompleted, "done", Where{})
		RecordRun(&st, v1alpha1.RunCompleted, "done", Where{})
	}
	require.Len(t, st.History, v1alpha1.MaxRunHistory)
	require.Equal(t, int32(6), st.History[0].Run)
	require.Equal(t, int32(25), st.History[len(st.History)-1].Run)

	// Runs of a thousand slots on long node names: the bytes bound keeps fewer.
	var nodes []string
	for i := range 1000 {
		nodes = append(nodes, fmt.Sprintf("a-rather-long-node-name-of-the-test-bed-%04d.cluster.example", i))
	}
	big := Where{Nodes: nodes}
	for i := 26; i <= 40; i++ {
		st.Run, st.Phases = int32(i), &v1alpha1.RunPhases{AdmittedAt: at(i), EndedAt: at(i + 1)}
		RecordRun(&st, v1alpha1.RunCompleted, "done", big)
	}
	require.Less(t, len(st.History), v1alpha1.MaxRunHistory)
	require.Equal(t, int32(40), st.History[len(st.History)-1].Run)
	size := 0
	for _, r := range st.History {
		size += recordBytes(r)
	}
	require.LessOrEqual(t, size, v1alpha1.MaxHistoryBytes)

	// A record alone over the bound stays.
	require.Len(t, trimHistory([]v1alpha1.RunRecord{{Nodes: make([]string, 5000)}, {Nodes: []string{string(make([]byte, v1alpha1.MaxHistoryBytes))}}}), 1)
}

// A run released after its application was made is recorded Released, ended at the release
// unless its end is known; one that never made an application, or ended, is not.
func TestReleasedRun(t *testing.T) {
	created := metav1.NewMicroTime(time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC))
	now := created.Add(time.Minute)
	st := v1alpha1.BatchJobStatus{Scheduling: "s", Run: 1, State: v1alpha1.JobRunning, Phases: &v1alpha1.RunPhases{ApplicationCreatedAt: &created}}
	require.True(t, ReleasedRun(&st, now, "released by scheduling s"))
	require.Len(t, st.History, 1)
	require.Equal(t, v1alpha1.RunReleased, st.History[0].Outcome)
	require.True(t, st.History[0].EndedAt.Time.Equal(now))
	require.Nil(t, st.Phases.EndedAt, "the status's own phases stay as they were")

	require.False(t, ReleasedRun(&v1alpha1.BatchJobStatus{Scheduling: "s", Run: 1, State: v1alpha1.JobInQueue, Phases: &v1alpha1.RunPhases{}}, now, "x"),
		"no application was made")
	ended := v1alpha1.BatchJobStatus{Scheduling: "s", Run: 1, State: v1alpha1.JobCompleted, Phases: &v1alpha1.RunPhases{ApplicationCreatedAt: &created}}
	require.False(t, ReleasedRun(&ended, now, "x"), "the run ended")
	require.Empty(t, ended.History)
}
