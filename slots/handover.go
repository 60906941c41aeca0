package slots

import (
	"slices"
	"time"

	"slotplane/crds/v1alpha1"
)

// HandOverGrace is how long a freed slot waits for its next job before it gets its ghost
// back. A job's end reaches Admission straight from the job, and Admission grants the freed
// slot in the same step when a job waits for it (0.2 s at the median of the long run): a
// ghost made in between is only deleted again by the grant, two pod writes and a scheduler
// cycle for nothing, and the pass that made it read every job from etcd to be sure of it.
// A slot not granted within the grace gets its ghost at the pass after.
const HandOverGrace = time.Second

// HoldBackFreed takes out of plan's ghosts to create those of freed slots that may be on their
// way to a next job: slots whose run ended less than HandOverGrace ago (freed, by slot: the
// grace left), and slots the bed's last status shows held by a job's pod, reserved or
// occupied (the pod left since the last pass; a run whose end the pass does not know of yet,
// such as a pod deleted while it waited). It returns how many it held back, and when the
// first of them is due (ReconcileTestBed comes back then).
func HoldBackFreed(plan *Plan, last []v1alpha1.SlotStatus, freed map[int32]time.Duration) (int, time.Duration) {
	wait := map[int32]time.Duration{}
	for p, left := range freed {
		wait[p] = left
	}
	for _, s := range last {
		if _, ok := wait[s.Position]; !ok && (s.State == v1alpha1.SlotReserved || s.State == v1alpha1.SlotOccupied) {
			wait[s.Position] = HandOverGrace
		}
	}
	var due time.Duration
	n := len(plan.Create)
	plan.Create = slices.DeleteFunc(plan.Create, func(s Slot) bool {
		left, ok := wait[s.Position]
		if ok {
			due = Sooner(due, left)
		}
		return ok
	})
	return n - len(plan.Create), due
}

// HeldEmpty lists the slots of layout held for a job (Assigned) with no live pod in them.
func HeldEmpty(layout []Slot, observed []ObservedPod) []int32 {
	filled := map[int32]bool{}
	for _, p := range observed {
		if !p.Ghost && !p.Finished && p.Slot >= 0 {
			filled[p.Slot] = true
		}
	}
	var out []int32
	for _, s := range layout {
		if s.Assigned && !filled[s.Position] {
			out = append(out, s.Position)
		}
	}
	return out
}

// Moved says whether layout drops a slot of the bed's status or puts it elsewhere (added
// slots move none).
func Moved(layout []Slot, previous []v1alpha1.SlotStatus) bool {
	type place struct {
		position, onNode int32
		node             string
	}
	now := make(map[place]bool, len(layout))
	for _, s := range layout {
		now[place{s.Position, s.PositionOnNode, s.NodeName}] = true
	}
	for _, s := range previous {
		if !now[place{s.Position, s.PositionOnNode, s.NodeName}] {
			return true
		}
	}
	return false
}

// Sooner is the earlier of two due times, where 0 means none.
func Sooner(a, b time.Duration) time.Duration {
	if b > 0 && (a <= 0 || b < a) {
		return b
	}
	return a
}

// NextPass is how long a test bed's workflow waits before its next pass: resync when the
// bed is settled, retry when the last pass changed something or found the cluster in
// progress, and recheckIn (0: none) when a grant's timeout runs out sooner.
func NextPass(settled bool, recheckIn, resync, retry time.Duration) time.Duration {
	wait := resync
	if !settled {
		wait = retry
	}
	return Sooner(wait, recheckIn)
}

// Hold is what one job holds of a test bed (HoldOf).
type Hold struct {
	Holds bool
	Slots []int32
	// unclaimed: the job's pods have not all come within the bed's grantedSlotTimeout.
	Unclaimed bool
	// dueIn, when positive, is when that timeout ends.
	DueIn time.Duration
}

// HoldOf is what job j holds of test bed bed: the slots of its creation request for the bed
// (or, once preemption took some back, of its assigned-slots annotation) while it is in an
// active Scheduling and its status does not say that run ended.
func HoldOf(j *v1alpha1.BatchJob, bed string, timeout time.Duration, now time.Time) Hold {
	if j.Labels[v1alpha1.ActiveSchedulingLabel] == "" {
		return Hold{}
	}
	req, err := v1alpha1.CreationRequestOf(j.Annotations)
	if err != nil || req == nil || req.TestBed != bed {
		return Hold{}
	}
	st := j.Status
	thisRun := st.Run == req.Run && st.Scheduling == req.Scheduling
	if thisRun && st.State.Ended() {
		return Hold{}
	}
	h := Hold{Holds: true, Slots: req.Slots}
	if v, ok := j.Annotations[v1alpha1.AssignedSlotsAnnotation]; ok {
		if ids, err := ParseSlotIDs(v); err == nil {
			h.Slots = ids
		}
	}
	if !(thisRun && st.State == v1alpha1.JobRunning) {
		left := req.GrantedAt.Add(timeout).Sub(now)
		h.Unclaimed = left <= 0
		h.DueIn = left
	}
	return h
}

// FreedRecently gives the slots of bed that job j's run left, and how much of HandOverGrace
// is left since it ended (none: 0).
func FreedRecently(j *v1alpha1.BatchJob, bed string, now time.Time) ([]int32, time.Duration) {
	st := &j.Status
	if st.TestBed != bed || !st.State.Ended() || len(st.Slots) == 0 {
		return nil, 0
	}
	var ended time.Time
	switch {
	case st.Phases != nil && st.Phases.EndedAt != nil:
		ended = st.Phases.EndedAt.Time
	case st.FinishedAt != nil:
		ended = st.FinishedAt.Time
	default:
		return nil, 0
	}
	return st.Slots, min(HandOverGrace, ended.Add(HandOverGrace).Sub(now))
}
