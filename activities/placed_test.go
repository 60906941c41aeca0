package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// runPod is a pod of job's run in scheduling, bound to node in slot 0 with the extender's
// claim when proven (node "" leaves it unbound).
func runPod(uid, job, scheduling, node string, proven bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{
		v1alpha1.BatchJobLabel: job, v1alpha1.ActiveSchedulingLabel: scheduling, v1alpha1.TestBedLabel: "bed"}}}
	p.Spec.NodeName = node
	if proven {
		p.Annotations = map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(0, p.UID)}
	}
	return p
}

// The hub remembers a run's slot pods from the first time it sees each bound in its proven
// slot (a pod not bound, not proven, a ghost or a driver is not a placement), and a job's
// driver or JobManager from the first time it sees it running. A run is told only what was
// placed since its application was made, and a run nobody saw for the retention is
// forgotten.
func TestPlacements_RememberWhatWasFirstSeenPlaced(t *testing.T) {
	c := NewChanges()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c.NotePod(runPod("old", "etl", "nightly", "node-1", true), t0.Add(-time.Minute)) // an earlier run's
	c.NotePod(runPod("a", "etl", "nightly", "", true), t0)                           // not bound yet
	c.NotePod(runPod("a", "etl", "nightly", "node-1", true), t0.Add(time.Second))
	c.NotePod(runPod("a", "etl", "nightly", "node-1", true), t0.Add(2*time.Second)) // seen again: the first time stays
	c.NotePod(runPod("b", "etl", "nightly", "node-2", false), t0)                   // no proven claim
	ghost := runPod("g", "etl", "nightly", "node-2", true)
	ghost.Labels[v1alpha1.GhostLabel] = "true"
	c.NotePod(ghost, t0)
	driver := runPod("d", "etl", "nightly", "node-3", true)
	delete(driver.Labels, v1alpha1.TestBedLabel)
	c.NotePod(driver, t0) // not running yet
	c.NotePod(runPod("other", "etl", "weekly", "node-1", true), t0.Add(time.Second))

	var none *Changes
	running := func(uid string, at time.Time) {
		p := runPod(uid, "etl", "", "node-3", false)
		delete(p.Labels, v1alpha1.TestBedLabel)
		delete(p.Labels, v1alpha1.ActiveSchedulingLabel)
		p.Status.Phase = corev1.PodRunning
		c.NotePod(p, at)
	}
	running("old-driver", t0.Add(-time.Minute))
	running("driver", t0.Add(500*time.Millisecond))
	running("driver", t0.Add(900*time.Millisecond)) // seen running again: the first time stays

	require.Equal(t, map[types.UID]time.Time{"a": t0.Add(time.Second)}, c.placedSince("ns", "etl", "nightly", t0))
	require.Equal(t, t0.Add(500*time.Millisecond), c.driverSince("ns", "etl", t0), "the driver first seen running since the run began")
	require.Equal(t, t0.Add(-time.Minute), c.driverSince("ns", "etl", t0.Add(-time.Hour)))
	require.True(t, c.driverSince("ns", "report", t0).IsZero())
	require.True(t, none.driverSince("ns", "etl", t0).IsZero())
	require.Len(t, c.placedSince("ns", "etl", "nightly", t0.Add(-time.Hour)), 2, "an earlier start takes the earlier run's pod too")
	require.Len(t, c.placedSince("ns", "etl", "weekly", t0), 1)
	require.Empty(t, c.placedSince("other-ns", "etl", "nightly", t0))
	none.NotePod(runPod("x", "etl", "nightly", "node-1", true), t0)
	require.Nil(t, none.placedSince("ns", "etl", "nightly", t0), "no hub, no memory")

	// Past the retention, with a sweep due, runs not seen since are forgotten.
	later := t0.Add(placedRetention + 2*time.Minute)
	c.NotePod(runPod("c", "report", "nightly", "node-1", true), later)
	require.Empty(t, c.placedSince("ns", "etl", "nightly", t0))
	require.Len(t, c.placedSince("ns", "report", "nightly", t0), 1)
}

// A pod the watch first saw in its initial list was placed before the watch began: the hub
// names it as such (by its pod's name) for the run it belongs to. A pod it saw placed by an
// event first stays a placement it watched, even if a later list shows it again.
func TestPlacements_NameThePodsListedWhenTheWatchBegan(t *testing.T) {
	c := NewChanges()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c.NotePod(runPod("watched", "etl", "nightly", "node-1", true), t0)
	c.NoteListedPod(runPod("watched", "etl", "nightly", "node-1", true), t0.Add(time.Second))
	c.NoteListedPod(runPod("listed", "etl", "nightly", "node-2", true), t0.Add(2*time.Second))
	c.NoteListedPod(runPod("unbound", "etl", "nightly", "", true), t0.Add(2*time.Second)) // not placed: nothing to remember
	c.NoteListedPod(runPod("old", "etl", "nightly", "node-3", true), t0.Add(-time.Hour))  // before the run's application

	require.Equal(t, map[types.UID]string{"listed": "listed"}, c.listedSince("ns", "etl", "nightly", t0))
	require.Equal(t, map[types.UID]time.Time{"watched": t0, "listed": t0.Add(2 * time.Second)}, c.placedSince("ns", "etl", "nightly", t0))
	require.Nil(t, c.listedSince("ns", "etl", "weekly", t0), "another run's")
	var none *Changes
	require.Nil(t, none.listedSince("ns", "etl", "nightly", t0))
}

// Flink's native Kubernetes mode names a cluster's TaskManager pods
// "<cluster>-taskmanager-<attempt>-<index>": only such names of that cluster count.
func TestFlinkTaskManager_OnlyTheNamesFlinkGivesTheClustersTaskManagers(t *testing.T) {
	for pod, want := range map[string]bool{
		"stream-1a2b-r1-taskmanager-1-1":                    true,
		"stream-1a2b-r1-taskmanager-12-30":                  true,
		"stream-1a2b-r1-taskmanager-1":                      false,
		"stream-1a2b-r1-taskmanager-1-":                     false,
		"stream-1a2b-r1-taskmanager--1":                     false,
		"stream-1a2b-r1-taskmanager-1-1-copy":               false,
		"stream-1a2b-r1-taskmanager-a-1":                    false,
		"stream-1a2b-r1-6d9f7c8b5-x2x4q":                    false,
		"stream-1a2b-r10-taskmanager-1-1":                   false,
		"other-stream-1a2b-r1-taskmanager-1-1":              false,
		"stream-1a2b-r1-taskmanager-1-1-r1-taskmanager-1-1": false,
	} {
		require.Equal(t, want, flinkTaskManager("stream-1a2b-r1", pod), pod)
	}
}
