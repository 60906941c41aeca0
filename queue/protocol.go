package queue

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// JobKey names one admission request: one run of a job in one Scheduling. Every message of
// the admission protocol (request, grant, start, release) carries it, so a repeated or late
// message is recognised for what it is. SchedulingUID tells a Scheduling apart from a later
// one of the same name.
type JobKey struct {
	Scheduling    string
	SchedulingUID string
	Job           string
	Run           int32
}

// String is the key as the queue policies name the application.
func (k JobKey) String() string {
	return k.Scheduling + "/" + k.SchedulingUID + "/" + k.Job + "#" + strconv.Itoa(int(k.Run))
}

// Request asks for a run of a job to be started in the test bed's slots.
type Request struct {
	JobKey
	// Queue is the queue asked for (the job's, else its Scheduling's); placement decides.
	Queue  string
	User   string
	Groups []string
	// Slots is how many slots the job needs (QueueBased), SlotIDs the exact ones (SlotBased).
	Slots   int32
	SlotIDs []int32
	// Driver is the driver's or JobManager's size: the job's AM.
	Driver Resources
	// Expected is how long the job is expected to run once it has its slots (0: unknown).
	// Only backfill reads it: a job without it never passes a reserving head.
	Expected time.Duration
	// Priority orders the job in its leaf before its submission (higher first), and makes
	// it preemption's victim after jobs of lower priority.
	Priority int32 `json:",omitempty"`
	// GaveBack is the number (Grant.Seq) of a grant the job gives back: its slots left the
	// test bed before it could use them. If the job still holds that grant, the request
	// releases it and the job waits again, at the end of its queue. One message does both,
	// so no order of a release and a request can lose the job.
	GaveBack int64 `json:",omitempty"`
	// Shown is the queue the job's status shows as the request is made (see
	// activities.JobInfo): its test bed's Admission writes the queue it places the job in
	// only where that differs. The Admitter does not read it.
	Shown string `json:",omitempty"`
}

// Grant answers a request: the slots to start in, or why it is refused for good.
type Grant struct {
	JobKey
	Queue   string
	Slots   []int32
	Refused string
	// Seq numbers the Admitter's grants, from 1 (0: a refusal, or a grant from a recorded
	// state that carries no numbers). A repeat of a grant carries its number, so a
	// Scheduling that gave a grant back and asked again can tell a late copy of the old one
	// from the new one.
	Seq int64
	// QuietStart: the job need not tell Admission when its run leaves Starting (its entry
	// counts as Running already). False: it tells.
	QuietStart bool `json:",omitempty"`
}

// Request takes a request in. It answers at once with a grant to (re)send when the request
// is refused (placement, ACL) or repeats one that is granted already; nil when the job now
// waits, or waited already.
func (a *Admitter) Request(r Request) *Grant {
	if ref, ok := a.find(r.JobKey); ok && ref.running {
		e := a.st.Running[ref.i]
		if r.GaveBack == 0 || r.GaveBack != e.Grant {
			return &Grant{JobKey: r.JobKey, Queue: e.Queue, Slots: slices.Clone(e.Slots), Seq: e.Grant, QuietStart: a.quietStart(&e)}
		}
		a.Release(r.JobKey)
	} else if ok {
		return nil
	}
	refuse := func(why string) *Grant { return &Grant{JobKey: r.JobKey, Refused: why} }
	switch {
	case r.Job == "" || r.Scheduling == "":
		return refuse("the request names no job or scheduling")
	case len(r.SlotIDs) == 0 && r.Slots < 1:
		return refuse(fmt.Sprintf("the job asks for %d slots", r.Slots))
	case r.Driver.MemoryBytes < 0 || r.Driver.MilliCores < 0 || r.Expected < 0:
		return refuse("the job's driver size or expected duration is negative")
	case !r.Driver.Fits(MBVCores(maxMB, maxVCores)):
		return refuse(fmt.Sprintf("the job's driver of %s is more than the queues count", r.Driver))
	}
	alloc := a.st.Config.Allocations
	p, err := alloc.PlaceJob(r.Queue, r.User, r.Groups)
	if err != nil {
		return refuse(err.Error())
	}
	if !alloc.Allowed(Submit, p.Queue, r.User, r.Groups) {
		return refuse(fmt.Sprintf("user %q may not submit to queue %s (aclSubmitApps)", r.User, p.Queue))
	}
	queues := len(a.tree.queues)
	if _, err := a.tree.Ensure(p.Queue); err != nil {
		return refuse(err.Error())
	}
	if len(a.tree.queues) != queues {
		// Placement made a queue: the kept picture counted the queues it knew, and is made
		// again at the next decision.
		a.pic = nil
	}
	r.SlotIDs, r.Groups = slices.Clone(r.SlotIDs), slices.Clone(r.Groups)
	a.st.Next++
	a.st.Waiting = append(a.st.Waiting, Entry{ID: r.JobKey.String(), Request: r, Queue: p.Queue, Order: a.st.Next})
	a.keys[r.JobKey] = entryRef{i: len(a.st.Waiting) - 1}
	if pic := a.pic; pic != nil {
		pic.request(a, len(a.st.Waiting)-1)
	}
	return nil
}

