package queue

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Preemption takes what the starved queue's head needs in one step, the slots taken back go
// to that queue's job once they are free (not back to the victim), and nothing more is taken
// meanwhile.
func TestAdmitter_PreemptionFreesTheHeadsNeedInOneStep(t *testing.T) {
	a := admitterWithSettings(t, `<allocations>
  <queue name="hog"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="urgent"><schedulingPolicy>fifo</schedulingPolicy><minSharePreemptionTimeout>10</minSharePreemptionTimeout><minResources>1024 mb, 1 vcores</minResources></queue>
</allocations>`, preemptionOn)
	a.Request(req("hog", "hog", 8))
	a.Decide(t0, bed(8))
	a.Request(req("urgent", "urgent", 4))
	if d := a.Decide(t0, heldBed(a, 8)); len(d.Assignments) != 0 {
		t.Fatalf("preempted before the timeout: %+v", d.Assignments)
	}
	d := a.Decide(t0.Add(11*time.Second), heldBed(a, 8))
	if len(d.Assignments) != 1 || len(d.Assignments[0].Revoke) != 4 {
		t.Fatalf("one step of 4 slots (the head's need), got %+v", d.Assignments)
	}
	revoked := d.Assignments[0].Revoke
	// The pods are still there: the slots are not free yet, and nothing more is taken.
	if d := a.Decide(t0.Add(20*time.Second), bed(8, 0, 1, 2, 3, 4, 5, 6, 7)); len(d.Assignments)+len(d.Grants) != 0 {
		t.Fatalf("while vacating: %+v", d)
	}
	// Vacated: the urgent job gets them, the hog does not take them back.
	d = a.Decide(t0.Add(30*time.Second), heldBed(a, 8))
	if got := granted(d); len(got) != 1 || !strings.HasPrefix(got[0], "urgent:") || len(d.Assignments) != 0 {
		t.Fatalf("after vacating: grants %v, assignments %+v", got, d.Assignments)
	}
	if !slices.Equal(d.Grants[0].Slots, revoked) {
		t.Fatalf("urgent got %v, revoked were %v", d.Grants[0].Slots, revoked)
	}
	mustCheck(t, a, bed(8))
}

// SlotBased jobs are preemption victims only when slotplane.preemption.slot-based says so.
func TestAdmitter_SlotBasedVictimsOnlyWhenAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		a := admitterWithSettings(t, `<allocations>
  <queue name="hog"/>
  <queue name="urgent"><minSharePreemptionTimeout>1</minSharePreemptionTimeout><minResources>2048 mb, 2 vcores</minResources></queue>
</allocations>`, settingsFile(PropPreemption, "true", PropPreemptSlotBased, strconv.FormatBool(allowed)))
		pinned := req("pinned", "hog", 4)
		pinned.SlotIDs = []int32{0, 1, 2, 3}
		a.Request(pinned)
		a.Decide(t0, bed(4))
		a.Request(req("urgent", "urgent", 2))
		a.Decide(t0, heldBed(a, 4))
		d := a.Decide(t0.Add(2*time.Second), heldBed(a, 4))
		if got := len(d.Assignments) > 0; got != allowed {
			t.Fatalf("slot-based=%t: assignments %+v", allowed, d.Assignments)
		}
	}
}

// Free slots too few for a strict head are no room to spare: preemption takes what the head
// lacks, although the bed is used below the utilization threshold, and from a queue at its
// fair share: the free slots do not sit idle for as long as the other queue's job runs.
func TestAdmitter_PreemptsForAHeadTheFreeSlotsCannotStart(t *testing.T) {
	file := `<allocations>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queue name="a"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="b"><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`
	a := admitterWithSettings(t, file, preemptionOn)
	a.Request(req("b1", "b", 5))
	a.Decide(t0, bed(8))
	a.Request(req("a1", "a", 4))
	if d := a.Decide(t0, heldBed(a, 8)); len(d.Grants)+len(d.Assignments) != 0 {
		t.Fatalf("a1 needs 4 of the 3 free slots: %+v", d)
	}
	// Each queue's fair share is 4 slots: b gives the one it holds above its share.
	d := a.Decide(t0.Add(61*time.Second), heldBed(a, 8))
	if len(d.Assignments) != 1 || d.Assignments[0].Job != "b1" || len(d.Assignments[0].Revoke) != 1 {
		t.Fatalf("want one slot of b1 taken for a1 (3 free + 1), got %+v", d.Assignments)
	}
	revoked := d.Assignments[0].Revoke[0]
	free := bed(8, slices.DeleteFunc([]int32{0, 1, 2, 3, 4}, func(p int32) bool { return p == revoked })...)
	d = a.Decide(t0.Add(70*time.Second), free)
	if got := granted(d); len(got) != 1 || !strings.HasPrefix(got[0], "a1:") || len(d.Grants[0].Slots) != 4 {
		t.Fatalf("after vacating: grants %v", got)
	}
	mustCheck(t, a, bed(8))
}

// A starving queue whose head its own policy holds back (a StateAware leaf with a job still
// starting) gets no slots taken for it: they would sit idle.
func TestAdmitter_NoPreemptionForAHeadItsQueueHoldsBack(t *testing.T) {
	file := `<allocations>
  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>
  <queue name="a"><schedulingPolicy>stateaware</schedulingPolicy></queue>
  <queue name="b"><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`
	a := admitterWithSettings(t, file, preemptionOn)
	a.Request(req("a0", "a", 1)) // granted, and Starting for good: it never says it started
	a.Decide(t0, bed(8))
	a.Request(req("b1", "b", 7))
	a.Decide(t0, heldBed(a, 8))
	a.Request(req("a1", "a", 2))
	a.Decide(t0, heldBed(a, 8))
	if d := a.Decide(t0.Add(90*time.Second), heldBed(a, 8)); len(d.Assignments) > 0 {
		t.Fatalf("assignments %+v", d.Assignments)
	}
	mustCheck(t, a, bed(8))
}
