package queue

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A file in Hadoop 3's style: its resource forms, its queue elements, its reservation
// settings. It loads; what slotplane acts on means what it means in Hadoop; what has no
// meaning for slots is reported as ignored, with why.
const hadoop3File = `<?xml version="1.0"?>
<allocations>
  <queueMaxResourcesDefault>memory-mb=50%, vcores=50%</queueMaxResourcesDefault>
  <reservation-agent>org.example.Agent</reservation-agent>
  <reservation-policy>org.example.Policy</reservation-policy>
  <reservation-planner>org.example.Planner</reservation-planner>
  <queue name="root">
    <aclSubmitApps>alice,bob analysts</aclSubmitApps>
    <aclAdministerApps>admin</aclAdministerApps>
    <queue name="etl">
      <minResources>memory-mb=2048, vcores=2</minResources>
      <maxResources>memory-mb=8192, vcores=8, yarn.io/gpu=2</maxResources>
      <maxContainerAllocation>memory-mb=4096, vcores=2</maxContainerAllocation>
      <allowPreemptionFrom>false</allowPreemptionFrom>
      <fairSharePreemptionThreshold>0.6</fairSharePreemptionThreshold>
      <reservation></reservation>
    </queue>
    <queue name="users" type="parent">
      <maxChildResources>25%</maxChildResources>
      <aclSubmitReservations>alice</aclSubmitReservations>
      <aclAdministerReservations>admin</aclAdministerReservations>
      <aclListReservations>*</aclListReservations>
    </queue>
    <queue name="adhoc">
      <maxResources>20% memory, 10% cpu</maxResources>
    </queue>
  </queue>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="nestedUserQueue" create="true"><rule name="default" queue="users" create="false"/></rule>
    <rule name="default" queue="adhoc"/>
  </queuePlacementPolicy>
</allocations>`

func TestParseAllocations_Hadoop3Style(t *testing.T) {
	a, err := ParseAllocations([]byte(hadoop3File))
	if err != nil {
		t.Fatal(err)
	}
	etl, users, adhoc := a.Queue("etl"), a.Queue("users"), a.Queue("adhoc")
	if *etl.MinResources != MBVCores(2048, 2) || *etl.MaxResources != MBVCores(8192, 8) || *etl.AllowPreemptionFrom || *etl.FairSharePreemptionThreshold != 0.6 {
		t.Errorf("etl: %+v", etl)
	}
	if users.MaxChildResourcesPercent == nil || *users.MaxChildResourcesPercent != (Percent{Memory: 25, CPU: 25}) {
		t.Errorf("users' maxChildResources: %+v", users.MaxChildResourcesPercent)
	}
	if adhoc.MaxResourcesPercent == nil || *adhoc.MaxResourcesPercent != (Percent{Memory: 20, CPU: 10}) || adhoc.MaxResources != nil {
		t.Errorf("adhoc: %+v", adhoc)
	}
	var got []string
	for _, i := range a.Ignored {
		got = append(got, i.String())
	}
	want := []string{
		"line 4, <reservation-agent>: " + whyNoReservations,
		"line 5, <reservation-policy>: " + whyNoReservations,
		"line 6, <reservation-planner>: " + whyNoReservations,
		"line 12, <maxResources> of root.etl: yarn.io/gpu: slots count memory and cpu only; the rest of the setting holds",
		"line 13, <maxContainerAllocation> of root.etl: " + whyNoContainers,
		"line 16, <reservation> of root.etl: " + whyNoReservations,
		"line 20, <aclSubmitReservations> of root.users: " + whyNoReservations,
		"line 21, <aclAdministerReservations> of root.users: " + whyNoReservations,
		"line 22, <aclListReservations> of root.users: " + whyNoReservations,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ignored (-want +got)\n%s", diff)
	}

	// The limits, on a test bed of 40 slots of 1 vcore and 1 GiB.
	tr := NewTree(a)
	total := slots(40)
	for path, want := range map[string]Resources{
		"root.etl":   MBVCores(8192, 8),   // its own
		"root.adhoc": MBVCores(8192, 4),   // 20% of the memory, 10% of the cpu
		"root.users": MBVCores(20480, 20), // the file's default: half of each
		"root":       total,               // root takes no default
	} {
		if got := tr.MaxResources(tr.Queue(path), total); got != want {
			t.Errorf("maxResources of %s = %v, want %v", path, got, want)
		}
	}
	// A queue a placement rule makes under users takes users' maxChildResources.
	alice, err := tr.Ensure("root.users.alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.MaxResources(alice, total); got != MBVCores(10240, 10) {
		t.Errorf("a created child of users: %v, want a quarter of the bed", got)
	}
}

