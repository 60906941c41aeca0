package queue

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// The scopes of the allocation file's elements: each has its own handlers in the parser.
const (
	scopeTop   = "allocations" // the elements of <allocations>
	scopeQueue = "queue"       // the elements of a queue or pool element
	scopeUser  = "user"        // the elements of a user element
	scopeRule  = "rule"        // the rules of queuePlacementPolicy, by name
)

// acceptedElements are the names the parser takes in each scope, read from its own handler
// tables, so that an element added to the parser without a row below fails the test.
func acceptedElements() map[string][]string {
	p := &parser{}
	limit := 0
	return map[string][]string{
		scopeTop:   slices.Sorted(maps.Keys(p.topHandlers(&Allocations{}))),
		scopeQueue: slices.Sorted(maps.Keys(p.queueHandlers(&Allocations{}, &QueueConfig{}))),
		scopeUser:  slices.Sorted(maps.Keys(p.userHandlers(&limit))),
		scopeRule:  slices.Sorted(slices.Values(ruleNames)),
	}
}

// inQueue is a file with one queue, q, holding body.
func inQueue(body string) string {
	return `<allocations><queue name="q">` + body + `</queue></allocations>`
}

// paths lists the configured queues, depth first, with their kinds.
func paths(a *Allocations) any { return queuePaths(a) }

func queuePaths(a *Allocations) []string {
	var out []string
	var walk func(q *QueueConfig)
	walk = func(q *QueueConfig) {
		out = append(out, fmt.Sprintf("%s parent=%t leaf=%t", q.Path, q.Parent, q.IsLeaf()))
		for _, c := range q.Children {
			walk(c)
		}
	}
	walk(a.Root)
	return out
}

