package queue

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The example allocation file of the Fair Scheduler documentation, as written there.
const sourceExample = `<?xml version="1.0"?>
<allocations>
  <queue name="sample_queue">
    <minResources>10000 mb,0vcores</minResources>
    <maxResources>90000 mb,0vcores</maxResources>
    <maxRunningApps>50</maxRunningApps>
    <maxAMShare>0.1</maxAMShare>
    <weight>2.0</weight>
    <schedulingPolicy>fair</schedulingPolicy>
    <queue name="sample_sub_queue">
      <aclSubmitApps>charlie</aclSubmitApps>
      <minResources>5000 mb,0vcores</minResources>
    </queue>
  </queue>

  <queueMaxAMShareDefault>0.5</queueMaxAMShareDefault>
  <queueMaxResourcesDefault>40000 mb,0vcores</queueMaxResourcesDefault>

  <!-- Queue 'secondary_group_queue' is a parent queue and may have
       user queues under it -->
  <queue name="secondary_group_queue" type="parent">
  <weight>3.0</weight>
  </queue>

  <user name="sample_user">
    <maxRunningApps>30</maxRunningApps>
  </user>
  <userMaxAppsDefault>5</userMaxAppsDefault>

  <queuePlacementPolicy>
    <rule name="specified" />
    <rule name="primaryGroup" create="false" />
    <rule name="nestedUserQueue">
        <rule name="secondaryGroupExistingQueue" create="false" />
    </rule>
    <rule name="default" queue="sample_queue"/>
  </queuePlacementPolicy>
</allocations>
`

