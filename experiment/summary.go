package experiment

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

// The outcomes a run ends with (Run.Outcome).
const (
	OutcomeCompleted = "Completed"
	OutcomeFailed    = "Failed"
	// OutcomeReleased: the run's Scheduling let go of it mid-run, so the job runs again.
	OutcomeReleased = "Released"
	// OutcomeRefused: the job never ran: its queue refused it (an ACL, a placement rule).
	// Its run reached no phase.
	OutcomeRefused = "Refused"
)

// Summary is the handful of figures a scheduling researcher compares between experiments,
// or between an experiment and its prediction.
type Summary struct {
	// Makespan is from the earliest arrival to the latest end, over the runs that ended.
	Makespan time.Duration
	// The waits (Run.Wait) are over the runs that were admitted; percentiles are
	// nearest-rank, so each is a wait some run really had.
	MeanWait, P50Wait, P95Wait, MaxWait time.Duration
	// Utilization is the share of the bed's slot-time, over the makespan, that runs held
	// (0 to 1; 0 when there is no makespan or no slot).
	Utilization float64
	// Fairness is Jain's index over users of how well each was served; see jain.
	Fairness float64
	// Runs counts every run; Jobs the distinct jobs they ran; Admitted those that got their
	// slots; Completed, Failed and Released those that ended so; Refused those refused
	// before they ran; Unfinished those never seen
	// ending.
	Runs, Jobs, Admitted        int
	Completed, Failed, Released int
	Refused, Unfinished         int
}

// Summarize sums up runs on a bed of slots slots. It serves measured runs and predicted
// ones alike (Prediction.Runs): a run's slot-time counts SlotCount, which for a prediction
// is its Width.
func Summarize(runs []Run, slots int) Summary {
	s := Summary{Runs: len(runs), Makespan: makespan(runs)}
	jobs := map[string]bool{}
	var waits []time.Duration
	var held time.Duration // slot-time, in slot x duration
	for _, r := range runs {
		jobs[r.Job] = true
		if w := r.Wait(); w != NotReached {
			waits = append(waits, w)
		}
		if d := r.RunTime(); d != NotReached {
			held += time.Duration(r.SlotCount()) * d
		}
		switch {
		case r.Outcome == OutcomeRefused:
			s.Refused++
		case r.Ended < 0:
			s.Unfinished++
		case r.Outcome == OutcomeCompleted:
			s.Completed++
		case r.Outcome == OutcomeFailed:
			s.Failed++
		case r.Outcome == OutcomeReleased:
			s.Released++
		}
	}
	s.Jobs, s.Admitted = len(jobs), len(waits)
	if len(waits) > 0 {
		slices.Sort(waits)
		var sum time.Duration
		for _, w := range waits {
			sum += w
		}
		s.MeanWait = sum / time.Duration(len(waits))
		s.P50Wait, s.P95Wait = nearestRank(waits, 50), nearestRank(waits, 95)
		s.MaxWait = waits[len(waits)-1]
	}
	if s.Makespan > 0 && slots > 0 {
		// In float: slots x makespan overflows a Duration past some 290 years / slots,
		// which a large bed and a long trace come closer to than one would like.
		s.Utilization = held.Seconds() / (float64(slots) * s.Makespan.Seconds())
	}
	s.Fairness = jain(runs)
	return s
}

// makespan is from the earliest arrival to the latest end of the runs that ended; a run
// never seen ending says nothing about when the experiment's work was done.
func makespan(runs []Run) time.Duration {
	first, last, seen := time.Duration(0), time.Duration(0), false
	for _, r := range runs {
		if r.Ended < 0 {
			continue
		}
		if !seen || r.Arrival < first {
			first = r.Arrival
		}
		if !seen || r.Ended > last {
			last = r.Ended
		}
		seen = true
	}
	return last - first
}

// nearestRank is the p-th percentile of sorted (not empty) by the nearest-rank method: the
// smallest value with at least p% of the values at or below it.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// jain is the fairness this package reports: Jain's index over users,
//
//	J = (Σ x_u)² / (n · Σ x_u²),
//
// where x_u = 1 / (mean stretch of user u's finished runs) and a run's stretch is
// (Ended - Arrival) / (Ended - Admitted): how much longer it took than the slots alone
// would have. x_u is 1 for a user never kept waiting and falls towards 0 the longer one
// waits relative to the work. J is 1 when every user got the same service and 1/n when one
// user got it all. A run without a wait is not excluded (its stretch is 1); a run that
// held its slots for no time has no stretch and is skipped, as is a user with no such
// runs. Runs without a user count as one user "-". With fewer than 2 users J is 1.
func jain(runs []Run) float64 {
	type acc struct {
		sum float64
		n   int
	}
	users := map[string]*acc{}
	for _, r := range runs {
		held := r.RunTime()
		if held <= 0 { // NotReached or no hold time
			continue
		}
		u := cmp.Or(r.User, "-")
		if users[u] == nil {
			users[u] = &acc{}
		}
		users[u].sum += float64(r.Ended-r.Arrival) / float64(held)
		users[u].n++
	}
	if len(users) < 2 {
		return 1
	}
	var sum, sumSq float64
	// Sorted, so the float sums, and with them the last digits, do not depend on map order.
	for _, u := range slices.Sorted(maps.Keys(users)) {
		x := float64(users[u].n) / users[u].sum // 1 / mean stretch
		sum += x
		sumSq += x * x
	}
	return sum * sum / (float64(len(users)) * sumSq)
}

// Runs are the predicted runs as a list Summarize takes, in arrival order, then by job: a
// run without a Job takes its key, one without an Attempt is the first, and a predicted
// run that finished Completed (a simulation has no other way to end).
func (p *Prediction) Runs() []Run {
	if p == nil {
		return nil
	}
	runs := make([]Run, 0, len(p.Jobs))
	for name, r := range p.Jobs {
		r.Job = cmp.Or(r.Job, name)
		r.Attempt = cmp.Or(r.Attempt, 1)
		if r.Ended >= 0 && r.Outcome == "" {
			r.Outcome = OutcomeCompleted
		}
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b Run) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.Job, b.Job))
	})
	return runs
}
