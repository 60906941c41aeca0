package queue

import (
	"testing"
)

func tree(t *testing.T, file string) *Tree {
	t.Helper()
	a, err := ParseAllocations([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return NewTree(a)
}

// 12 slots of 1 GiB / 1 vcore each, two queues of weight 2 and 1: an 8/4 split, as the
// issue's integration test will show on the real platform.
func TestTree_WeightsSplitTheSlots(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="gold"><weight>2</weight></queue>
  <queue name="silver"><weight>1</weight></queue>
</allocations>`)
	total := MBVCores(12*1024, 12)
	steady := tr.SteadyFairShares(total)
	if steady["root.gold"] != MBVCores(8*1024, 8) || steady["root.silver"] != MBVCores(4*1024, 4) {
		t.Errorf("steady %v", steady)
	}
	slot := MBVCores(1024, 1)
	many := MBVCores(20*1024, 20)
	apps := []App{{ID: "g", Queue: "root.gold", Demand: many}, {ID: "s", Queue: "root.silver", Demand: many}}
	inst := tr.InstantaneousFairShares(total, apps)
	if inst["root.gold"] != MBVCores(8*1024, 8) || inst["root.silver"] != MBVCores(4*1024, 4) {
		t.Errorf("both busy: %v", inst)
	}
	// Only silver has work: it may use everything it asks for.
	inst = tr.InstantaneousFairShares(total, apps[1:])
	if inst["root.silver"] != total || !inst["root.gold"].IsZero() {
		t.Errorf("silver alone: %v", inst)
	}
	// gold asks for 2 slots only: silver gets the rest.
	apps[0].Demand = slot.Add(slot)
	inst = tr.InstantaneousFairShares(total, apps)
	if inst["root.gold"] != MBVCores(2*1024, 2) || inst["root.silver"] != MBVCores(10*1024, 10) {
		t.Errorf("gold small: %v", inst)
	}
}

func TestTree_HierarchyMinAndMax(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="eng">
    <maxResources>6000 mb, 6 vcores</maxResources>
    <queue name="batch"><minResources>4000 mb, 0 vcores</minResources></queue>
    <queue name="adhoc"/>
  </queue>
  <queue name="ops"/>
  <queueMaxResourcesDefault>100000 mb, 100 vcores</queueMaxResourcesDefault>
</allocations>`)
	total := MBVCores(10000, 10)
	s := tr.SteadyFairShares(total)
	// eng and ops would split 5000/5000; eng's max of 6000 does not bind. Inside eng, batch
	// has a 4000 minimum: 4000 for batch, 1000 for adhoc.
	if s["root.eng"].MemoryBytes != 5000*mib || s["root.ops"].MemoryBytes != 5000*mib {
		t.Errorf("top level %v", s)
	}
	if s["root.eng.batch"].MemoryBytes != 4000*mib || s["root.eng.adhoc"].MemoryBytes != 1000*mib {
		t.Errorf("inside eng %v", s)
	}
	// Only eng busy, asking for much: its max caps it.
	big := MBVCores(50000, 50)
	inst := tr.InstantaneousFairShares(total, []App{{Queue: "root.eng.adhoc", Demand: big}})
	if inst["root.eng"] != MBVCores(6000, 6) || inst["root.eng.adhoc"] != MBVCores(6000, 6) {
		t.Errorf("eng alone %v", inst)
	}
}

func TestTree_LimitsAndDefaults(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"><maxRunningApps>3</maxRunningApps><maxAMShare>0.2</maxAMShare><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="b"/>
  <user name="bob"><maxRunningApps>1</maxRunningApps></user>
  <userMaxAppsDefault>4</userMaxAppsDefault>
  <queueMaxAppsDefault>10</queueMaxAppsDefault>
  <queueMaxAMShareDefault>0.4</queueMaxAMShareDefault>
  <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>
</allocations>`)
	a, b := tr.Queue("a"), tr.Queue("root.b")
	if tr.MaxRunningApps(a) != 3 || tr.MaxRunningApps(b) != 10 || tr.MaxAMShare(a) != 0.2 || tr.MaxAMShare(b) != 0.4 {
		t.Error("queue limits")
	}
	if tr.Policy(a) != PolicyFIFO || tr.Policy(b) != PolicyDRF {
		t.Error("policies")
	}
	if tr.UserMaxRunningApps("bob") != 1 || tr.UserMaxRunningApps("eve") != 4 {
		t.Error("user limits")
	}
}

func TestTree_EnsureMakesDynamicLeaves(t *testing.T) {
	tr := tree(t, `<allocations><queue name="teams" type="parent"/><queue name="ops"/></allocations>`)
	q, err := tr.Ensure("teams.alice")
	if err != nil || q.Path != "root.teams.alice" || !q.Leaf() || tr.Queue("root.teams.alice") != q {
		t.Fatalf("Ensure: %+v %v", q, err)
	}
	if _, err := tr.Ensure("ops.sub"); err == nil {
		t.Error("a queue under the leaf ops")
	}
	if again, _ := tr.Ensure("root.teams.alice"); again != q {
		t.Error("Ensure made a second queue")
	}
	// A dynamic queue counts in the shares like a configured one of weight 1.
	s := tr.InstantaneousFairShares(MBVCores(900, 9), []App{
		{Queue: "root.teams.alice", Demand: unlimited}, {Queue: "root.ops", Demand: unlimited},
	})
	if s["root.teams.alice"].MemoryBytes != 450*mib || s["root.ops"].MemoryBytes != 450*mib {
		t.Errorf("shares %v", s)
	}
}

// Only runnable jobs demand, as in the Fair Scheduler: a waits with maxRunningApps 2 and
// one job running, so of its three waiting jobs (submitted in the order w1, w2, w3) only w1
// is runnable; user carol may run 1, so her second job in b is not; b's other user's is.
// The instantaneous shares follow: a's demand is 2 slots, not 4, and b takes the rest.
func TestTree_DemandCountsRunnableJobsOnly(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"><maxRunningApps>2</maxRunningApps></queue>
  <queue name="b"/>
  <user name="carol"><maxRunningApps>1</maxRunningApps></user>
</allocations>`)
	slot := MBVCores(1024, 1)
	app := func(id, queue, user string, order int64, running bool) App {
		return App{ID: id, Queue: queue, User: user, Order: order, Running: running, Demand: slot}
	}
	apps := []App{
		app("w3", "root.a", "u", 4, false), // out of order on purpose: submission order counts
		app("r", "root.a", "u", 1, true),
		app("w1", "root.a", "u", 2, false),
		app("w2", "root.a", "u", 3, false),
		app("c1", "root.b", "carol", 5, false),
		app("c2", "root.b", "carol", 6, false),
		app("d1", "root.b", "dave", 7, false),
	}
	d := tr.Demand(apps)
	if got, want := d["root.a"], MBVCores(2048, 2); got != want {
		t.Errorf("a demands %s, want %s (r and w1)", got, want)
	}
	if got, want := d["root.b"], MBVCores(2048, 2); got != want {
		t.Errorf("b demands %s, want %s (c1 and d1)", got, want)
	}
	if got, want := d["root"], MBVCores(4096, 4); got != want {
		t.Errorf("root demands %s, want %s", got, want)
	}
	shares := tr.InstantaneousFairShares(MBVCores(8192, 8), apps)
	if got, want := shares["root.a"], MBVCores(2048, 2); got != want {
		t.Errorf("a's share %s, want its runnable demand %s", got, want)
	}
}
