package queue

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bed is a test bed of n slots of 1 GiB and 1 vcore, with the given ones not free.
func bed(n int, busy ...int32) Bed {
	b := Bed{Exists: true, SlotSize: MBVCores(1024, 1)}
	taken := map[int32]bool{}
	for _, p := range busy {
		taken[p] = true
	}
	for i := range int32(n) {
		b.Positions = append(b.Positions, i)
		if !taken[i] {
			b.Free = append(b.Free, i)
		}
	}
	return b
}

func admitterWith(t *testing.T, file string) *Admitter {
	t.Helper()
	return admitterWithSettings(t, file, "")
}

// admitterWithSettings is admitterWith the settings (a yarn-site.xml; "": the defaults).
func admitterWithSettings(t *testing.T, file, settings string) *Admitter {
	t.Helper()
	u := ReadConfigFiles(Config{}, ConfigFiles{Allocations: []byte(file), HasAllocations: true, Settings: []byte(settings), HasSettings: settings != ""}, "v1")
	if u.Allocations == nil {
		t.Fatalf("allocation file: %s", u.Rejected)
	}
	return NewAdmitter(AdmitterState{Config: Config{}.Apply(*u)})
}

func key(job string) JobKey { return JobKey{Scheduling: "s", SchedulingUID: "uid-s", Job: job, Run: 1} }

func req(job, queue string, slots int32) Request {
	return Request{JobKey: key(job), Queue: queue, User: "u", Slots: slots, Driver: MBVCores(256, 0)}
}

func granted(d Decision) []string {
	var out []string
	for _, g := range d.Grants {
		out = append(out, fmt.Sprintf("%s:%v", g.Job, g.Slots))
	}
	return out
}

// held is the bed after the Admitter's grants: granted slots are not free.
func heldBed(a *Admitter, n int) Bed {
	var busy []int32
	for _, e := range a.Running() {
		busy = append(busy, e.Slots...)
	}
	return bed(n, busy...)
}

// restored is a new Admitter from a's state after a JSON round trip, as the Admission
// workflow's continue-as-new carries it.
func restored(t *testing.T, a *Admitter) *Admitter {
	t.Helper()
	raw, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	var st AdmitterState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return NewAdmitter(st)
}

func mustCheck(t *testing.T, a *Admitter, b Bed) {
	t.Helper()
	if why := a.Check(b.Positions); why != "" {
		t.Fatal(why)
	}
}

// The protocol is idempotent: a repeated request of a waiting job changes nothing, one of a
// granted job gets the same grant again, a release of an unknown key is a no-op, and the
// key's run tells two runs of one job apart.
func TestAdmitter_ProtocolIsIdempotent(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	if g := a.Request(req("j", "q", 2)); g != nil {
		t.Fatalf("a fresh request is answered at once: %+v", g)
	}
	if g := a.Request(req("j", "q", 2)); g != nil || len(a.Waiting()) != 1 {
		t.Fatalf("a repeated request of a waiting job: %+v, %d waiting", g, len(a.Waiting()))
	}
	d := a.Decide(t0, bed(4))
	if got := granted(d); !slices.Equal(got, []string{"j:[0 1]"}) {
		t.Fatalf("grants %v", got)
	}
	g := a.Request(req("j", "q", 2))
	if g == nil || !slices.Equal(g.Slots, []int32{0, 1}) || g.Refused != "" {
		t.Fatalf("a repeated request of a granted job gets its grant again: %+v", g)
	}
	if a.Release(key("other")) {
		t.Fatal("a release of an unknown key was known")
	}
	run2 := req("j", "q", 1)
	run2.Run = 2
	if a.Release(run2.JobKey) {
		t.Fatal("run 2 released run 1")
	}
	if !a.Release(key("j")) || len(a.Running()) != 0 {
		t.Fatal("the release of run 1 did not free it")
	}
	if a.Release(key("j")) {
		t.Fatal("a second release was known")
	}
}

// Grants are numbered, a repeat carries its grant's number, and a job released and asked for
// again gets a higher one, also across a continue-as-new: a Scheduling tells a late copy of a
// grant it gave back from the new grant by it.
func TestAdmitter_GrantsAreNumbered(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("j", "q", 2))
	a.Request(req("k", "q", 1))
	d := a.Decide(t0, bed(4))
	if len(d.Grants) != 2 || d.Grants[0].Seq != 1 || d.Grants[1].Seq != 2 {
		t.Fatalf("grants %+v", d.Grants)
	}
	if g := a.Request(req("j", "q", 2)); g == nil || g.Seq != 1 {
		t.Fatalf("a repeat of j's grant: %+v", g)
	}
	a = restored(t, a)
	a.Release(key("j"))
	a.Request(req("j", "q", 2))
	d = a.Decide(t0, heldBed(a, 4))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 3 {
		t.Fatalf("j asked for again: %+v", d.Grants)
	}
	if g := a.Request(req("x", "", 0)); g == nil || g.Refused == "" || g.Seq != 0 {
		t.Fatalf("a refusal is not numbered: %+v", g)
	}
}

