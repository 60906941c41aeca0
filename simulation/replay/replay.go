// Package replay runs a workload through the test bed's queue policies in virtual time. It
// is the decision maker behind `slotplane simulate`, `slotplane queues -deadlock` and the
// predictions of `slotplane experiment -scheduler queues`. In gang mode it decides with the
// Admission workflow's own Admitter; in driver-first mode with Tree.Next, the way YARN and
// YuniKorn allocate. It runs on the event loop of package simulation, as a
// simulation.Model; the queue policies stay in package queue, which knows nothing of it.
package replay

import (
	"errors"
	"fmt"
	"time"

	"slotplane/queue"
	"slotplane/simulation"
	"slotplane/simulation/tracefile"
)

// Mode is how a replay grants a job its resources.
type Mode string

// The replay modes.
const (
	// Gang is slotplane's Admission: a job starts when all its slots are granted at
	// once; its driver runs outside the slots and counts only against maxAMShare.
	Gang Mode = "gang"
	// DriverFirst is YARN's and YuniKorn's allocation: the driver first, from the same
	// pool as the executors, then the executors one at a time once the driver has started
	// up. It can deadlock (DriverDeadlockJobs shows how).
	DriverFirst Mode = "driver-first"
)

// DefaultVacate is how long slots taken back by preemption take to be free again (the pods'
// deletion and the bridge's nudge).
const DefaultVacate = 10 * time.Second

// DefaultResync is the Admission workflow's resync: it decides again at least this often.
const DefaultResync = 15 * time.Second

// Options describe the test bed and the clock of a replay.
type Options struct {
	// Slots is how many slots the test bed has (nodes x slots per node); SlotSize what each
	// holds. The queues share Slots x SlotSize, as in the Admission workflow.
	Slots    int
	SlotSize queue.Resources
	// Mode is Gang (the default) or DriverFirst.
	Mode Mode
	// StartUp is how long a driver starts up before its executors work: in gang mode the
	// job is Starting (for StateAware) that long after its grant, and its runtime begins
	// after it; in driver-first mode the driver asks for executors only after it.
	StartUp time.Duration
	// StateAware tunes the StateAware leaves (the live Admission uses the zero value).
	StateAware queue.StateAwareOptions
	// NoPreemption leaves preemption out even when the allocation file turns it on.
	NoPreemption bool
	// Vacate is how long preempted slots take to be free (DefaultVacate when zero).
	Vacate time.Duration
	// Resync is how often the Admission workflow decides without being nudged
	// (DefaultResync when zero). Only a preempted job asking for its slots back waits for it:
	// everything else that changes is an event of its own.
	Resync time.Duration
	// Limit stops the replay at this virtual time (zero: no limit). A replay also stops after
	// a bound on the number of events, so a preemption tug of war cannot run forever.
	Limit time.Duration
}

// maxReplayBytes and maxReplayMilliCores bound what a replay's queues share (slots x slot
// size): 1 PiB and about a million vcores. A leaf's demand adds up its jobs' demands, each no
// more than that when the jobs fit the test bed, so thousands of them stay within an int64.
const (
	maxReplayBytes      = 1 << 50
	maxReplayMilliCores = 1 << 30
)

// Run replays jobs through the queues of an allocation file in virtual time. In gang mode
// (the default) the decisions are the Admission workflow's own: the same Admitter takes
// each submission (placement rules, submit ACLs: a refusal is final), decides whenever
// something changes, grants a job all its slots at once, reserves for the heads of strict
// queues, backfills and preempts as the file says; a job's expected duration is its start-up
// plus its runtime. Usage counts slots; the driver counts against maxAMShare only. Slots taken
// back by preemption are free after opts.Vacate; the job works on at the pace of the
// executors it keeps and gets the lost ones back as the Admitter gives them. In driver-first
// mode (YARN's and YuniKorn's allocation, for comparison) Tree.Next allocates the driver
// first and then the executors one at a time.
//
// The clock is simulation.Run's. It jumps from event to event (a submission, a start-up
// ending, a finish, slots vacated, a starvation timeout, the workflow's resync while a
// preempted job could ask again), so the replay is exact and deterministic: the same input
// gives the same result. The allocation file is not changed (the replay builds its own
// tree). The jobs must keep the trace format's rules (tracefile.Parse's jobs do).
func Run(a *queue.Allocations, jobs []simulation.Job, opts Options) (Result, error) {
	if err := checkJobs(jobs); err != nil {
		return Result{}, err
	}
	opts, err := replayOptions(opts)
	if err != nil {
		return Result{}, err
	}
	r := newReplay(a, opts)
	r.load(jobs)
	stop, err := simulation.Run(r, jobs, simulation.Clock{Limit: opts.Limit, MaxEvents: maxEventsPerJob*len(jobs) + 10000})
	if err != nil {
		return Result{}, err // cannot happen: the replay's decisions do not fail
	}
	r.stopped(stop)
	r.summarize()
	return r.res, nil
}

// checkJobs checks that the jobs keep the trace format's rules: unique names, and
// executors, times and drivers within the format's bounds.
func checkJobs(jobs []simulation.Job) error {
	names := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		switch {
		case j.Name == "" || names[j.Name]:
			return fmt.Errorf("job %d: the name %q is empty or not unique", i+1, j.Name)
		case j.Executors < 1 || j.Executors > tracefile.MaxExecutors:
			return fmt.Errorf("job %s: %d executors is outside [1, %d]", j.Name, j.Executors, tracefile.MaxExecutors)
		case j.Runtime <= 0 || j.Runtime > tracefile.MaxRuntime || j.Submit < 0 || j.Submit > tracefile.MaxSubmit:
			return fmt.Errorf("job %s: its submit time or runtime is out of bounds", j.Name)
		case !tracefile.DriverFits(j.Driver):
			return fmt.Errorf("job %s: driver %s is out of bounds", j.Name, queue.Resources(j.Driver))
		}
		names[j.Name] = true
	}
	return nil
}

