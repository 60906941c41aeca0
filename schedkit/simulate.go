package schedkit

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/simulation"
)

// SimBed is the simulated test bed: Nodes nodes named node-00, node-01, ... with
// SlotsPerNode slots each. Positions go round-robin across the nodes in node order, as the
// live test bed lays them out: position p is on node p % Nodes, at p / Nodes on that node.
type SimBed struct {
	// Name is the test bed's name in views and run records (default "simulation").
	Name                string
	Nodes, SlotsPerNode int
}

// SimOptions tune a simulation. The zero value is a valid choice for each field.
type SimOptions struct {
	// StartUp is how long from a job's slots to the job running: what the platform takes to
	// hand them over (creating the application, its driver, its executors). Default 0.
	StartUp time.Duration
	// Epoch is the wall-clock time of the simulation's start, which views' Now and the
	// jobs' times count from. Default: a fixed date, so that two runs are equal.
	Epoch time.Time
	// Limit stops the simulation at this virtual time (default 7 days); what has not
	// happened by then is not reached.
	Limit time.Duration
	// Decided, when set, hears each decision as Options.Decided does live: the view, the
	// placements carried out and those the kit refused (the simulation refuses only what
	// the view does not allow, which the live kit refuses too).
	Decided func(v *View, made []Placement, refused []error)
}

// SimRun is what became of one job of a simulation. A time is an offset from the
// simulation's start, or -1 when the job did not reach that point (it never got slots, or
// the simulation stopped first).
type SimRun struct {
	Job     string
	Arrival time.Duration
	// Admitted is when the job got its slots: when it was placed into named slots, or, for
	// a QueueBased placement, when the queue granted them. Running is StartUp later, Ended
	// Runtime after Running.
	Admitted, Running, Ended time.Duration
	// Slots are the positions it held; Nodes their nodes, each once, in slot order.
	Slots []int32
	Nodes []string
}

// ErrBadSimInput says Simulate was given a workload, test bed or options it cannot
// simulate; the error it wraps says which.
var ErrBadSimInput = errors.New("schedkit: bad simulation input")

// simScheduling is the Scheduling name the simulation gives every placed job, as the live
// kit's own Schedulings would hold them.
const simScheduling = "simulation"

// simDefaultEpoch is an arbitrary fixed start, so that views' times repeat run after run.
var simDefaultEpoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

const simDefaultLimit = 7 * 24 * time.Hour

// Simulate runs s over a workload in virtual time and answers what became of each job, in
// the order of jobs. A job asks for its Executors as slots; they reach the scheduler the way
// a live submitter says it, as the job's ReplicasNote in its scheduler data. Its Submit is
// its arrival, and it runs for its Runtime once running. The simulation reads no other
// field: the driver and the groups are the queues' matter.
//
// The clock is the event loop of package simulation, which the queues' replay runs on too.
// It jumps from event to event: a job's arrival, its run starting (after StartUp) and its
// end. At each instant the ends come first (their slots are freed and the job is Completed,
// with its run in Status.History), then the starts, the grants of waiting QueueBased
// placements and the arrivals; then s decides on a view built by the same code the live kit
// uses, and is asked again at the same instant, as the live kit does once the feed shows its
// placements, until it places nothing. As live, s is asked only when some job waits, and
// every job of the workload is its to place (there is no Select).
//
// A placement with Slots starts in them at once. One without waits for the queue in a
// single first-in, first-out line and is granted the lowest-numbered free slots once enough
// are free; a placement asking for more slots than the bed has is passed over, so it does
// not hold up the line. The test bed's own queue policies (shares, preemption, backfill) are
// not simulated here: package simulation/replay does that.
//
// The simulation stops when every job has ended, when nothing is left that could happen
// (the jobs still waiting stay unreached), or at the Limit. Given a deterministic s, the
// same input gives the same answer. It fails on bad input (ErrBadSimInput).
func Simulate(s Scheduler, jobs []simulation.Job, bed SimBed, o SimOptions) ([]SimRun, error) {
	if err := validateSim(s, jobs, bed, o); err != nil {
		return nil, err
	}
	if o.Epoch.IsZero() {
		o.Epoch = simDefaultEpoch
	}
	if o.Limit == 0 {
		o.Limit = simDefaultLimit
	}
	if bed.Name == "" {
		bed.Name = "simulation"
	}
	sim := newSimulator(s, jobs, bed, o)
	if _, err := simulation.Run(sim, jobs, simulation.Clock{Limit: o.Limit}); err != nil {
		return nil, err
	}
	return sim.out, nil
}

