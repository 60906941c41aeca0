package queue

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