// A grant restored from the cluster holds its slots as a grant the Admitter made would: a
// waiting job gets only the other slots, a repeat of the job's request gets the restored
// grant back, a second restore of the key changes nothing, and the grant's queue is the one
// recorded (placed again when it names a parent queue). A release frees the slots.
func TestAdmitter_RestoredGrantHoldsItsSlots(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/><queue name="p"><queue name="c"/></queue></allocations>`)
	if !a.Restore(req("old", "q", 2), "root.q", []int32{1, 2}, t0, true) {
		t.Fatal("the restore was not taken")
	}
	if a.Restore(req("old", "q", 2), "root.q", []int32{3}, t0, true) {
		t.Fatal("a second restore of a held key was taken")
	}
	if !a.Restore(req("parent", "q", 1), "root.p", []int32{0}, t0, false) {
		t.Fatal("a restore naming a parent queue was not taken")
	}
	a.Request(req("new", "q", 2))
	d := a.Decide(t0, bed(5)) // the bed's status may not show the restored slots taken yet
	if got := granted(d); !slices.Equal(got, []string{"new:[3 4]"}) {
		t.Fatalf("grants %v", got)
	}
	g := a.Request(req("old", "q", 2))
	if g == nil || !slices.Equal(g.Slots, []int32{1, 2}) || g.Seq == 0 {
		t.Fatalf("a repeat of the restored job's request: %+v", g)
	}
	queues := map[string]string{}
	states := map[string]AppState{}
	for _, e := range a.Running() {
		queues[e.Request.Job], states[e.Request.Job] = e.Queue, e.State
	}
	if queues["old"] != "root.q" || queues["parent"] != "root.q" {
		t.Fatalf("queues %v", queues)
	}
	if states["old"] != Running || states["parent"] != Starting {
		t.Fatalf("states %v", states)
	}
	a = restored(t, a)
	if !a.Release(key("old")) {
		t.Fatal("the restored grant was not known after a continue-as-new")
	}
	a.Request(req("next", "q", 2))
	if got := granted(a.Decide(t0, heldBed(a, 5))); !slices.Equal(got, []string{"next:[1 2]"}) {
		t.Fatalf("after the release: %v", got)
	}
}

// A request that gives back the grant the job holds releases it and queues the job again
// (it is granted anew, with a new number); one that names a grant the job no longer holds
// is a repeat, answered with the grant it holds.
func TestAdmitter_ARequestGivesBackItsGrant(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("j", "q", 2))
	a.Request(req("k", "q", 2))
	d := a.Decide(t0, bed(2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 1 {
		t.Fatalf("grants %+v", d.Grants)
	}
	again := req("j", "q", 2)
	again.GaveBack = 1
	if g := a.Request(again); g != nil {
		t.Fatalf("the give-back was answered with %+v", g)
	}
	if n := len(a.Report(ReportOptions{}).Running); n != 0 {
		t.Fatalf("j still holds its slots: %d running", n)
	}
	d = a.Decide(t0, heldBed(a, 2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "k" {
		t.Fatalf("k, ahead of j now, gets the slots: %+v", d.Grants)
	}
	a.Release(key("k"))
	a = restored(t, a)
	d = a.Decide(t0, heldBed(a, 2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 3 {
		t.Fatalf("j's new grant: %+v", d.Grants)
	}
	if g := a.Request(again); g == nil || g.Seq != 3 {
		t.Fatalf("a late copy of the give-back is a repeat: %+v", g)
	}
	if n := len(a.Report(ReportOptions{}).Running); n != 1 {
		t.Fatalf("the late copy released j: %d running", n)
	}
}

// Refusals are final and come at once: placement, ACL, nonsense.
func TestAdmitter_RefusesWhatCanNeverBeAdmitted(t *testing.T) {
	a := admitterWith(t, `<allocations>
  <queue name="root"><aclSubmitApps>alice</aclSubmitApps><aclAdministerApps> </aclAdministerApps><queue name="q"/></queue>
  <queuePlacementPolicy><rule name="specified" create="false"/><rule name="reject"/></queuePlacementPolicy>
</allocations>`)
	r := req("x", "q", 1)
	r.User = "mallory"
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "may not submit") {
		t.Fatalf("ACL: %+v", g)
	}
	r = req("y", "nowhere", 1)
	r.User = "alice"
	if g := a.Request(r); g == nil || g.Refused == "" {
		t.Fatalf("placement: %+v", g)
	}
	r = req("z", "q", 0)
	r.User = "alice"
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "0 slots") {
		t.Fatalf("zero slots: %+v", g)
	}
	if len(a.Waiting()) != 0 {
		t.Fatal("a refused request waits")
	}
}

// A driver larger than anything the queues count is refused, not wrapped around.
func TestAdmitter_RefusesAnOutsizedDriver(t *testing.T) {
	a := NewAdmitter(AdmitterState{})
	r := req("x", "q", 1)
	r.Driver = Resources{MemoryBytes: 1 << 62}
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "more than the queues count") {
		t.Fatalf("outsized driver: %+v", g)
	}
	r.Driver = Resources{MilliCores: -1}
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "negative") {
		t.Fatalf("negative driver: %+v", g)
	}
}

// The default maxAMShare of 0.5 counts drivers as they are. The leaf's fair share is the
// whole bed, 8 slots of 1024 mb and 1 vcore (it is the only queue, and its 8 one-slot jobs
// demand all of it), so its drivers may take 4096 mb and 4 vcores (4000m):
//   - eight drivers of 250m and 512Mi take 2000m and exactly 4096 mb: all 8 jobs run at
//     once (counted in whole vcores, as before, they were 8 vcores, and only 4 ran);
//   - drivers of 1 vcore reach 4000m with 4 of them, and a fifth would be 5000m: 4 run;
//   - drivers of 250m and 1024 mb reach 4096 mb with 4 of them: memory holds them to 4.
func TestAdmitter_DefaultMaxAMShareCountsDriversExactly(t *testing.T) {
	cases := map[string]struct {
		driver Resources
		runs   int
	}{
		"250m and 512Mi drivers":  {Resources{MemoryBytes: 512 * mib, MilliCores: 250}, 8},
		"one-vcore drivers":       {MBVCores(512, 1), 4},
		"250m and 1024Mi drivers": {Resources{MemoryBytes: 1024 * mib, MilliCores: 250}, 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := admitterWith(t, `<allocations><queue name="team"/></allocations>`)
			if got := a.Config().Allocations.QueueMaxAMShareDefault; got != 0.5 {
				t.Fatalf("the default maxAMShare is %v, want 0.5", got)
			}
			for i := range 8 {
				r := req(fmt.Sprintf("j%d", i), "team", 1)
				r.Driver = tc.driver
				if g := a.Request(r); g != nil {
					t.Fatalf("request %d: %+v", i, g)
				}
			}
			b := bed(8)
			d := a.Decide(time.Unix(0, 0), b)
			mustCheck(t, a, heldBed(a, 8))
			if len(d.Grants) != tc.runs {
				t.Fatalf("granted %v, want %d jobs", granted(d), tc.runs)
			}
			var share Resources
			for _, q := range a.Report(ReportOptions{}).Queues {
				if q.Path == "root.team" {
					share = q.FairShare
				}
			}
			if share != MBVCores(8192, 8) {
				t.Errorf("fair share %s, want 8192 mb, 8 vcores", share)
			}
			for _, e := range a.Waiting() {
				if !strings.Contains(e.Reason, "maxAMShare 0.50 of its fair share (4096 mb, 4 vcores)") {
					t.Errorf("%s waits for %q, want the maxAMShare limit", e.Request.Job, e.Reason)
				}
			}
		})
	}
}

// A FIFO leaf is strict: the head that does not fit holds the free slots as they free up, and
// a later small job does not pass it. The same leaf marked strictOrder false is first that
// fits.
func TestAdmitter_StrictFIFOReservesForTheHead(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
			a := admitterWith(t, fmt.Sprintf(`<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy><strictOrder>%t</strictOrder></queue></allocations>`, strict))
			a.Request(req("running", "q", 3))
			a.Decide(t0, bed(4))
			a.Request(req("big", "q", 4))
			a.Request(req("small", "q", 1))
			d := a.Decide(t0, heldBed(a, 4))
			if strict {
				if len(d.Grants) != 0 {
					t.Fatalf("the small job passed the head: %v", granted(d))
				}
				if r := a.State().Reserved; r == nil || r.Job != "big" {
					t.Fatalf("reserved %+v", r)
				}
				if w := a.Waiting(); !strings.Contains(w[1].Reason, "waits behind") {
					t.Fatalf("small waits for %q", w[1].Reason)
				}
				a.Release(key("running"))
				if got := granted(a.Decide(t0, heldBed(a, 4))); !slices.Equal(got, []string{"big:[0 1 2 3]"}) {
					t.Fatalf("after the release: %v", got)
				}
			} else if got := granted(d); !slices.Equal(got, []string{"small:[3]"}) {
				t.Fatalf("first that fits: %v", got)
			}
			mustCheck(t, a, bed(4))
		})
	}
}

// fair leaves are not strict by default: the first job that fits goes.
func TestAdmitter_FairLeafIsFirstThatFits(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("big", "q", 5))
	a.Request(req("small", "q", 1))
	if got := granted(a.Decide(t0, bed(4))); !slices.Equal(got, []string{"small:[0]"}) {
		t.Fatalf("grants %v", got)
	}
	if w := a.Waiting(); len(w) != 1 || !strings.Contains(w[0].Reason, "needs 5 slots; the test bed has 4") {
		t.Fatalf("the job that can never fit says so: %+v", w)
	}
}

// A SlotBased job whose slots are taken waits, says which of them, and lets a later job
// of its fair leaf have the free slot; once its slots free, it goes.
func TestAdmitter_SlotBasedJobSaysWhichOfItsSlotsAreTaken(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	pinned := req("pinned", "q", 2)
	pinned.SlotIDs = []int32{1, 2}
	a.Request(pinned)
	a.Request(req("any", "q", 1))
	if got := granted(a.Decide(t0, bed(4, 0, 2, 3))); !slices.Equal(got, []string{"any:[1]"}) {
		t.Fatalf("grants %v", got)
	}
	if w := a.Waiting(); len(w) != 1 || w[0].Reason != "its slots [1 2] are not free" {
		t.Fatalf("the pinned job's reason: %+v", w)
	}
	a.Ended(key("any"))
	if got := granted(a.Decide(t0.Add(time.Second), bed(4, 0, 3))); !slices.Equal(got, []string{"pinned:[1 2]"}) {
		t.Fatalf("grants once its slots free %v", got)
	}
}

// A configuration the queues cannot be built from (a parse result without a root) panics in
// Configure and leaves the Admitter as it was: the old configuration and queues decide on.
func TestAdmitter_ConfigureThatPanicsChangesNothing(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><maxRunningApps>1</maxRunningApps></queue></allocations>`)
	a.Request(req("one", "q", 1))
	a.Request(req("two", "q", 1))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Configure of a configuration without a root did not panic")
			}
		}()
		a.Configure(Config{Allocations: &Allocations{}, Version: "v2"})
	}()
	if v := a.Config().Version; v != "v1" {
		t.Fatalf("version %q in force after the failed Configure", v)
	}
	if got := granted(a.Decide(t0, bed(4))); !slices.Equal(got, []string{"one:[0]"}) {
		t.Fatalf("grants %v: v1's maxRunningApps 1 should still hold", got)
	}
}

