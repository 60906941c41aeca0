package queue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The StateAware knobs of the settings work live: with slotplane.stateaware.slot-backed-do-not-hold
// a granted job (its slots are reserved by the grant) does not hold the queue while Starting.
func TestAdmitter_StateAwareKnobs(t *testing.T) {
	for _, knob := range []bool{false, true} {
		a := admitterWithSettings(t, `<allocations><queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`,
			settingsFile(PropSlotBackedDoNotHold, strconv.FormatBool(knob)))
		a.Request(req("first", "q", 1))
		a.Request(req("second", "q", 1))
		got := granted(a.Decide(t0, bed(4)))
		want := []string{"first:[0]"}
		if knob {
			want = []string{"first:[0]", "second:[1]"}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("knob=%t: %v", knob, got)
		}
	}
}

// A job whose driver runs and has asked for no executor (its workflow says so:
// Admitter.NoExecutors) no longer holds its StateAware leaf by default, also in an
// Admitter unpacked from the state carried across a continue-as-new; with
// slotplane.stateaware.skip-starting-without-executors off, it holds the leaf as YuniKorn's
// StateAware does until its first executor or the fallback (YUNIKORN-921, YUNIKORN-1493).
// Before its driver runs, it holds the leaf either way.
func TestAdmitter_StateAwareADriverWithoutExecutorsDoesNotHold(t *testing.T) {
	const file = `<allocations><queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`
	for _, skip := range []string{"", "false"} {
		settings := ""
		if skip != "" {
			settings = settingsFile(PropSkipStartingWithoutExecutors, skip)
		}
		a := admitterWithSettings(t, file, settings)
		a.Request(req("first", "q", 1))
		a.Request(req("second", "q", 1))
		if got := granted(a.Decide(t0, bed(4))); !slices.Equal(got, []string{"first:[0]"}) {
			t.Fatalf("skip=%q: the first decision granted %v", skip, got)
		}
		if got := granted(a.Decide(t0.Add(time.Second), heldBed(a, 4))); len(got) != 0 {
			t.Fatalf("skip=%q: granted %v while the first job's driver is being placed", skip, got)
		}
		a.NoExecutors(key("first"))
		a.NoExecutors(key("nobody")) // a job Admission does not hold changes nothing
		for _, b := range []*Admitter{restored(t, a), unpacked(t, a), a} {
			got := granted(b.Decide(t0.Add(2*time.Second), heldBed(a, 4)))
			want := []string{"second:[1]"}
			if skip == "false" {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Fatalf("skip=%q: after the first job's driver ran without executors: %v, want %v", skip, got, want)
			}
		}
	}
}

// unpacked is a new Admitter from a's packed state, as the Admission workflow carries it
// across a continue-as-new.
func unpacked(t *testing.T, a *Admitter) *Admitter {
	t.Helper()
	b, err := PackState(a.State())
	if err != nil {
		t.Fatal(err)
	}
	st, err := UnpackState(b)
	if err != nil {
		t.Fatal(err)
	}
	return NewAdmitter(st)
}

// Without a bound on starting jobs, a job granted in a leaf that is not StateAware is
// Running from its grant, which says so (QuietStart), and so does a repeat of it; a
// StateAware leaf's grant is Starting and waits for the job's word, after which its repeats
// are quiet too.
func TestAdmitter_OnlyAStateAwareLeafWaitsToHearOfAStart(t *testing.T) {
	const file = `<allocations><queue name="plain"/><queue name="aware"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`
	a := admitterWithSettings(t, file, settingsFile(PropMaxStartingApps, "0"))
	a.Request(req("plain-job", "plain", 1))
	a.Request(req("aware-job", "aware", 1))
	d := a.Decide(t0, bed(4))
	quiet := map[string]bool{}
	for _, g := range d.Grants {
		quiet[g.Job] = g.QuietStart
	}
	if len(quiet) != 2 {
		t.Fatalf("grants %v", granted(d))
	}
	if !quiet["plain-job"] || quiet["aware-job"] {
		t.Fatalf("quiet starts %v", quiet)
	}
	states := map[string]AppState{}
	for _, e := range restored(t, a).Running() {
		states[e.Request.Job] = e.State
	}
	if states["plain-job"] != Running || states["aware-job"] != Starting {
		t.Fatalf("states %v", states)
	}
	if g := a.Request(req("plain-job", "plain", 1)); g == nil || !g.QuietStart {
		t.Fatalf("the repeat of the plain grant: %+v", g)
	}
	if g := a.Request(req("aware-job", "aware", 1)); g == nil || g.QuietStart {
		t.Fatalf("the repeat of the StateAware grant before its start: %+v", g)
	}
	a.Started(key("aware-job"))
	if g := a.Request(req("aware-job", "aware", 1)); g == nil || !g.QuietStart {
		t.Fatalf("the repeat of the StateAware grant after its start: %+v", g)
	}
}