// allowPreemptionFrom false keeps preemption off a queue and everything under it, however
// far above its share it is: the starving queue gets what the other queues can give.
func TestPlanPreemption_AllowPreemptionFromFalseProtects(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"/>
  <queue name="safe"><allowPreemptionFrom>false</allowPreemptionFrom><queue name="inner"/></queue>
  <queue name="b"/>
</allocations>`)
	apps := []App{
		{ID: "shielded", Queue: "root.safe.inner", Order: 1, Running: true, Usage: slots(8), Demand: slots(8)},
		{ID: "exposed", Queue: "root.b", Order: 2, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "wants", Queue: "root.a", Order: 3, Demand: slots(4)},
	}
	starving := []Starving{{Queue: "root.a", Amount: slots(4)}}
	got := tr.PlanPreemption(Cluster{Total: slots(12), Apps: apps}, starving, slots(1), map[string]int{"shielded": 8, "exposed": 4})
	for _, v := range got {
		if v.App == "shielded" {
			t.Fatalf("a job of a protected queue was chosen: %+v", got)
		}
	}
	// Without the protection, the same job gives slots too.
	open := tree(t, `<allocations><queue name="a"/><queue name="safe"><queue name="inner"/></queue><queue name="b"/></allocations>`)
	got = open.PlanPreemption(Cluster{Total: slots(12), Apps: apps}, starving, slots(1), map[string]int{"shielded": 8, "exposed": 4})
	if !slices.ContainsFunc(got, func(v Victim) bool { return v.App == "shielded" }) {
		t.Fatalf("unprotected, the job far above its share should give: %+v", got)
	}
}

// Lookalikes of Hadoop 3's elements are not taken for them. An element nobody knows is left
// out and listed as unknown, at the top level (where Hadoop warns) and in a queue (where it
// says nothing); a known element with a value of the wrong form is an error.
func TestParseAllocations_Hadoop3LookalikesAreNotTakenForThem(t *testing.T) {
	for bad, element := range map[string]string{
		"<allocations><reservation-agents>x</reservation-agents></allocations>":                       "reservation-agents",
		`<allocations><queue name="a"><maxChildResource>25%</maxChildResource></queue></allocations>`: "maxChildResource",
	} {
		a, err := ParseAllocations([]byte(bad))
		if err != nil {
			t.Fatalf("%s: %v", bad, err)
		}
		if len(a.Ignored) != 1 || !a.Ignored[0].Unknown || a.Ignored[0].Element != element || a.Ignored[0].Line != 1 {
			t.Errorf("%s: ignored %+v, want <%s> as unknown", bad, a.Ignored, element)
		}
		if q := a.Queue("a"); q != nil && q.MaxChildResourcesPercent != nil {
			t.Errorf("%s: read as maxChildResources", bad)
		}
	}
	for _, bad := range []string{
		`<allocations><queue name="a"><maxResources>memory-mb=50%, vcores=2</maxResources></queue></allocations>`,
		`<allocations><queue name="a"><aclSubmitReservations><x/></aclSubmitReservations></queue></allocations>`,
	} {
		if _, err := ParseAllocations([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		} else if !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: %v names no line", bad, err)
		}
	}
}

// A file in Hadoop 2's style, with the names Hadoop still takes for compatibility and
// elements it does not know, loads as Hadoop loads it: the old names read as the new, the
// unknown left out, each listed with its line.
func TestParseAllocations_AHadoop2StyleFileLoadsWithWarnings(t *testing.T) {
	a, err := ParseAllocations([]byte(`<?xml version="1.0"?>
<allocations>
  <pool name="etl">
    <minResources>10000 mb, 2 vcores</minResources>
    <schedulingMode>fair</schedulingMode>
    <minSharePreemptionTimeout>60</minSharePreemptionTimeout>
    <maxRunningApp>5</maxRunningApp>
  </pool>
  <pool name="adhoc">
    <schedulingMode>fifo</schedulingMode>
  </pool>
  <user name="sample_user">
    <maxRunningApps>30</maxRunningApps>
    <weight>2</weight>
  </user>
  <userMaxAppsDefault>5</userMaxAppsDefault>
  <defaultQueueSchedulingMode>drf</defaultQueueSchedulingMode>
  <fairSharePreemptionTimeout>600</fairSharePreemptionTimeout>
  <queueMaxAppsDefualt>10</queueMaxAppsDefualt>
</allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := []any{a.Queue("etl").Policy, a.Queue("adhoc").Policy, a.DefaultQueueSchedulingPolicy, *a.DefaultFairSharePreemptionTimeout, a.UserMaxApps["sample_user"]}; !slices.Equal(got,
		[]any{PolicyFair, PolicyFIFO, PolicyDRF, 10 * time.Minute, 30}) {
		t.Errorf("read as %v", got)
	}
	if a.Queue("etl").MaxRunningApps != nil || a.QueueMaxAppsDefault != nil {
		t.Error("a misspelt limit was taken for the limit")
	}
	var deprecated, unknown []string
	for _, d := range a.Deprecated {
		deprecated = append(deprecated, d.String())
	}
	for _, i := range a.Ignored {
		if i.Unknown {
			unknown = append(unknown, fmt.Sprintf("line %d, <%s> %s", i.Line, i.Element, i.Queue))
		}
	}
	if want := []string{
		"line 5, <schedulingMode> of root.etl: the old name of <schedulingPolicy>, read as it",
		"line 10, <schedulingMode> of root.adhoc: the old name of <schedulingPolicy>, read as it",
		"line 17, <defaultQueueSchedulingMode>: the old name of <defaultQueueSchedulingPolicy>, read as it",
		"line 18, <fairSharePreemptionTimeout>: the old name of <defaultFairSharePreemptionTimeout>, read as it",
	}; !slices.Equal(deprecated, want) {
		t.Errorf("deprecated %q, want %q", deprecated, want)
	}
	if want := []string{"line 7, <maxRunningApp> root.etl", "line 14, <weight> ", "line 19, <queueMaxAppsDefualt> "}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %q, want %q", unknown, want)
	}
}