// A head that can never fit the bed does not hold up its strict leaf.
func TestAdmitter_NeverFittingHeadDoesNotBlock(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	a.Request(req("huge", "q", 9))
	a.Request(req("small", "q", 1))
	if got := granted(a.Decide(t0, bed(4))); !slices.Equal(got, []string{"small:[0]"}) {
		t.Fatalf("grants %v", got)
	}
}

// A SlotBased head reserves its own slots only: others use the rest meanwhile, and nobody
// takes its slots while it waits for them.
func TestAdmitter_SlotBasedHeadReservesItsSlots(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	a.Request(req("holder", "q", 1))
	a.Decide(t0, bed(4)) // holder takes slot 0
	pinned := req("pinned", "q", 2)
	pinned.SlotIDs = []int32{0, 1}
	a.Request(pinned)
	a.Request(req("later", "q", 2))
	d := a.Decide(t0, heldBed(a, 4))
	if got := granted(d); !slices.Equal(got, []string{"later:[2 3]"}) {
		t.Fatalf("grants %v (slot 1 is the pinned job's)", got)
	}
	a.Release(key("holder"))
	if got := granted(a.Decide(t0, heldBed(a, 4))); !slices.Equal(got, []string{"pinned:[0 1]"}) {
		t.Fatalf("after the release: %v", got)
	}
	mustCheck(t, a, bed(4))
}

