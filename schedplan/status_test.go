package schedplan

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

var t0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// Render gives each job its entry and the counts: a wait from the Scheduling's start to the
// request, a run time from submission to the end, both to the second; ended jobs count as
// finished, running ones as running.
func TestRender_EntriesAndCounts(t *testing.T) {
	st := v1alpha1.SchedulingStatus{StartedAt: &metav1.Time{Time: t0}}
	Render(&st, Jobs{
		{Job: named("a"), State: v1alpha1.JobCompleted, Slots: []int32{0}, RequestedAt: t0.Add(1500 * time.Millisecond),
			SubmittedAt: t0.Add(2 * time.Second), FinishedAt: t0.Add(12900 * time.Millisecond)},
		{Job: named("b"), State: v1alpha1.JobRunning, Slots: []int32{1, 2}, RequestedAt: t0.Add(3 * time.Second), SubmittedAt: t0.Add(4 * time.Second)},
		{Job: named("c"), State: v1alpha1.JobInQueue},
	})
	require.Equal(t, int32(3), st.TotalJobs)
	require.Equal(t, int32(1), st.RunningJobs)
	require.Equal(t, int32(1), st.FinishedJobs)
	require.Len(t, st.Jobs, 3)
	require.Equal(t, time.Second, st.Jobs[0].WaitTime.Duration)
	require.Equal(t, 10*time.Second, st.Jobs[0].RunTime.Duration)
	require.Nil(t, st.Jobs[1].RunTime, "not ended")
	require.Nil(t, st.Jobs[2].WaitTime, "not requested")
	Render(&st, Jobs{{Job: named("a"), State: v1alpha1.JobCompleted}})
	require.Len(t, st.Jobs, 1, "a render replaces the list")
}

// Plan writes the first status whole, then only the entries that changed; skips a write
// that changes nothing; puts off one that changes only progress until the pace is due, and
// writes at once a change of the state, the message, the count or a condition.
func TestWritten_Plan(t *testing.T) {
	jobs := func(states ...v1alpha1.BatchJobState) Jobs {
		var out Jobs
		for i, s := range states {
			out = append(out, &Job{Job: named(fmt.Sprintf("j%d", i)), State: s})
		}
		return out
	}
	status := func(state v1alpha1.SchedulingState, js Jobs) v1alpha1.SchedulingStatus {
		st := v1alpha1.SchedulingStatus{State: state, StartedAt: &metav1.Time{Time: t0}}
		Render(&st, js)
		return st
	}
	first := status(v1alpha1.SchedulingScheduling, jobs(v1alpha1.JobRunning, v1alpha1.JobInQueue))
	for _, c := range []struct {
		name  string
		next  v1alpha1.SchedulingStatus
		after time.Duration
		want  Plan
	}{
		{"nothing changed", first, 0, Plan{Skip: true}},
		{"progress, too soon", status(v1alpha1.SchedulingScheduling, jobs(v1alpha1.JobCompleted, v1alpha1.JobInQueue)), 300 * time.Millisecond,
			Plan{Due: 700 * time.Millisecond}},
		{"progress, when due", status(v1alpha1.SchedulingScheduling, jobs(v1alpha1.JobCompleted, v1alpha1.JobInQueue)), Pace,
			Plan{Delta: true}},
		{"the state, at once", status(v1alpha1.SchedulingCompleted, jobs(v1alpha1.JobRunning, v1alpha1.JobInQueue)), 0, Plan{Delta: true}},
		{"a job more, at once", status(v1alpha1.SchedulingScheduling, jobs(v1alpha1.JobRunning, v1alpha1.JobInQueue, v1alpha1.JobInQueue)), 0,
			Plan{Delta: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w Written
			require.Equal(t, Plan{Jobs: first.Jobs}, w.Plan(first, t0), "the first write is whole")
			w.Wrote(first, first.Jobs, t0)
			got := w.Plan(c.next, t0.Add(c.after))
			switch {
			case c.want.Skip, c.want.Due > 0:
				require.Equal(t, c.want, got)
			default:
				require.True(t, got.Delta, "%+v", got)
				require.False(t, got.Skip)
				var changed []string
				for _, js := range got.Jobs {
					changed = append(changed, js.Name)
				}
				var want []string
				for i, js := range c.next.Jobs {
					if i >= len(first.Jobs) || !SameJob(first.Jobs[i], js) {
						want = append(want, js.Name)
					}
				}
				require.Equal(t, want, changed, "only the entries that changed")
			}
		})
	}
}

// A run that takes over a status another wrote (Top and At, no entries) writes its first
// status whole, but paces it from the last write when only progress differs.
func TestWritten_ACarriedWriteIsPacedButWhole(t *testing.T) {
	st := v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, StartedAt: &metav1.Time{Time: t0}}
	Render(&st, Jobs{{Job: named("a"), State: v1alpha1.JobRunning}})
	top := st
	top.Jobs = nil
	w := Written{Top: &top, At: t0}
	require.Equal(t, Plan{Due: 600 * time.Millisecond}, w.Plan(st, t0.Add(400*time.Millisecond)))
	p := w.Plan(st, t0.Add(2*time.Second))
	require.False(t, p.Delta)
	require.Len(t, p.Jobs, 1)
}

// The pace grows with the Scheduling past EntriesPerSecond jobs.
func TestPaceFor(t *testing.T) {
	for n, want := range map[int]time.Duration{0: Pace, 100: Pace, 250: 2500 * time.Millisecond, 1000: 10 * time.Second} {
		require.Equal(t, want, PaceFor(n), "%d jobs", n)
	}
}

// named is a queue entry of the job name.
func named(name string) v1alpha1.SchedulingJob {
	return v1alpha1.SchedulingJob{Name: name, Replication: 1}
}
