package slots

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// The slots freed less than HandOverGrace ago, and those the last status shows held by a
// job's pod, wait for their next job, and the pass is due back when the first one's grace
// ends; a free slot without a ghost otherwise (a new slot, or one whose ghost went) gets its
// ghost at once.
func TestHoldBackFreed_OnlySlotsOnTheirWayToANextJob(t *testing.T) {
	plan := Plan{Create: []Slot{{Position: 0}, {Position: 1}, {Position: 2}, {Position: 3}, {Position: 4}}}
	last := []v1alpha1.SlotStatus{
		{Position: 0, State: v1alpha1.SlotFree},
		{Position: 1, State: v1alpha1.SlotReserved, PodName: "exec-1"},
		{Position: 2, State: v1alpha1.SlotOccupied, PodName: "exec-2"},
	}
	n, due := HoldBackFreed(&plan, last, map[int32]time.Duration{3: 300 * time.Millisecond, 7: 100 * time.Millisecond})
	require.Equal(t, 3, n)
	require.Equal(t, 300*time.Millisecond, due, "slot 7 is not to be created: it decides nothing")
	var kept []int32
	for _, s := range plan.Create {
		kept = append(kept, s.Position)
	}
	require.Equal(t, []int32{0, 4}, kept)
	n, due = HoldBackFreed(&plan, last, nil)
	require.Zero(t, n)
	require.Zero(t, due)

	plan = Plan{Create: []Slot{{Position: 1}}}
	n, due = HoldBackFreed(&plan, last, nil)
	require.Equal(t, 1, n)
	require.Equal(t, HandOverGrace, due)
}

// A run's slots count as freed for HandOverGrace after its end was seen, in its own bed only.
func TestFreedRecently(t *testing.T) {
	now := time.Now()
	ended := func(ago time.Duration, bed string, state v1alpha1.BatchJobState) *v1alpha1.BatchJob {
		at := metav1.NewMicroTime(now.Add(-ago))
		return &v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: state, TestBed: bed, Slots: []int32{2, 5},
			Phases: &v1alpha1.RunPhases{EndedAt: &at}}}
	}
	ps, left := FreedRecently(ended(400*time.Millisecond, "bed", v1alpha1.JobCompleted), "bed", now)
	require.Equal(t, []int32{2, 5}, ps)
	require.Equal(t, HandOverGrace-400*time.Millisecond, left)
	_, left = FreedRecently(ended(2*HandOverGrace, "bed", v1alpha1.JobFailed), "bed", now)
	require.LessOrEqual(t, left, time.Duration(0), "the grace is over")
	_, left = FreedRecently(ended(0, "other", v1alpha1.JobCompleted), "bed", now)
	require.Zero(t, left)
	_, left = FreedRecently(ended(0, "bed", v1alpha1.JobRunning), "bed", now)
	require.Zero(t, left)
	_, left = FreedRecently(ended(-time.Hour, "bed", v1alpha1.JobCompleted), "bed", now)
	require.Equal(t, HandOverGrace, left, "an end stamped ahead of this clock waits no longer than the grace")
}

// A settled bed waits the resync, one in progress the retry, and a grant's timeout that
// runs out sooner cuts either short.
func TestNextPass(t *testing.T) {
	for _, c := range []struct {
		settled   bool
		recheckIn time.Duration
		want      time.Duration
	}{
		{true, 0, 30 * time.Second},
		{false, 0, 2 * time.Second},
		{true, 5 * time.Second, 5 * time.Second},
		{false, 5 * time.Second, 2 * time.Second},
		{false, time.Second, time.Second},
	} {
		if got := NextPass(c.settled, c.recheckIn, 30*time.Second, 2*time.Second); got != c.want {
			t.Errorf("NextPass(%v, %s) = %s, want %s", c.settled, c.recheckIn, got, c.want)
		}
	}
}
