package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A Chooser updated as its choices are carried out chooses what Choose chooses on a picture
// of the cluster made anew after each of them, with the same refusals, over random clusters
// of fifo, fair, drf and StateAware leaves with running-application, resource and AM limits.
func TestChooser_ChoosesAsChooseFromScratch(t *testing.T) {
	file := `<allocations><userMaxAppsDefault>6</userMaxAppsDefault><queueMaxAMShareDefault>0.4</queueMaxAMShareDefault>
	  <queue name="a"><maxRunningApps>7</maxRunningApps>
	    <queue name="x"><schedulingPolicy>fifo</schedulingPolicy><maxRunningApps>3</maxRunningApps></queue>
	    <queue name="y"><schedulingPolicy>fair</schedulingPolicy></queue></queue>
	  <queue name="b"><weight>2</weight><schedulingPolicy>drf</schedulingPolicy>
	    <queue name="p"><schedulingPolicy>drf</schedulingPolicy><maxResources>6144 mb, 6 vcores</maxResources></queue>
	    <queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></queue>
	  <queue name="c"><minResources>4096 mb, 4 vcores</minResources></queue></allocations>`
	alloc := parseConfig(t, file, "")
	leaves := []string{"root.a.x", "root.a.y", "root.b.p", "root.b.q", "root.c"}
	for seed := range uint64(500) {
		chooseAll(t, seed, alloc, leaves, 30)
	}
}

// Without running-application limits a skipped application's demand comes off its queues
// without a count over every application: the choices stay those of Choose from scratch.
func TestChooser_ChoosesAsChooseFromScratchWithoutAppLimits(t *testing.T) {
	file := `<allocations><queueMaxAMShareDefault>0.4</queueMaxAMShareDefault>
	  <queue name="a">
	    <queue name="x"><schedulingPolicy>fifo</schedulingPolicy></queue>
	    <queue name="y"><schedulingPolicy>fair</schedulingPolicy><weight>3</weight></queue></queue>
	  <queue name="b"><weight>2</weight><schedulingPolicy>drf</schedulingPolicy>
	    <queue name="p"><schedulingPolicy>drf</schedulingPolicy><maxResources>6144 mb, 6 vcores</maxResources></queue>
	    <queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></queue>
	  <queue name="c"><minResources>4096 mb, 4 vcores</minResources></queue></allocations>`
	alloc := parseConfig(t, file, "")
	if NewTree(alloc).appLimits {
		t.Fatal("the tree has running-application limits")
	}
	leaves := []string{"root.a.x", "root.a.y", "root.b.p", "root.b.q", "root.c"}
	for seed := range uint64(1000) {
		// Few applications: queues that demand less than their share, which a skip changes.
		chooseAll(t, seed, alloc, leaves, 4)
	}
}

