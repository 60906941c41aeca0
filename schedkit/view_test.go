package schedkit

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

var epoch = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// setBed gives w the test bed "bed" with the given number of slots, held in its slot slices
// as the feed carries them; the unavailable positions are not ready.
func setBed(w *world, slots int, unavailable ...int32) {
	w.bed = &apitypes.TestBed{Name: "bed"}
	w.slices = map[int32]apitypes.SlotSlice{}
	for i := range slots {
		s := v1alpha1.SlotStatus{Position: int32(i), NodeName: []string{"n0", "n1"}[i%2]}
		for _, u := range unavailable {
			if u == int32(i) {
				s.Unavailable = "node not ready"
			}
		}
		index := v1alpha1.SliceOf(s.Position)
		slice := w.slices[index]
		slice.Name, slice.TestBed, slice.Index = v1alpha1.SlotSliceName("bed", index), "bed", index
		slice.Slots = append(slice.Slots, s)
		w.slices[index] = slice
	}
}

func apiJob(name string, age time.Duration, edit func(*apitypes.Job)) apitypes.Job {
	at := metav1.NewTime(epoch.Add(-age))
	j := apitypes.Job{Name: name, ResourceVersion: "1", CreatedAt: &at, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobReady}}
	if edit != nil {
		edit(&j)
	}
	return j
}

func names(jobs []Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// The view: waiting are the Ready jobs no Scheduling holds or lists and the kit has not
// placed, oldest first, that the selection takes; a run that holds slots and a placement
// that has not ended take their slots; unavailable slots are never free.
func TestView_WaitingRunningAndSlots(t *testing.T) {
	w := newWorld()
	setBed(w, 6, 5)
	running := func(slots ...int32) func(*apitypes.Job) {
		return func(j *apitypes.Job) {
			j.Scheduling = "s"
			j.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, TestBed: "bed", Slots: slots}
		}
	}
	for _, j := range []apitypes.Job{
		apiJob("young", time.Second, func(j *apitypes.Job) { j.SchedulerData = map[string]string{ReplicasNote: "3"} }),
		apiJob("old", time.Hour, nil),
		apiJob("unselected", time.Hour, func(j *apitypes.Job) { j.User = "someone-else" }),
		apiJob("runs", time.Hour, running(0, 1)),
		apiJob("elsewhere", time.Hour, func(j *apitypes.Job) { running(2)(j); j.Status.TestBed = "other" }),
		apiJob("ended", time.Hour, func(j *apitypes.Job) { running(2)(j); j.Status.State = v1alpha1.JobCompleted }),
		apiJob("listed", time.Hour, nil),
		apiJob("placed", time.Hour, nil),
		apiJob("refused", time.Hour, nil),
		apiJob("bad-replicas", 2*time.Hour, func(j *apitypes.Job) { j.SchedulerData = map[string]string{ReplicasNote: "many"} }),
	} {
		w.jobChanged(j)
	}
	w.schedulings["s"] = apitypes.Scheduling{Name: "s", Jobs: []v1alpha1.SchedulingJob{{Name: "listed", Replication: 1}}}
	w.schedulings["done"] = apitypes.Scheduling{Name: "done", Jobs: []v1alpha1.SchedulingJob{{Name: "old", Replication: 1}},
		Status: v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingCompleted}}
	w.placed["placed"] = &placement{slots: []int32{3}}
	w.refused["refused"] = refusal{version: "1", until: epoch.Add(time.Second)}

	v := w.view(epoch, func(j apitypes.Job) bool { return j.User == "" })
	if diff := cmp.Diff([]string{"bad-replicas", "old", "young"}, names(v.Waiting)); diff != "" {
		t.Errorf("waiting (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"placed", "runs"}, names(v.Running)); diff != "" {
		t.Errorf("running (-want +got)\n%s", diff)
	}
	var holders []string
	for _, s := range v.Slots {
		holders = append(holders, s.Job)
	}
	if diff := cmp.Diff([]string{"runs", "runs", "", "placed", "", ""}, holders); diff != "" {
		t.Errorf("slot holders (-want +got)\n%s", diff)
	}
	var free []int32
	for _, s := range v.FreeSlots() {
		free = append(free, s.Position)
	}
	if diff := cmp.Diff([]int32{2, 4}, free); diff != "" {
		t.Errorf("free slots (-want +got)\n%s", diff)
	}
	if r := v.Jobs["young"].Replicas; r != 3 {
		t.Errorf("young wants %d", r)
	}
	if r := v.Jobs["bad-replicas"].Replicas; r != 1 {
		t.Errorf("a bad note is 1 replica, got %d", r)
	}

	// A refused job waits again once its refusal is old, or once it changes; a placed job is
	// the kit's until its run ends, or until it is let go of after it was held.
	if got := names(w.view(epoch.Add(2*time.Second), nil).Waiting); !strings.Contains(strings.Join(got, ","), "refused") {
		t.Errorf("a refusal past its time still holds the job back: %v", got)
	}
	w.jobChanged(apiJob("refused", time.Hour, func(j *apitypes.Job) { j.ResourceVersion = "2" }))
	w.jobChanged(apiJob("placed", time.Hour, running(3)))
	if w.placed["placed"] == nil || !w.placed["placed"].held {
		t.Fatal("a held placement is still tracked")
	}
	w.jobChanged(apiJob("placed", time.Hour, nil))
	v = w.view(epoch, nil)
	for _, name := range []string{"refused", "placed"} {
		if !strings.Contains(strings.Join(names(v.Waiting), ","), name) {
			t.Errorf("%s does not wait again: %v", name, names(v.Waiting))
		}
	}
}