// SlotBased heads of a strict leaf whose slots are taken each hold their own slots, one
// after the other, and the job behind them takes the rest: a job that does not fit then
// holds the free slots, and the queues after it wait for it. Every job says why it waits.
func TestAdmitter_SlotBasedHeadsHoldTheirSlotsAndTheLeafGoesOn(t *testing.T) {
	a := admitterWith(t, `<allocations>
  <queue name="a"><schedulingPolicy>fifo</schedulingPolicy></queue><queue name="b"/><queue name="c"/></allocations>`)
	a.Request(req("holder", "c", 2))
	a.Decide(t0, bed(6)) // holder takes slots 0 and 1
	for i, p := range []int32{0, 1} {
		pinned := req(fmt.Sprintf("pinned%d", i), "a", 1)
		pinned.SlotIDs = []int32{p}
		a.Request(pinned)
	}
	a.Request(req("next", "a", 1))
	a.Request(req("big", "a", 4))
	a.Request(req("other", "b", 1))
	a.Request(req("another", "b", 1))
	// Queue a, at no usage, goes first; then b, which has used less once next runs; then a.
	if got := granted(a.Decide(t0, heldBed(a, 6))); !slices.Equal(got, []string{"next:[2]", "other:[3]"}) {
		t.Fatalf("grants %v", got)
	}
	want := map[string]string{
		"pinned0": "first in the strict order of queue root.a: reserves its slots [0] as they free up",
		"pinned1": "first in the strict order of queue root.a: reserves its slots [1] as they free up",
		"big":     "first in the strict order of queue root.a: the 2 free slots are held for it until it fits (needs 4)",
		"another": "the free slots are held for s/uid-s/big#1, first in the strict order of queue root.a",
	}
	for _, e := range a.Waiting() {
		if e.Reason != want[e.Request.Job] {
			t.Errorf("%s waits because %q, not %q", e.Request.Job, e.Reason, want[e.Request.Job])
		}
	}
	mustCheck(t, a, bed(6))
}

