//go:build integration

package e2e

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// A freed slot's hand-over counts whether the next run in it has ended (the job's history)
// or still goes (the job's current run), and a run still going hands nothing on. Only a
// slot freed in a full bed hands over: in a bed of three slots, the same runs leave one
// free, and count nothing.
func TestHandOvers_CountTheRunsStillGoingInAFullBed(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	micro := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(at.Add(d)); return &m }
	queued := func(d time.Duration) *metav1.Time { m := metav1.NewTime(at.Add(d)); return &m }
	ended := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, History: []v1alpha1.RunRecord{{
		TestBed: "bed", Slots: []int32{3, 4}, QueuedAt: queued(0), AdmittedAt: micro(time.Second), EndedAt: micro(10 * time.Second)}}}}
	going := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, TestBed: "bed", Slots: []int32{3}, QueuedAt: queued(5 * time.Second),
		Phases: &v1alpha1.RunPhases{AdmittedAt: micro(10*time.Second + 200*time.Millisecond)}}}
	next := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, TestBed: "bed", Slots: []int32{4}, QueuedAt: queued(5 * time.Second),
		Phases: &v1alpha1.RunPhases{AdmittedAt: micro(12 * time.Second)}}}
	p50, p99, n := handOvers([]v1alpha1.BatchJob{ended, going, next}, 2)
	if n != 2 || p50 != 200*time.Millisecond || p99 != 2*time.Second {
		t.Fatalf("hand-overs: %d, p50 %s, p99 %s; want 2, 200ms, 2s", n, p50, p99)
	}
	if _, _, n := handOvers([]v1alpha1.BatchJob{ended, going, next}, 3); n != 0 {
		t.Fatalf("hand-overs in a bed with a free slot: %d, want none", n)
	}
}

// A bed's fullest counts the slots its runs held at the same instant: an end frees its
// slots for a grant at that instant, and another bed's runs are not its.
func TestFullest_CountsTheSlotsHeldAtOnceInOneBed(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	micro := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(at.Add(d)); return &m }
	run := func(bed string, slots []int32, from, to time.Duration) v1alpha1.RunRecord {
		return v1alpha1.RunRecord{TestBed: bed, Slots: slots, AdmittedAt: micro(from), EndedAt: micro(to)}
	}
	ended := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, History: []v1alpha1.RunRecord{
		run("bed", []int32{0, 1}, 0, 10*time.Second), run("bed", []int32{2}, 20*time.Second, 30*time.Second)}}}
	handedOver := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, History: []v1alpha1.RunRecord{
		run("bed", []int32{0, 1, 3}, 10*time.Second, 40*time.Second)}}}
	going := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, TestBed: "bed", Slots: []int32{4},
		Phases: &v1alpha1.RunPhases{AdmittedAt: micro(25 * time.Second)}}}
	elsewhere := v1alpha1.BatchJob{Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, TestBed: "other", Slots: []int32{0, 1, 2, 3, 4, 5},
		Phases: &v1alpha1.RunPhases{AdmittedAt: micro(0)}}}
	// From 25 s to 30 s the bed holds 3 (handedOver), 1 (ended's second run) and 1 (going).
	if n := fullest([]v1alpha1.BatchJob{ended, handedOver, going}); n != 5 {
		t.Fatalf("fullest: %d, want 5", n)
	}
	if n := fullest([]v1alpha1.BatchJob{ended, handedOver, elsewhere}); n != 6 {
		t.Fatalf("fullest with another bed of 6: %d, want 6", n)
	}
	if n := fullest([]v1alpha1.BatchJob{ended, handedOver}); n != 4 {
		t.Fatalf("fullest without the running job: %d, want 4 (an end at 10 s frees its slots for the grant at 10 s)", n)
	}
}
