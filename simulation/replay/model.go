package replay

import (
	"fmt"
	"slices"
	"time"

	"slotplane/queue"
	"slotplane/simulation"
)

// replayJob is where one job stands in a replay.
type replayJob struct {
	simulation.Job
	// driver is the Job's Driver in the queue policies' own terms.
	driver queue.Resources
	order  int64
	queue  string
	out    *JobOutcome
	// active: submitted, not refused, not finished; granted: it has its slots (gang) or
	// its driver (driver-first), since grantAt.
	active, granted bool
	grantAt         time.Duration
	held            int
	// allHeld: it held all its executors once (then allHeldAt); working: its runtime runs.
	allHeld, working bool
	allHeldAt        time.Duration
	// remaining is the work left in executor-nanoseconds; progressAt when it was counted.
	remaining  int64
	progressAt time.Duration
	// why a waiting job waits: the queues' last reason.
	why string
	// slots are the slots its executors hold (gang); startedSent: the Admitter heard that
	// it left Starting.
	slots       []int32
	startedSent bool
	// headSince is since when it is the first waiting job of its leaf (-1: not yet).
	headSince time.Duration
}

// need is the job's executors as int64.
func (j *replayJob) need() int64 { return int64(j.Executors) }

// workFrom is when the job's runtime starts: it holds all its executors and its driver has
// started up.
func (j *replayJob) workFrom(startUp time.Duration) time.Duration {
	return max(j.allHeldAt, j.grantAt+startUp)
}

// advance counts the work done since progressAt, at the executors it holds now.
func (j *replayJob) advance(now time.Duration) {
	if j.working && j.held > 0 && now > j.progressAt {
		dt := int64(now - j.progressAt)
		if dt >= ceilDiv(j.remaining, int64(j.held)) {
			j.remaining = 0
		} else {
			j.remaining -= dt * int64(j.held)
		}
	}
	j.progressAt = now
}