// A limit (maxRunningApps) makes a job not runnable: it never holds up the strict leaf.
func TestAdmitter_AppLimitsDoNotHoldUpTheLeaf(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <user name="alice"><maxRunningApps>1</maxRunningApps></user></allocations>`)
	r := req("a1", "q", 1)
	r.User = "alice"
	a.Request(r)
	r = req("a2", "q", 1)
	r.User = "alice"
	a.Request(r)
	a.Request(req("bob", "q", 1))
	if got := granted(a.Decide(t0, bed(4))); !slices.Equal(got, []string{"a1:[0]", "bob:[1]"}) {
		t.Fatalf("grants %v", got)
	}
}

// EASY backfill: with backfill on and expected durations, a job that ends before the head
// can start goes first; one that would run past it waits; without a duration nothing
// backfills.
func TestAdmitter_BackfillNeverDelaysTheHead(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy><backfill>true</backfill></queue></allocations>`)
	r := req("running", "q", 3)
	r.Expected = 10 * time.Minute
	a.Request(r)
	a.Decide(t0, bed(4))
	a.Request(req("head", "q", 4))
	short := req("short", "q", 1)
	short.Expected = 5 * time.Minute
	long := req("long", "q", 1)
	long.Expected = time.Hour
	unknown := req("unknown", "q", 1)
	a.Request(long)
	a.Request(unknown)
	a.Request(short)
	got := granted(a.Decide(t0.Add(time.Minute), heldBed(a, 4)))
	if !slices.Equal(got, []string{"short:[3]"}) {
		t.Fatalf("backfilled %v; only the short job ends before the head's start (t0+10m)", got)
	}
}

// Preemption takes what the starved queue's head needs in one step, the slots taken back go
// to that queue's job once they are free (not back to the victim), and nothing more is taken
// meanwhile.
func TestAdmitter_PreemptionFreesTheHeadsNeedInOneStep(t *testing.T) {
	a := admitterWithSettings(t, `<allocations>
  <queue name="hog"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="urgent"><schedulingPolicy>fifo</schedulingPolicy><minSharePreemptionTimeout>10</minSharePreemptionTimeout><minResources>1024 mb, 1 vcores</minResources></queue>
</allocations>`, preemptionOn)
	a.Request(req("hog", "hog", 8))
	a.Decide(t0, bed(8))
	a.Request(req("urgent", "urgent", 4))
	if d := a.Decide(t0, heldBed(a, 8)); len(d.Assignments) != 0 {
		t.Fatalf("preempted before the timeout: %+v", d.Assignments)
	}
	d := a.Decide(t0.Add(11*time.Second), heldBed(a, 8))
	if len(d.Assignments) != 1 || len(d.Assignments[0].Revoke) != 4 {
		t.Fatalf("one step of 4 slots (the head's need), got %+v", d.Assignments)
	}
	revoked := d.Assignments[0].Revoke
	// The pods are still there: the slots are not free yet, and nothing more is taken.
	if d := a.Decide(t0.Add(20*time.Second), bed(8, 0, 1, 2, 3, 4, 5, 6, 7)); len(d.Assignments)+len(d.Grants) != 0 {
		t.Fatalf("while vacating: %+v", d)
	}
	// Vacated: the urgent job gets them, the hog does not take them back.
	d = a.Decide(t0.Add(30*time.Second), heldBed(a, 8))
	if got := granted(d); len(got) != 1 || !strings.HasPrefix(got[0], "urgent:") || len(d.Assignments) != 0 {
		t.Fatalf("after vacating: grants %v, assignments %+v", got, d.Assignments)
	}
	if !slices.Equal(d.Grants[0].Slots, revoked) {
		t.Fatalf("urgent got %v, revoked were %v", d.Grants[0].Slots, revoked)
	}
	mustCheck(t, a, bed(8))
}

// SlotBased jobs are preemption victims only when slotplane.preemption.slot-based says so.
func TestAdmitter_SlotBasedVictimsOnlyWhenAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		a := admitterWithSettings(t, `<allocations>
  <queue name="hog"/>
  <queue name="urgent"><minSharePreemptionTimeout>1</minSharePreemptionTimeout><minResources>2048 mb, 2 vcores</minResources></queue>
</allocations>`, settingsFile(PropPreemption, "true", PropPreemptSlotBased, strconv.FormatBool(allowed)))
		pinned := req("pinned", "hog", 4)
		pinned.SlotIDs = []int32{0, 1, 2, 3}
		a.Request(pinned)
		a.Decide(t0, bed(4))
		a.Request(req("urgent", "urgent", 2))
		a.Decide(t0, heldBed(a, 4))
		d := a.Decide(t0.Add(2*time.Second), heldBed(a, 4))
		if got := len(d.Assignments) > 0; got != allowed {
			t.Fatalf("slot-based=%t: assignments %+v", allowed, d.Assignments)
		}
	}
}

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

