package sjf

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/schedkit"
)

var epoch = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// bed has slots on nodes a and b (positions alternate), the busy ones held by "busy".
func bed(busy ...int32) []schedkit.Slot {
	var out []schedkit.Slot
	for i := range 6 {
		s := schedkit.Slot{Position: int32(i), Node: []string{"a", "b"}[i%2]}
		for _, b := range busy {
			if b == s.Position {
				s.Job = "busy"
			}
		}
		out = append(out, s)
	}
	return out
}

type jobSpec struct {
	name, user  string
	replicas    int32
	arrived     time.Duration // before now
	runs        []time.Duration
	waitingHere bool
}

func view(now time.Duration, slots []schedkit.Slot, specs ...jobSpec) *schedkit.View {
	v := &schedkit.View{Now: epoch.Add(now), Slots: slots, Jobs: map[string]*schedkit.Job{}}
	for _, s := range specs {
		j := schedkit.Job{Job: apitypes.Job{Name: s.name, User: s.user, Queue: "root.q"}, Replicas: s.replicas, Arrival: epoch.Add(now - s.arrived)}
		for i, d := range s.runs {
			start := metav1.NewMicroTime(epoch.Add(time.Duration(i) * time.Hour))
			end := metav1.NewMicroTime(start.Add(d))
			j.Status.History = append(j.Status.History, v1alpha1.RunRecord{Run: int32(i + 1), Outcome: v1alpha1.RunCompleted, RunningAt: &start, EndedAt: &end})
		}
		v.Jobs[s.name] = &j
		if s.waitingHere {
			v.Waiting = append(v.Waiting, j)
		}
	}
	return v
}

func placed(ps []schedkit.Placement) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Job)
	}
	return out
}

// The job expected shortest goes first: by its own runs, else its user's jobs in its queue,
// else everyone's; the estimate and its basis are noted on the job.
func TestSJF_TheShortestExpectedGoesFirst(t *testing.T) {
	v := view(time.Minute, bed(0, 1, 2, 3),
		jobSpec{name: "done-long", user: "ann", runs: []time.Duration{50 * time.Second}},
		jobSpec{name: "done-short", user: "bob", runs: []time.Duration{5 * time.Second}},
		jobSpec{name: "ann-new", user: "ann", replicas: 1, arrived: 20 * time.Second, waitingHere: true},
		jobSpec{name: "bob-new", user: "bob", replicas: 1, arrived: 10 * time.Second, waitingHere: true},
		jobSpec{name: "rerun", user: "ann", replicas: 1, arrived: 5 * time.Second, runs: []time.Duration{2 * time.Second}, waitingHere: true},
	)
	got := New().Decide(v)
	if diff := cmp.Diff([]string{"rerun", "bob-new"}, placed(got)); diff != "" {
		t.Errorf("order (-want +got)\n%s", diff)
	}
	if e := *got[0].Notes[EstimateNote]; e != "2s" {
		t.Errorf("rerun's estimate %s", e)
	}
	if b := *got[1].Notes[BasisNote]; b != "runs of the user's jobs in the queue" {
		t.Errorf("bob-new's basis %q", b)
	}
}

// Slots are taken on the busiest nodes first, so whole nodes stay free.
func TestSJF_PacksOntoBusyNodes(t *testing.T) {
	// Node a (0, 2, 4) has one slot busy; node b (1, 3, 5) none.
	v := view(time.Minute, bed(0), jobSpec{name: "two", replicas: 2, waitingHere: true})
	got := New().Decide(v)
	if diff := cmp.Diff([]int32{2, 4}, got[0].Slots); diff != "" {
		t.Errorf("slots (-want +got)\n%s", diff)
	}
}

// A job that waited past its patience goes first, and no other job takes the room it
// waits for.
func TestSJF_AnOverdueJobIsNotStarved(t *testing.T) {
	v := view(10*time.Minute, bed(0, 1, 2),
		jobSpec{name: "history", runs: []time.Duration{10 * time.Second}},
		jobSpec{name: "old-big", replicas: 4, arrived: 5 * time.Minute, waitingHere: true},
		jobSpec{name: "new-small", replicas: 1, arrived: time.Second, waitingHere: true},
	)
	if got := New().Decide(v); len(got) != 0 {
		t.Errorf("placed %v while the overdue job waits for room", placed(got))
	}
	v = view(10*time.Minute, bed(0, 1, 2),
		jobSpec{name: "history", runs: []time.Duration{10 * time.Second}},
		jobSpec{name: "old-big", replicas: 3, arrived: 5 * time.Minute, waitingHere: true},
		jobSpec{name: "new-small", replicas: 1, arrived: time.Second, waitingHere: true},
	)
	if diff := cmp.Diff([]string{"old-big"}, placed(New().Decide(v))); diff != "" {
		t.Errorf("placed (-want +got)\n%s", diff)
	}
}