// What Hadoop 3's loader refuses about the queue tree is refused with the line: a root
// queue element beside other top-level queues (either order, the name in any case), and a
// reservation in a queue that has children or type="parent". A minimum given as a
// percentage loads as no minimum, as Hadoop 2.9 and 3 read it, and is listed as ignored.
func TestParseAllocations_TheTreeAsHadoopRefusesIt(t *testing.T) {
	for bad, want := range map[string]string{
		"<allocations>\n<queue name=\"a\"/>\n<queue name=\"root\"/>\n</allocations>":                          "line 3, <queue>: a root queue cannot stand beside other top-level queues (line 2)",
		"<allocations>\n<queue name=\"Root\"><queue name=\"a\"/></queue>\n<pool name=\"b\"/>\n</allocations>": "line 3, <pool>: no queue can stand beside the root queue (line 2)",
		"<allocations>\n<queue name=\"p\" type=\"parent\">\n<reservation/>\n</queue>\n</allocations>":         "line 3, <reservation>: queue root.p (line 2) has child queues",
		"<allocations>\n<queue name=\"p\"><reservation/>\n<queue name=\"c\"/></queue>\n</allocations>":        "line 2, <reservation>: queue root.p (line 2) has child queues",
	} {
		if _, err := ParseAllocations([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", bad, err, want)
		}
	}
	a, err := ParseAllocations([]byte(`<allocations><queue name="root"><queue name="a"><minResources>50%</minResources></queue></queue></allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	if q := a.Queue("a"); q.MinResources != nil {
		t.Errorf("a percentage minimum read as %v", *q.MinResources)
	}
	if len(a.Ignored) != 1 || a.Ignored[0].Element != "minResources" || !strings.Contains(a.Ignored[0].Reason, "no minimum") {
		t.Errorf("ignored %+v", a.Ignored)
	}
}