// A move of a running job keeps its slots; a move changes the queue the next decision sees.
func TestAdmitter_MoveChecksAndMoves(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="root"><aclSubmitApps>*</aclSubmitApps><aclAdministerApps> </aclAdministerApps>
  <queue name="a"/><queue name="b"><maxRunningApps>0</maxRunningApps></queue><queue name="c"/></queue></allocations>`)
	m := Move{Scheduling: "s", Job: "j", Queue: "c", By: "u"}
	if _, err := a.Move(m); err == nil || err.(*MoveError).Kind != MoveNotReady {
		t.Fatalf("before the first decision: %v", err)
	}
	a.Request(req("j", "a", 1))
	a.Decide(t0, bed(2))
	if _, err := a.Move(Move{Scheduling: "s", Job: "j", Queue: "b", By: "u"}); err == nil || err.(*MoveError).Kind != MoveInvalid {
		t.Fatalf("into a full queue: %v", err)
	}
	if _, err := a.Move(Move{Scheduling: "s", Job: "j", Queue: "c", By: "eve"}); err == nil || err.(*MoveError).Kind != MoveForbidden {
		t.Fatalf("by a stranger: %v", err)
	}
	moved, err := a.Move(m)
	if err != nil || moved.From != "root.a" || moved.To != "root.c" || a.Running()[0].Queue != "root.c" {
		t.Fatalf("moved %+v, %v", moved, err)
	}
}

// The state survives JSON (the workflow's continue-as-new) and the restored Admitter decides
// as the original would.
func TestAdmitter_StateSurvivesJSON(t *testing.T) {
	a := admitterWithSettings(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue><queue name="r"/></allocations>`, preemptionOn)
	a.Request(req("one", "q", 3))
	a.Request(req("two", "q", 4))
	a.Request(req("three", "r", 1))
	a.Decide(t0, bed(6))
	b := restored(t, a)
	a.Release(key("one"))
	b.Release(key("one"))
	da, db := a.Decide(t0.Add(time.Second), heldBed(a, 6)), b.Decide(t0.Add(time.Second), heldBed(b, 6))
	if fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatalf("restored decides differently:\n%+v\n%+v", da, db)
	}
}

