package queue

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The default maxAMShare of 0.5 counts drivers as they are. The leaf's fair share is the
// whole bed, 8 slots of 1024 mb and 1 vcore (it is the only queue, and its 8 one-slot jobs
// demand all of it), so its drivers may take 4096 mb and 4 vcores (4000m):
//   - eight drivers of 250m and 512Mi take 2000m and exactly 4096 mb: all 8 jobs run at
//     once (counted in whole vcores they would be 8 vcores, and only 4 would run);
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