// finishAt is when the job finishes at its current pace; ok false when it does not progress.
func (j *replayJob) finishAt() (time.Duration, bool) {
	if !j.working || j.held == 0 {
		return 0, false
	}
	return j.progressAt + time.Duration(ceilDiv(j.remaining, int64(j.held))), true
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// vacating is a slot taken back by preemption whose pod is still there, free again at at.
type vacating struct {
	slot int32
	at   time.Duration
}

// replay is one replay's state.
type replay struct {
	a      *queue.Allocations
	t      *queue.Tree
	opts   Options
	total  queue.Resources
	epoch  time.Time
	jobs   []*replayJob // in the order given, which the loop's Arrive indexes
	byName map[string]*replayJob
	active []*replayJob // submitted, not refused, not done: waiting and running
	held   int          // slots held by executors
	// arrived counts the jobs submitted so far: a job's order is its number.
	arrived int64
	// adm decides in gang mode: the Admission workflow's own core. owner is the job
	// holding each slot ("" when none); vacating are slots taken back whose pods are
	// still there.
	adm      *queue.Admitter
	owner    []string
	vacating []vacating
	// lastChange is when something was last granted, finished or taken back.
	lastChange time.Duration
	preempt    bool
	apps       []queue.App
	// Per leaf: how many active jobs, and what their drivers hold (driver-first).
	leafJobs   map[string]int
	leafDriver map[string]queue.Resources
	// shareApps is the picture the fair shares are computed on, reused between intervals.
	shareApps []queue.App
	// What the time averages add up.
	slotNanos   map[string]float64 // per leaf: slot-nanoseconds held
	ratioNanos  map[string]float64 // per leaf: (usage/fair share) x nanoseconds while active
	activeNanos map[string]float64 // per leaf: nanoseconds with jobs
	// The same two while nothing but room could hold the leaf back (USE/FAIR (ROOM)).
	roomRatioNanos, roomActiveNanos map[string]float64
	heldNanos                       float64
	jainNanos                       float64
	jainTime                        float64
	queueHeld                       map[string]int
	preemptedBy                     map[string]int // per victim queue: slots taken
	preemptedFor                    map[string]int // per starving queue: slots taken for it
	res                             Result
}

// The replay is the loop's Model. At each instant the jobs whose work is done finish and
// the slots preemption took back are free once their pods are gone (End), work starts where
// a driver's start-up is over (Start), new jobs are submitted (Arrive), and the queues
// decide (Decide). The order does not matter between Start and Arrive: a job just submitted
// holds no executors yet.

// End finishes the jobs whose work is done by now and frees the vacated slots.
func (r *replay) End(now time.Duration) {
	r.finish(now)
	r.vacating = slices.DeleteFunc(r.vacating, func(v vacating) bool { return v.at <= now })
}

// Start starts the runtime of the jobs that hold all their executors and whose driver has
// started up.
func (r *replay) Start(now time.Duration) { r.startWork(now) }

// Arrive submits job i. Jobs arrive in submission order (by time, then as given, as requests
// reach Admission), and a job's number in it is the order the queues break ties by.
func (r *replay) Arrive(i int, _ time.Duration) {
	r.arrived++
	j := r.jobs[i]
	j.order = r.arrived
	r.submit(j)
}

// Decide lets the queues decide on the state at now (the Admitter in gang mode, Tree.Next in
// driver-first mode), then notes which jobs head their leaves.
func (r *replay) Decide(now time.Duration) error {
	if r.opts.Mode == Gang {
		r.decideGang(now)
	} else {
		r.decide(now)
	}
	r.heads(now)
	return nil
}

// Elapse adds [from, to) to the time averages.
func (r *replay) Elapse(from, to time.Duration) { r.account(from, to) }

// finish ends the jobs whose work is done by now and frees their slots.
func (r *replay) finish(now time.Duration) {
	r.active = slices.DeleteFunc(r.active, func(j *replayJob) bool {
		if at, ok := j.finishAt(); !ok || at > now {
			return false
		}
		j.advance(now)
		j.active = false
		j.out.Finished, j.out.Finish = true, now
		r.res.Done++
		r.res.Makespan = max(r.res.Makespan, now)
		r.lastChange = now
		if r.opts.Mode == Gang {
			r.adm.Release(r.key(j))
			for _, p := range j.slots {
				r.owner[p] = ""
			}
			j.slots = nil
		}
		r.release(j, j.held)
		r.leave(j)
		return true
	})
}

// key is a job's key in the Admitter.
func (r *replay) key(j *replayJob) queue.JobKey {
	return queue.JobKey{Scheduling: "trace", Job: j.Name, Run: 1}
}

// release takes n executors' slots from a job's counts.
func (r *replay) release(j *replayJob, n int) {
	j.held -= n
	r.held -= n
	r.queueHeld[j.queue] -= n
}

// submit places a new job, as the Admission workflow's request does: placement rules, the
// submit ACL, then the queue is made if a rule created it.
func (r *replay) submit(j *replayJob) {
	p, err := r.a.PlaceJob(j.Queue, j.User, j.Groups)
	switch {
	case err != nil:
		j.out.Refused = err.Error()
		if j.Queue != "" {
			j.out.Queue = queue.FullPath(j.Queue)
		} else {
			j.out.Queue = "-"
		}
	case !r.a.Allowed(queue.Submit, p.Queue, j.User, j.Groups):
		j.out.Queue = p.Queue
		j.out.Refused = fmt.Sprintf("user %q may not submit to queue %s (aclSubmitApps)", j.User, p.Queue)
	default:
		j.out.Queue = p.Queue
		if _, err := r.t.Ensure(p.Queue); err != nil {
			j.out.Refused = err.Error()
		}
	}
	if j.out.Refused != "" {
		r.res.Refused++
		return
	}
	if r.opts.Mode == Gang {
		req := queue.Request{JobKey: r.key(j), Queue: j.Queue, User: j.User, Groups: j.Groups, Slots: int32(j.Executors), Driver: j.driver,
			Expected: r.opts.StartUp + j.Runtime, Priority: j.Priority}
		if g := r.adm.Request(req); g != nil {
			j.out.Refused = g.Refused // cannot happen: the same placement and ACL as above
			r.res.Refused++
			return
		}
	}
	j.queue = p.Queue
	j.active = true
	r.active = append(r.active, j)
	r.leafJobs[j.queue]++
}

// demandOf is what a job demands all along: its slots, and in driver-first mode its driver.
func (r *replay) demandOf(j *replayJob) queue.Resources {
	d := times(r.opts.SlotSize, j.need())
	if r.opts.Mode == DriverFirst {
		d = d.Add(j.driver)
	}
	return d
}

// leave takes a finished job out of its leaf's sums.
func (r *replay) leave(j *replayJob) {
	if r.leafJobs[j.queue]--; r.leafJobs[j.queue] == 0 {
		delete(r.leafJobs, j.queue)
	}
	if r.opts.Mode == DriverFirst && j.granted {
		r.leafDriver[j.queue] = r.leafDriver[j.queue].Sub(j.driver)
	}
}

// startWork starts the runtime of the jobs that hold all their executors and whose driver has
// started up.
func (r *replay) startWork(now time.Duration) {
	for _, j := range r.active {
		if j.allHeld && !j.working && now >= j.workFrom(r.opts.StartUp) {
			j.working, j.progressAt = true, now
		}
	}
}

// heads notes since when each leaf's first waiting job (by submission) has been first.
func (r *replay) heads(now time.Duration) {
	first := map[string]*replayJob{}
	for _, j := range r.active { // in submission order
		if !j.granted && first[j.queue] == nil {
			first[j.queue] = j
			if j.headSince < 0 {
				j.headSince = now
			}
		}
	}
}

// Next is the earliest time after now at which something of the replay's changes (the
// submissions are the loop's to count).
func (r *replay) Next(now time.Duration) (time.Duration, bool) {
	at, any := time.Duration(0), false
	consider := func(t time.Duration) {
		if t > now && (!any || t < at) {
			at, any = t, true
		}
	}
	for _, v := range r.vacating {
		consider(v.at)
	}
	free := 0
	for _, o := range r.owner {
		if o == "" {
			free++
		}
	}
	for _, j := range r.active {
		if !j.granted {
			continue
		}
		if r.opts.Mode == Gang && int64(j.held) < j.need() && len(r.vacating) == 0 && free > 0 {
			// A preempted job may ask for a free slot again; nothing nudges the workflow
			// for that, so it happens at the next resync.
			consider(now + r.opts.Resync)
		}
		if f, ok := j.finishAt(); ok {
			consider(f)
		}
		if j.allHeld && !j.working {
			consider(j.workFrom(r.opts.StartUp))
		}
		// A start-up ending changes what StateAware lets through, and in driver-first mode
		// when the driver asks for executors.
		consider(j.grantAt + r.opts.StartUp)
		if r.t.Policy(r.t.Queue(j.queue)) == queue.PolicyStateAware {
			consider(j.grantAt + queue.StartingTimeout)
		}
	}
	if r.preempt {
		starve := r.adm.Starvation()
		for path, since := range starve.MinShareSince {
			if q := r.t.Queue(path); q != nil {
				if d, ok, _, _, _ := r.t.Timeouts(q); ok {
					consider(since.Add(d).Sub(r.epoch))
				}
			}
		}
		for path, since := range starve.FairShareSince {
			if q := r.t.Queue(path); q != nil {
				if _, _, d, ok, _ := r.t.Timeouts(q); ok {
					consider(since.Add(d).Sub(r.epoch))
				}
			}
		}
	}
	return at, any
}

// stuck describes a replay that cannot go on: since when nothing moved, and what the
// unfinished jobs hold.
func (r *replay) stuck() string {
	drivers, executors, waiting := 0, 0, 0
	for _, j := range r.active {
		if j.granted {
			drivers++
			executors += j.held
		} else {
			waiting++
		}
	}
	if r.opts.Mode == DriverFirst && drivers > 0 {
		return fmt.Sprintf("deadlock: nothing granted or finished after %s; %d drivers hold %d executors and wait for more, %d jobs wait to start", r.lastChange, drivers, executors, waiting)
	}
	return fmt.Sprintf("nothing granted or finished after %s; %d jobs wait for good (see their reasons)", r.lastChange, waiting+drivers)
}
