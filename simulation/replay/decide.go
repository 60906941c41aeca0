package replay

import (
	"slices"
	"time"

	"slotplane/queue"
)

// view builds the picture Tree.Next decides on in driver-first mode: a waiting job asks for
// its driver, a granted one for one executor at a time once its driver has started up.
func (r *replay) view(now time.Duration) queue.Cluster {
	c := queue.Cluster{Total: r.total, Now: r.epoch.Add(now), StateAware: r.opts.StateAware}
	apps := r.apps[:0]
	slot := r.opts.SlotSize
	for _, j := range r.active {
		a := queue.App{ID: j.Name, Queue: j.queue, User: j.User, Order: j.order, AM: j.driver, Demand: j.driver.Add(times(slot, j.need()))}
		if j.granted {
			a.Running = true
			a.Usage = j.driver.Add(times(slot, int64(j.held)))
			a.State, a.StartingSince = queue.Starting, r.epoch.Add(j.grantAt)
			if j.held > 0 {
				a.State = queue.Running
			}
			a.Pending = int64(j.held) < j.need() && now >= j.grantAt+r.opts.StartUp
			a.Ask = slot
		} else {
			a.Ask = j.driver
		}
		apps = append(apps, a)
	}
	r.apps = apps
	c.Apps = apps
	return c
}

// decide allocates, in driver-first mode, what the queues let through now, one Tree.Next at
// a time: a driver, or one executor.
func (r *replay) decide(now time.Duration) {
	for {
		c := r.view(now)
		if !slices.ContainsFunc(c.Apps, asking) {
			return
		}
		app, refusals, ok := r.t.Next(c)
		for _, f := range refusals {
			if j := r.byName[f.App]; j != nil {
				j.why = f.Reason
			}
		}
		if !ok {
			return
		}
		j := r.byName[app.ID]
		j.advance(now)
		r.lastChange = now
		if !j.granted {
			j.granted, j.grantAt = true, now
			r.leafDriver[j.queue] = r.leafDriver[j.queue].Add(j.driver)
		} else {
			r.take(j, 1)
		}
		j.why = ""
		r.heldAll(j, now)
	}
}

// heldAll notes when a job first holds all its executors, and starts its work when its
// driver has started up too.
func (r *replay) heldAll(j *replayJob, now time.Duration) {
	if !j.allHeld && j.held == j.Executors {
		j.allHeld, j.allHeldAt = true, now
		j.out.Started, j.out.Start = true, now
	}
	if j.allHeld && !j.working && now >= j.workFrom(r.opts.StartUp) {
		j.working, j.progressAt = true, now
	}
}

// decideGang runs the Admitter on the slots as they are and carries out its decision: grants,
// slots given back, slots taken back. A job that left Starting (its start-up ended, or
// StateAware's fallback) is told first, as its job's workflow would. A job granted in a
// StateAware leaf, whose driver then runs alone for its start-up, tells the Admitter so at
// once (Admitter.NoExecutors), as its job's workflow does, and the queues decide again.
func (r *replay) decideGang(now time.Duration) {
	for r.decideGangOnce(now) {
	}
}

// decideGangOnce is one decision of decideGang; again says a granted job's driver runs
// without executors in a StateAware leaf: that may let the leaf go on.
func (r *replay) decideGangOnce(now time.Duration) (again bool) {
	for _, j := range r.active {
		if j.granted && !j.startedSent && now >= j.grantAt+min(r.opts.StartUp, queue.StartingTimeout) {
			r.adm.Started(r.key(j))
			j.startedSent = true
		}
	}
	d := r.adm.Decide(r.epoch.Add(now), r.bed())
	for _, g := range d.Grants {
		j := r.byName[g.Job]
		j.advance(now)
		j.granted, j.grantAt = true, now
		r.give(j, g.Slots)
		r.lastChange = now
		r.heldAll(j, now)
		if r.opts.StartUp > 0 && !g.QuietStart && r.t.Policy(r.t.Queue(j.queue)) == queue.PolicyStateAware {
			r.adm.NoExecutors(r.key(j))
			again = true
		}
	}
	for _, as := range d.Assignments {
		j := r.byName[as.Job]
		j.advance(now)
		r.lastChange = now
		if len(as.Revoke) == 0 {
			r.give(j, slices.DeleteFunc(slices.Clone(as.Keep), func(p int32) bool { return slices.Contains(j.slots, p) }))
			continue
		}
		j.slots = slices.DeleteFunc(j.slots, func(p int32) bool { return slices.Contains(as.Revoke, p) })
		for _, p := range as.Revoke {
			r.owner[p] = ""
			r.vacating = append(r.vacating, vacating{slot: p, at: now + r.opts.Vacate})
		}
		n := len(as.Revoke)
		r.release(j, n)
		j.out.Preempted += n
		r.res.PreemptedSlots += n
		r.preemptedBy[j.queue] += n
		r.preemptedFor[as.For] += n
	}
	for _, e := range r.adm.Waiting() {
		if j := r.byName[e.Request.Job]; j != nil {
			j.why = e.Reason
		}
	}
	return again
}

// bed is the test bed as the Admitter sees it now (gang).
func (r *replay) bed() queue.Bed {
	bed := queue.Bed{Exists: true, SlotSize: r.opts.SlotSize}
	for p := range int32(r.opts.Slots) {
		bed.Positions = append(bed.Positions, p)
		if r.owner[p] == "" && !slices.ContainsFunc(r.vacating, func(v vacating) bool { return v.slot == p }) {
			bed.Free = append(bed.Free, p)
		}
	}
	return bed
}

// wantsRoom lists the leaves with a waiting job that only room holds back now (Tree.WantsRoom).
func (r *replay) wantsRoom(now time.Duration) map[string]bool {
	if r.opts.Mode == Gang {
		return r.adm.WantsRoom(r.epoch.Add(now), r.bed())
	}
	return r.t.WantsRoom(r.view(now))
}

// give hands a job slots (gang): its grant, or slots given back after preemption.
func (r *replay) give(j *replayJob, slots []int32) {
	for _, p := range slots {
		r.owner[p] = j.Name
	}
	j.slots = append(j.slots, slots...)
	r.take(j, len(slots))
}

// take gives a job n more executors.
func (r *replay) take(j *replayJob, n int) {
	j.held += n
	r.held += n
	r.queueHeld[j.queue] += n
}

// asking says whether an application asks for something now, as Tree.Next counts it: a
// driver not granted yet, or an executor more.
func asking(a queue.App) bool { return !a.Running || a.Pending }

// times is n of r: n slots of one size, say.
func times(r queue.Resources, n int64) queue.Resources {
	return queue.Resources{MemoryBytes: r.MemoryBytes * n, MilliCores: r.MilliCores * n}
}
