package queue

import (
	"fmt"
	"slices"
	"time"
)

// preempt takes executors' slots back for queues starved past their timeouts, when the
// allocation file turns preemption on and the test bed is used at least its threshold: from
// jobs of queues at or above their fair share, the newest job and its newest slots first. It
// takes what the starving queue's first waiting job needs beyond the free slots, in one step;
// the slots taken back are then held for that queue (they are not given back to their victims
// while they free up). No more is taken while slots taken earlier are still being vacated.
// SlotBased jobs are victims only when the settings say so (slotplane.preemption.slot-based).
func (a *Admitter) preempt(now time.Time, bed Bed, avail []int32, d *Decision) {
	pre := a.st.Config.Allocations.Preemption
	if !pre.Enabled {
		clear(a.st.Starvation.MinShareSince)
		clear(a.st.Starvation.FairShareSince)
		return
	}
	if len(a.st.Reclaimed) > 0 || a.st.PreemptedFor != nil {
		return
	}
	a.compact() // the picture, the heads and the victims are read from the lists as they are
	c, executors := a.preemptionCluster(now, pre)
	starving := a.tree.Starved(c, pre, &a.st.Starvation)
	if len(starving) == 0 {
		return
	}
	head, starving := a.preemptFor(now, bed, starving, avail)
	if head == nil {
		return
	}
	// A job granted in this decision is no victim: its Scheduling is being told of the
	// grant, which a revocation would contradict at once.
	for _, g := range d.Grants {
		delete(executors, g.JobKey.String())
	}
	victims := a.tree.PlanPreemption(c, starving, a.st.Slot, executors)
	a.takeBack(victims, starving, head, d)
}

// preemptionCluster is the picture preemption is planned on: every running job demanding
// what it asked for and every waiting one; and the executors of each running job that may
// be taken (those of SlotBased jobs only when pre.SlotBased).
func (a *Admitter) preemptionCluster(now time.Time, pre Preemption) (Cluster, map[string]int) {
	c := Cluster{Total: a.st.Total, Now: now}
	executors := map[string]int{}
	for i := range a.st.Running {
		e := &a.st.Running[i]
		app := a.appOf(e, true)
		app.Demand = times(a.st.Slot, e.wanted()) // a preempted job still demands what it asked for
		c.Apps = append(c.Apps, app)
		if !e.slotBased() || pre.SlotBased {
			executors[app.ID] = len(e.Slots)
		}
	}
	for i := range a.st.Waiting {
		c.Apps = append(c.Apps, a.appOf(&a.st.Waiting[i], false))
	}
	return c, executors
}

// preemptFor picks the starving queue preemption acts for and the waiting job it takes
// slots for, and sets how much that queue is to get.
//
// One starving queue at a time, the first whose first waiting job no limit holds back:
// what that job needs beyond what is free is taken in one step, so it starts as soon as the
// slots are vacated (what the queue is owed, when the free slots are enough for it). Slots
// taken for a job that a limit keeps waiting would only sit idle, so when no queue's head
// is admissible there is none.
func (a *Admitter) preemptFor(now time.Time, bed Bed, starving []Starving, avail []int32) (*Entry, []Starving) {
	for _, s := range starving {
		if head := a.headOf(s.Queue); head != nil && a.admissible(now, bed, head) {
			short := head.wanted() - int64(len(avail))
			if short > 0 {
				// Just what the head lacks: queues at their share may give now, and the
				// queue's next job gets its own turn.
				s.Amount = Resources{MemoryBytes: times(a.st.Slot, short).MemoryBytes}
			}
			return head, []Starving{s}
		}
	}
	// No starving queue has a head that only room holds back: slots taken now would sit
	// idle.
	return nil, nil
}

// takeBack takes back the victims' newest slots for head: they become the victims' Revoke
// assignments and Reclaimed, and the free slots are held for head (PreemptedFor).
func (a *Admitter) takeBack(victims []Victim, starving []Starving, head *Entry, d *Decision) {
	a.pic = nil // what running jobs hold changes
	a.indexIDs()
	for _, v := range victims {
		e, running := a.byID(v.App)
		if e == nil || !running {
			continue
		}
		n := min(v.Executors, len(e.Slots))
		keep, revoke := slices.Clone(e.Slots[:len(e.Slots)-n]), slices.Clone(e.Slots[len(e.Slots)-n:])
		why := fmt.Sprintf("queue %s is above its fair share", e.Queue)
		if i := slices.IndexFunc(starving, func(s Starving) bool { return s.Queue == v.For }); i >= 0 {
			why += "; " + starving[i].Reason
		}
		e.Slots = keep
		e.Preempted += int32(n)
		a.st.Reclaimed = append(a.st.Reclaimed, revoke...)
		k := head.Request.JobKey
		a.st.PreemptedFor = &k
		d.Assignments = append(d.Assignments, Assignment{JobKey: e.Request.JobKey, Keep: keep, Revoke: revoke, Why: why, For: v.For})
	}
}

// headOf is the first waiting job of a leaf: the highest priority, the earliest among equals.
func (a *Admitter) headOf(leaf string) *Entry {
	var head *Entry
	for i := range a.st.Waiting {
		e := &a.st.Waiting[i]
		if e.Queue != leaf {
			continue
		}
		if head == nil || e.Request.Priority > head.Request.Priority || e.Request.Priority == head.Request.Priority && e.Order < head.Order {
			head = e
		}
	}
	return head
}