func TestParseResources(t *testing.T) {
	good := map[string]Resources{
		"10000 mb,0vcores":                 {MemoryBytes: 10000 << 20},
		"1024 mb, 2 vcores":                {MemoryBytes: 1 << 30, MilliCores: 2000},
		"2 vcores, 4096 mb":                {MemoryBytes: 4 << 30, MilliCores: 2000},
		" 512MB , 1 VCores ":               {MemoryBytes: 512 << 20, MilliCores: 1000},
		"40000 mb,0vcores":                 {MemoryBytes: 40000 << 20},
		"0 mb, 0 vcores":                   {},
		"90000 mb, 100 vcores":             {MemoryBytes: 90000 << 20, MilliCores: 100_000},
		"8589934592 mb, 8589934592 vcores": {MemoryBytes: 1 << 53, MilliCores: 8_589_934_592_000},
	}
	for in, want := range good {
		got, err := ParseResources(in)
		if err != nil || got != want {
			t.Errorf("ParseResources(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1024 mb", "1024, 2", "-1 mb, 2 vcores", "1 mb, 1 mb", "1.5 mb, 1 vcores", "x mb, 1 vcores", "1 gb, 1 vcores", "1 mb, 2 vcores, 3 mb",
		"8589934593 mb, 1 vcores", "1 mb, 8589934593 vcores", "9223372036854775807 mb, 0 vcores"} {
		if _, err := ParseResources(in); !errors.Is(err, ErrBadResources) {
			t.Errorf("ParseResources(%q): %v, want ErrBadResources", in, err)
		}
	}
}

func FuzzParseResources(f *testing.F) {
	for _, s := range []string{"10000 mb,0vcores", "2 vcores, 4096 mb", "", ",", "mb,vcores", "9999999999999999999 mb, 1 vcores"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResources(s)
		if err != nil {
			if !errors.Is(err, ErrBadResources) {
				t.Fatalf("error %v is not ErrBadResources", err)
			}
			return
		}
		if r.MemoryBytes < 0 || r.MilliCores < 0 {
			t.Fatalf("%q parsed to negative %v", s, r)
		}
		again, err := ParseResources(r.String())
		if err != nil || again != r {
			t.Fatalf("%v does not survive its own rendering: %v, %v", r, again, err)
		}
	})
}

func TestParseAllocations_TheSourceExample(t *testing.T) {
	a, err := ParseAllocations([]byte(sourceExample))
	if err != nil {
		t.Fatal(err)
	}
	q := a.Queue("sample_queue")
	if q == nil || q.Path != "root.sample_queue" {
		t.Fatalf("sample_queue: %+v", q)
	}
	if *q.MinResources != MBVCores(10000, 0) || *q.MaxResources != MBVCores(90000, 0) || *q.MaxRunningApps != 50 ||
		*q.MaxAMShare != 0.1 || q.Weight != 2 || q.Policy != PolicyFair {
		t.Errorf("sample_queue settings %+v", q)
	}
	sub := a.Queue("root.sample_queue.sample_sub_queue")
	if sub == nil || !sub.IsLeaf() || sub.SubmitACL == nil || sub.SubmitACL.Users[0] != "charlie" || *sub.MinResources != MBVCores(5000, 0) {
		t.Errorf("sample_sub_queue %+v", sub)
	}
	if q.IsLeaf() {
		t.Error("sample_queue has a child: it is a parent")
	}
	sg := a.Queue("secondary_group_queue")
	if sg == nil || !sg.Parent || sg.IsLeaf() || sg.Weight != 3 {
		t.Errorf("secondary_group_queue %+v", sg)
	}
	if a.QueueMaxAMShareDefault != 0.5 || *a.QueueMaxResourcesDefault != MBVCores(40000, 0) || *a.UserMaxAppsDefault != 5 || a.UserMaxApps["sample_user"] != 30 {
		t.Errorf("defaults %+v", a)
	}
	if len(a.Placement) != 4 || a.Placement[1].Create || a.Placement[2].Nested == nil || a.Placement[2].Nested.Name != "secondaryGroupExistingQueue" || a.Placement[3].Queue != "sample_queue" {
		t.Errorf("placement %+v", a.Placement)
	}
	if a.DefaultQueueSchedulingPolicy != PolicyFair {
		t.Errorf("default policy %s, want fair", a.DefaultQueueSchedulingPolicy)
	}
	if a.Preemption != (Preemption{}) {
		t.Errorf("preemption %+v, want off with the 0.8 threshold", a.Preemption)
	}
}

func TestParseAllocations_PoolsRootAndDefaults(t *testing.T) {
	a, err := ParseAllocations([]byte(`<allocations>
  <pool name="root">
    <aclSubmitApps> admins</aclSubmitApps>
    <fairSharePreemptionTimeout>60</fairSharePreemptionTimeout>
    <pool name="etl"><schedulingPolicy>DRF</schedulingPolicy><maxAMShare>-1</maxAMShare></pool>
  </pool>
  <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>
  <defaultMinSharePreemptionTimeout>30</defaultMinSharePreemptionTimeout>
  <defaultFairSharePreemptionThreshold>0.8</defaultFairSharePreemptionThreshold>
  <queueMaxAppsDefault>7</queueMaxAppsDefault>
</allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Settings != DefaultSettings() {
		t.Errorf("a file read alone has the default settings: %+v", a.Settings)
	}
	if a.Root.SubmitACL == nil || len(a.Root.SubmitACL.Users) != 0 || a.Root.SubmitACL.Groups[0] != "admins" {
		t.Errorf("root ACL %+v", a.Root.SubmitACL)
	}
	if *a.Root.FairSharePreemptionTimeout != time.Minute {
		t.Errorf("root timeout %v", *a.Root.FairSharePreemptionTimeout)
	}
	etl := a.Queue("etl")
	if etl == nil || etl.Policy != PolicyDRF || *etl.MaxAMShare != -1 {
		t.Errorf("etl %+v", etl)
	}
	if a.DefaultQueueSchedulingPolicy != PolicyDRF || *a.DefaultMinSharePreemptionTimeout != 30*time.Second || *a.DefaultFairSharePreemptionThreshold != 0.8 || *a.QueueMaxAppsDefault != 7 {
		t.Errorf("defaults %+v", a)
	}
}

// Each mistake names its line and element.
func TestParseAllocations_ErrorsSayWhere(t *testing.T) {
	cases := map[string]struct {
		file      string
		line      int
		element   string
		msgSubstr string
	}{
		"bad number":             {"<allocations>\n<queue name=\"a\">\n\n<maxRunningApps>three</maxRunningApps>\n</queue>\n</allocations>", 4, "maxRunningApps", `"three" is not a whole`},
		"bad resources":          {"<allocations>\n<queue name=\"a\"><minResources>10 gb</minResources></queue>\n</allocations>", 2, "minResources", "resources must look like"},
		"period in name":         {"<allocations>\n<queue name=\"a.b\"/>\n</allocations>", 2, "queue", "contains a period"},
		"no name":                {"<allocations>\n<queue/>\n</allocations>", 2, "queue", "needs a name"},
		"twice":                  {"<allocations>\n<queue name=\"a\"/>\n<queue name=\"a\"/>\n</allocations>", 3, "queue", "configured twice (line 2)"},
		"am share":               {"<allocations>\n<queue name=\"a\"><maxAMShare>1.5</maxAMShare></queue>\n</allocations>", 2, "maxAMShare", "fraction in (0, 1]"},
		"moved switch":           {"<allocations>\n<preemption>true</preemption>\n</allocations>", 2, "preemption", "set the property yarn.scheduler.fair.preemption in yarn-site.xml"},
		"bad policy":             {"<allocations>\n<defaultQueueSchedulingPolicy>lottery</defaultQueueSchedulingPolicy>\n</allocations>", 2, "defaultQueueSchedulingPolicy", "not a policy"},
		"unknown rule":           {"<allocations>\n<queuePlacementPolicy>\n<rule name=\"random\"/>\n</queuePlacementPolicy>\n</allocations>", 3, "rule", `unknown rule "random"`},
		"last rule may continue": {"<allocations>\n<queuePlacementPolicy>\n<rule name=\"specified\"/>\n<rule name=\"user\" create=\"false\"/>\n</queuePlacementPolicy>\n</allocations>", 4, "rule", "may pass an application on"},
		"nested missing":         {"<allocations>\n<queuePlacementPolicy>\n<rule name=\"nestedUserQueue\"/>\n<rule name=\"reject\"/>\n</queuePlacementPolicy>\n</allocations>", 3, "rule", "needs a parent rule"},
		"fifo by default":        {"<allocations>\n<defaultQueueSchedulingMode>FIFO</defaultQueueSchedulingMode>\n</allocations>", 2, "defaultQueueSchedulingMode", "cannot be fifo"},
		"wrong root":             {"<config/>", 1, "config", "must be <allocations>"},
		"stray text":             {"<allocations>\n<queue name=\"a\">oops</queue>\n</allocations>", 2, "", "outside of any value element"},
		"truncated":              {"<allocations>\n<queue name=\"a\">", 2, "", "unexpected EOF"},
		"nested value":           {"<allocations>\n<queue name=\"a\"><weight><x/></weight></queue>\n</allocations>", 2, "weight", "cannot hold <x>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAllocations([]byte(tc.file))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v, want a ConfigError", err)
			}
			if ce.Line != tc.line || ce.Element != tc.element || !strings.Contains(ce.Msg, tc.msgSubstr) {
				t.Errorf("got line %d <%s> %q; want line %d <%s> containing %q", ce.Line, ce.Element, ce.Msg, tc.line, tc.element, tc.msgSubstr)
			}
		})
	}
}

func FuzzParseAllocations(f *testing.F) {
	f.Add([]byte(sourceExample))
	f.Add([]byte("<allocations><queue name=\"a\"><queue name=\"b\"/></queue></allocations>"))
	f.Add([]byte("<allocations><queuePlacementPolicy><rule name=\"nestedUserQueue\"><rule name=\"user\"/></rule></queuePlacementPolicy></allocations>"))
	f.Add([]byte("<allocations"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAllocations(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a ConfigError", err)
			}
			if ce.Line < 1 || !utf8.ValidString(ce.Error()) && utf8.Valid(data) {
				t.Fatalf("error without a usable position: %v", ce)
			}
			return
		}
		// A file that parses describes a tree whose paths are unique and findable.
		seen := map[string]bool{}
		var walk func(q *QueueConfig)
		walk = func(q *QueueConfig) {
			if seen[q.Path] {
				t.Fatalf("queue %s twice", q.Path)
			}
			seen[q.Path] = true
			if a.Queue(q.Path) != q {
				t.Fatalf("Queue(%q) does not find it", q.Path)
			}
			for _, c := range q.Children {
				walk(c)
			}
		}
		walk(a.Root)
	})
}

func TestACLs(t *testing.T) {
	acl := ParseACL("alice,bob admins,ops")
	for _, c := range []struct {
		user   string
		groups []string
		want   bool
	}{{"alice", nil, true}, {"carol", []string{"ops"}, true}, {"carol", []string{"dev"}, false}, {"admins", nil, false}} {
		if got := acl.Admits(c.user, c.groups); got != c.want {
			t.Errorf("Admits(%s, %v) = %v", c.user, c.groups, got)
		}
	}
	groupsOnly := ParseACL(" alice")
	if groupsOnly.Admits("alice", nil) || !groupsOnly.Admits("x", []string{"alice"}) {
		t.Error(`" alice" names a group, not a user`)
	}
	if !ParseACL("*").Admits("anyone", nil) || ParseACL("").Admits("anyone", nil) {
		t.Error(`"*" admits all, "" nobody`)
	}

	// Inheritance: an ancestor's ACL admits to every queue below it; root defaults to "*".
	open, err := ParseAllocations([]byte(`<allocations><queue name="a"><aclSubmitApps>charlie</aclSubmitApps></queue></allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	if !open.Allowed(Submit, "a", "dave", nil) {
		t.Error("root's default * lets everybody submit everywhere")
	}
	closed, err := ParseAllocations([]byte(`<allocations>
  <queue name="root">
    <aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>
    <queue name="q1">
      <aclSubmitApps>user1</aclSubmitApps>
      <queue name="q2"><aclSubmitApps>user2</aclSubmitApps></queue>
    </queue>
    <queue name="ops"><aclAdministerApps> operators</aclAdministerApps></queue>
  </queue></allocations>`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action Action
		queue  string
		user   string
		groups []string
		want   bool
	}{
		{Submit, "q1.q2", "user1", nil, true}, // from the parent's ACL
		{Submit, "q1.q2", "user2", nil, true},
		{Submit, "q1", "user2", nil, false}, // not upwards
		{Submit, "root.q1.q2", "dave", nil, false},
		{Submit, "ops", "eve", []string{"operators"}, true}, // administering implies submitting
		{Administer, "ops", "eve", []string{"operators"}, true},
		{Administer, "q1", "user1", nil, false},
		{Submit, "q1.q2.unconfigured", "user1", nil, true}, // judged by configured ancestors
	} {
		if got := closed.Allowed(c.action, c.queue, c.user, c.groups); got != c.want {
			t.Errorf("Allowed(%v, %s, %s, %v) = %v, want %v", c.action, c.queue, c.user, c.groups, got, c.want)
		}
	}
}

// As the Fair Scheduler reads them, a queue's name is trimmed of surrounding spaces, and a
// type other than "parent" means nothing: the queue loads, the type listed as ignored.
func TestParseAllocations_QueueNamesAndTypesAsHadoopReadsThem(t *testing.T) {
	a, err := ParseAllocations([]byte("<allocations>\n<queue name=\" a \" type=\"leaf\"><queue name=\"b\"/></queue>\n</allocations>"))
	if err != nil {
		t.Fatal(err)
	}
	if q := a.Queue("a"); q == nil || q.Parent || a.Queue("a.b") == nil {
		t.Fatalf("queue a: %+v", q)
	}
	if len(a.Ignored) != 1 || a.Ignored[0].Line != 2 || !strings.Contains(a.Ignored[0].Reason, `type="leaf"`) {
		t.Errorf("ignored %+v", a.Ignored)
	}
}
