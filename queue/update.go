package queue

import "time"

// NextCheck says how long after now a decision must look again although nothing happened:
// when the next starving queue's preemption timeout runs out (by the starvation clocks of the
// last decision), but never sooner than the settings' update interval
// (yarn.scheduler.fair.update-interval-ms), the Fair Scheduler's period of looking for
// starved queues. ok is false when no clock runs: only an event can change a decision then.
func (a *Admitter) NextCheck(now time.Time) (wait time.Duration, ok bool) {
	alloc := a.st.Config.Allocations
	if alloc == nil || !alloc.Preemption.Enabled {
		return 0, false
	}
	var due time.Time
	consider := func(since map[string]time.Time, q *Queue, timeout time.Duration, has bool) {
		at, clocked := since[q.Path]
		// A time gone by was looked at by the decision that came at or after it: only an
		// event can change what that decision found.
		if clocked && has && at.Add(timeout).After(now) && (due.IsZero() || at.Add(timeout).Before(due)) {
			due = at.Add(timeout)
		}
	}
	for _, path := range a.tree.Paths() { // in order, not over the maps: workflow code
		q := a.tree.Queue(path)
		minShare, minOK, fairShare, fairOK, _ := a.tree.Timeouts(q)
		consider(a.st.Starvation.MinShareSince, q, minShare, minOK)
		consider(a.st.Starvation.FairShareSince, q, fairShare, fairOK)
	}
	if due.IsZero() {
		return 0, false
	}
	return max(due.Sub(now), alloc.UpdateInterval), true
}
