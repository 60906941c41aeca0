package queue

import (
	"fmt"
	"slices"
	"time"
)

// Assignment changes the slots of a granted job's application: it keeps Keep and loses
// Revoke (preemption), or gets a slot back (Revoke empty).
type Assignment struct {
	JobKey
	Keep, Revoke []int32
	// Why is said to people when slots are revoked, and For is the starving queue they are
	// taken for.
	Why, For string
}

// Decision is what Decide asks the caller to carry out.
type Decision struct {
	Grants      []Grant
	Assignments []Assignment
}

// Bed is the test bed as a decision sees it.
type Bed struct {
	Exists bool
	// Positions are all slots; Free those its status shows free (no pod in them), and
	// Unavailable those no new job may get (their node is not Ready or left the bed).
	Positions   []int32
	Free        []int32
	Unavailable []int32
	SlotSize    Resources
}

// Decide grants every waiting job the policies let through on the free slots, gives back
// slots to jobs that lost them, and plans preemption. The decision is applied to the
// Admitter's state at once; the caller carries it out, and releases a job whose grant or
// assignment cannot be delivered (its Scheduling no longer holds it).
//
// Strict leaves (fifo and stateaware by default) keep their order: a head that does not fit
// the free slots reserves them as they free up, and nothing else starts while it waits,
// except by backfill. A SlotBased head reserves its own slots only.
func (a *Admitter) Decide(now time.Time, bed Bed) Decision {
	a.tidy()
	var d Decision
	slot := bed.SlotSize
	a.st.Slot, a.st.Total = slot, times(slot, int64(len(bed.Positions)))
	if !bed.Exists {
		for i := range a.st.Waiting {
			a.st.Waiting[i].Reason = "the test bed does not exist"
		}
		a.st.Reserved, a.explain = nil, nil
		return d
	}
	avail := a.freeSlots(&bed)
	a.room = a.startingRoom(now)
	skip := map[string]bool{}
	// The job slots were taken back for goes first, and holds the free slots until it fits
	// and no limit holds it back, so they go neither back to their victims nor to another
	// queue whose turn comes (which would starve it again and preempt again). A strict
	// head's reservation, by contrast, is decided anew each time: the queues' fair order
	// says whose turn it is.
	a.st.Reserved = nil
	reserving, avail := a.grantPreemptedFor(now, bed, avail, &d)
	if reserving == nil {
		reserving, avail = a.grantInTurn(now, bed, avail, skip, &d)
	}
	if reserving != nil {
		avail = a.holdFor(now, bed, reserving, avail, skip, &d)
	}
	a.preempt(now, bed, avail, &d)
	if a.explain != nil && a.explain.due {
		// The reasons are given from the slots left free once everything is decided.
		a.explain = &explainAt{now: now, positions: bed.Positions, avail: slices.Clone(avail)}
	}
	if len(a.st.Handed) > 0 {
		// What was granted again is no longer being handed on: the handed slots were held
		// by no job when the decision began (freeSlots), so only its own grants count.
		var again slotSet
		for _, g := range d.Grants {
			for _, p := range g.Slots {
				again.add(p)
			}
		}
		for _, as := range d.Assignments {
			for _, p := range as.Keep {
				again.add(p)
			}
		}
		a.st.Handed = slices.DeleteFunc(a.st.Handed, again.has)
	}
	a.tidy()
	return d
}

// freeSlots returns the free slots jobs may be given, sorted: the bed's free positions that
// no running job holds. It sorts a copy of bed.Positions into bed, and forgets the slots
// taken back by preemption that are free again or held again.
func (a *Admitter) freeSlots(bed *Bed) []int32 {
	held := a.heldSlots()
	free := setOf(bed.Free)
	a.st.Reclaimed = slices.DeleteFunc(a.st.Reclaimed, func(p int32) bool { return held.has(p) || free[p] })
	bed.Positions = slices.Clone(bed.Positions)
	slices.Sort(bed.Positions)
	avail := slices.Clone(bed.Free)
	// A handed slot counts as free until the status says so itself, unless it went away
	// (its node left or is not Ready) or preemption is taking it back.
	unavailable, reclaimed := setOf(bed.Unavailable), setOf(a.st.Reclaimed)
	a.st.Handed = slices.DeleteFunc(a.st.Handed, func(p int32) bool {
		return held.has(p) || free[p] || !has(bed.Positions, p) || unavailable[p]
	})
	for _, p := range a.st.Handed {
		if !reclaimed[p] {
			avail = append(avail, p)
		}
	}
	slices.Sort(avail)
	return slices.DeleteFunc(slices.Compact(avail), func(p int32) bool { return held.has(p) || !has(bed.Positions, p) })
}

