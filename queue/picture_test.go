package queue

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// An Admitter that keeps its picture of the queues from one decision to the next decides
// as one that makes it anew at each decision, and gives its waiting jobs the same reasons,
// across random requests, ends, withdrawals, starts, moves, changes of the allocation file
// and of the bed, reports and restores: over nested queues of every policy, with and without
// running-application limits, drivers under maxAMShare, maxResources, SlotBased jobs and
// the bound on starting jobs.
func TestAdmitter_AKeptPictureDecidesAsANewOne(t *testing.T) {
	files := []ConfigFiles{
		configFiles(`<allocations><queueMaxAMShareDefault>0.4</queueMaxAMShareDefault>
		  <queue name="t0"><weight>2</weight>
		    <queue name="fifo"><schedulingPolicy>fifo</schedulingPolicy></queue>
		    <queue name="fair"><schedulingPolicy>fair</schedulingPolicy></queue></queue>
		  <queue name="t1"><maxResources>6144 mb, 6 vcores</maxResources>
		    <queue name="drf"><schedulingPolicy>drf</schedulingPolicy></queue>
		    <queue name="sa"><schedulingPolicy>stateaware</schedulingPolicy></queue></queue>
		  <queue name="t2"><queue name="fifo"><schedulingPolicy>fifo</schedulingPolicy><maxAMShare>0.5</maxAMShare></queue></queue>
		</allocations>`, ""),
		configFiles(`<allocations><userMaxAppsDefault>4</userMaxAppsDefault><queueMaxAMShareDefault>0.3</queueMaxAMShareDefault>
		  <queue name="t0"><maxRunningApps>3</maxRunningApps>
		    <queue name="fifo"><schedulingPolicy>fifo</schedulingPolicy></queue>
		    <queue name="fair"><schedulingPolicy>fair</schedulingPolicy><maxRunningApps>1</maxRunningApps></queue></queue>
		  <queue name="t1"><queue name="drf"><schedulingPolicy>drf</schedulingPolicy></queue>
		    <queue name="sa"><schedulingPolicy>stateaware</schedulingPolicy></queue></queue>
		  <queue name="t2"><queue name="fifo"><minResources>2048 mb, 2 vcores</minResources></queue></queue>
		</allocations>`, settingsFile(PropMaxStartingApps, "3")),
		configFiles(`<allocations>
		  <queue name="t0"><queue name="fifo"/><queue name="fair"><schedulingPolicy>fair</schedulingPolicy></queue></queue>
		  <queue name="t1"><weight>3</weight><queue name="drf"><schedulingPolicy>drf</schedulingPolicy></queue>
		    <queue name="sa"><schedulingPolicy>stateaware</schedulingPolicy></queue></queue>
		  <queue name="t2"><queue name="fifo"><strictOrder>false</strictOrder></queue></queue>
		</allocations>`, settingsFile(PropMaxStartingApps, "2")),
	}
	leaves := []string{"t0.fifo", "t0.fair", "t1.drf", "t1.sa", "t2.fifo"}
	kept := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		first := files[int(seed)%len(files)]
		a := admitterWithSettings(t, string(first.Allocations), string(first.Settings))
		fresh := NewAdmitter(a.State())
		fresh.fresh = true
		both := func(f func(x *Admitter)) { f(a); f(fresh) }
		now, slots := t0, 16
		lagging := map[int32]bool{}
		var keys []JobKey
		for step := range 300 {
			now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
			switch op := rng.IntN(20); {
			case op < 8:
				for range 1 + rng.IntN(3) {
					k := JobKey{Scheduling: fmt.Sprintf("s%d", rng.IntN(3)), SchedulingUID: "u", Job: fmt.Sprintf("j%d", rng.IntN(60)), Run: int32(1 + rng.IntN(2))}
					r := Request{JobKey: k, Queue: leaves[rng.IntN(len(leaves))], User: fmt.Sprintf("u%d", rng.IntN(3)), Slots: int32(1 + rng.IntN(3)),
						Driver: MBVCores(int64(512*rng.IntN(3)), 0)}
					if rng.IntN(4) == 0 {
						r.SlotIDs = []int32{int32(rng.IntN(slots + 2))}
					}
					both(func(x *Admitter) { x.Request(r) })
					keys = append(keys, k)
				}
			case op < 13 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				for _, e := range a.Running() {
					if e.Request.JobKey == k {
						for _, p := range e.Slots {
							lagging[p] = true
						}
					}
				}
				if rng.IntN(3) > 0 {
					both(func(x *Admitter) { x.Ended(k) })
				} else {
					both(func(x *Admitter) { x.Release(k) })
				}
			case op < 16 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				both(func(x *Admitter) { x.Started(k) })
			case op < 17 && len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				m := Move{Scheduling: k.Scheduling, Job: k.Job, Queue: leaves[rng.IntN(len(leaves))], By: "u0"}
				both(func(x *Admitter) { _, _ = x.Move(m) })
			case op < 18:
				f := files[rng.IntN(len(files))]
				both(func(x *Admitter) {
					if u := ReadConfigFiles(x.Config(), f, fmt.Sprint(step)); u != nil {
						x.Configure(x.Config().Apply(*u))
					}
				})
			case op < 19:
				slots = []int{12, 16, 16}[rng.IntN(3)]
			default:
				if rng.IntN(2) == 0 {
					both(func(x *Admitter) { x.Report(ReportOptions{}) })
				} else {
					a, fresh = restored(t, a), restored(t, fresh)
					fresh.fresh = true
				}
			}
			var busy []int32
			for _, e := range a.Running() {
				busy = append(busy, e.Slots...)
			}
			for p := range lagging {
				busy = append(busy, p)
				if rng.IntN(2) == 0 {
					delete(lagging, p)
				}
			}
			b := bed(slots, busy...)
			before := a.kept
			d, want := a.Decide(now, b), fresh.Decide(now, b)
			if a.kept > before {
				kept++
			}
			if w, g := decisionText(want), decisionText(d); w != g {
				t.Fatalf("seed %d step %d: the kept picture decides\n%s\ninstead of\n%s", seed, step, g, w)
			}
			if w, g := stateText(fresh), stateText(a); w != g {
				t.Fatalf("seed %d step %d: the kept picture leaves\n%s\ninstead of\n%s", seed, step, g, w)
			}
			if rng.IntN(5) == 0 {
				if w, g := reasonsText(fresh), reasonsText(a); w != g {
					t.Fatalf("seed %d step %d: the kept picture gives the reasons\n%s\ninstead of\n%s", seed, step, g, w)
				}
			}
			if why := a.Check(bed(16).Positions); why != "" { // a job keeps slots the bed lost
				t.Fatalf("seed %d step %d: %s", seed, step, why)
			}
		}
	}
	// The comparison means something only if pictures were kept.
	if kept < 2000 {
		t.Fatalf("a kept picture decided only %d times", kept)
	}
	t.Logf("%d decisions on a kept picture", kept)
}

