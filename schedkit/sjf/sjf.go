// Package sjf is an external scheduler that learns from the run history: it runs the
// waiting job it expects to be shortest first, and packs each job onto the nodes that are
// already busiest, so that whole nodes stay free for the large jobs to come.
//
// A job's expected run time is the mean of its own completed runs; a job that never ran
// takes the mean of the completed runs of its user's jobs in its queue, then of everyone's;
// with no history at all, jobs go in arrival order. The estimate and what it rests on are
// written into the job's scheduler data (estimate, basis), so the next invocation, and the
// researcher, can see them.
//
// Shortest-first starves long jobs when short ones keep coming, so a job that has waited
// longer than Patience times the mean run time (at least MinPatience) goes first whatever
// its length, and no other job is placed until it fits.
package sjf

import (
	"cmp"
	"slices"
	"time"

	"slotplane/schedkit"
)

// Patience and MinPatience bound how long a job waits before it goes first.
const (
	Patience    = 4
	MinPatience = 30 * time.Second
)

// Scheduler is shortest-expected-job-first with packing.
type Scheduler struct{}

// New returns the scheduler.
func New() Scheduler { return Scheduler{} }

// The notes the scheduler keeps on a job.
const (
	EstimateNote = "estimate"
	BasisNote    = "basis"
)

// estimate is a job's expected run time and what it rests on.
type estimate struct {
	d     time.Duration
	basis string
}

// Decide places the waiting jobs, the oldest overdue one first, then by expected length.
func (Scheduler) Decide(v *schedkit.View) []schedkit.Placement {
	history := learn(v)
	type candidate struct {
		job schedkit.Job
		est estimate
	}
	var cands []candidate
	for _, j := range v.Waiting {
		if int(j.Replicas) <= len(v.Slots) { // one larger than the bed can never run
			cands = append(cands, candidate{j, history.of(j)})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	patience := max(MinPatience, Patience*history.mean)
	overdue := func(c candidate) bool { return v.Now.Sub(c.job.Arrival) > patience }
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if oa, ob := overdue(a), overdue(b); oa != ob {
			if oa {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.est.d, b.est.d), a.job.Arrival.Compare(b.job.Arrival))
	})
	free := freeByNode(v)
	var out []schedkit.Placement
	for _, c := range cands {
		slots, ok := free.take(int(c.job.Replicas))
		if !ok {
			if overdue(c) {
				break // it waits for room, and nobody takes that room from it
			}
			continue
		}
		est, basis := c.est.d.String(), c.est.basis
		out = append(out, schedkit.Placement{Job: c.job.Name, Replicas: c.job.Replicas, Slots: slots,
			Notes: map[string]*string{EstimateNote: &est, BasisNote: &basis}})
	}
	return out
}

// knowledge is what the run history says of run times.
type knowledge struct {
	byClass map[string][]time.Duration // user and queue
	mean    time.Duration
}

func class(j schedkit.Job) string { return j.User + "\x00" + j.Queue }

func learn(v *schedkit.View) knowledge {
	k := knowledge{byClass: map[string][]time.Duration{}}
	var all []time.Duration
	// In name order: the sums, and so the estimates, do not depend on map order.
	names := make([]string, 0, len(v.Jobs))
	for name := range v.Jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		j := v.Jobs[name]
		runs := j.RunTimes()
		k.byClass[class(*j)] = append(k.byClass[class(*j)], runs...)
		all = append(all, runs...)
	}
	k.mean = mean(all)
	return k
}

func (k knowledge) of(j schedkit.Job) estimate {
	if own := j.RunTimes(); len(own) > 0 {
		return estimate{mean(own), "own runs"}
	}
	if runs := k.byClass[class(j)]; len(runs) > 0 {
		return estimate{mean(runs), "runs of the user's jobs in the queue"}
	}
	if k.mean > 0 {
		return estimate{k.mean, "all runs"}
	}
	return estimate{0, "no runs yet"}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// nodes are the free slots by node, for packing.
type nodes struct {
	order []string
	free  map[string][]int32
	total map[string]int
}

func freeByNode(v *schedkit.View) *nodes {
	n := &nodes{free: map[string][]int32{}, total: map[string]int{}}
	for _, s := range v.Slots {
		if _, seen := n.total[s.Node]; !seen {
			n.order = append(n.order, s.Node)
		}
		n.total[s.Node]++
		if s.Free() {
			n.free[s.Node] = append(n.free[s.Node], s.Position)
		}
	}
	return n
}

// take picks k free slots, filling the nodes with the fewest free slots first (best fit),
// and removes them; false when fewer than k are free.
func (n *nodes) take(k int) ([]int32, bool) {
	count := 0
	for _, f := range n.free {
		count += len(f)
	}
	if k > count {
		return nil, false
	}
	order := slices.Clone(n.order)
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(n.free[a]), len(n.free[b])) })
	var out []int32
	for _, node := range order {
		for len(out) < k && len(n.free[node]) > 0 {
			out = append(out, n.free[node][0])
			n.free[node] = n.free[node][1:]
		}
	}
	slices.Sort(out)
	return out, true
}