// replayOptions checks a replay's options and fills in the defaults of those left zero.
func replayOptions(opts Options) (Options, error) {
	if opts.Mode == "" {
		opts.Mode = Gang
	}
	switch {
	case opts.Mode != Gang && opts.Mode != DriverFirst:
		return opts, fmt.Errorf("replay mode %q is neither %s nor %s", opts.Mode, Gang, DriverFirst)
	case opts.Slots <= 0:
		return opts, fmt.Errorf("the test bed needs at least one slot, got %d", opts.Slots)
	case opts.SlotSize.MemoryBytes <= 0 || opts.SlotSize.MilliCores <= 0:
		return opts, fmt.Errorf("a slot needs memory and vcores, got %s", opts.SlotSize)
	case opts.SlotSize.MemoryBytes > maxReplayBytes/int64(opts.Slots) || opts.SlotSize.MilliCores > maxReplayMilliCores/int64(opts.Slots):
		return opts, fmt.Errorf("%d slots of %s is more than the replay counts", opts.Slots, opts.SlotSize)
	case opts.StartUp < 0 || opts.Vacate < 0 || opts.Resync < 0 || opts.Limit < 0:
		return opts, errors.New("start-up, vacate, resync and limit must not be negative")
	}
	if opts.Vacate == 0 {
		opts.Vacate = DefaultVacate
	}
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
	}
	return opts, nil
}

// newReplay makes a replay of the allocation file with checked options and no jobs yet:
// its own tree, whether it preempts, and its Admitter.
func newReplay(a *queue.Allocations, opts Options) *replay {
	r := &replay{
		a: a, t: queue.NewTree(a), opts: opts,
		total:     times(opts.SlotSize, int64(opts.Slots)),
		epoch:     time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		owner:     make([]string, opts.Slots),
		slotNanos: map[string]float64{}, ratioNanos: map[string]float64{}, activeNanos: map[string]float64{},
		roomRatioNanos: map[string]float64{}, roomActiveNanos: map[string]float64{},
		queueHeld: map[string]int{}, preemptedBy: map[string]int{}, preemptedFor: map[string]int{},
		byName:   map[string]*replayJob{},
		leafJobs: map[string]int{}, leafDriver: map[string]queue.Resources{},
	}
	r.res = Result{Mode: opts.Mode, Slots: opts.Slots, SlotSize: opts.SlotSize, Total: r.total, StartUp: opts.StartUp}
	switch {
	case !a.Preemption.Enabled:
		r.res.Preemption = "off in the settings (" + queue.PropPreemption + ")"
	case opts.NoPreemption:
		r.res.Preemption = "on in the settings, left out of this replay"
	case opts.Mode == DriverFirst:
		r.res.Preemption = "on in the settings, not simulated in driver-first mode"
	default:
		r.preempt = true
		r.res.Preemption = "simulated"
	}
	// The Admitter's copy of the configuration: preemption as this replay does it, and the
	// StateAware options of the settings and of the replay.
	cp := *a
	cp.Preemption.Enabled = r.preempt
	cp.StateAware.SkipStartingWithoutExecutors = cp.StateAware.SkipStartingWithoutExecutors || opts.StateAware.SkipStartingWithoutExecutors
	cp.StateAware.SlotBackedDoNotHold = cp.StateAware.SlotBackedDoNotHold || opts.StateAware.SlotBackedDoNotHold
	r.adm = queue.NewAdmitter(queue.AdmitterState{Config: queue.Config{Allocations: &cp}})
	return r
}

// load gives the replay the jobs, each with its outcome, in the order given: the loop
// submits them by that index (Arrive), and the outcomes keep the order.
func (r *replay) load(jobs []simulation.Job) {
	r.res.Jobs = len(jobs)
	r.res.Outcomes = make([]JobOutcome, len(jobs))
	r.jobs = make([]*replayJob, len(jobs))
	for i, sj := range jobs {
		r.res.Outcomes[i] = JobOutcome{Name: sj.Name, User: sj.User, Queue: sj.Queue, Submit: sj.Submit}
		r.jobs[i] = &replayJob{Job: sj, driver: queue.Resources(sj.Driver), out: &r.res.Outcomes[i],
			remaining: int64(sj.Runtime) * int64(sj.Executors), headSince: -1}
		r.byName[sj.Name] = r.jobs[i]
	}
}

// maxEventsPerJob bounds the events of a replay (with a floor), so a tug of war between
// preemption and a job asking its slots back cannot run forever.
const maxEventsPerJob = 200

// stopped notes how the replay ended, from how the loop stopped: with nothing more to
// happen it ends at the makespan when every job is done (a refused job submitted later adds
// nothing), and is stuck otherwise; at the limit or the bound on events, it ends there.
func (r *replay) stopped(s simulation.Stop) {
	switch s.Why {
	case simulation.Idle:
		r.res.End = r.res.Makespan
		if len(r.active) > 0 {
			r.res.Stopped, r.res.End = r.stuck(), s.At
		}
	case simulation.AtLimit:
		r.res.Stopped = fmt.Sprintf("stopped at the limit of %s", r.opts.Limit)
		r.res.End = r.opts.Limit
	case simulation.TooManyEvents:
		r.res.Stopped = fmt.Sprintf("stopped after %d events at %s (preemption taking slots back and forth?)", s.Events, s.At)
		r.res.End = s.At
	}
}
