package queue

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Preemption is the scheduler-wide preemption setting, of the settings (yarn-site.xml) as
// in the Fair Scheduler.
type Preemption struct {
	// Enabled is the global switch (yarn.scheduler.fair.preemption, off by default).
	Enabled bool
	// SlotBased lets preemption take slots from SlotBased jobs too
	// (slotplane.preemption.slot-based, off by default: an external scheduler chose their
	// slots exactly).
	SlotBased bool
	// BelowFairShare lets preemption take a slot that leaves its queue below its fair share
	// (slotplane.preemption.below-fair-share, off by default), as long as the queue then
	// still holds a larger part of its share than the starving queue: see PlanPreemption.
	BelowFairShare bool
}

// DefaultFairSharePreemptionThreshold applies when neither a queue, its ancestors nor the
// file set one.
const DefaultFairSharePreemptionThreshold = 0.5

// Starving is a queue that has waited past its timeout for resources it is owed.
type Starving struct {
	Queue string
	// Amount is what it is owed now: up to its minimum share, and up to its fair share.
	Amount Resources
	Reason string
}

// Starvation tracks, between calls, since when each queue has been short of its minimum or
// its fair-share threshold. The caller keeps it (the Admission workflow's state) and passes
// it back each time; the zero value is ready to use.
type Starvation struct {
	MinShareSince  map[string]time.Time
	FairShareSince map[string]time.Time
}

// inherited walks up from q for the first set value.
func inherited[T any](q *Queue, get func(*QueueConfig) *T) (T, bool) {
	for ; q != nil; q = q.parent {
		if q.Config != nil {
			if v := get(q.Config); v != nil {
				return *v, true
			}
		}
	}
	var zero T
	return zero, false
}

// Timeouts returns a queue's min-share and fair-share preemption timeouts and its fair-share
// threshold, inherited from its ancestors, root falling back to the file's defaults. A
// timeout that nothing sets is off (ok false).
func (t *Tree) Timeouts(q *Queue) (minShare time.Duration, minOK bool, fairShare time.Duration, fairOK bool, threshold float64) {
	minShare, minOK = inherited(q, func(c *QueueConfig) *time.Duration { return c.MinSharePreemptionTimeout })
	if !minOK && t.alloc.DefaultMinSharePreemptionTimeout != nil {
		minShare, minOK = *t.alloc.DefaultMinSharePreemptionTimeout, true
	}
	fairShare, fairOK = inherited(q, func(c *QueueConfig) *time.Duration { return c.FairSharePreemptionTimeout })
	if !fairOK && t.alloc.DefaultFairSharePreemptionTimeout != nil {
		fairShare, fairOK = *t.alloc.DefaultFairSharePreemptionTimeout, true
	}
	threshold, ok := inherited(q, func(c *QueueConfig) *float64 { return c.FairSharePreemptionThreshold })
	if !ok {
		threshold = DefaultFairSharePreemptionThreshold
		if t.alloc.DefaultFairSharePreemptionThreshold != nil {
			threshold = *t.alloc.DefaultFairSharePreemptionThreshold
		}
	}
	return minShare, minOK, fairShare, fairOK, threshold
}

// Starved updates st with the leaf queues short of their shares at c.Now, and returns those
// that have been short for longer than their timeouts. A queue is short of its minimum when
// it uses less than min(minResources, demand); short of its fair share when it uses less
// than threshold x its instantaneous fair share (which its demand caps). Memory decides,
// as under the fair policy.
func (t *Tree) Starved(c Cluster, p Preemption, st *Starvation) []Starving {
	if st.MinShareSince == nil {
		st.MinShareSince = map[string]time.Time{}
	}
	if st.FairShareSince == nil {
		st.FairShareSince = map[string]time.Time{}
	}
	if !p.Enabled {
		clear(st.MinShareSince)
		clear(st.FairShareSince)
		return nil
	}
	s := t.snapshot(c)
	demand := t.Demand(c.Apps)
	var out []Starving
	for _, path := range t.Paths() {
		q := t.Queue(path)
		if !q.Leaf() {
			continue
		}
		u, d := s.usage[path], demand[path]
		minTimeout, minOK, fairTimeout, fairOK, threshold := t.Timeouts(q)
		var owed Resources
		var why []string
		if want := t.MinResources(q).Min(d); u.MemoryBytes < want.MemoryBytes {
			since, ok := st.MinShareSince[path]
			if !ok {
				st.MinShareSince[path], since = c.Now, c.Now
			}
			if minOK && c.Now.Sub(since) >= minTimeout {
				owed = owed.Add(Resources{MemoryBytes: want.MemoryBytes - u.MemoryBytes})
				why = append(why, fmt.Sprintf("below its minimum share for %s", c.Now.Sub(since)))
			}
		} else {
			delete(st.MinShareSince, path)
		}
		fair := s.share[path]
		if float64(u.MemoryBytes) < threshold*float64(fair.MemoryBytes) {
			since, ok := st.FairShareSince[path]
			if !ok {
				st.FairShareSince[path], since = c.Now, c.Now
			}
			if fairOK && c.Now.Sub(since) >= fairTimeout {
				if gap := fair.MemoryBytes - u.MemoryBytes; gap > owed.MemoryBytes {
					owed = Resources{MemoryBytes: gap}
				}
				why = append(why, fmt.Sprintf("below %.0f%% of its fair share for %s", threshold*100, c.Now.Sub(since)))
			}
		} else {
			delete(st.FairShareSince, path)
		}
		if owed.MemoryBytes > 0 {
			out = append(out, Starving{Queue: path, Amount: owed, Reason: fmt.Sprintf("queue %s is %s", path, joinReasons(why))})
		}
	}
	return out
}