// slotplane.max-starting-apps bounds the granted jobs that have not started: a decision
// grants no more than the room, every grant waits for its job's word (none is quiet), and
// room comes back as jobs start, end before they start, or pass StartingTimeout. The count
// is the carried states': it holds across a continue-as-new.
func TestAdmitter_BoundsTheJobsStartingAtOnce(t *testing.T) {
	a := admitterWithSettings(t, `<allocations><queue name="plain"/></allocations>`, settingsFile(PropMaxStartingApps, "3"))
	for i := range 8 {
		a.Request(req(fmt.Sprintf("j%d", i), "plain", 1))
	}
	d := a.Decide(t0, bed(10))
	mustCheck(t, a, bed(10))
	if got := granted(d); !slices.Equal(got, []string{"j0:[0]", "j1:[1]", "j2:[2]"}) {
		t.Fatalf("first decision granted %v, want the first 3", got)
	}
	for _, g := range d.Grants {
		if g.QuietStart {
			t.Fatalf("%s's grant is quiet: its start would never free room", g.Job)
		}
	}
	for _, e := range a.Waiting() {
		if !strings.Contains(e.Reason, PropMaxStartingApps) {
			t.Fatalf("%s waits with the reason %q", e.Request.Job, e.Reason)
		}
	}
	a = restored(t, a)
	if got := granted(a.Decide(t0.Add(time.Second), heldBed(a, 10))); got != nil {
		t.Fatalf("granted %v with 3 of 3 starting", got)
	}

	a.Started(key("j0"))
	a.Release(key("j1")) // withdrawn before it started
	got := granted(a.Decide(t0.Add(2*time.Second), heldBed(a, 10)))
	if !slices.Equal(got, []string{"j3:[1]", "j4:[3]"}) {
		t.Fatalf("after one start and one release granted %v, want 2", got)
	}
	mustCheck(t, a, heldBed(a, 10))

	// j2 has been starting for StartingTimeout: it no longer counts.
	got = granted(a.Decide(t0.Add(StartingTimeout), heldBed(a, 10)))
	if !slices.Equal(got, []string{"j5:[4]"}) {
		t.Fatalf("after j2's starting timeout granted %v, want j5", got)
	}
}

// Backfill grants within the same bound: behind a head that reserves the free slots, only
// as many short jobs start as there is room for.
func TestAdmitter_BackfillWithinTheStartingBound(t *testing.T) {
	a := admitterWithSettings(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy><backfill>true</backfill></queue></allocations>`,
		settingsFile(PropMaxStartingApps, "2"))
	r := req("running", "q", 1)
	r.Expected = time.Hour
	a.Request(r)
	a.Decide(t0, bed(5))
	a.Started(key("running"))
	a.Request(req("head", "q", 5))
	for _, job := range []string{"s1", "s2", "s3"} {
		short := req(job, "q", 1)
		short.Expected = 5 * time.Minute
		a.Request(short)
	}
	got := granted(a.Decide(t0.Add(time.Minute), heldBed(a, 5)))
	if !slices.Equal(got, []string{"s1:[1]", "s2:[2]"}) {
		t.Fatalf("backfilled %v, want 2 under the bound", got)
	}
}

// At the bound, a running job that preemption took slots from still gets them back as they
// free up: the bound holds back starts, not the jobs that run.
func TestAdmitter_APreemptedJobGetsItsSlotsBackAtTheBound(t *testing.T) {
	a := admitterWithSettings(t, `<allocations><queue name="q"/></allocations>`, settingsFile(PropMaxStartingApps, "1"))
	a.Request(req("a", "q", 2))
	a.Decide(t0, bed(4))
	a.Started(key("a"))
	a.Request(req("b", "q", 1))
	if got := granted(a.Decide(t0.Add(time.Second), heldBed(a, 4))); !slices.Equal(got, []string{"b:[2]"}) {
		t.Fatalf("granted %v", got)
	}
	st := a.State()
	for i := range st.Running {
		if st.Running[i].Request.Job == "a" {
			st.Running[i].Slots, st.Running[i].Preempted = []int32{0}, 1 // slot 1 was taken back
		}
	}
	a = NewAdmitter(st)
	a.Request(req("c", "q", 1))
	d := a.Decide(t0.Add(2*time.Second), heldBed(a, 4))
	if len(d.Grants) != 0 {
		t.Fatalf("granted %v with b still starting", granted(d))
	}
	if len(d.Assignments) != 1 || d.Assignments[0].Job != "a" || len(d.Assignments[0].Keep) != 2 {
		t.Fatalf("assignments %+v, want a's slot back", d.Assignments)
	}
	mustCheck(t, a, heldBed(a, 4))
}
