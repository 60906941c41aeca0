package main

import (
	"os"
	"regexp"
	"testing"
	"time"

	"slotplane/schedkit"
	"slotplane/simulation"
)

// In virtual time, two users' jobs share the bed: while ann holds slots, ben's job goes first.
func TestFairUser_TheUserHoldingLeastGoesNext(t *testing.T) {
	jobs := []simulation.Job{
		{Name: "ann-1", User: "ann", Submit: 0, Executors: 2, Runtime: 10 * time.Second},
		{Name: "ann-2", User: "ann", Submit: time.Second, Executors: 2, Runtime: 10 * time.Second},
		{Name: "ben-1", User: "ben", Submit: 2 * time.Second, Executors: 2, Runtime: 10 * time.Second},
		{Name: "ann-3", User: "ann", Submit: 3 * time.Second, Executors: 2, Runtime: 10 * time.Second},
	}
	runs, err := schedkit.Simulate(fairUser{}, jobs, schedkit.SimBed{Nodes: 2, SlotsPerNode: 2}, schedkit.SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]time.Duration{}
	for _, r := range runs {
		started[r.Job] = r.Admitted
	}
	// ann-1 and ann-2 fill the bed at once; when ann-1 ends, ben (0 slots) beats ann-3.
	if started["ben-1"] != 10*time.Second || started["ann-3"] != 11*time.Second {
		t.Errorf("starts %v: ben-1 should take the first free slots, ann-3 the next", started)
	}
}

// The guide shows this program as it is: the listing in docs/write-a-scheduler.md is this
// file, line for line.
func TestTheGuideShowsThisFile(t *testing.T) {
	guide, err := os.ReadFile("../../../docs/write-a-scheduler.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n// Command fairuser.*?```").Find(guide)
	if m == nil {
		t.Fatal("the guide has no listing of examples/schedulers/fairuser/main.go")
	}
	if listing := string(m[len("```go\n") : len(m)-len("```")]); listing != string(src) {
		t.Errorf("the guide's listing differs from main.go: copy main.go into the guide")
	}
}
