package slots

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

// ErrBadSlotIDs: a pod's slot-id annotation is missing or malformed.
var ErrBadSlotIDs = errors.New("invalid slot ids")

// maxSlotIDs bounds the annotation so a hostile pod cannot make the extender parse forever.
const maxSlotIDs = 4096

// FormatSlotIDs writes positions as the comma-separated list ParseSlotIDs reads, in the
// order given: [3 5] -> "3,5".
func FormatSlotIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

// ParseSlotIDs reads the comma-separated slot positions of the SlotIDsAnnotation, in the
// order given: "3,5" -> [3 5]. Empty, negative, non-numeric and repeated ids are errors.
func ParseSlotIDs(annotation string) ([]int32, error) {
	annotation = strings.TrimSpace(annotation)
	if annotation == "" {
		return nil, fmt.Errorf("%w: the pod has no %s annotation", ErrBadSlotIDs, v1alpha1.SlotIDsAnnotation)
	}
	count := strings.Count(annotation, ",") + 1
	if count > maxSlotIDs {
		return nil, fmt.Errorf("%w: %d ids, at most %d allowed", ErrBadSlotIDs, count, maxSlotIDs)
	}
	// One id at a time, with no slice of the parts: every /filter call parses its pod's ids.
	ids := make([]int32, 0, count)
	for rest, more := annotation, true; more; {
		var p string
		p, rest, more = strings.Cut(rest, ",")
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: %q is not a slot position (want e.g. \"3,5\")", ErrBadSlotIDs, strings.TrimSpace(p))
		}
		ids = append(ids, int32(n))
	}
	// Repeats are found on a sorted copy: a pod may list thousands of slots.
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return nil, fmt.Errorf("%w: slot %d is listed twice", ErrBadSlotIDs, sorted[i])
		}
	}
	return ids, nil
}

// Index answers which slot a pod may take. It is built from a TestBed's status, keeps its
// own copy of the slots, and follows the reservations made through it (Index.Reserve), so a
// caller can decide many pods on one index between two status writes.
type Index struct {
	slots      []v1alpha1.SlotStatus
	byPosition map[int32]int
	byPod      map[types.UID]int
}

// NewIndex indexes the slots of one test bed.
func NewIndex(statuses []v1alpha1.SlotStatus) *Index {
	ix := &Index{
		slots:      slices.Clone(statuses),
		byPosition: make(map[int32]int, len(statuses)),
		byPod:      map[types.UID]int{},
	}
	for i, s := range statuses {
		ix.byPosition[s.Position] = i
		if s.PodUID != "" && s.State != v1alpha1.SlotFree {
			ix.byPod[s.PodUID] = i
		}
	}
	return ix
}

// Slot returns the slot at a position.
func (ix *Index) Slot(position int32) (v1alpha1.SlotStatus, bool) {
	i, ok := ix.byPosition[position]
	if !ok {
		return v1alpha1.SlotStatus{}, false
	}
	return ix.slots[i], true
}

// Reserve reserves the slot at a position for p in the index (see the package's Reserve)
// and returns the slot as it now is.
func (ix *Index) Reserve(position int32, p Pod) (v1alpha1.SlotStatus, error) {
	i, ok := ix.byPosition[position]
	if !ok {
		return v1alpha1.SlotStatus{}, fmt.Errorf("reserve slot %d for %s: the test bed has no such slot", position, p.Name)
	}
	if held, ok := ix.byPod[p.UID]; ok && held != i {
		return v1alpha1.SlotStatus{}, fmt.Errorf("reserve slot %d for %s: the pod holds slot %d already", position, p.Name, ix.slots[held].Position)
	}
	if err := Reserve(&ix.slots[i], p); err != nil {
		return v1alpha1.SlotStatus{}, err
	}
	ix.byPod[p.UID] = i
	return ix.slots[i], nil
}

// Decision is the slot chosen for a pod.
type Decision struct {
	Slot v1alpha1.SlotStatus
	// Index is the slot's place in the slot list the Index was built from.
	Index int
	// Held is true when the pod already had this slot (a retry): nothing to write.
	Held bool
}

