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
