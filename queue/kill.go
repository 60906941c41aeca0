package queue

// Kill asks to end a job's run in a Scheduling, on behalf of By: allowed to the job's user
// and to whoever may administer its queue (aclAdministerApps), as in the Fair Scheduler,
// where killing an application is what that ACL is for.
type Kill struct {
	Scheduling string
	Job        string
	By         string
	ByGroups   []string
	// Reason is what the killer said, if anything.
	Reason string
}

// Killable says which run a kill ends and in what right the caller asks.
type Killable struct {
	Key   JobKey
	Queue string
	// Running: the job holds slots (its run began); else it waits.
	Running bool
	// As is the caller's right: "the job's user" or "an administrator of <queue>".
	As string
}

// CheckKill checks a kill and finds the run it ends, the newest of the job in that
// Scheduling. It changes nothing: the job's end comes through the job's own workflow (its
// application deleted, then Ended or Release as for any end), so the slots go on as after any
// run. Refusals are *MoveError with the move's kinds: not ready, not found (not in the queues:
// never submitted, or ended), forbidden.
func (a *Admitter) CheckKill(k Kill) (Killable, error) {
	a.compact()
	e, running, as, err := a.actedOn("kill", k.Scheduling, k.Job, k.By, k.ByGroups)
	if err != nil {
		return Killable{}, err
	}
	return Killable{Key: e.Request.JobKey, Queue: e.Queue, Running: running, As: as}, nil
}

// QueuesOf finds the queue of each key the Admitter holds (waiting or granted); a key it
// does not hold is left out.
func (a *Admitter) QueuesOf(keys []JobKey) map[JobKey]string {
	out := make(map[JobKey]string, len(keys))
	for _, k := range keys {
		if ref, ok := a.find(k); ok {
			out[k] = a.at(ref).Queue
		}
	}
	return out
}

// Placed is the queue the core put a job's run in.
type Placed struct {
	Key   JobKey
	Queue string
}

// ToShow are the queues the core put the jobs of rs in, just taken in, that their statuses
// are to show. A job is left out when its status shows its queue already: it held that
// queue before its request (before, from QueuesOf: a Scheduling asks again for every job
// still waiting, whose queues are written already), or its request says the status shows
// it (Request.Shown: the claim wrote the queue the job asked for, and placement kept it).
// A job whose earlier placement is still to be written (pending) is kept all the same, so
// the last write is this one.
func (a *Admitter) ToShow(rs []Request, before map[JobKey]string, pending func(JobKey) bool) []Placed {
	if len(rs) == 0 {
		return nil
	}
	keys := make([]JobKey, len(rs))
	for i, r := range rs {
		keys[i] = r.JobKey
	}
	queues := a.QueuesOf(keys)
	var out []Placed
	for _, r := range rs {
		q, ok := queues[r.JobKey]
		if !ok {
			continue
		}
		if was, held := before[r.JobKey]; held && was == q {
			continue
		}
		if r.Shown == q && !pending(r.JobKey) {
			continue
		}
		out = append(out, Placed{Key: r.JobKey, Queue: q})
	}
	return out
}