// Placements the view does not allow are dropped with the reason; the rest keep their
// order, with the count taken from the job or the slots.
func TestCheck_DropsWhatTheViewDoesNotAllow(t *testing.T) {
	w := newWorld()
	setBed(w, 4, 3)
	w.jobChanged(apiJob("a", time.Hour, func(j *apitypes.Job) { j.SchedulerData = map[string]string{ReplicasNote: "2"} }))
	w.jobChanged(apiJob("b", time.Minute, nil))
	w.jobChanged(apiJob("c", time.Second, nil))
	v := w.view(epoch, nil)
	ok, dropped := check(v, []Placement{
		{Job: "a"},
		{Job: "a", Slots: []int32{0}},
		{Job: "b", Slots: []int32{3}},
		{Job: "b", Slots: []int32{9}},
		{Job: "nobody"},
		{Job: "c", Replicas: 2, Slots: []int32{1}},
		{Job: "c", Replicas: 2000},
		{Job: "c", Slots: []int32{1, 1}},
		{Job: "b", Slots: []int32{2, 0}},
		{Job: "c", Slots: []int32{0}},
	})
	want := []Placement{{Job: "a", Replicas: 2}, {Job: "b", Replicas: 2, Slots: []int32{2, 0}}}
	if diff := cmp.Diff(want, ok); diff != "" {
		t.Errorf("kept (-want +got)\n%s", diff)
	}
	var why []string
	for _, err := range dropped {
		why = append(why, err.Error())
	}
	for i, part := range []string{"placed twice", "not free", "no slot 9", "not waiting", "1 slots for 2 replicas", "2000 replicas", "named twice", "slot 0 is named twice"} {
		if i >= len(why) || !strings.Contains(why[i], part) {
			t.Errorf("drop %d: want %q in %v", i, part, why)
		}
	}
}

