package examples_test

import (
	"testing"

	"slotplane/examples"
	"slotplane/queue"
)

// The sample allocation file parses and places a job the way its comment says.
func TestExamples_AllocationFile(t *testing.T) {
	data, err := examples.Files.ReadFile("fair-scheduler.xml")
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
	if !a.Allowed(queue.Submit, "analytics.daily", "alice", []string{"analysts"}) || a.Allowed(queue.Submit, "streaming", "alice", []string{"analysts"}) {
		t.Error("analysts submit to analytics only")
	}
}