func joinReasons(r []string) string {
	switch len(r) {
	case 0:
		return ""
	case 1:
		return r[0]
	default:
		return r[0] + " and " + r[1]
	}
}

// Victim is a job that gives back some of its executors.
type Victim struct {
	App       string
	Executors int
	// For is the starving queue the slots go to.
	For string
}

// PlanPreemption picks the executors to take back for the starving queues, from queues at
// or above their instantaneous fair share, the job of the lowest priority first, and the
// newest among equals. A slot moves only while the
// victim's queue keeps its minimum share and its fair share (the Fair Scheduler's rule: a
// queue at or below its fair share is never preempted), and, after the move, still holds a
// larger part of its fair share (usage over share) than the starving queue held before it.
// Each move thus raises the lowest part of the two (max-min fairness, one slot at a time),
// and no later move can take the slot back: no thrash.
//
// With slots, the Fair Scheduler's rule can leave a queue with nothing for good: two queues
// each a fraction of a slot above their shares can give no whole slot to a third. The
// setting slotplane.preemption.below-fair-share (Preemption.BelowFairShare) drops the rule
// and keeps only the max-min one, so such a third queue gets its slot. Only executors (one
// slot of the given size each) are taken, never a driver: Spark and Flink ask for lost
// executors again, so a preempted job slows down but lives. executors gives each running
// job's executor count.
func (t *Tree) PlanPreemption(c Cluster, starving []Starving, slot Resources, executors map[string]int) []Victim {
	if slot.MemoryBytes <= 0 || len(starving) == 0 {
		return nil
	}
	s := t.snapshot(c)
	demand := t.Demand(c.Apps)
	usage := map[string]int64{}      // memory per leaf, as slots move
	floor := map[string]int64{}      // the minimum share a victim keeps
	over := map[string]bool{}        // at or above its fair share before any move
	for _, path := range t.Paths() { // not over the usage map: workflows call this, in order
		if q := t.Queue(path); q.Leaf() {
			usage[path] = s.usage[path].MemoryBytes
			floor[path] = t.MinResources(q).Min(demand[path]).MemoryBytes
			over[path] = usage[path] >= s.share[path].MemoryBytes && usage[path] > 0
		}
	}
	// part is a queue's usage over its share; a queue with no share and some usage is
	// above every other.
	part := func(path string, u int64) float64 {
		switch share := s.share[path].MemoryBytes; {
		case share > 0:
			return float64(u) / float64(share)
		case u > 0:
			return math.Inf(1)
		default:
			return 0
		}
	}
	belowShare := t.alloc != nil && t.alloc.Preemption.BelowFairShare
	movable := func(victim, to string) bool {
		after := usage[victim] - slot.MemoryBytes
		if !belowShare && after < s.share[victim].MemoryBytes {
			return false
		}
		return victim != to && after >= floor[victim] && part(victim, after) > part(to, usage[to])
	}
	var candidates []App
	for _, a := range c.Apps {
		if q := t.Queue(a.Queue); a.Running && over[a.Queue] && executors[a.ID] > 0 && (q == nil || preemptable(q)) {
			candidates = append(candidates, a)
		}
	}
	slices.SortStableFunc(candidates, func(a, b App) int { // the lowest priority, then the newest, first
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		return cmp.Compare(b.Order, a.Order)
	})
	left := maps.Clone(executors)
	var out []Victim
	for _, need := range starving {
		owed := need.Amount.MemoryBytes
		for _, a := range candidates {
			for owed > 0 && left[a.ID] > 0 && movable(a.Queue, need.Queue) {
				left[a.ID]--
				usage[a.Queue] -= slot.MemoryBytes
				usage[need.Queue] += slot.MemoryBytes
				owed -= slot.MemoryBytes
				if n := len(out); n > 0 && out[n-1].App == a.ID && out[n-1].For == need.Queue {
					out[n-1].Executors++
				} else {
					out = append(out, Victim{App: a.ID, Executors: 1, For: need.Queue})
				}
			}
		}
	}
	return out
}