// Creation times are kept to the second: jobs made in one second wait in the order the kit
// first saw them (the feed's, which is their creation's), not by name; a submitter's exact
// arrival note orders them, and one from well before the job's creation counts for nothing.
func TestView_ArrivalOrderWithinASecond(t *testing.T) {
	w := newWorld()
	setBed(w, 2)
	same := func(name string) apitypes.Job { return apiJob(name, 0, nil) }
	for _, name := range []string{"zed", "amy", "mid"} {
		w.jobChanged(same(name))
	}
	if diff := cmp.Diff([]string{"zed", "amy", "mid"}, names(w.view(epoch, nil).Waiting)); diff != "" {
		t.Errorf("within a second (-want +got)\n%s", diff)
	}
	note := func(name string, at time.Time) {
		j := same(name)
		j.SchedulerData = map[string]string{ArrivalNote: at.Format(time.RFC3339Nano)}
		w.jobChanged(j)
	}
	note("zed", epoch.Add(500*time.Millisecond))
	note("mid", epoch.Add(100*time.Millisecond))
	w.jobChanged(apiJob("bad-note", 0, func(j *apitypes.Job) { j.SchedulerData = map[string]string{ArrivalNote: "yesterday"} }))
	note("early", epoch.Add(-time.Hour))       // long before its creation: a rewritten note, not believed
	note("retried", epoch.Add(-2*time.Second)) // noted, then created after retries
	if diff := cmp.Diff([]string{"retried", "amy", "bad-note", "early", "mid", "zed"}, names(w.view(epoch, nil).Waiting)); diff != "" {
		t.Errorf("with arrival notes (-want +got)\n%s", diff)
	}
}

// A job the kit placed that its queue refuses stays claimed and InQueue, and never runs: once
// its Scheduling says it failed, its slots are free in the view (they were held back for the
// rest of the burst experiment, and a strict FIFO ran on half the bed).
func TestView_ARefusedPlacementFreesItsSlots(t *testing.T) {
	w := newWorld()
	setBed(w, 4)
	w.jobChanged(apiJob("frank", time.Minute, nil))
	w.placed["frank"] = &placement{slots: []int32{0, 1}, scheduling: "k-slots-1"}
	w.jobChanged(apiJob("frank", time.Minute, func(j *apitypes.Job) { j.Scheduling, j.Status.State = "k-slots-1", v1alpha1.JobInQueue }))
	if free := len(w.view(epoch, nil).FreeSlots()); free != 2 {
		t.Fatalf("%d slots free while the placement stands", free)
	}
	// Another Scheduling's word on the job changes nothing.
	w.schedulingChanged(apitypes.Scheduling{Name: "other", Status: v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{{Name: "frank", State: v1alpha1.JobFailed}}}})
	if free := len(w.view(epoch, nil).FreeSlots()); free != 2 {
		t.Fatalf("%d slots free after another Scheduling's word", free)
	}
	w.schedulingChanged(apitypes.Scheduling{Name: "k-slots-1", Status: v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{
		{Name: "frank", State: v1alpha1.JobFailed, Message: "not admitted: user \"frank\" may not submit"}}}})
	v := w.view(epoch, nil)
	if free := len(v.FreeSlots()); free != 4 {
		t.Errorf("%d slots free after the refusal", free)
	}
	if len(v.Waiting) != 0 {
		t.Errorf("the refused job waits again: %v", names(v.Waiting))
	}
}

// A bed of several slices is seen as one row of slots, in position order, whatever order
// the slices arrived in.
func TestView_SlotsSpanTheSlices(t *testing.T) {
	w := newWorld()
	setBed(w, 2*v1alpha1.SlotsPerSlice+50, v1alpha1.SlotsPerSlice+20)
	v := w.view(epoch, nil)
	if len(v.Slots) != 2*v1alpha1.SlotsPerSlice+50 {
		t.Fatalf("%d slots", len(v.Slots))
	}
	for i, s := range v.Slots {
		if s.Position != int32(i) {
			t.Fatalf("slot %d has position %d", i, s.Position)
		}
	}
	if len(v.FreeSlots()) != 2*v1alpha1.SlotsPerSlice+49 || v.Slots[v1alpha1.SlotsPerSlice+20].Unavailable == "" {
		t.Errorf("the unavailable slot of the second slice is free: %d free", len(v.FreeSlots()))
	}
}