// chooseAll chooses until nothing more can be, on a random cluster of 40 slots with at
// least apps applications.
func chooseAll(t *testing.T, seed uint64, alloc *Allocations, leaves []string, apps int) {
	slot := MBVCores(1024, 1)
	const slots = 40
	{
		rng := rand.New(rand.NewPCG(seed, 3))
		tree := NewTree(alloc)
		c := Cluster{Total: times(slot, slots), Now: t0, Reserve: rng.IntN(2) == 0}
		used := int64(0)
		for i := range apps + rng.IntN(40) {
			n := int64(1 + rng.IntN(4))
			a := App{ID: fmt.Sprintf("j%02d", i), Queue: leaves[rng.IntN(len(leaves))], User: fmt.Sprintf("u%d", rng.IntN(4)), Order: int64(rng.IntN(1000)),
				AM: MBVCores(int64(128*rng.IntN(3)), 0), Demand: times(slot, n), SlotBacked: true}
			if rng.IntN(3) == 0 && used+n <= slots/2 {
				a.Running, a.Usage = true, a.Demand
				a.State, a.StartingSince = []AppState{Running, Starting}[rng.IntN(2)], t0.Add(-time.Minute)
				if rng.IntN(2) == 0 && n > 1 {
					a.Usage, a.Pending, a.Ask = times(slot, n-1), true, slot // preempted: asks for one back
				}
				used += a.Usage.MemoryBytes / slot.MemoryBytes
			}
			c.Apps = append(c.Apps, a)
		}
		free := slots - used
		ch := tree.NewChooser(c)
		fresh := slices.Clone(c.Apps)
		for step := 0; ; step++ {
			if rng.IntN(4) == 0 {
				// The Admitter passes over a waiting job it cannot start (the bound on
				// starting jobs, slots of its own taken): out of the picture.
				if i := rng.IntN(len(fresh)); fresh[i].ID != "" && !fresh[i].Running {
					ch.Skip(i)
					fresh[i].ID = ""
				}
			}
			room := times(slot, free)
			ch.SetFree(room)
			fc := c
			fc.Apps = slices.DeleteFunc(slices.Clone(fresh), func(a App) bool { return a.ID == "" })
			fc.Free = &room
			want := tree.Choose(fc)
			got := ch.Choose(true)
			if got.OK != want.OK || got.Reserve != want.Reserve || got.App.ID != want.App.ID {
				t.Fatalf("seed %d step %d: chose %s (ok %v, reserve %v), Choose from scratch %s (ok %v, reserve %v)",
					seed, step, got.App.ID, got.OK, got.Reserve, want.App.ID, want.OK, want.Reserve)
			}
			for _, c := range []struct {
				ch  Choice
				fsc []App
			}{{got, c.Apps}, {want, fc.Apps}} {
				// Each names its applications by their index in the cluster it chose on.
				if c.ch.OK && c.fsc[c.ch.Index].ID != c.ch.App.ID {
					t.Fatalf("seed %d step %d: the choice of %s points at %s", seed, step, c.ch.App.ID, c.fsc[c.ch.Index].ID)
				}
				for _, r := range c.ch.Refusals {
					if c.fsc[r.at].ID != r.App {
						t.Fatalf("seed %d step %d: the refusal of %s points at %s", seed, step, r.App, c.fsc[r.at].ID)
					}
				}
			}
			if fmt.Sprint(sortedRefusals(got.Refusals)) != fmt.Sprint(sortedRefusals(want.Refusals)) {
				t.Fatalf("seed %d step %d: refusals\n%v\nfrom scratch\n%v", seed, step, sortedRefusals(got.Refusals), sortedRefusals(want.Refusals))
			}
			if quick := ch.Choose(false); quick.App.ID != got.App.ID || quick.OK != got.OK || quick.Reserve != got.Reserve || len(quick.Refusals) != 0 {
				t.Fatalf("seed %d step %d: without reasons it chose %+v", seed, step, quick)
			}
			if !got.OK {
				break
			}
			i := got.Index
			a := &fresh[i]
			switch {
			case got.Reserve && a.Running:
				return // the Admitter holds the free slots for it: nothing more is chosen
			case got.Reserve:
				ch.Skip(i) // as a SlotBased head that reserves only its own slots
				a.ID = ""  // out of the picture
			case a.Running:
				a.Usage = a.Usage.Add(slot)
				a.Pending = a.Usage.MemoryBytes < a.Demand.MemoryBytes
				ch.Grow(i, slot, a.Pending)
				free--
			default:
				n := a.Demand.MemoryBytes / slot.MemoryBytes
				a.Running, a.Usage, a.State, a.StartingSince = true, a.Demand, Starting, t0
				ch.Start(i, a.Usage, a.State, a.StartingSince)
				free -= n
			}
			if free == 0 && rng.IntN(2) == 0 {
				ch.StopAsking()
				for j := range fresh {
					if fresh[j].Running && fresh[j].Pending {
						fresh[j].Pending, fresh[j].Demand, fresh[j].Ask = false, fresh[j].Usage, Resources{}
					}
				}
			}
		}
	}
}

func sortedRefusals(rs []Refusal) []Refusal {
	// The index of each application is in the cluster it was chosen on: a cluster made from
	// scratch leaves the skipped ones out, so only the names and reasons compare.
	out := make([]Refusal, len(rs))
	for i, r := range rs {
		out[i] = Refusal{App: r.App, Reason: r.Reason}
	}
	return slices.SortedFunc(slices.Values(out), func(a, b Refusal) int {
		if a.App != b.App {
			return map[bool]int{true: -1, false: 1}[a.App < b.App]
		}
		return map[bool]int{true: -1, false: 1}[a.Reason < b.Reason]
	})
}
