package schedkit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/simulation"
)

// simFIFO is a toy strict first-in, first-out scheduler: the oldest waiting jobs go into the
// lowest-numbered free slots while they fit, and the first that does not fit holds up the
// rest, even one that can never fit.
var simFIFO = SchedulerFunc(func(v *View) []Placement {
	var free []int32
	for _, s := range v.FreeSlots() {
		free = append(free, s.Position)
	}
	var out []Placement
	for _, j := range v.Waiting {
		n := int(j.Replicas)
		if n > len(free) {
			break
		}
		out = append(out, Placement{Job: j.Name, Replicas: j.Replicas, Slots: free[:n:n]})
		free = free[n:]
	}
	return out
})

// simQueueAll hands every waiting job to the test bed's queue, naming no slots.
var simQueueAll = SchedulerFunc(func(v *View) []Placement {
	var out []Placement
	for _, j := range v.Waiting {
		out = append(out, Placement{Job: j.Name})
	}
	return out
})

func simJob(name string, arrival time.Duration, replicas int, runtime time.Duration) simulation.Job {
	return simulation.Job{Name: name, User: "u-" + name, Queue: "root.q", Submit: arrival, Executors: replicas, Runtime: runtime}
}

// simRan is a run that got its slots; simNever one that did not.
func simRan(job string, arrival, admitted, running, ended time.Duration, slots []int32, nodes ...string) SimRun {
	return SimRun{Job: job, Arrival: arrival, Admitted: admitted, Running: running, Ended: ended, Slots: slots, Nodes: nodes}
}

func simNever(job string, arrival time.Duration) SimRun {
	return SimRun{Job: job, Arrival: arrival, Admitted: -1, Running: -1, Ended: -1}
}

