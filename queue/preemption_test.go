package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func slots(n int64) Resources { return MBVCores(n*1024, n) }

func TestStarved(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="root">
    <fairSharePreemptionTimeout>60</fairSharePreemptionTimeout>
    <queue name="a"><minResources>8192 mb, 0 vcores</minResources><minSharePreemptionTimeout>30</minSharePreemptionTimeout></queue>
    <queue name="b"/>
  </queue>
</allocations>`)
	total := slots(12)
	apps := []App{
		{ID: "big", Queue: "root.b", Order: 1, Running: true, Usage: slots(12), Demand: slots(12)},
		{ID: "wants", Queue: "root.a", Order: 2, Demand: slots(10)},
	}
	on := Preemption{Enabled: true}
	var st Starvation
	if got := tr.Starved(Cluster{Total: total, Apps: apps, Now: t0}, Preemption{}, &st); got != nil {
		t.Errorf("preemption off: %v", got)
	}
	if got := tr.Starved(Cluster{Total: total, Apps: apps, Now: t0}, on, &st); len(got) != 0 {
		t.Errorf("at once: %v", got)
	}
	got := tr.Starved(Cluster{Total: total, Apps: apps, Now: t0.Add(30 * time.Second)}, on, &st)
	if len(got) != 1 || got[0].Queue != "root.a" || got[0].Amount != MBVCores(8192, 0) || !strings.Contains(got[0].Reason, "below its minimum share for 30s") {
		t.Fatalf("after the min-share timeout: %+v", got)
	}
	// After the (inherited) fair-share timeout it is owed up to its fair share: 6 of 12 slots.
	got = tr.Starved(Cluster{Total: total, Apps: apps, Now: t0.Add(60 * time.Second)}, on, &st)
	if len(got) != 1 || got[0].Amount != MBVCores(8192, 0) {
		t.Fatalf("min share 8192 beats fair share 6144: %+v", got)
	}
	// Half the bed free: the queue is still short, and its clock runs on (what the free
	// slots can do is the decision's to say, not the bed's utilization).
	apps[0].Usage = slots(6)
	if got := tr.Starved(Cluster{Total: total, Apps: apps, Now: t0.Add(90 * time.Second)}, on, &st); len(got) != 1 || !st.MinShareSince["root.a"].Equal(t0) {
		t.Errorf("half the bed used: %v %v", got, st)
	}
}

func TestTimeoutsInherit(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="p">
    <fairSharePreemptionThreshold>0.7</fairSharePreemptionThreshold>
    <queue name="c"><minSharePreemptionTimeout>5</minSharePreemptionTimeout></queue>
  </queue>
  <defaultFairSharePreemptionTimeout>120</defaultFairSharePreemptionTimeout>
</allocations>`)
	minT, minOK, fairT, fairOK, th := tr.Timeouts(tr.Queue("p.c"))
	if minT != 5*time.Second || !minOK || fairT != 2*time.Minute || !fairOK || th != 0.7 {
		t.Errorf("p.c: %v %v %v %v %v", minT, minOK, fairT, fairOK, th)
	}
	_, minOK, _, _, th = tr.Timeouts(tr.Queue("p"))
	if minOK || th != 0.7 {
		t.Errorf("p: min timeout set=%v threshold %v", minOK, th)
	}
}

