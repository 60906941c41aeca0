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