// Release withdraws a waiting job or frees a granted job's slots. It reports whether the key
// was known: a release of an unknown key is a no-op. The slots are free for others once the
// bed's status shows them free (the job's pods may still run: a withdrawn job's are being
// deleted).
func (a *Admitter) Release(k JobKey) bool { return a.release(k, false) }

// Ended releases a granted job whose run is over (its status says so, its pods are ending):
// its slots may be granted in the same decision (Handed). Otherwise it is Release.
func (a *Admitter) Ended(k JobKey) bool { return a.release(k, true) }

func (a *Admitter) release(k JobKey, handOver bool) bool {
	ref, ok := a.find(k)
	if !ok {
		return false
	}
	e := a.at(ref)
	if ref.running && handOver {
		a.st.Handed = append(a.st.Handed, e.Slots...)
	}
	if p := a.pic; p != nil && !p.leave(ref) {
		a.pic = nil
	}
	a.drop(e)
	if a.st.Reserved != nil && *a.st.Reserved == k {
		a.st.Reserved = nil
	}
	if a.st.PreemptedFor != nil && *a.st.PreemptedFor == k {
		a.st.PreemptedFor = nil
	}
	return true
}

// Restore takes in a grant the cluster shows in use that the Admitter does not hold: a job
// whose creation request, written by its live Scheduling, names slots of this bed, learnt
// after the Admitter's own record of it was lost (its workflow ended and started anew). The
// job goes to Running in the leaf its request names (placed again when that leaf cannot be
// made), holding slots from grantedAt; started: it left Starting (StateAware). It reports
// whether it took the grant in: a key the Admitter holds already, granted or waiting, is
// left as it is.
func (a *Admitter) Restore(r Request, leaf string, slots []int32, grantedAt time.Time, started bool) bool {
	if _, ok := a.find(r.JobKey); ok || len(slots) == 0 {
		return false
	}
	if q, err := a.tree.Ensure(leaf); leaf == "" || err != nil || !q.Leaf() {
		leaf = "root.default"
		if p, err := a.st.Config.Allocations.PlaceJob(r.Queue, r.User, r.Groups); err == nil {
			leaf = p.Queue
		}
		if _, err := a.tree.Ensure(leaf); err != nil {
			return false
		}
	}
	r.SlotIDs, r.Groups = slices.Clone(r.SlotIDs), slices.Clone(r.Groups)
	a.st.Next++
	a.st.Granted++
	e := Entry{ID: r.JobKey.String(), Request: r, Queue: FullPath(leaf), Order: a.st.Next, Slots: slices.Clone(slots), GrantedAt: grantedAt,
		Grant: a.st.Granted, State: Starting, StartingSince: grantedAt}
	if started {
		e.State = Running
	}
	a.st.Running = append(a.st.Running, e)
	if a.keys != nil {
		a.keys[r.JobKey] = entryRef{running: true, i: len(a.st.Running) - 1}
	}
	// The slots it holds and the room it takes are in no picture made before.
	a.pic, a.explain = nil, nil
	return true
}

// Started marks a granted job Running for StateAware: it left Starting.
func (a *Admitter) Started(k JobKey) {
	a.setRunning(k, func(e *Entry) { e.State = Running }, func(ch *Chooser, i int) { ch.SetState(i, Running) })
}

// NoExecutors marks a granted job whose driver runs and has asked for no executor yet:
// with SkipStartingWithoutExecutors, its Starting no longer holds its StateAware leaf
// (YUNIKORN-921, and the slow driver of YUNIKORN-1493).
func (a *Admitter) NoExecutors(k JobKey) {
	a.setRunning(k, func(e *Entry) { e.NoExecutors = true }, (*Chooser).SetNoExecutors)
}

// setRunning changes the granted entry of k and its application in the picture.
func (a *Admitter) setRunning(k JobKey, set func(*Entry), setApp func(*Chooser, int)) {
	ref, ok := a.find(k)
	if !ok || !ref.running {
		return
	}
	set(&a.st.Running[ref.i])
	if p := a.pic; p != nil {
		if i, ok := p.appAt(ref); ok {
			setApp(p.chooser, i)
		} else if i != -1 {
			a.pic = nil
		}
	}
}
