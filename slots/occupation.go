package slots

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

// Errors a caller branches on.
var (
	// ErrTaken: the slot is reserved or occupied by another pod.
	ErrTaken = errors.New("slot is taken by another pod")
	// ErrNotReserved: a pod tried to occupy a slot it had not reserved.
	ErrNotReserved = errors.New("slot was not reserved for this pod")
	// ErrNotHolder: a pod tried to release a slot another pod holds.
	ErrNotHolder = errors.New("slot is held by another pod")
)

// Pod identifies the pod a slot is reserved for or occupied by.
type Pod struct {
	Name string
	UID  types.UID
}

func holds(s *v1alpha1.SlotStatus, p Pod) bool { return s.PodUID != "" && s.PodUID == p.UID }

// Reserve moves a free slot to reserved for p. Reserving again for the same pod is a no-op
// (the scheduler retries); a slot another pod holds is ErrTaken.
func Reserve(s *v1alpha1.SlotStatus, p Pod) error {
	switch {
	case holds(s, p):
		return nil
	case s.State == v1alpha1.SlotFree || s.State == "":
		s.State, s.PodName, s.PodUID = v1alpha1.SlotReserved, p.Name, p.UID
		return nil
	default:
		return fmt.Errorf("reserve slot %d for %s: %w (%s by %s)", s.Position, p.Name, ErrTaken, s.State, s.PodName)
	}
}

// Occupy moves a slot reserved for p to occupied: p runs in it. Occupying again is a no-op.
func Occupy(s *v1alpha1.SlotStatus, p Pod) error {
	if !holds(s, p) {
		if s.State == v1alpha1.SlotFree || s.State == "" {
			return fmt.Errorf("occupy slot %d by %s: %w", s.Position, p.Name, ErrNotReserved)
		}
		return fmt.Errorf("occupy slot %d by %s: %w (%s by %s)", s.Position, p.Name, ErrTaken, s.State, s.PodName)
	}
	s.State = v1alpha1.SlotOccupied
	return nil
}

// Release frees a slot p reserved or occupies: p ended, or never came. Releasing a free slot
// is a no-op; releasing another pod's slot is ErrNotHolder.
func Release(s *v1alpha1.SlotStatus, p Pod) error {
	switch {
	case s.State == v1alpha1.SlotFree || s.State == "":
		s.State, s.PodName, s.PodUID = v1alpha1.SlotFree, "", ""
		return nil
	case !holds(s, p):
		return fmt.Errorf("release slot %d by %s: %w (%s)", s.Position, p.Name, ErrNotHolder, s.PodName)
	default:
		s.State, s.PodName, s.PodUID = v1alpha1.SlotFree, "", ""
		return nil
	}
}

// Count returns how many slots are free (and available to a new job), reserved and
// occupied.
func Count(statuses []v1alpha1.SlotStatus) (free, reserved, occupied int32) {
	for _, s := range statuses {
		switch s.State {
		case v1alpha1.SlotReserved:
			reserved++
		case v1alpha1.SlotOccupied:
			occupied++
		default:
			if s.Unavailable == "" {
				free++
			}
		}
	}
	return free, reserved, occupied
}

// SyncOccupation brings the slots' occupation in line with the pods that exist: a slot whose
// pod is gone or finished is released, a reserved slot whose pod runs bound to the slot's
// node becomes occupied. Reservations of pods not yet bound stay: the scheduler may still be
// placing them. A free slot that a live pod's proven claim names (ObservedPod.Slot: the
// extender's durable record, written with the pod's binding, before its slice is written) is
// taken by that pod; of two such pods, the one first by name. It returns whether anything changed.
func SyncOccupation(statuses []v1alpha1.SlotStatus, pods []ObservedPod, running func(ObservedPod) bool) bool {
	byUID := make(map[types.UID]ObservedPod, len(pods))
	for _, p := range pods {
		if !p.Ghost {
			byUID[p.UID] = p
		}
	}
	changed := false
	for i := range statuses {
		s := &statuses[i]
		if s.State == v1alpha1.SlotFree || s.State == "" || s.PodUID == "" {
			continue
		}
		holder := Pod{Name: s.PodName, UID: s.PodUID}
		p, ok := byUID[s.PodUID]
		switch {
		case !ok || p.Finished || (p.NodeName != "" && p.NodeName != s.NodeName):
			_ = Release(s, holder)
			changed = true
		case s.State == v1alpha1.SlotReserved && running(p):
			_ = Occupy(s, holder)
			changed = true
		}
	}
	if adopt(statuses, pods, running) {
		changed = true
	}
	return changed
}

// adopt gives free slots to the live pods whose proven claim names them. A claim the
// extender did not write never reaches here (ObservedPod.Slot is -1): adopting it would let
// any pod walk into a slot Admission never granted.
func adopt(statuses []v1alpha1.SlotStatus, pods []ObservedPod, running func(ObservedPod) bool) bool {
	byPosition := make(map[int32]int, len(statuses))
	holding := map[types.UID]bool{}
	for i, s := range statuses {
		byPosition[s.Position] = i
		if s.State != v1alpha1.SlotFree && s.State != "" {
			holding[s.PodUID] = true
		}
	}
	labelled := make([]ObservedPod, 0, len(pods))
	for _, p := range pods {
		if !p.Ghost && !p.Finished && p.Slot >= 0 && !holding[p.UID] {
			labelled = append(labelled, p)
		}
	}
	slices.SortFunc(labelled, func(a, b ObservedPod) int { return cmp.Compare(a.Name, b.Name) })
	changed := false
	for _, p := range labelled {
		i, ok := byPosition[p.Slot]
		if !ok {
			continue
		}
		s := &statuses[i]
		if p.NodeName != "" && p.NodeName != s.NodeName {
			continue
		}
		if Reserve(s, Pod{Name: p.Name, UID: p.UID}) != nil {
			continue // another pod has it
		}
		if running(p) {
			_ = Occupy(s, Pod{Name: p.Name, UID: p.UID})
		}
		changed = true
	}
	return changed
}
