package queue

import (
	"fmt"
	"time"
)

// cluster is the picture the policies decide on: running jobs, and waiting ones not in skip.
// A waiting job that can never fit the bed, or whose named slots are not all available,
// waits with its reason.
func (a *Admitter) cluster(now time.Time, bed Bed, avail []int32, skip map[string]bool) Cluster {
	c, _ := a.clusterRefs(now, bed, avail, skip, false)
	return c
}

// clusterRefs is cluster with the entry of each application. lateRoom leaves a SlotBased
// job's NoRoom to the caller (Chooser.RoomFor), who knows the free slots as they change.
func (a *Admitter) clusterRefs(now time.Time, bed Bed, avail []int32, skip map[string]bool, lateRoom bool) (Cluster, []entryRef) {
	slot := a.st.Slot
	c := Cluster{Total: a.st.Total, Now: now, StateAware: a.st.Config.Allocations.StateAware,
		Apps: make([]App, 0, len(a.st.Running)+len(a.st.Waiting))}
	refs := make([]entryRef, 0, cap(c.Apps))
	// The free room the policies see is the available slots: not the slots held by jobs,
	// nor slots taken back that are not free yet, nor slots some reservation holds.
	free := times(slot, int64(len(avail)))
	c.Free = &free
	for i := range a.st.Running {
		e := &a.st.Running[i]
		if e.gone {
			continue
		}
		app := a.appOf(e, true)
		if n := e.wanted(); int64(len(e.Slots)) < n && len(a.st.Reclaimed) == 0 && len(avail) > 0 && !skip[app.ID] {
			// Preempted: it asks for its slots again, one at a time, once the slots taken
			// back have gone where they were taken for.
			app.Demand, app.Pending, app.Ask = times(slot, n), true, slot
		}
		c.Apps = append(c.Apps, app)
		refs = append(refs, entryRef{running: true, i: i})
	}
	for i := range a.st.Waiting {
		e := &a.st.Waiting[i]
		if skip[e.ID] || e.gone || !a.choosable(e, bed.Positions) {
			continue
		}
		app := a.appOf(e, false)
		if e.slotBased() && !lateRoom {
			if missing := missing(e.Request.SlotIDs, avail); len(missing) > 0 {
				app.NoRoom = fmt.Sprintf("its slots %v are not free", missing)
			}
		}
		c.Apps = append(c.Apps, app)
		refs = append(refs, entryRef{i: i})
	}
	return c, refs
}

// choosable: a decision may choose the waiting entry: it fits the bed of the given slots,
// and its queue is in the tree. If not, its reason says why.
func (a *Admitter) choosable(e *Entry, positions []int32) bool {
	switch {
	case e.slotBased():
		if missing := missing(e.Request.SlotIDs, positions); len(missing) > 0 {
			e.Reason = fmt.Sprintf("the test bed has no slot %v", missing)
			return false
		}
	case int(e.Request.Slots) > len(positions):
		e.Reason = fmt.Sprintf("needs %d slots; the test bed has %d", e.Request.Slots, len(positions))
		return false
	}
	if a.tree.Queue(e.Queue) == nil {
		e.Reason = fmt.Sprintf("its queue %s does not fit the allocation file in force", e.Queue)
		return false
	}
	return true
}

// appOf is an entry as the queue policies see it: a granted entry uses, and demands, the
// slots it holds; a waiting one demands the slots it asked for.
func (a *Admitter) appOf(e *Entry, running bool) App {
	slot := a.st.Slot
	app := App{ID: e.ID, Queue: e.Queue, User: e.Request.User, Order: e.Order, Priority: e.Request.Priority, AM: e.Request.Driver,
		Demand: times(slot, e.wanted()), SlotBacked: true}
	if running {
		app.Usage = times(slot, int64(len(e.Slots)))
		app.Demand, app.Running = app.Usage, true
		app.State, app.StartingSince, app.NoExecutors = e.State, e.StartingSince, e.NoExecutors
	}
	return app
}