// heldSlots is the set of slots granted jobs hold.
func (a *Admitter) heldSlots() slotSet {
	var held slotSet
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone {
			for _, p := range e.Slots {
				held.add(p)
			}
		}
	}
	return held
}

// grantPreemptedFor grants the job slots were taken back for, if it still waits, fits the
// free slots and no limit holds it back; if it cannot start yet it is returned as the job
// the free slots are held for. It returns the slots left free.
func (a *Admitter) grantPreemptedFor(now time.Time, bed Bed, avail []int32, d *Decision) (*Entry, []int32) {
	k := a.st.PreemptedFor
	if k == nil {
		return nil, avail
	}
	ref, ok := a.find(*k)
	switch {
	case !ok || ref.running:
		a.st.PreemptedFor = nil
	case a.room != 0 && fits(a.at(ref), avail) && a.admissible(now, bed, a.at(ref)):
		a.pic = nil // a grant outside the picture
		avail = a.grant(now, a.at(ref), avail, d)
		a.st.PreemptedFor = nil
		a.tidy()
	default:
		return a.at(ref), avail
	}
	return nil, avail
}

// grantInTurn grants jobs, and gives preempted ones their slots back, in the order the
// queues' policies choose, until none is chosen or a strict leaf's head that does not fit
// reserves the free slots: that head is returned (and is Reserved). It returns the slots
// left free.
//
// The choices are made on one picture of the jobs (a Chooser), updated as each is granted:
// the reasons of those that wait are those of the last choice, the one that found nothing
// more to start.
func (a *Admitter) grantInTurn(now time.Time, bed Bed, avail []int32, skip map[string]bool, d *Decision) (*Entry, []int32) {
	// Whether a running job asks for a slot back that preemption took (anyPreempted): the
	// one thing left to do once no job may start. Known until a slot goes back.
	var asking, known bool
	askingBack := func() bool {
		if !known {
			asking, known = a.anyPreempted(), true
		}
		return asking
	}
	if a.room == 0 && !askingBack() {
		// The queues' order would choose nothing, and choosing costs a pass over every job.
		a.startingFull()
		return nil, avail
	}
	p := a.pictureFor(now, bed, avail)
	chooser, refs := p.chooser, p.refs
	a.roomFor(chooser, refs, &avail, skip)
	slot := a.st.Slot
	full := false // a waiting job was passed by for the bound on starting jobs
	for {
		if len(avail) == 0 {
			chooser.StopAsking() // a preempted job asks for its slots back only while some are free
		}
		chooser.SetFree(times(slot, int64(len(avail))))
		ch := chooser.Choose(false)
		if !ch.OK || ch.Reserve {
			// Why the others wait is written when it is read (giveReasons): a pass over
			// every waiting job, which each decision would otherwise pay for.
			a.explain = &explainAt{due: true}
		}
		if !ch.OK {
			if full {
				a.startingFull()
			}
			a.tidy()
			return nil, avail
		}
		i := ch.Index
		e, running := a.at(refs[i]), refs[i].running
		if ch.Reserve {
			k := e.Request.JobKey
			a.st.Reserved = &k
			a.tidy() // a compaction moves the entries: find the head again
			ref, _ := a.find(k)
			return a.at(ref), avail
		}
		if running {
			// A preempted job gets one of its slots back.
			e.Slots = append(e.Slots, avail[0])
			avail = avail[1:]
			d.Assignments = append(d.Assignments, Assignment{JobKey: e.Request.JobKey, Keep: slices.Clone(e.Slots)})
			chooser.Grow(i, slot, int64(len(e.Slots)) < e.wanted())
			known = false
			continue
		}
		if a.room == 0 {
			if !askingBack() {
				a.startingFull()
				a.tidy()
				return nil, avail
			}
			// A running job may still get a slot back: pass the waiting one by.
			skip[ch.App.ID], full = true, true
			p.skip(i)
			continue
		}
		avail = a.grant(now, e, avail, d)
		g := &a.st.Running[len(a.st.Running)-1]
		refs[i] = entryRef{running: true, i: len(a.st.Running) - 1}
		p.running = append(p.running, i)
		chooser.Start(i, times(slot, int64(len(g.Slots))), g.State, g.StartingSince)
	}
}