// reasonsText is each waiting job with its reason.
func reasonsText(a *Admitter) string {
	var sb strings.Builder
	for _, e := range a.Waiting() {
		fmt.Fprintf(&sb, "%s: %s\n", e.ID, e.Reason)
	}
	return sb.String()
}

// Under running-application limits a Chooser that follows requests, ends, skips and starts
// one by one demands, per queue, what a count over every application in its picture finds:
// the changes it follows without counting (a runnable application leaving where no limit
// of its holds another back, a new last one) and those it counts again for.
func TestChooser_FollowsTheDemandUnderAppLimits(t *testing.T) {
	file := `<allocations><userMaxAppsDefault>4</userMaxAppsDefault>
	  <queue name="a"><maxRunningApps>5</maxRunningApps>
	    <queue name="x"><maxRunningApps>2</maxRunningApps></queue>
	    <queue name="y"/></queue>
	  <queue name="b"><queue name="p"/><queue name="q"><maxRunningApps>3</maxRunningApps></queue></queue>
	  <queue name="c"/></allocations>`
	alloc := parseConfig(t, file, "")
	leaves := []string{"root.a.x", "root.a.y", "root.b.p", "root.b.q", "root.c"}
	slot := MBVCores(1024, 1)
	followed := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		tree := NewTree(alloc)
		order := int64(0)
		app := func(running bool) App {
			order++
			n := int64(1 + rng.IntN(3))
			a := App{ID: fmt.Sprintf("app%d", order), Queue: leaves[rng.IntN(len(leaves))], User: fmt.Sprintf("u%d", rng.IntN(3)), Order: order,
				Demand: times(slot, n), SlotBacked: true}
			if running {
				a.Running, a.Usage = true, a.Demand
			}
			return a
		}
		c := Cluster{Total: times(slot, 40), Reserve: true}
		for range 12 {
			c.Apps = append(c.Apps, app(rng.IntN(3) == 0))
		}
		ch := tree.NewChooser(c)
		var skipped []int
		for step := range 60 {
			s := ch.s
			switch op := rng.IntN(10); {
			case op < 3:
				ch.Add(app(false))
			case op < 6:
				ch.Remove(rng.IntN(len(s.c.Apps)))
			case op < 7:
				if i := rng.IntN(len(s.c.Apps)); !s.c.Apps[i].Running && !s.gone[i] {
					ch.Skip(i)
					skipped = append(skipped, i)
				}
			case op < 8 && len(skipped) > 0:
				for _, i := range skipped {
					ch.Unskip(i)
				}
				skipped = nil
			default:
				ch.SetFree(times(slot, 40))
				if got := ch.Choose(false); got.OK && !got.Reserve && !s.c.Apps[got.Index].Running {
					ch.Start(got.Index, s.c.Apps[got.Index].Demand, Running, time.Time{})
				}
			}
			if ch.run != nil && !ch.redemand {
				followed++
			}
			ch.share()
			want := tree.demand(s.c.Apps, s.leafOf, s.gone, nil)
			got := maps.Clone(s.demand)
			maps.DeleteFunc(got, func(_ string, r Resources) bool { return r.IsZero() }) // a queue that demands nothing
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Fatalf("seed %d step %d: the chooser demands\n%v\ninstead of\n%v", seed, step, got, want)
			}
		}
	}
	if followed < 2000 {
		t.Fatalf("the demand was followed without a count only %d times", followed)
	}
	t.Logf("followed without a count %d times", followed)
}