// Random sequences of requests, releases, starts, moves, configuration changes, slot
// changes and state restores never leave a slot granted twice, a granted slot outside the
// bed, a released job counted, or a slot granted that the bed did not show free. A twin
// Admitter takes the same messages and applies the recorded outcome of each decision
// (Apply) instead of deciding, half of the time: it holds the same state and decides the
// same.
func TestAdmitter_RandomSequencesKeepTheInvariants(t *testing.T) {
	files := []ConfigFiles{
		configFiles(`<allocations><queue name="a"/><queue name="b"/></allocations>`, ""),
		configFiles(`<allocations>
		  <queue name="a"><schedulingPolicy>fifo</schedulingPolicy><backfill>true</backfill><minResources>2048 mb, 2 vcores</minResources><minSharePreemptionTimeout>1</minSharePreemptionTimeout></queue>
		  <queue name="b"><schedulingPolicy>stateaware</schedulingPolicy><maxRunningApps>3</maxRunningApps><fairSharePreemptionTimeout>2</fairSharePreemptionTimeout></queue></allocations>`,
			settingsFile(PropPreemption, "true", PropPreemptionThreshold, "0.5")),
		configFiles(`<allocations><defaultMinSharePreemptionTimeout>1</defaultMinSharePreemptionTimeout>
		  <queue name="a"><weight>3</weight><schedulingPolicy>drf</schedulingPolicy><minResources>4096 mb, 4 vcores</minResources></queue>
		  <queue name="b"><maxResources>4096 mb, 4 vcores</maxResources></queue></allocations>`,
			settingsFile(PropPreemption, "true", PropPreemptSlotBased, "true", PropSizeBasedWeight, "true")),
		configFiles(`<allocations><queue name="a"><wieght>1</wieght></queue></allocations>`, ""),         // rejected: the last good one stays
		configFiles(`<allocations><queue name="a"/></allocations>`, settingsFile(PropPreemption, "yes")), // rejected by its settings
	}
	const slots = 8
	for seed := range uint64(120) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a := admitterWith(t, string(files[0].Allocations))
		twin := admitterWith(t, string(files[0].Allocations))
		both := func(f func(x *Admitter)) { f(a); f(twin) }
		now := t0
		// occupied: slots whose pods are there (granted slots, and revoked ones until they
		// are vacated a step later).
		vacating := map[int32]bool{}
		// lagging: slots of released jobs that the bed's status does not show free yet (their
		// pods are going); the Admitter may hand them on.
		lagging := map[int32]bool{}
		released := map[JobKey]bool{}
		var keys []JobKey
		for step := range 200 {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			switch op := rng.IntN(10); {
			case op < 4:
				k := JobKey{Scheduling: fmt.Sprintf("s%d", rng.IntN(3)), SchedulingUID: "u", Job: fmt.Sprintf("j%d", rng.IntN(30)), Run: int32(1 + rng.IntN(2))}
				r := Request{JobKey: k, Queue: []string{"a", "b"}[rng.IntN(2)], User: "u", Slots: int32(1 + rng.IntN(5)), Expected: time.Duration(rng.IntN(3)) * time.Minute}
				if rng.IntN(4) == 0 {
					r.SlotIDs = []int32{int32(rng.IntN(slots)), int32(rng.IntN(slots))}
					slices.Sort(r.SlotIDs)
					r.SlotIDs = slices.Compact(r.SlotIDs)
				}
				twin.Request(r)
				if g := a.Request(r); g == nil || g.Refused == "" {
					keys = append(keys, k)
					delete(released, k)
				}
			case op < 6 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				for _, e := range a.Running() {
					if e.Request.JobKey == k {
						for _, p := range e.Slots {
							lagging[p] = true
						}
					}
				}
				if rng.IntN(2) == 0 {
					both(func(x *Admitter) { x.Ended(k) })
				} else {
					both(func(x *Admitter) { x.Release(k) })
				}
				released[k] = true
			case op < 7 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				both(func(x *Admitter) { x.Started(k) })
			case op < 8 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				m := Move{Scheduling: k.Scheduling, Job: k.Job, Queue: []string{"a", "b", "c"}[rng.IntN(3)], By: "u"}
				both(func(x *Admitter) { _, _ = x.Move(m) })
			case op < 9:
				i := rng.IntN(len(files))
				both(func(x *Admitter) {
					if u := ReadConfigFiles(x.Config(), files[i], fmt.Sprint(i)); u != nil {
						x.Configure(x.Config().Apply(*u))
					}
				})
			default:
				a, twin = restored(t, a), restored(t, twin)
			}
			var busy []int32
			for _, e := range a.Running() {
				busy = append(busy, e.Slots...)
			}
			for p := range vacating {
				busy = append(busy, p)
			}
			for p := range lagging {
				busy = append(busy, p)
			}
			b := bed(slots, busy...)
			before := map[int32]bool{}
			for _, p := range b.Free {
				before[p] = true
			}
			d := a.Decide(now, b)
			twinDecides(t, twin, now, b, a, d, rng.IntN(2) == 0)
			wasVacating := maps.Clone(vacating)
			clear(vacating)
			for _, as := range d.Assignments {
				for _, p := range as.Revoke {
					vacating[p] = true
				}
			}
			granted := map[JobKey]bool{}
			for _, g := range d.Grants {
				granted[g.JobKey] = true
			}
			for _, as := range d.Assignments {
				if granted[as.JobKey] && len(as.Revoke) > 0 {
					t.Fatalf("seed %d step %d: %s was granted slots and lost %v in the same decision", seed, step, as.JobKey, as.Revoke)
				}
			}
			for _, g := range d.Grants {
				for _, p := range g.Slots {
					if !before[p] && !(lagging[p] && !wasVacating[p]) {
						t.Fatalf("seed %d step %d: %s granted slot %d, which the bed did not show free and no job handed on", seed, step, g.JobKey, p)
					}
				}
			}
			// The status catches up with a released job's slots a step or two later.
			for p := range lagging {
				if rng.IntN(2) == 0 {
					delete(lagging, p)
				}
			}
			if why := a.Check(b.Positions); why != "" {
				t.Fatalf("seed %d step %d: %s", seed, step, why)
			}
			for _, k := range a.Keys() {
				if released[k] {
					t.Fatalf("seed %d step %d: released %s is still counted", seed, step, k)
				}
			}
		}
	}
}

