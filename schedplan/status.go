// What a Scheduling's workflow writes of its status, and when: each job's entry rendered
// from the queue, only the entries that changed since the last write, nothing when nothing
// changed, and progress paced by the Scheduling's size.

package schedplan

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// Pace is the least time between two writes of a Scheduling's status that carry only its
// jobs' progress (the Job controller of Kubernetes batches its status the same way): a
// write that comes sooner is put off until it is due, and what changed meanwhile goes with
// it. A change of the state, the message, the job count or a condition is written at once.
// Each write puts the whole object through the API server and to every watcher. Each job's
// own status, on its BatchJob, is written as it changes.
const Pace = time.Second

// EntriesPerSecond is how many jobs' entries a Scheduling's status writes carry a second at
// most: up to 100 jobs the pace is Pace, a 1,000-job Scheduling's is 10 s. Measured on the
// API server alone, one write of a 1,000-job Scheduling's status costs it 290-390 ms of CPU
// (decoding, schema validation, managed fields, encoding for etcd and for each watcher),
// about 0.3 ms per entry.
const EntriesPerSecond = 100

// PaceFor is the least time between two writes that carry only progress, for a Scheduling
// of n jobs.
func PaceFor(n int) time.Duration {
	return max(Pace, time.Duration(n)*time.Second/time.Duration(EntriesPerSecond))
}

// Render sets st's job list and counts from jobs, in order. A job's wait runs from the
// Scheduling's start to its request, its run time from its submission to its end, both to
// the second.
func Render(st *v1alpha1.SchedulingStatus, jobs Jobs) {
	st.Jobs = st.Jobs[:0]
	st.TotalJobs, st.RunningJobs, st.FinishedJobs = int32(len(jobs)), 0, 0
	var start time.Time
	if st.StartedAt != nil {
		start = st.StartedAt.Time
	}
	for _, j := range jobs {
		js := v1alpha1.SchedulingJobStatus{Name: j.Job.Name, State: j.State, Slots: j.Slots, Message: j.Message}
		if !j.RequestedAt.IsZero() {
			js.WaitTime = &metav1.Duration{Duration: j.RequestedAt.Sub(start).Truncate(time.Second)}
		}
		if !j.FinishedAt.IsZero() && !j.SubmittedAt.IsZero() {
			js.RunTime = &metav1.Duration{Duration: j.FinishedAt.Sub(j.SubmittedAt).Truncate(time.Second)}
		}
		switch {
		case j.Done():
			st.FinishedJobs++
		case j.State == v1alpha1.JobRunning:
			st.RunningJobs++
		}
		st.Jobs = append(st.Jobs, js)
	}
}

// Written is what a run of the workflow last wrote: each job's entry (nil before its first
// write: the next write is whole), the rest of the status (Top), and when (At).
type Written struct {
	Jobs map[string]v1alpha1.SchedulingJobStatus
	Top  *v1alpha1.SchedulingStatus
	At   time.Time
}

// Plan is what to do with a status now. Skip: nothing changed since the last write. Due,
// when positive: only progress changed, and the write is due that much later. Otherwise
// write: Delta with only Jobs, the entries that changed, or the whole status.
type Plan struct {
	Skip  bool
	Due   time.Duration
	Delta bool
	Jobs  []v1alpha1.SchedulingJobStatus
}

// Plan decides what to write of st (rendered, jobs included) at now, for a Scheduling of
// st.TotalJobs jobs.
func (w *Written) Plan(st v1alpha1.SchedulingStatus, now time.Time) Plan {
	p := Plan{Jobs: st.Jobs}
	if w.Jobs != nil {
		p.Delta, p.Jobs = true, nil
		for _, js := range st.Jobs {
			if old, ok := w.Jobs[js.Name]; !ok || !SameJob(old, js) {
				p.Jobs = append(p.Jobs, js)
			}
		}
	}
	top := st
	top.Jobs = nil
	if p.Delta && len(p.Jobs) == 0 && w.Top != nil && SameTop(*w.Top, top) {
		return Plan{Skip: true}
	}
	if w.Top != nil && SameTop(countless(*w.Top), countless(top)) {
		if due := w.At.Add(PaceFor(int(st.TotalJobs))).Sub(now); due > 0 {
			return Plan{Due: due}
		}
	}
	return p
}

// Wrote notes a write of st (its whole rest, and the entries jobs) at at.
func (w *Written) Wrote(st v1alpha1.SchedulingStatus, jobs []v1alpha1.SchedulingJobStatus, at time.Time) {
	if w.Jobs == nil {
		w.Jobs = make(map[string]v1alpha1.SchedulingJobStatus, len(jobs))
	}
	for _, js := range jobs {
		w.Jobs[js.Name] = js
	}
	top := st
	top.Jobs = nil
	w.Top, w.At = &top, at
}

// countless is a status without its job counts: what must be written at once.
func countless(st v1alpha1.SchedulingStatus) v1alpha1.SchedulingStatus {
	st.RunningJobs, st.FinishedJobs = 0, 0
	return st
}

// SameTop says whether two statuses are equal but for their job lists.
func SameTop(a, b v1alpha1.SchedulingStatus) bool {
	eqTime := func(x, y *metav1.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(y)) }
	if a.State != b.State || a.Message != b.Message || a.TotalJobs != b.TotalJobs || a.RunningJobs != b.RunningJobs ||
		a.FinishedJobs != b.FinishedJobs || a.ObservedGeneration != b.ObservedGeneration ||
		!eqTime(a.StartedAt, b.StartedAt) || !eqTime(a.FinishedAt, b.FinishedAt) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// SameJob says whether two renderings of a job's entry are equal.
func SameJob(a, b v1alpha1.SchedulingJobStatus) bool {
	dur := func(d *metav1.Duration) time.Duration {
		if d == nil {
			return -1
		}
		return d.Duration
	}
	return a.Name == b.Name && a.State == b.State && a.Message == b.Message && slices.Equal(a.Slots, b.Slots) &&
		dur(a.WaitTime) == dur(b.WaitTime) && dur(a.RunTime) == dur(b.RunTime)
}