// NoSlotError says why no slot could be chosen, overall and per candidate node.
type NoSlotError struct {
	Reason string
	// Nodes has a reason for each candidate node that holds one of the pod's slots; every
	// other candidate node fails with OtherNodes.
	Nodes      map[string]string
	OtherNodes string
}

func (e *NoSlotError) Error() string { return e.Reason }

// Choose picks the slot for a pod that may take the positions allowed, on one of the
// candidate nodes (nil means any node, as in a preemption, where the extender names the
// node itself).
//
// A pod that already holds a slot gets it again, on a candidate node, and never a second one.
// Otherwise the first free slot in the order of allowed wins: the external scheduler's order
// is its preference. Positions the test bed does not have are an error, not a skip: a typo
// in the annotation must not silently shrink the job.
func (ix *Index) Choose(uid types.UID, allowed []int32, candidates []string) (Decision, error) {
	// A pod that holds its slot (every call after the first) looks for one node among the
	// candidates: a scan of them, with no set to build and hash a thousand names into.
	if i, ok := ix.byPod[uid]; ok {
		s := ix.slots[i]
		if candidates == nil || slices.Contains(candidates, s.NodeName) {
			return Decision{Slot: s, Index: i, Held: true}, nil
		}
		reason := fmt.Sprintf("the pod holds slot %d on node %s, which is not a candidate", s.Position, s.NodeName)
		return Decision{}, &NoSlotError{Reason: reason, Nodes: map[string]string{}, OtherNodes: reason}
	}

	inCandidates := func(string) bool { return true }
	if candidates != nil {
		set := ix.allowedNodes(allowed)
		for _, n := range candidates {
			if _, ok := set[n]; ok {
				set[n] = true
			}
		}
		inCandidates = func(n string) bool { return set[n] }
	}

	var missing []int32
	nodes := map[string]string{}
	for _, pos := range allowed {
		i, ok := ix.byPosition[pos]
		if !ok {
			missing = append(missing, pos)
			continue
		}
		s := ix.slots[i]
		if !inCandidates(s.NodeName) {
			continue
		}
		if s.State == v1alpha1.SlotFree || s.State == "" {
			return Decision{Slot: s, Index: i}, nil
		}
		if _, seen := nodes[s.NodeName]; !seen {
			nodes[s.NodeName] = fmt.Sprintf("slot %d is %s by %s", s.Position, s.State, s.PodName)
		}
	}
	if len(missing) > 0 {
		return Decision{}, &NoSlotError{Reason: "the test bed has no slot " + joinIDs(missing), Nodes: map[string]string{},
			OtherNodes: "the test bed has no slot " + someIDs(missing)}
	}
	return Decision{}, &NoSlotError{
		Reason:     fmt.Sprintf("none of the pod's slots %s is free on a candidate node", joinIDs(allowed)),
		Nodes:      nodes,
		OtherNodes: "the node holds none of the pod's slots " + someIDs(allowed),
	}
}

// reasonIDs is how many slot ids a reason given for each candidate node names. The answer
// repeats it for every candidate: with 1,000 nodes and a pod allowed 64 slots, the whole
// list made the answer 349 KB (BenchmarkHandler_FilterNoSlot), for the scheduler to decode
// and fold into one line of the pod's events. The pod's annotation holds the whole list,
// and the overall reason (the extender's log) names every id.
const reasonIDs = 8

// someIDs is joinIDs of the first reasonIDs ids, saying how many more there are.
func someIDs(ids []int32) string {
	if len(ids) <= reasonIDs {
		return joinIDs(ids)
	}
	list := joinIDs(ids[:reasonIDs])
	return fmt.Sprintf("%s and %d more]", list[:len(list)-1], len(ids)-reasonIDs)
}

// allowedNodes returns the nodes of the allowed slots, all marked false.
func (ix *Index) allowedNodes(allowed []int32) map[string]bool {
	set := make(map[string]bool, len(allowed))
	for _, pos := range allowed {
		if i, ok := ix.byPosition[pos]; ok {
			set[ix.slots[i].NodeName] = false
		}
	}
	return set
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
