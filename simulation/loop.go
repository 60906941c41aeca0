package simulation

import (
	"cmp"
	"slices"
	"time"
)

// Model is a decision maker with the state it decides on, as the loop runs it. At each
// instant the loop calls End, then Start, then Arrive for each job due, then Decide: what
// ends frees its room before anything asks for it, and the decision sees every job
// submitted by then.
type Model interface {
	// End applies what ends at now: runs that finish, and room that becomes free again.
	End(now time.Duration)
	// Start applies what starts at now: runs whose start-up is over.
	Start(now time.Duration)
	// Arrive submits job i of the workload (an index into the jobs given to Run) at now,
	// its submit time.
	Arrive(i int, now time.Duration)
	// Decide lets the decision maker act at now, on everything applied so far.
	Decide(now time.Duration) error
	// Next is the earliest time, not before now, at which something of the model's own
	// happens (a start, an end, a timeout); ok is false when nothing can. Arrivals are the
	// loop's to count. Answering now makes the loop apply the same instant again, for a
	// run placed now that also starts or ends now.
	Next(now time.Duration) (at time.Duration, ok bool)
	// Elapse says that [from, to) passes with the state as it is: what a model averages
	// over time, it adds up here.
	Elapse(from, to time.Duration)
}

// Clock bounds a run of the loop. The zero value bounds nothing.
type Clock struct {
	// Limit stops the run before the first event later than it (zero: no limit). Events at
	// the limit itself still happen.
	Limit time.Duration
	// MaxEvents stops the run once it has applied more instants than this (zero: no
	// bound), so that a model whose events feed each other (preemption taking slots back
	// and forth) cannot run forever.
	MaxEvents int
}

// Reason is why a run of the loop stopped.
type Reason int

const (
	// Idle: nothing more can happen; every job arrived and the model has no event left.
	Idle Reason = iota
	// AtLimit: the next event is later than Clock.Limit.
	AtLimit
	// TooManyEvents: the run applied more than Clock.MaxEvents instants and had more to go.
	TooManyEvents
)

// Stop is how a run of the loop ended.
type Stop struct {
	Why Reason
	// At is the last instant the run applied.
	At time.Duration
	// Events counts the instants it applied, the same one again included.
	Events int
}

// Run runs m over the jobs in virtual time. The clock starts at 0 and jumps from event to
// event: a job's submission, or whatever m's Next names. The jobs arrive in submission
// order, by time and then in the order given, as requests reach a live scheduler. Between
// two events nothing changes, so the run is exact, and with a deterministic m the same jobs
// give the same run.
//
// Run stops when nothing more can happen, before an event past c.Limit (after telling m the
// time up to the limit elapsed), or once it has applied more than c.MaxEvents instants. It
// fails only when m's Decide does.
func Run(m Model, jobs []Job, c Clock) (Stop, error) {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(jobs[x].Submit, jobs[y].Submit) })

	now := time.Duration(0)
	next := 0 // the next job of order to arrive
	events := 0
	for {
		events++
		m.End(now)
		m.Start(now)
		for next < len(order) && jobs[order[next]].Submit <= now {
			m.Arrive(order[next], now)
			next++
		}
		if err := m.Decide(now); err != nil {
			return Stop{At: now, Events: events}, err
		}
		at, ok := m.Next(now)
		if next < len(order) {
			if submit := jobs[order[next]].Submit; !ok || submit < at {
				at, ok = submit, true
			}
		}
		switch {
		case !ok:
			return Stop{Why: Idle, At: now, Events: events}, nil
		case c.Limit > 0 && at > c.Limit:
			m.Elapse(now, c.Limit)
			return Stop{Why: AtLimit, At: now, Events: events}, nil
		case c.MaxEvents > 0 && events > c.MaxEvents:
			return Stop{Why: TooManyEvents, At: now, Events: events}, nil
		}
		m.Elapse(now, at)
		now = at
	}
}