// roomFor tells the chooser, from the slots free now, why a SlotBased job cannot start: its
// named slots are not all free. At the head of a strict leaf such a job holds its own free
// slots (reserveOwnSlots) and the jobs behind it go on; skip, when given, notes it. Without
// skip the choices are made for their reasons (giveReasons), and the head gives its own;
// a decision leaves the reasons to giveReasons.
func (a *Admitter) roomFor(chooser *Chooser, refs []entryRef, avail *[]int32, skip map[string]bool) {
	chooser.RoomFor(&Room{
		Fits: func(i int) bool {
			e := a.at(refs[i])
			return refs[i].running || !e.slotBased() || hasAll(*avail, e.Request.SlotIDs)
		},
		Why: func(i int) string {
			return fmt.Sprintf("its slots %v are not free", missing(a.at(refs[i]).Request.SlotIDs, *avail))
		},
		HoldOwn: func(i int) bool {
			e := a.at(refs[i])
			if refs[i].running || !e.slotBased() {
				return false
			}
			*avail = reserveOwnSlots(e, *avail, skip == nil)
			chooser.SetFree(times(a.st.Slot, int64(len(*avail))))
			if len(*avail) == 0 {
				chooser.StopAsking() // as a choice with no slot free does
			}
			if skip != nil {
				skip[e.ID] = true
			}
			return true
		},
	})
}

// reserveOwnSlots has the SlotBased head e of a strict leaf hold its own slots, saying so
// if say, and returns the free slots (sorted) without them: the others may use the rest.
func reserveOwnSlots(e *Entry, avail []int32, say bool) []int32 {
	if say {
		e.Reason = fmt.Sprintf("first in the strict order of queue %s: reserves its slots %v as they free up", e.Queue, e.Request.SlotIDs)
	}
	for _, p := range e.Request.SlotIDs {
		if k, ok := slices.BinarySearch(avail, p); ok {
			avail = slices.Delete(avail, k, k+1)
		}
	}
	return avail
}

// holdFor holds the free slots for the waiting job reserving them, saying so in its reason,
// and backfills behind it where its queue allows. It returns the slots left free.
func (a *Admitter) holdFor(now time.Time, bed Bed, reserving *Entry, avail []int32, skip map[string]bool, d *Decision) []int32 {
	k := reserving.Request.JobKey
	why := fmt.Sprintf("first in the strict order of queue %s", reserving.Queue)
	if a.st.PreemptedFor != nil && *a.st.PreemptedFor == k {
		why = "slots were taken back for it by preemption"
	}
	reserving.Reason = fmt.Sprintf("%s: the %d free slots are held for it until it fits (needs %d)", why, len(avail), reserving.wanted())
	if q := a.tree.Queue(reserving.Queue); q != nil && a.tree.Backfill(q) {
		avail = a.backfill(now, bed, reserving, avail, skip, d)
	}
	return avail
}

// admissible: nothing but room holds the waiting entry back now (Tree.HeldBack), with every
// job counted.
func (a *Admitter) admissible(now time.Time, bed Bed, e *Entry) bool {
	c := a.cluster(now, bed, bed.Positions, nil)
	return a.tree.HeldBack(c, e.ID) == ""
}

// WantsRoom is Tree.WantsRoom on the Admitter's jobs now: the leaves that have a waiting
// job only room holds back.
func (a *Admitter) WantsRoom(now time.Time, bed Bed) map[string]bool {
	a.tidy()
	return a.tree.WantsRoom(a.cluster(now, bed, bed.Positions, nil))
}

// grant gives a waiting entry its slots out of avail and moves it to the running ones.
func (a *Admitter) grant(now time.Time, e *Entry, avail []int32, d *Decision) []int32 {
	g := *e
	if g.slotBased() {
		g.Slots = slices.Clone(g.Request.SlotIDs)
		avail = slices.DeleteFunc(avail, func(p int32) bool { return slices.Contains(g.Slots, p) })
	} else {
		g.Slots = slices.Clone(avail[:g.Request.Slots])
		avail = avail[g.Request.Slots:]
	}
	a.st.Granted++
	g.Reason, g.State, g.StartingSince, g.GrantedAt, g.Grant = "", Starting, now, now, a.st.Granted
	// Only a StateAware leaf, or the bound on starting jobs, needs to hear of a start: any
	// other grant is Running at once, and its job's workflow does not tell (QuietStart).
	if q := a.tree.Queue(g.Queue); a.maxStarting() == 0 && q != nil && a.tree.Policy(q) != PolicyStateAware {
		g.State = Running
	}
	if a.room > 0 {
		a.room--
	}
	a.drop(e)
	a.st.Running = append(a.st.Running, g)
	if a.keys != nil {
		a.keys[g.Request.JobKey] = entryRef{running: true, i: len(a.st.Running) - 1}
	}
	d.Grants = append(d.Grants, Grant{JobKey: g.Request.JobKey, Queue: g.Queue, Slots: slices.Clone(g.Slots), Seq: g.Grant, QuietStart: a.quietStart(&g)})
	return avail
}

// anyPreempted says whether a running job lost slots to preemption: it asks for them back
// one at a time, bound or not.
func (a *Admitter) anyPreempted() bool {
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone && e.Preempted > 0 && int64(len(e.Slots)) < e.wanted() {
			return true
		}
	}
	return false
}