// Every element the Fair Scheduler accepts (Hadoop 2 and 3), and slotplane's own, in a file
// of its style: a row checks what the element means in the parsed file, the field it sets
// and its value, or that it is listed as ignored with why. Every element the parser takes
// has at least one row.
func TestParseAllocations_EveryElement(t *testing.T) {
	q := func(a *Allocations) *QueueConfig { return a.Queue("q") }
	ignored := func(a *Allocations) any { return a.Ignored }
	ignoredIn := func(queue, element, why string) []Ignored {
		return []Ignored{{Line: 1, Element: element, Queue: queue, Reason: why}}
	}
	type row struct {
		scope, element string
		file           string
		got            func(a *Allocations) any
		want           any
	}
	rows := map[string]row{
		// The top level.
		"queue, nested": {scopeTop, "queue", `<allocations><queue name="a"><queue name="b"/></queue><queue name="p" type="parent"/></allocations>`,
			paths, []string{"root parent=false leaf=false", "root.a parent=false leaf=false", "root.a.b parent=false leaf=true", "root.p parent=true leaf=false"}},
		"queue root": {scopeTop, "queue", `<allocations><queue name="root"><weight>3</weight><queue name="a"/></queue></allocations>`,
			func(a *Allocations) any { return []any{a.Root.Weight, queuePaths(a)} }, []any{3.0, []string{"root parent=false leaf=false", "root.a parent=false leaf=true"}}},
		"pool (Hadoop 2)": {scopeTop, "pool", `<allocations><pool name="a"><pool name="b"/></pool></allocations>`,
			paths, []string{"root parent=false leaf=false", "root.a parent=false leaf=false", "root.a.b parent=false leaf=true"}},
		"user element": {scopeTop, "user", `<allocations><user name="bob"><maxRunningApps>3</maxRunningApps></user><user name="eve"/></allocations>`,
			func(a *Allocations) any { return a.UserMaxApps }, map[string]int{"bob": 3}},
		"userMaxAppsDefault": {scopeTop, "userMaxAppsDefault", `<allocations><userMaxAppsDefault>5</userMaxAppsDefault></allocations>`,
			func(a *Allocations) any { return a.UserMaxAppsDefault }, ptr(5)},
		"queueMaxAppsDefault": {scopeTop, "queueMaxAppsDefault", `<allocations><queueMaxAppsDefault>7</queueMaxAppsDefault></allocations>`,
			func(a *Allocations) any { return a.QueueMaxAppsDefault }, ptr(7)},
		"queueMaxResourcesDefault, Hadoop 2": {scopeTop, "queueMaxResourcesDefault", `<allocations><queueMaxResourcesDefault>40000 mb,0vcores</queueMaxResourcesDefault></allocations>`,
			func(a *Allocations) any { return []any{a.QueueMaxResourcesDefault, a.QueueMaxResourcesDefaultPercent} }, []any{ptr(MBVCores(40000, 0)), (*Percent)(nil)}},
		"queueMaxResourcesDefault, Hadoop 3 percent": {scopeTop, "queueMaxResourcesDefault", `<allocations><queueMaxResourcesDefault>memory-mb=50%, vcores=25%</queueMaxResourcesDefault></allocations>`,
			func(a *Allocations) any { return []any{a.QueueMaxResourcesDefault, a.QueueMaxResourcesDefaultPercent} }, []any{(*Resources)(nil), &Percent{Memory: 50, CPU: 25}}},
		"queueMaxResourcesDefault, Hadoop 3 amount": {scopeTop, "queueMaxResourcesDefault", `<allocations><queueMaxResourcesDefault>memory-mb=8192, vcores=4</queueMaxResourcesDefault></allocations>`,
			func(a *Allocations) any { return a.QueueMaxResourcesDefault }, ptr(MBVCores(8192, 4))},
		"reservation-agent (Hadoop 3)": {scopeTop, "reservation-agent", `<allocations><reservation-agent>org.example.Agent</reservation-agent></allocations>`,
			ignored, ignoredIn("", "reservation-agent", whyNoReservations)},
		"reservation-policy (Hadoop 3)": {scopeTop, "reservation-policy", `<allocations><reservation-policy>org.example.Policy</reservation-policy></allocations>`,
			ignored, ignoredIn("", "reservation-policy", whyNoReservations)},
		"reservation-planner (Hadoop 3)": {scopeTop, "reservation-planner", `<allocations><reservation-planner>org.example.Planner</reservation-planner></allocations>`,
			ignored, ignoredIn("", "reservation-planner", whyNoReservations)},
		"queueMaxAMShareDefault": {scopeTop, "queueMaxAMShareDefault", `<allocations><queueMaxAMShareDefault>0.3</queueMaxAMShareDefault></allocations>`,
			func(a *Allocations) any { return a.QueueMaxAMShareDefault }, 0.3},
		"queueMaxAMShareDefault off": {scopeTop, "queueMaxAMShareDefault", `<allocations><queueMaxAMShareDefault>-1.0f</queueMaxAMShareDefault></allocations>`,
			func(a *Allocations) any { return a.QueueMaxAMShareDefault }, -1.0},
		"defaultQueueSchedulingPolicy": {scopeTop, "defaultQueueSchedulingPolicy", `<allocations><defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy></allocations>`,
			func(a *Allocations) any { return a.DefaultQueueSchedulingPolicy }, PolicyDRF},
		"defaultQueueSchedulingMode (old name)": {scopeTop, "defaultQueueSchedulingMode", `<allocations><defaultQueueSchedulingMode>drf</defaultQueueSchedulingMode></allocations>`,
			func(a *Allocations) any { return []any{a.DefaultQueueSchedulingPolicy, a.Deprecated} },
			[]any{PolicyDRF, []Ignored{{Line: 1, Element: "defaultQueueSchedulingMode", Reason: "the old name of <defaultQueueSchedulingPolicy>, read as it"}}}},
		"fairSharePreemptionTimeout at the top (old name)": {scopeTop, "fairSharePreemptionTimeout", `<allocations><fairSharePreemptionTimeout>120</fairSharePreemptionTimeout></allocations>`,
			func(a *Allocations) any { return []any{a.DefaultFairSharePreemptionTimeout, len(a.Deprecated)} }, []any{ptr(2 * time.Minute), 1}},
		"fairSharePreemptionTimeout at the top, and its new name": {scopeTop, "fairSharePreemptionTimeout",
			`<allocations><defaultFairSharePreemptionTimeout>300</defaultFairSharePreemptionTimeout><fairSharePreemptionTimeout>120</fairSharePreemptionTimeout></allocations>`,
			func(a *Allocations) any { return a.DefaultFairSharePreemptionTimeout }, ptr(5 * time.Minute)},
		"defaultFairSharePreemptionTimeout": {scopeTop, "defaultFairSharePreemptionTimeout", `<allocations><defaultFairSharePreemptionTimeout>300</defaultFairSharePreemptionTimeout></allocations>`,
			func(a *Allocations) any { return a.DefaultFairSharePreemptionTimeout }, ptr(5 * time.Minute)},
		"defaultMinSharePreemptionTimeout": {scopeTop, "defaultMinSharePreemptionTimeout", `<allocations><defaultMinSharePreemptionTimeout>60</defaultMinSharePreemptionTimeout></allocations>`,
			func(a *Allocations) any { return a.DefaultMinSharePreemptionTimeout }, ptr(time.Minute)},
		"defaultFairSharePreemptionThreshold": {scopeTop, "defaultFairSharePreemptionThreshold", `<allocations><defaultFairSharePreemptionThreshold>0.7</defaultFairSharePreemptionThreshold></allocations>`,
			func(a *Allocations) any { return a.DefaultFairSharePreemptionThreshold }, ptr(0.7)},
		"queuePlacementPolicy": {scopeTop, "queuePlacementPolicy", `<allocations><queuePlacementPolicy><rule name="specified"/><rule name="reject"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement }, []Rule{{Name: "specified", Create: true, Line: 1}, {Name: "reject", Create: true, Line: 1}}},

		// A queue's elements.
		"queue in a queue": {scopeQueue, "queue", inQueue(`<queue name="c"/><queue name="u" type="parent"/>`),
			paths, []string{"root parent=false leaf=false", "root.q parent=false leaf=false", "root.q.c parent=false leaf=true", "root.q.u parent=true leaf=false"}},
		"pool in a pool (Hadoop 2)": {scopeQueue, "pool", `<allocations><pool name="q"><pool name="c"/></pool></allocations>`,
			paths, []string{"root parent=false leaf=false", "root.q parent=false leaf=false", "root.q.c parent=false leaf=true"}},
		"minResources, Hadoop 2": {scopeQueue, "minResources", inQueue(`<minResources>10000 mb,0vcores</minResources>`),
			func(a *Allocations) any { return q(a).MinResources }, ptr(MBVCores(10000, 0))},
		"minResources, Hadoop 3": {scopeQueue, "minResources", inQueue(`<minResources>vcores=2, memory-mb=2048</minResources>`),
			func(a *Allocations) any { return q(a).MinResources }, ptr(MBVCores(2048, 2))},
		"minResources, Hadoop 3 with a GPU": {scopeQueue, "minResources", inQueue(`<minResources>memory-mb=2048, vcores=2, yarn.io/gpu=1</minResources>`),
			func(a *Allocations) any { return []any{q(a).MinResources, a.Ignored} },
			[]any{ptr(MBVCores(2048, 2)), ignoredIn("root.q", "minResources", "yarn.io/gpu: slots count memory and cpu only; the rest of the setting holds")}},
		"maxResources, Hadoop 2": {scopeQueue, "maxResources", inQueue(`<maxResources>90000 mb, 100 vcores</maxResources>`),
			func(a *Allocations) any { return []any{q(a).MaxResources, q(a).MaxResourcesPercent} }, []any{ptr(MBVCores(90000, 100)), (*Percent)(nil)}},
		"maxResources, Hadoop 3 amount": {scopeQueue, "maxResources", inQueue(`<maxResources>memory-mb=8192, vcores=8</maxResources>`),
			func(a *Allocations) any { return q(a).MaxResources }, ptr(MBVCores(8192, 8))},
		"maxResources, one percentage": {scopeQueue, "maxResources", inQueue(`<maxResources>50%</maxResources>`),
			func(a *Allocations) any { return []any{q(a).MaxResources, q(a).MaxResourcesPercent} }, []any{(*Resources)(nil), &Percent{Memory: 50, CPU: 50}}},
		"maxResources, percent per resource": {scopeQueue, "maxResources", inQueue(`<maxResources>20% memory, 10% cpu</maxResources>`),
			func(a *Allocations) any { return q(a).MaxResourcesPercent }, &Percent{Memory: 20, CPU: 10}},
		"maxResources, Hadoop 3 percent": {scopeQueue, "maxResources", inQueue(`<maxResources>memory-mb=75.0%, vcores=50.0%</maxResources>`),
			func(a *Allocations) any { return q(a).MaxResourcesPercent }, &Percent{Memory: 75, CPU: 50}},
		"maxChildResources, Hadoop 2 form": {scopeQueue, "maxChildResources", inQueue(`<maxChildResources>4096 mb,4vcores</maxChildResources>`),
			func(a *Allocations) any { return []any{q(a).MaxChildResources, q(a).MaxChildResourcesPercent} }, []any{ptr(MBVCores(4096, 4)), (*Percent)(nil)}},
		"maxChildResources, Hadoop 3 percent": {scopeQueue, "maxChildResources", inQueue(`<maxChildResources>memory-mb=10%, vcores=10%</maxChildResources>`),
			func(a *Allocations) any { return []any{q(a).MaxChildResources, q(a).MaxChildResourcesPercent} }, []any{(*Resources)(nil), &Percent{Memory: 10, CPU: 10}}},
		"allowPreemptionFrom": {scopeQueue, "allowPreemptionFrom", inQueue(`<allowPreemptionFrom>false</allowPreemptionFrom>`),
			func(a *Allocations) any { return q(a).AllowPreemptionFrom }, ptr(false)},
		"aclSubmitReservations": {scopeQueue, "aclSubmitReservations", inQueue(`<aclSubmitReservations>alice analysts</aclSubmitReservations>`),
			ignored, ignoredIn("root.q", "aclSubmitReservations", whyNoReservations)},
		"aclAdministerReservations": {scopeQueue, "aclAdministerReservations", inQueue(`<aclAdministerReservations>admin</aclAdministerReservations>`),
			ignored, ignoredIn("root.q", "aclAdministerReservations", whyNoReservations)},
		"aclListReservations": {scopeQueue, "aclListReservations", inQueue(`<aclListReservations>*</aclListReservations>`),
			ignored, ignoredIn("root.q", "aclListReservations", whyNoReservations)},
		"reservation": {scopeQueue, "reservation", inQueue(`<reservation></reservation>`),
			ignored, ignoredIn("root.q", "reservation", whyNoReservations)},
		"maxContainerAllocation": {scopeQueue, "maxContainerAllocation", inQueue(`<maxContainerAllocation>memory-mb=4096, vcores=2</maxContainerAllocation>`),
			ignored, ignoredIn("root.q", "maxContainerAllocation", whyNoContainers)},
		"maxRunningApps": {scopeQueue, "maxRunningApps", inQueue(`<maxRunningApps>50</maxRunningApps>`),
			func(a *Allocations) any { return q(a).MaxRunningApps }, ptr(50)},
		"maxAMShare": {scopeQueue, "maxAMShare", inQueue(`<maxAMShare>0.1</maxAMShare>`),
			func(a *Allocations) any { return q(a).MaxAMShare }, ptr(0.1)},
		"weight": {scopeQueue, "weight", inQueue(`<weight>2.5</weight>`),
			func(a *Allocations) any { return q(a).Weight }, 2.5},
		"schedulingPolicy": {scopeQueue, "schedulingPolicy", inQueue(`<schedulingPolicy>FIFO</schedulingPolicy>`),
			func(a *Allocations) any { return q(a).Policy }, PolicyFIFO},
		"schedulingMode (old name)": {scopeQueue, "schedulingMode", inQueue(`<schedulingMode>drf</schedulingMode>`),
			func(a *Allocations) any { return []any{q(a).Policy, a.Deprecated} },
			[]any{PolicyDRF, []Ignored{{Line: 1, Element: "schedulingMode", Queue: "root.q", Reason: "the old name of <schedulingPolicy>, read as it"}}}},
		"schedulingPolicy stateaware (slotplane)": {scopeQueue, "schedulingPolicy", inQueue(`<schedulingPolicy>stateaware</schedulingPolicy>`),
			func(a *Allocations) any { return q(a).Policy }, PolicyStateAware},
		"aclSubmitApps": {scopeQueue, "aclSubmitApps", inQueue(`<aclSubmitApps>alice,bob analysts</aclSubmitApps>`),
			func(a *Allocations) any { return q(a).SubmitACL }, &ACL{Users: []string{"alice", "bob"}, Groups: []string{"analysts"}}},
		"aclAdministerApps, groups only": {scopeQueue, "aclAdministerApps", inQueue(`<aclAdministerApps> admins</aclAdministerApps>`),
			func(a *Allocations) any { return q(a).AdministerACL }, &ACL{Groups: []string{"admins"}}},
		"minSharePreemptionTimeout": {scopeQueue, "minSharePreemptionTimeout", inQueue(`<minSharePreemptionTimeout>30</minSharePreemptionTimeout>`),
			func(a *Allocations) any { return q(a).MinSharePreemptionTimeout }, ptr(30 * time.Second)},
		"fairSharePreemptionTimeout": {scopeQueue, "fairSharePreemptionTimeout", inQueue(`<fairSharePreemptionTimeout>120</fairSharePreemptionTimeout>`),
			func(a *Allocations) any { return q(a).FairSharePreemptionTimeout }, ptr(2 * time.Minute)},
		"fairSharePreemptionThreshold": {scopeQueue, "fairSharePreemptionThreshold", inQueue(`<fairSharePreemptionThreshold>0.6</fairSharePreemptionThreshold>`),
			func(a *Allocations) any { return q(a).FairSharePreemptionThreshold }, ptr(0.6)},
		"strictOrder (slotplane)": {scopeQueue, "strictOrder", inQueue(`<strictOrder>false</strictOrder>`),
			func(a *Allocations) any { return q(a).StrictOrder }, ptr(false)},
		"backfill (slotplane)": {scopeQueue, "backfill", inQueue(`<backfill>true</backfill>`),
			func(a *Allocations) any { return q(a).Backfill }, ptr(true)},

		// A user's element.
		"user maxRunningApps": {scopeUser, "maxRunningApps", `<allocations><user name="sample_user"><maxRunningApps>30</maxRunningApps></user></allocations>`,
			func(a *Allocations) any { return a.UserMaxApps["sample_user"] }, 30},

		// The placement rules, and nested rules.
		"specified": {scopeRule, "specified", `<allocations><queuePlacementPolicy><rule name="specified" create="false"/><rule name="reject"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement[0] }, Rule{Name: "specified", Line: 1}},
		"rule user": {scopeRule, "user", `<allocations><queuePlacementPolicy><rule name="user"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement }, []Rule{{Name: "user", Create: true, Line: 1}}},
		"primaryGroup": {scopeRule, "primaryGroup", `<allocations><queuePlacementPolicy><rule name="primaryGroup" create="false"/><rule name="default"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement[0] }, Rule{Name: "primaryGroup", Line: 1}},
		"secondaryGroupExistingQueue": {scopeRule, "secondaryGroupExistingQueue", `<allocations><queuePlacementPolicy><rule name="secondaryGroupExistingQueue"/><rule name="default"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement[0] }, Rule{Name: "secondaryGroupExistingQueue", Create: true, Line: 1}},
		"nestedUserQueue over secondaryGroupExistingQueue": {scopeRule, "nestedUserQueue", `<allocations><queuePlacementPolicy>
<rule name="nestedUserQueue">
  <rule name="secondaryGroupExistingQueue" create="false"/>
</rule>
<rule name="default" queue="sample_queue"/>
</queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement },
			[]Rule{{Name: "nestedUserQueue", Create: true, Line: 2, Nested: &Rule{Name: "secondaryGroupExistingQueue", Line: 3}}, {Name: "default", Create: true, Queue: "sample_queue", Line: 5}}},
		"nestedUserQueue over default": {scopeRule, "nestedUserQueue", `<allocations><queuePlacementPolicy><rule name="nestedUserQueue" create="false"><rule name="default" queue="users"/></rule><rule name="reject"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement[0] }, Rule{Name: "nestedUserQueue", Line: 1, Nested: &Rule{Name: "default", Create: true, Queue: "users", Line: 1}}},
		"default": {scopeRule, "default", `<allocations><queuePlacementPolicy><rule name="default"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement }, []Rule{{Name: "default", Create: true, Line: 1}}},
		"default with a queue": {scopeRule, "default", `<allocations><queuePlacementPolicy><rule name="default" queue="root.adhoc" create="true"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement }, []Rule{{Name: "default", Create: true, Queue: "root.adhoc", Line: 1}}},
		"reject": {scopeRule, "reject", `<allocations><queuePlacementPolicy><rule name="reject"/></queuePlacementPolicy></allocations>`,
			func(a *Allocations) any { return a.Placement }, []Rule{{Name: "reject", Create: true, Line: 1}}},
	}

	accepted := acceptedElements()
	covered := map[string]map[string]bool{}
	for name, r := range rows {
		if !slices.Contains(accepted[r.scope], r.element) {
			t.Errorf("row %q: <%s> is not an element the parser takes in %s", name, r.element, r.scope)
		}
		if covered[r.scope] == nil {
			covered[r.scope] = map[string]bool{}
		}
		covered[r.scope][r.element] = true
	}
	for scope, names := range accepted {
		for _, n := range names {
			if !covered[scope][n] {
				t.Errorf("the parser takes <%s> in %s, and no row says what it means", n, scope)
			}
		}
	}

	for name, r := range rows {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAllocations([]byte(r.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(r.want, r.got(a)); diff != "" {
				t.Errorf("<%s> (-want +got)\n%s", r.element, diff)
			}
		})
	}
}

// Elements the parser takes mean something where slotplane acts on them: the limits,
// weights, timeouts and rules of the rows above are what the tree and placement use.
// These rows follow a few of them from the file through to a decision.
func TestParseAllocations_ElementsActWhereSlotplaneActs(t *testing.T) {
	total := MBVCores(40*1024, 40)
	cases := map[string]struct {
		file string
		got  func(t *testing.T, tr *Tree) any
		want any
	}{
		"queueMaxResourcesDefault caps a queue without its own": {`<allocations><queueMaxResourcesDefault>memory-mb=50%, vcores=25%</queueMaxResourcesDefault><queue name="a"/></allocations>`,
			func(t *testing.T, tr *Tree) any { return tr.MaxResources(tr.Queue("a"), total) }, MBVCores(20*1024, 10)},
		"maxChildResources caps a queue a rule makes": {`<allocations><queue name="users" type="parent"><maxChildResources>4096 mb,4vcores</maxChildResources></queue></allocations>`,
			func(t *testing.T, tr *Tree) any {
				alice, err := tr.Ensure("root.users.alice")
				if err != nil {
					t.Fatal(err)
				}
				return tr.MaxResources(alice, total)
			}, MBVCores(4096, 4)},
		"weight splits the steady share": {`<allocations><queue name="a"><weight>3</weight></queue><queue name="b"/></allocations>`,
			func(t *testing.T, tr *Tree) any { return tr.SteadyFairShares(total)["root.a"] }, MBVCores(30*1024, 30)},
		"queueMaxAMShareDefault is a leaf's": {`<allocations><queueMaxAMShareDefault>0.25</queueMaxAMShareDefault><queue name="a"/></allocations>`,
			func(t *testing.T, tr *Tree) any { return tr.MaxAMShare(tr.Queue("a")) }, 0.25},
		"timeouts and the threshold inherit from root's defaults": {`<allocations><defaultMinSharePreemptionTimeout>60</defaultMinSharePreemptionTimeout><queue name="a"><fairSharePreemptionThreshold>0.6</fairSharePreemptionThreshold><fairSharePreemptionTimeout>120</fairSharePreemptionTimeout></queue></allocations>`,
			func(t *testing.T, tr *Tree) any {
				minShare, minOK, fairShare, fairOK, threshold := tr.Timeouts(tr.Queue("a"))
				return []any{minShare, minOK, fairShare, fairOK, threshold}
			}, []any{time.Minute, true, 2 * time.Minute, true, 0.6}},
		"allowPreemptionFrom protects the subtree": {`<allocations><queue name="a"><allowPreemptionFrom>false</allowPreemptionFrom><queue name="b"/></queue></allocations>`,
			func(t *testing.T, tr *Tree) any { return preemptable(tr.Queue("a.b")) }, false},
		"user maxRunningApps over userMaxAppsDefault": {`<allocations><userMaxAppsDefault>5</userMaxAppsDefault><user name="bob"><maxRunningApps>2</maxRunningApps></user></allocations>`,
			func(t *testing.T, tr *Tree) any {
				return []int{tr.UserMaxRunningApps("bob"), tr.UserMaxRunningApps("eve")}
			}, []int{2, 5}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAllocations([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.got(t, NewTree(a))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