func validateSim(s Scheduler, jobs []simulation.Job, bed SimBed, o SimOptions) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadSimInput}, args...)...))
	}
	if s == nil {
		bad("no scheduler")
	}
	switch {
	case bed.Nodes < 1 || bed.SlotsPerNode < 1:
		bad("the test bed has no slots (%d nodes of %d)", bed.Nodes, bed.SlotsPerNode)
	case bed.SlotsPerNode > math.MaxInt32/bed.Nodes:
		// Positions are int32, as the API's are.
		bad("the test bed has more slots than positions can number (%d nodes of %d)", bed.Nodes, bed.SlotsPerNode)
	}
	if o.StartUp < 0 {
		bad("negative start-up %v", o.StartUp)
	}
	if o.Limit < 0 {
		bad("negative limit %v", o.Limit)
	}
	seen := map[string]bool{}
	for i, j := range jobs {
		switch {
		case j.Name == "":
			bad("job %d has no name", i)
		case seen[j.Name]:
			bad("job %q is given twice", j.Name)
		}
		seen[j.Name] = true
		if j.Submit < 0 {
			bad("job %q arrives at %v, before the start", j.Name, j.Submit)
		}
		if j.Runtime < 0 {
			bad("job %q has a negative runtime %v", j.Name, j.Runtime)
		}
		// Above MaxReplication the kit would read the note as 1: refuse it rather than
		// simulate another workload than the one given.
		if j.Executors < 1 || j.Executors > v1alpha1.MaxReplication {
			bad("job %q asks for %d slots (1 to %d)", j.Name, j.Executors, v1alpha1.MaxReplication)
		}
	}
	return errors.Join(errs...)
}

// simPhase is where a job of the simulation is.
type simPhase int

const (
	simNotArrived simPhase = iota // the loop submits it at its time
	simWaiting                    // arrived, not placed
	simQueued                     // placed without slots, waiting for the queue's grant
	simStarting                   // holds its slots, not running yet
	simRunning
	simEnded
)

// simulator is the kit's side of a simulation, the loop's Model: the scheduler, the world it
// sees, and the slots' bookkeeping. Jobs arrive from the loop; the scheduler places them.
type simulator struct {
	s   Scheduler
	o   SimOptions
	in  []simulation.Job
	out []SimRun
	w   *world
	// index finds a job of in by name; nodes is each slot position's node.
	index map[string]int
	nodes []string
	// holder is the job that holds each slot position ("" when free).
	holder []string
	phase  []simPhase
	// placedAt is when each job was placed (its claim), width how many slots it was placed
	// with; runningAt and endsAt are when its run starts and ends once it has slots.
	placedAt, runningAt, endsAt []time.Duration
	width                       []int32
	// line are the QueueBased placements waiting for slots, first placed first, as indexes
	// into in.
	line []int
	// revision numbers job changes as the API's resource versions do.
	revision int
}

func newSimulator(s Scheduler, jobs []simulation.Job, bed SimBed, o SimOptions) *simulator {
	n := len(jobs)
	sim := &simulator{s: s, o: o, in: jobs, out: make([]SimRun, n), w: newWorld(),
		phase: make([]simPhase, n), placedAt: make([]time.Duration, n), runningAt: make([]time.Duration, n),
		endsAt: make([]time.Duration, n), width: make([]int32, n)}
	sim.index = make(map[string]int, n)
	for i, j := range jobs {
		sim.index[j.Name] = i
		sim.out[i] = SimRun{Job: j.Name, Arrival: j.Submit, Admitted: -1, Running: -1, Ended: -1}
	}
	tb := &apitypes.TestBed{Name: bed.Name}
	total := bed.Nodes * bed.SlotsPerNode
	tb.Status.Nodes, tb.Status.Total = int32(bed.Nodes), int32(total)
	for p := range total {
		node := fmt.Sprintf("node-%02d", p%bed.Nodes)
		i := v1alpha1.SliceOf(int32(p))
		s := sim.w.slices[i]
		s.TestBed, s.Index = bed.Name, i
		s.Slots = append(s.Slots, v1alpha1.SlotStatus{
			Position: int32(p), PositionOnNode: int32(p / bed.Nodes), NodeID: node, NodeName: node})
		sim.w.slices[i] = s
		sim.nodes = append(sim.nodes, node)
	}
	sim.w.bed = tb
	sim.holder = make([]string, total)
	return sim
}

