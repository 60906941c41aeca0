package examples_test

import (
	"testing"

	"slotplane/examples"
	"slotplane/queue"
)

// allocations parses an example allocation file and checks it places alice, of the
// analysts, in her own queue under users, as both files' comments say.
func allocations(t *testing.T, file string) (*queue.Allocations, queue.Placement) {
	t.Helper()
	data, err := examples.Files.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := queue.ParseAllocations(data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Place(queue.Submitter{User: "alice", PrimaryGroup: "analysts"})
	if err != nil || p.Queue != "root.users.alice" {
		t.Fatalf("placement %+v %v", p, err)
	}
	return a, p
}

// The sample allocation file parses and places a job the way its comment says.
func TestExamples_AllocationFile(t *testing.T) {
	a, _ := allocations(t, "fair-scheduler.xml")
	if !a.Allowed(queue.Submit, "analytics.daily", "alice", []string{"analysts"}) || a.Allowed(queue.Submit, "streaming", "alice", []string{"analysts"}) {
		t.Error("analysts submit to analytics only")
	}
}

// The same teams in Hadoop 3's style load, mean the same where they say the same, and
// list what has no meaning for slots.
func TestExamples_Hadoop3AllocationFile(t *testing.T) {
	a, p := allocations(t, "fair-scheduler-hadoop3.xml")
	tree := queue.NewTree(a)
	total := queue.MBVCores(98304, 48)
	if got := tree.MinResources(tree.Queue("analytics")); got != queue.MBVCores(16384, 8) {
		t.Errorf("analytics' minResources %v", got)
	}
	alice, err := tree.Ensure(p.Queue)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[*queue.Queue]queue.Resources{
		tree.Queue("analytics"): queue.MBVCores(73728, 36),
		tree.Queue("streaming"): queue.MBVCores(49152, 24),
		alice:                   {MemoryBytes: 9830 << 20, MilliCores: 4800}, // a tenth, down to whole mb
	} {
		if got := tree.MaxResources(q, total); got != want {
			t.Errorf("maxResources of %s = %v, want %v", q.Path, got, want)
		}
	}
	if len(a.Ignored) != 4 {
		t.Errorf("ignored: %v", a.Ignored)
	}
}

// The example settings load with their allocation file: yarn-site.xml turns preemption on
// for fair-scheduler.xml, as the file's comment says.
func TestExamples_Settings(t *testing.T) {
	read := func(file string) []byte {
		t.Helper()
		data, err := examples.Files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, err := queue.ParseConfig(queue.ConfigFiles{Allocations: read("fair-scheduler.xml"), HasAllocations: true, Settings: read("yarn-site.xml"), HasSettings: true})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Preemption.Enabled || len(a.Ignored) != 0 {
		t.Errorf("fair-scheduler.xml with yarn-site.xml: %+v, ignored %v", a.Settings, a.Ignored)
	}
}