// One decision of the Admission workflow: 10,000 waiting jobs in 200 queues (a tenth of them
// SlotBased), 1,000 granted, on a test bed of 8,000 slots with 8 free. Each iteration decides
// on a copy of the same state.
func BenchmarkAdmitterDecide_10000Waiting200Queues8000Slots(b *testing.B) {
	u := ReadConfig(Config{}, true, []byte(benchQueues()), "v1")
	a := NewAdmitter(AdmitterState{Config: Config{}.Apply(*u)})
	const slots = 8000
	for i := range 11000 {
		r := Request{JobKey: JobKey{Scheduling: "s", Job: fmt.Sprintf("j%d", i), Run: 1}, Queue: fmt.Sprintf("root.d%d.q%d", i%20, (i/20)%10),
			User: fmt.Sprintf("u%d", i%50), Slots: 1 + int32(i%3)}
		if i%10 == 5 {
			r.SlotIDs = []int32{int32(i % slots)}
		}
		a.Request(r)
	}
	a.Decide(t0, bed(slots)) // grants what fits the empty bed (maxRunningApps bound it)
	st := a.State()
	var busy []int32
	for _, e := range st.Running {
		busy = append(busy, e.Slots...)
	}
	// All but 8 slots are taken (by the granted jobs, and by pods of other tenants).
	taken := map[int32]bool{}
	for _, p := range busy {
		taken[p] = true
	}
	for p := int32(0); len(busy) < slots-8 && p < slots; p++ {
		if !taken[p] {
			busy = append(busy, p)
		}
	}
	b2 := bed(slots, busy...)
	base := NewAdmitter(st)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x := NewAdmitter(base.State()) // a copy: a decision changes the entries in place
		b.StartTimer()
		x.Decide(t0.Add(time.Second), b2)
	}
}

// Free slots too few for a strict head are no room to spare: preemption takes what the head
// lacks, although the bed is used below the utilization threshold, and from a queue at its
// fair share: the free slots do not sit idle for as long as the other queue's job runs.
func TestAdmitter_PreemptsForAHeadTheFreeSlotsCannotStart(t *testing.T) {
	file := `<allocations>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queue name="a"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="b"><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`
	a := admitterWithSettings(t, file, preemptionOn)
	a.Request(req("b1", "b", 3))
	a.Decide(t0, bed(8))
	a.Request(req("a1", "a", 6))
	if d := a.Decide(t0, heldBed(a, 8)); len(d.Grants)+len(d.Assignments) != 0 {
		t.Fatalf("a1 needs 6 of the 5 free slots: %+v", d)
	}
	d := a.Decide(t0.Add(61*time.Second), heldBed(a, 8))
	if len(d.Assignments) != 1 || d.Assignments[0].Job != "b1" || len(d.Assignments[0].Revoke) != 1 {
		t.Fatalf("want one slot of b1 taken for a1 (5 free + 1), got %+v", d.Assignments)
	}
	revoked := d.Assignments[0].Revoke[0]
	free := bed(8, slices.DeleteFunc([]int32{0, 1, 2}, func(p int32) bool { return p == revoked })...)
	d = a.Decide(t0.Add(70*time.Second), free)
	if got := granted(d); len(got) != 1 || !strings.HasPrefix(got[0], "a1:") || len(d.Grants[0].Slots) != 6 {
		t.Fatalf("after vacating: grants %v", got)
	}
	mustCheck(t, a, bed(8))
}

// A starving queue whose head its own policy holds back (a StateAware leaf with a job still
// starting) gets no slots taken for it: they would sit idle.
func TestAdmitter_NoPreemptionForAHeadItsQueueHoldsBack(t *testing.T) {
	file := `<allocations>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queue name="a"><schedulingPolicy>stateaware</schedulingPolicy></queue>
  <queue name="b"><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`
	a := admitterWithSettings(t, file, preemptionOn)
	a.Request(req("a0", "a", 1)) // granted, and Starting for good: it never says it started
	a.Decide(t0, bed(8))
	a.Request(req("b1", "b", 7))
	a.Decide(t0, heldBed(a, 8))
	a.Request(req("a1", "a", 2))
	a.Decide(t0, heldBed(a, 8))
	if d := a.Decide(t0.Add(90*time.Second), heldBed(a, 8)); len(d.Assignments) > 0 {
		t.Fatalf("assignments %+v", d.Assignments)
	}
	mustCheck(t, a, bed(8))
}

// A job's end hands its slots to the next job in the same decision, before the bed's status
// shows them free (its pods are still going). A handed slot whose node is no longer
// available is not handed on.
func TestAdmitter_HandsAReleasedJobsSlotsOnAtOnce(t *testing.T) {
	const file = `<allocations><queue name="q"/></allocations>`
	a := admitterWith(t, file)
	a.Request(req("first", "q", 3))
	a.Request(req("next", "q", 2))
	if got := granted(a.Decide(t0, bed(3))); !slices.Equal(got, []string{"first:[0 1 2]"}) {
		t.Fatalf("grants %v", got)
	}
	a.Ended(key("first"))
	// The status still shows the first job's pods in all three slots, and slot 1's node
	// went away meanwhile.
	lagging := bed(3, 0, 1, 2)
	lagging.Unavailable = []int32{1}
	a = restored(t, a) // a continue-as-new between the release and the decision
	got := granted(a.Decide(t0.Add(time.Second), lagging))
	mustCheck(t, a, lagging)
	if want := []string{"next:[0 2]"}; !slices.Equal(got, want) {
		t.Fatalf("grants after the release %v, want %v", got, want)
	}
	if len(a.State().Handed) != 0 {
		t.Fatalf("slots granted again or gone are still handed on: %v", a.State().Handed)
	}
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