func TestSimulate_RunsTheSchedulerInVirtualTime(t *testing.T) {
	const mn, sec = time.Minute, time.Second
	// Five jobs on two nodes of two slots: c (3 slots) cannot start when b frees two, and d
	// waits behind it although one slot would do.
	five := []simulation.Job{
		simJob("a", 0, 2, 10*mn),
		simJob("b", 1*mn, 2, 5*mn),
		simJob("c", 2*mn, 3, 4*mn),
		simJob("d", 3*mn, 1, 2*mn),
		simJob("e", 11*mn, 2, 1*mn),
	}
	twoByTwo := SimBed{Name: "lab", Nodes: 2, SlotsPerNode: 2}
	oneByThree := SimBed{Name: "lab", Nodes: 1, SlotsPerNode: 3}
	cases := map[string]struct {
		s    Scheduler
		jobs []simulation.Job
		bed  SimBed
		o    SimOptions
		want []SimRun
	}{
		"slots named by a FIFO scheduler are held from placement to end": {
			s: simFIFO, jobs: five, bed: twoByTwo,
			want: []SimRun{
				simRan("a", 0, 0, 0, 10*mn, []int32{0, 1}, "node-00", "node-01"),
				simRan("b", 1*mn, 1*mn, 1*mn, 6*mn, []int32{2, 3}, "node-00", "node-01"),
				simRan("c", 2*mn, 10*mn, 10*mn, 14*mn, []int32{0, 1, 2}, "node-00", "node-01"),
				simRan("d", 3*mn, 10*mn, 10*mn, 12*mn, []int32{3}, "node-01"),
				simRan("e", 11*mn, 14*mn, 14*mn, 15*mn, []int32{0, 1}, "node-00", "node-01"),
			},
		},
		"start-up delays running and the end, and so the slots' next use": {
			s: simFIFO, jobs: five, bed: twoByTwo, o: SimOptions{StartUp: 30 * sec},
			want: []SimRun{
				simRan("a", 0, 0, 30*sec, 10*mn+30*sec, []int32{0, 1}, "node-00", "node-01"),
				simRan("b", 1*mn, 1*mn, 1*mn+30*sec, 6*mn+30*sec, []int32{2, 3}, "node-00", "node-01"),
				simRan("c", 2*mn, 10*mn+30*sec, 11*mn, 15*mn, []int32{0, 1, 2}, "node-00", "node-01"),
				simRan("d", 3*mn, 10*mn+30*sec, 11*mn, 13*mn, []int32{3}, "node-01"),
				simRan("e", 11*mn, 15*mn, 15*mn+30*sec, 16*mn+30*sec, []int32{0, 1}, "node-00", "node-01"),
			},
		},
		"the limit stops the simulation, events at the limit still happen": {
			s: simFIFO, jobs: five, bed: twoByTwo, o: SimOptions{Limit: 12 * mn},
			want: []SimRun{
				simRan("a", 0, 0, 0, 10*mn, []int32{0, 1}, "node-00", "node-01"),
				simRan("b", 1*mn, 1*mn, 1*mn, 6*mn, []int32{2, 3}, "node-00", "node-01"),
				simRan("c", 2*mn, 10*mn, 10*mn, -1, []int32{0, 1, 2}, "node-00", "node-01"),
				simRan("d", 3*mn, 10*mn, 10*mn, 12*mn, []int32{3}, "node-01"),
				simNever("e", 11*mn),
			},
		},
		"a job larger than the bed is never placed, and what waits behind it stays unreached": {
			s: simFIFO, bed: twoByTwo,
			jobs: []simulation.Job{simJob("huge", 0, 5, 1*mn), simJob("small", 1*mn, 1, 1*mn)},
			want: []SimRun{simNever("huge", 0), simNever("small", 1*mn)},
		},
		"a run of no length frees its slots for the same instant": {
			s: simFIFO, bed: SimBed{Nodes: 1, SlotsPerNode: 1},
			jobs: []simulation.Job{simJob("a", 0, 1, 0), simJob("b", 0, 1, 1*mn)},
			want: []SimRun{
				simRan("a", 0, 0, 0, 0, []int32{0}, "node-00"),
				simRan("b", 0, 0, 0, 1*mn, []int32{0}, "node-00"),
			},
		},
		"queue-based placements wait in line for enough free slots": {
			s: simQueueAll, bed: oneByThree,
			jobs: []simulation.Job{simJob("a", 0, 2, 10*mn), simJob("b", 1*mn, 2, 5*mn), simJob("c", 2*mn, 1, 1*mn)},
			want: []SimRun{
				simRan("a", 0, 0, 0, 10*mn, []int32{0, 1}, "node-00"),
				// c fits in slot 2 from its arrival, but b was placed first.
				simRan("b", 1*mn, 10*mn, 10*mn, 15*mn, []int32{0, 1}, "node-00"),
				simRan("c", 2*mn, 10*mn, 10*mn, 11*mn, []int32{2}, "node-00"),
			},
		},
		"a queue-based placement larger than the bed does not hold up the line": {
			s: simQueueAll, bed: oneByThree,
			jobs: []simulation.Job{simJob("huge", 0, 4, 1*mn), simJob("small", 1*mn, 1, 1*mn)},
			want: []SimRun{simNever("huge", 0), simRan("small", 1*mn, 1*mn, 1*mn, 2*mn, []int32{0}, "node-00")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Simulate(tc.s, tc.jobs, tc.bed, tc.o)
			if err != nil {
				t.Fatalf("Simulate: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
		})
	}
}

// The scheduler sees each job's run as the live kit would show it: placed, starting,
// running, then ended with its record in the history, which RunTimes reads.
func TestSimulate_LaterViewsShowRunsAsTheyHappen(t *testing.T) {
	const mn, sec = time.Minute, time.Second
	start := time.Date(2030, time.March, 1, 9, 0, 0, 0, time.UTC)
	type sight struct {
		At      time.Duration
		State   v1alpha1.BatchJobState
		Records int
	}
	var seen []sight
	var last *View
	recording := SchedulerFunc(func(v *View) []Placement {
		a := v.Jobs["a"]
		seen = append(seen, sight{At: v.Now.Sub(start), State: a.Status.State, Records: len(a.Status.History)})
		last = v
		return simFIFO(v)
	})
	jobs := []simulation.Job{simJob("a", 0, 4, 5*mn), simJob("b", 30*sec, 1, 1*mn)}
	runs, err := Simulate(recording, jobs, SimBed{Name: "lab", Nodes: 2, SlotsPerNode: 2}, SimOptions{StartUp: 1 * mn, Epoch: start})
	if err != nil {
		t.Fatalf("Simulate: %v", err)
	}

	// Asked at a's arrival, b's, a's start (b waits) and a's end; once nothing waits, b's own
	// start and end ask nothing.
	wantSeen := []sight{
		{At: 0, State: v1alpha1.JobReady},
		{At: 30 * sec, State: v1alpha1.JobSubmitted},
		{At: 1 * mn, State: v1alpha1.JobRunning},
		{At: 6 * mn, State: v1alpha1.JobCompleted, Records: 1},
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("what the scheduler saw of a (-want +got):\n%s", diff)
	}
	micro := func(d time.Duration) *metav1.MicroTime { return &metav1.MicroTime{Time: start.Add(d)} }
	wantRecord := []v1alpha1.RunRecord{{
		Run: 1, Scheduling: "simulation", TestBed: "lab",
		Slots: []int32{0, 1, 2, 3}, Nodes: []string{"node-00", "node-01"},
		QueuedAt:   &metav1.Time{Time: start},
		AdmittedAt: micro(0), ApplicationCreatedAt: micro(0), RunningAt: micro(1 * mn), EndedAt: micro(6 * mn),
		Wait:    &metav1.Duration{},
		Outcome: v1alpha1.RunCompleted,
	}}
	if diff := cmp.Diff(wantRecord, last.Jobs["a"].Status.History); diff != "" {
		t.Errorf("a's history in the last view (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{5 * mn}, last.Jobs["a"].RunTimes()); diff != "" {
		t.Errorf("a's run times (-want +got):\n%s", diff)
	}
	wantB := simRan("b", 30*sec, 6*mn, 7*mn, 8*mn, []int32{0}, "node-00")
	if diff := cmp.Diff(wantB, runs[1]); diff != "" {
		t.Errorf("b's run (-want +got):\n%s", diff)
	}
}

// A placement's notes are the job's scheduler data from then on: a value set, a nil one
// removing the submitter's replica count, which the kit then reads as 1.
func TestSimulate_NotesReachLaterViews(t *testing.T) {
	const mn, sec = time.Minute, time.Second
	toy := "toy"
	var atB *View
	noting := SchedulerFunc(func(v *View) []Placement {
		if _, ok := v.Jobs["b"]; ok && atB == nil {
			atB = v
		}
		ps := simFIFO(v)
		for i := range ps {
			ps[i].Notes = map[string]*string{"placedBy": &toy, ReplicasNote: nil}
		}
		return ps
	})
	jobs := []simulation.Job{simJob("a", 0, 2, 1*mn), simJob("b", 30*sec, 2, 1*mn)}
	if _, err := Simulate(noting, jobs, SimBed{Nodes: 1, SlotsPerNode: 2}, SimOptions{}); err != nil {
		t.Fatalf("Simulate: %v", err)
	}
	if atB == nil {
		t.Fatal("the scheduler never saw b")
	}
	a, b := atB.Jobs["a"], atB.Jobs["b"]
	if diff := cmp.Diff(map[string]string{"placedBy": "toy"}, a.SchedulerData); diff != "" {
		t.Errorf("a's scheduler data (-want +got):\n%s", diff)
	}
	if a.Replicas != 1 {
		t.Errorf("a's replicas read %d, want 1 once its note is removed", a.Replicas)
	}
	if diff := cmp.Diff(map[string]string{ReplicasNote: "2"}, b.SchedulerData); diff != "" {
		t.Errorf("b's scheduler data as it arrived (-want +got):\n%s", diff)
	}
	if b.Replicas != 2 {
		t.Errorf("b's replicas read %d, want 2", b.Replicas)
	}
}

// A placement into a slot that is not free is refused, as live, and the job waits for the
// next decision.
func TestSimulate_RefusedPlacementLeavesTheJobWaiting(t *testing.T) {
	const mn, sec = time.Minute, time.Second
	slotZero := SchedulerFunc(func(v *View) []Placement {
		var out []Placement
		for _, j := range v.Waiting {
			out = append(out, Placement{Job: j.Name, Slots: []int32{0}})
		}
		return out
	})
	var refusals []string
	o := SimOptions{Decided: func(v *View, made []Placement, refused []error) {
		for _, err := range refused {
			refusals = append(refusals, fmt.Sprintf("%v: %v", v.Now.Sub(simDefaultEpoch), err))
		}
	}}
	jobs := []simulation.Job{simJob("a", 0, 1, 1*mn), simJob("b", 30*sec, 1, 1*mn)}
	runs, err := Simulate(slotZero, jobs, SimBed{Nodes: 1, SlotsPerNode: 2}, o)
	if err != nil {
		t.Fatalf("Simulate: %v", err)
	}
	want := []SimRun{
		simRan("a", 0, 0, 0, 1*mn, []int32{0}, "node-00"),
		simRan("b", 30*sec, 1*mn, 1*mn, 2*mn, []int32{0}, "node-00"),
	}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	wantRefusals := []string{`30s: job "b": slot 0 is not free`}
	if diff := cmp.Diff(wantRefusals, refusals); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
}

func TestSimulate_RefusesBadInput(t *testing.T) {
	ok := simJob("a", 0, 1, time.Minute)
	bed := SimBed{Nodes: 1, SlotsPerNode: 1}
	cases := map[string]struct {
		s    Scheduler
		jobs []simulation.Job
		bed  SimBed
		o    SimOptions
		want string
	}{
		"no scheduler":         {jobs: []simulation.Job{ok}, bed: bed, want: "no scheduler"},
		"a job given twice":    {s: simFIFO, jobs: []simulation.Job{ok, ok}, bed: bed, want: `job "a" is given twice`},
		"a job without a name": {s: simFIFO, jobs: []simulation.Job{{Executors: 1}}, bed: bed, want: "job 0 has no name"},
		"a bed without nodes":  {s: simFIFO, jobs: []simulation.Job{ok}, bed: SimBed{SlotsPerNode: 2}, want: "the test bed has no slots"},
		"nodes without slots":  {s: simFIFO, jobs: []simulation.Job{ok}, bed: SimBed{Nodes: 2}, want: "the test bed has no slots"},
		"more slots than int32 positions": {
			s: simFIFO, jobs: []simulation.Job{ok}, bed: SimBed{Nodes: 1 << 16, SlotsPerNode: 1 << 16}, want: "more slots than positions can number",
		},
		"an arrival before the start": {s: simFIFO, jobs: []simulation.Job{simJob("a", -time.Second, 1, time.Minute)}, bed: bed, want: "before the start"},
		"a negative runtime":          {s: simFIFO, jobs: []simulation.Job{simJob("a", 0, 1, -time.Second)}, bed: bed, want: "negative runtime"},
		"no replicas":                 {s: simFIFO, jobs: []simulation.Job{simJob("a", 0, 0, time.Minute)}, bed: bed, want: "asks for 0 slots"},
		"more replicas than a job may have": {
			s: simFIFO, jobs: []simulation.Job{simJob("a", 0, v1alpha1.MaxReplication+1, time.Minute)}, bed: bed, want: "asks for 1025 slots",
		},
		"a negative start-up": {s: simFIFO, jobs: []simulation.Job{ok}, bed: bed, o: SimOptions{StartUp: -time.Second}, want: "negative start-up"},
		"a negative limit":    {s: simFIFO, jobs: []simulation.Job{ok}, bed: bed, o: SimOptions{Limit: -time.Second}, want: "negative limit"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runs, err := Simulate(tc.s, tc.jobs, tc.bed, tc.o)
			if !errors.Is(err, ErrBadSimInput) {
				t.Fatalf("Simulate = %v, %v; want an error wrapping ErrBadSimInput", runs, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// simWorkload is a mixed workload on three nodes of four slots: sixty jobs of one to six
// slots, arriving over half an hour, placed by a scheduler that sends odd counts to the
// queue and gives even ones the highest free slots, first fit, so both kinds of placement
// meet and later jobs overtake.
func simWorkload() (Scheduler, []simulation.Job, SimBed, SimOptions) {
	rng := rand.New(rand.NewPCG(7, 11))
	var jobs []simulation.Job
	for i := range 60 {
		jobs = append(jobs, simulation.Job{
			Name: fmt.Sprintf("job-%02d", i), User: fmt.Sprintf("user-%d", i%3),
			Submit:    time.Duration(rng.IntN(1800)) * time.Second,
			Executors: 1 + rng.IntN(6),
			Runtime:   time.Duration(60+rng.IntN(1200)) * time.Second,
		})
	}
	mixed := SchedulerFunc(func(v *View) []Placement {
		free := v.FreeSlots()
		var out []Placement
		for _, j := range v.Waiting {
			n := int(j.Replicas)
			if n%2 == 1 {
				out = append(out, Placement{Job: j.Name})
				continue
			}
			if n > len(free) {
				continue
			}
			var slots []int32
			for _, s := range free[len(free)-n:] {
				slots = append(slots, s.Position)
			}
			free = free[:len(free)-n]
			out = append(out, Placement{Job: j.Name, Slots: slots})
		}
		return out
	})
	return mixed, jobs, SimBed{Name: "lab", Nodes: 3, SlotsPerNode: 4}, SimOptions{StartUp: 15 * time.Second}
}

// Two runs of the same workload give the same runs, though the view is built from maps.
func TestSimulate_SameInputSameRuns(t *testing.T) {
	s, jobs, bed, o := simWorkload()
	first, err := Simulate(s, jobs, bed, o)
	if err != nil {
		t.Fatalf("Simulate: %v", err)
	}
	for range 5 {
		again, err := Simulate(s, jobs, bed, o)
		if err != nil {
			t.Fatalf("Simulate: %v", err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("a second run differs (-first +again):\n%s", diff)
		}
	}
}

// Whatever the mix of placements, every job that fits ends, holding as many slots as it
// asked for, and no slot is held by two runs at once.
func TestSimulate_NoSlotHeldByTwoRunsAtOnce(t *testing.T) {
	s, jobs, bed, o := simWorkload()
	runs, err := Simulate(s, jobs, bed, o)
	if err != nil {
		t.Fatalf("Simulate: %v", err)
	}
	for i, r := range runs {
		if r.Ended < 0 || r.Admitted < r.Arrival {
			t.Errorf("%s: arrived %v, admitted %v, ended %v; want it to end after it arrived", r.Job, r.Arrival, r.Admitted, r.Ended)
		}
		if len(r.Slots) != jobs[i].Executors {
			t.Errorf("%s held %d slots, asked for %d", r.Job, len(r.Slots), jobs[i].Executors)
		}
		for _, q := range runs[i+1:] {
			// Holding is [Admitted, Ended): a slot freed at an instant may be taken at it.
			if r.Admitted >= q.Ended || q.Admitted >= r.Ended {
				continue
			}
			for _, p := range r.Slots {
				if slices.Contains(q.Slots, p) {
					t.Errorf("slot %d held by %s [%v, %v) and %s [%v, %v)", p, r.Job, r.Admitted, r.Ended, q.Job, q.Admitted, q.Ended)
				}
			}
		}
	}
}