// Next is the time of the earliest start or end still to come; none when no run is under
// way. It may be now: a run placed now may start, or end, now.
func (sim *simulator) Next(time.Duration) (time.Duration, bool) {
	var t time.Duration
	found := false
	for i := range sim.in {
		var at time.Duration
		switch sim.phase[i] {
		case simStarting:
			at = sim.runningAt[i]
		case simRunning:
			at = sim.endsAt[i]
		default:
			continue
		}
		if !found || at < t {
			t, found = at, true
		}
	}
	return t, found
}

// End ends the runs due at t, so that their slots are free for what follows.
func (sim *simulator) End(t time.Duration) {
	for i := range sim.in {
		if sim.phase[i] == simRunning && sim.endsAt[i] == t {
			sim.end(i, t)
		}
	}
}

// Start starts the runs whose hand-over is over at t, then grants the waiting QueueBased
// placements the slots that are free.
func (sim *simulator) Start(t time.Duration) {
	for i := range sim.in {
		if sim.phase[i] == simStarting && sim.runningAt[i] == t {
			sim.start(i, t)
		}
	}
	sim.grant(t)
}

// Elapse does nothing: the kit's simulation answers times, not averages over them.
func (sim *simulator) Elapse(_, _ time.Duration) {}

// Decide asks the scheduler until it places nothing more at instant t.
func (sim *simulator) Decide(t time.Duration) error {
	// Each round that goes on placed a waiting job, and placed jobs wait no more, so there
	// are at most as many rounds as jobs: more means the simulation lost track of one.
	for round := 0; round <= len(sim.in); round++ {
		v := sim.w.view(sim.at(t), nil)
		if len(v.Waiting) == 0 {
			return nil
		}
		ok, refused := check(v, sim.s.Decide(v))
		made := sim.apply(ok, t)
		if sim.o.Decided != nil {
			sim.o.Decided(v, made, refused)
		}
		if len(made) == 0 {
			return nil
		}
	}
	return fmt.Errorf("schedkit: simulation at %v: the scheduler still places jobs after %d rounds", t, len(sim.in)+1)
}

// apply carries out checked placements in the live kit's order: every placement's notes,
// then the placements into named slots, then those for the queue.
func (sim *simulator) apply(ps []Placement, t time.Duration) []Placement {
	for _, p := range ps {
		if len(p.Notes) == 0 {
			continue
		}
		j := sim.w.jobs[p.Job]
		data := maps.Clone(j.SchedulerData)
		if data == nil {
			data = map[string]string{}
		}
		for k, val := range p.Notes {
			if val == nil {
				delete(data, k)
			} else {
				data[k] = *val
			}
		}
		j.SchedulerData = data
		sim.changed(j)
	}
	var slotted, queued []Placement
	for _, p := range ps {
		if len(p.Slots) > 0 {
			slotted = append(slotted, p)
		} else {
			queued = append(queued, p)
		}
	}
	for _, p := range slotted {
		sim.claim(sim.index[p.Job], p, t)
		sim.admit(sim.index[p.Job], p.Slots, t)
	}
	for _, p := range queued {
		i := sim.index[p.Job]
		sim.claim(i, p, t)
		sim.phase[i] = simQueued
		sim.line = append(sim.line, i)
	}
	sim.grant(t)
	return append(slotted, queued...)
}

// Arrive submits a job: it waits, Ready, as a live submission does.
func (sim *simulator) Arrive(i int, t time.Duration) {
	j := sim.in[i]
	sim.phase[i] = simWaiting
	sim.changed(apitypes.Job{
		Name: j.Name, User: j.User, Queue: j.Queue,
		CreatedAt:     &metav1.Time{Time: sim.at(t)},
		SchedulerData: map[string]string{ReplicasNote: strconv.Itoa(j.Executors)},
		Status:        v1alpha1.BatchJobStatus{State: v1alpha1.JobReady},
	})
}

// claim is the Scheduling taking the job: it leaves the waiting jobs for good. The kit
// tracks it as its own placement until the run ends, as it does live.
func (sim *simulator) claim(i int, p Placement, t time.Duration) {
	sim.placedAt[i], sim.width[i] = t, p.Replicas
	sim.w.placed[p.Job] = &placement{slots: slices.Clone(p.Slots)}
	j := sim.w.jobs[p.Job]
	j.Scheduling = simScheduling
	j.Status.Scheduling = simScheduling
	j.Status.State = v1alpha1.JobInQueue
	j.Status.QueuedAt = &metav1.Time{Time: sim.at(t)}
	sim.changed(j)
}