func TestPlanPreemption_TakesNewestExecutorsDownToTheShare(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"/><queue name="b"/></allocations>`)
	total := slots(12)
	apps := []App{
		{ID: "old", Queue: "root.b", Order: 1, Running: true, Usage: slots(6), Demand: slots(6)},
		{ID: "new", Queue: "root.b", Order: 2, Running: true, Usage: slots(6), Demand: slots(6)},
		{ID: "wants", Queue: "root.a", Order: 3, Demand: slots(8)},
	}
	starving := []Starving{{Queue: "root.a", Amount: slots(8)}}
	got := tr.PlanPreemption(Cluster{Total: total, Apps: apps}, starving, slots(1), map[string]int{"old": 6, "new": 6})
	// b's fair share is 6 slots: only 6 can go, all from the newest job.
	want := []Victim{{App: "new", Executors: 6, For: "root.a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// belowFairShare is tr with slotplane.preemption.below-fair-share on.
func belowFairShare(tr *Tree) *Tree {
	a := *tr.alloc
	a.Preemption.BelowFairShare = true
	return NewTree(&a)
}

// Two queues each hold half a slot above their fair shares while a third holds nothing of
// its one-slot share. By the Fair Scheduler's rule (no victim below its share) the third
// gets nothing for as long as the jobs run; with slotplane.preemption.below-fair-share one
// slot moves, and only one.
func TestPlanPreemption_MovesASlotFromQueuesOverByLessThanOneOnlyBelowFairShare(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"/><queue name="b"/><queue name="c"/></allocations>`)
	apps := []App{
		{ID: "b1", Queue: "root.b", Order: 1, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "b2", Queue: "root.b", Order: 2, Demand: slots(4)},
		{ID: "c1", Queue: "root.c", Order: 3, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "c2", Queue: "root.c", Order: 4, Demand: slots(4)},
		{ID: "a1", Queue: "root.a", Order: 5, Demand: slots(1)},
	}
	c := Cluster{Total: slots(8), Apps: apps}
	shares := tr.InstantaneousFairShares(c.Total, apps)
	if got := shares["root.b"].MemoryBytes; got <= slots(3).MemoryBytes || got >= slots(4).MemoryBytes {
		t.Fatalf("b's share is %d bytes; the test wants it between 3 and 4 slots", got)
	}
	starving := []Starving{{Queue: "root.a", Amount: slots(1)}}
	executors := map[string]int{"b1": 4, "c1": 4}
	if got := tr.PlanPreemption(c, starving, slots(1), executors); len(got) != 0 {
		t.Errorf("the Fair Scheduler's rule took %+v below a fair share", got)
	}
	below := belowFairShare(tr)
	got := below.PlanPreemption(c, starving, slots(1), executors)
	want := []Victim{{App: "c1", Executors: 1, For: "root.a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// Owed more, it still gets one slot: a second would leave b with 3 of its 3.5, a smaller
	// part than a's whole one.
	starving[0].Amount = slots(3)
	got = below.PlanPreemption(c, starving, slots(1), executors)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("owed 3 slots: (-want +got)\n%s", diff)
	}
}

// A queue at its fair share is no victim by the Fair Scheduler's rule. With
// slotplane.preemption.below-fair-share it gives a slot to a queue holding a smaller part
// of its own, and only one: a second would leave it a smaller part than the starving queue
// then holds.
func TestPlanPreemption_QueueAtItsShareGivesOneSlotOnlyBelowFairShare(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"><weight>3</weight></queue><queue name="b"/></allocations>`)
	apps := []App{
		{ID: "b1", Queue: "root.b", Order: 1, Running: true, Usage: slots(2), Demand: slots(2)},
		{ID: "a1", Queue: "root.a", Order: 2, Demand: slots(6)},
	}
	c := Cluster{Total: slots(8), Apps: apps}
	starving := []Starving{{Queue: "root.a", Amount: slots(6)}}
	if got := tr.PlanPreemption(c, starving, slots(1), map[string]int{"b1": 2}); len(got) != 0 {
		t.Errorf("the Fair Scheduler's rule took %+v from a queue at its share", got)
	}
	below := belowFairShare(tr)
	got := below.PlanPreemption(c, starving, slots(1), map[string]int{"b1": 2})
	if diff := cmp.Diff([]Victim{{App: "b1", Executors: 1, For: "root.a"}}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// Nor is a queue that holds nothing (at its share of nothing) ever a victim.
	idle := []App{{ID: "b1", Queue: "root.b", Order: 1, Running: true}, {ID: "a1", Queue: "root.a", Order: 2, Demand: slots(6)}}
	if got := below.PlanPreemption(Cluster{Total: slots(8), Apps: idle}, starving, slots(1), map[string]int{"b1": 0}); len(got) != 0 {
		t.Errorf("took %+v from a queue that holds nothing", got)
	}
}