// grant gives the waiting QueueBased placements their slots, first placed first: one that
// does not fit yet holds up those behind it, one that never can does not.
func (sim *simulator) grant(t time.Duration) {
	var free []int32
	for p, h := range sim.holder {
		if h == "" {
			free = append(free, int32(p))
		}
	}
	var waits []int
	blocked := false
	for _, i := range sim.line {
		n := int(sim.width[i])
		if !blocked && n <= len(free) {
			sim.admit(i, free[:n:n], t)
			free = free[n:]
			continue
		}
		waits = append(waits, i)
		if n <= len(sim.holder) {
			blocked = true
		}
	}
	sim.line = waits
}

// admit gives a claimed job its slots: its application is made at once and runs StartUp
// later.
func (sim *simulator) admit(i int, slots []int32, t time.Duration) {
	name := sim.in[i].Name
	var nodes []string
	for _, p := range slots {
		sim.holder[p] = name
		if !slices.Contains(nodes, sim.nodes[p]) {
			nodes = append(nodes, sim.nodes[p])
		}
	}
	r := &sim.out[i]
	r.Admitted, r.Slots, r.Nodes = t, slices.Clone(slots), nodes
	sim.runningAt[i] = t + sim.o.StartUp
	sim.endsAt[i] = sim.runningAt[i] + sim.in[i].Runtime
	sim.phase[i] = simStarting

	j := sim.w.jobs[name]
	j.Status.State = v1alpha1.JobSubmitted
	j.Status.TestBed = sim.w.bed.Name
	j.Status.Slots = slices.Clone(slots)
	j.Status.Run = 1
	j.Status.SubmittedAt = &metav1.Time{Time: sim.at(t)}
	j.Status.Phases = &v1alpha1.RunPhases{AdmittedAt: sim.micro(t), ApplicationCreatedAt: sim.micro(t)}
	sim.changed(j)
	if sim.o.StartUp == 0 {
		// No hand-over: it runs at the instant it got its slots, and no view shows it
		// starting.
		sim.start(i, t)
	}
}

func (sim *simulator) start(i int, t time.Duration) {
	sim.phase[i] = simRunning
	sim.out[i].Running = t
	j := sim.w.jobs[sim.in[i].Name]
	j.Status.State = v1alpha1.JobRunning
	j.Status.RunningAt = &metav1.Time{Time: sim.at(t)}
	ph := *j.Status.Phases
	ph.RunningAt = sim.micro(t)
	j.Status.Phases = &ph
	sim.changed(j)
}

// end completes a run: its slots are free and its record joins the job's history, where
// later views show it.
func (sim *simulator) end(i int, t time.Duration) {
	sim.phase[i] = simEnded
	r := &sim.out[i]
	r.Ended = t
	for _, p := range r.Slots {
		sim.holder[p] = ""
	}
	j := sim.w.jobs[sim.in[i].Name]
	j.Status.State = v1alpha1.JobCompleted
	j.Status.FinishedAt = &metav1.Time{Time: sim.at(t)}
	ph := *j.Status.Phases
	ph.EndedAt = sim.micro(t)
	j.Status.Phases = &ph
	// A fresh backing array: a view already handed out keeps the history it showed.
	j.Status.History = append(slices.Clip(j.Status.History), v1alpha1.RunRecord{
		Run:                  1,
		Scheduling:           simScheduling,
		TestBed:              sim.w.bed.Name,
		Slots:                slices.Clone(r.Slots),
		Nodes:                slices.Clone(r.Nodes),
		QueuedAt:             &metav1.Time{Time: sim.at(sim.placedAt[i])},
		AdmittedAt:           sim.micro(r.Admitted),
		ApplicationCreatedAt: sim.micro(r.Admitted),
		RunningAt:            sim.micro(r.Running),
		EndedAt:              sim.micro(t),
		Wait:                 &metav1.Duration{Duration: r.Admitted - sim.placedAt[i]},
		Outcome:              v1alpha1.RunCompleted,
	})
	sim.changed(j)
}

// changed hands the job's new state to the world as the feed would.
func (sim *simulator) changed(j apitypes.Job) {
	sim.revision++
	j.ResourceVersion = strconv.Itoa(sim.revision)
	sim.w.jobChanged(j)
}

func (sim *simulator) at(d time.Duration) time.Time { return sim.o.Epoch.Add(d) }

func (sim *simulator) micro(d time.Duration) *metav1.MicroTime {
	return &metav1.MicroTime{Time: sim.at(d)}
}
