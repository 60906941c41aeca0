// Package slots is the pure model of a test bed: where its slots are, which ghost pods
// should exist, which slot a pod may take, and how a slot's occupation may change. It does
// no I/O and knows nothing of clients, informers or Temporal: the ghost-pod reconciler and
// the scheduler extender feed it plain values and act on what it returns.
package slots

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// Node is a node of the test bed: its name and the value of the test bed's node label.
type Node struct {
	Name string
	ID   string
	// Unready: the node's Ready condition is not True (a lost kubelet). Its slots keep
	// their positions, but the ghost reconciler leaves them alone (PlanGhosts).
	Unready bool
	// Taint is the key of a NoSchedule or NoExecute taint on the node that ghosts do not
	// tolerate (a cordon, a control plane's): its slots are left alone as an unready node's.
	// Ghosts are bound to their node directly, past the scheduler's taint checks.
	Taint string
	// Fits is how many of the bed's slots the node's allocatable resources hold (Fit); the
	// node's slots from PositionOnNode Fits on have no room, no ghost, and go to no job.
	// Lacks says what the node lacks for the rest. A Node made without them fits every slot.
	Fits  *int32
	Lacks string
}

// Slot is one slot of the layout.
type Slot struct {
	// Position is the slot id, unique in the test bed.
	Position int32
	// PositionOnNode is unique among the slots of one node.
	PositionOnNode int32
	NodeName       string
	NodeID         string
	// Unready: the slot's node is not Ready.
	Unready bool
	// Taint: the slot's node has a taint ghosts do not tolerate (Node.Taint).
	Taint string
	// NoRoom says what the slot's node lacks to hold its slots (Node.Lacks) when it has no
	// room for this one, "" when it has.
	NoRoom string
	// Assigned: a running job holds the slot (Admission gave it), whether or not one of its
	// pods is there now. Not set by Layout: the caller knows the jobs.
	Assigned bool
	// Leaving: the slot's node is no longer the bed's (it lost the node label, or the slot
	// is beyond slotsPerNode), but the caller holds the slot (Relayout): a job has it, or
	// its node left a moment ago. It keeps its position until released, gets no ghost and
	// goes to no new job. LeavingSince is when its node left: Relayout carries it over from the
	// previous status, and the caller sets it on a slot that starts leaving.
	Leaving      bool
	LeavingSince time.Time
}

// Layout places slotsPerNode slots on every node. Nodes are ordered by their label value
// (numerically when both values are integers, so "2" comes before "10"; then by name), and
// positions go round-robin across them: with nodes A, B and two slots each, A holds 0 and 2,
// B holds 1 and 3. Round-robin spreads the low slot ids, which small Schedulings use first,
// over as many nodes as possible. The result is ordered by position.
func Layout(nodes []Node, slotsPerNode int32) []Slot {
	if slotsPerNode <= 0 || len(nodes) == 0 {
		return nil
	}
	ordered := slices.Clone(nodes)
	slices.SortFunc(ordered, compareNodes)
	ordered = slices.CompactFunc(ordered, func(a, b Node) bool { return a.Name == b.Name })
	out := make([]Slot, 0, len(ordered)*int(slotsPerNode))
	for round := range slotsPerNode {
		for i, n := range ordered {
			out = append(out, Slot{
				Position:       round*int32(len(ordered)) + int32(i),
				PositionOnNode: round,
				NodeName:       n.Name,
				NodeID:         n.ID,
				Unready:        n.Unready,
				Taint:          n.Taint,
				NoRoom:         n.noRoom(round),
			})
		}
	}
	return out
}

// Relayout is Layout for a bed that already has slots (previous, its status). While a job
// holds any slot (held says which: reserved, occupied, or assigned to a running job),
// positions do not move, for a running job's slot ids, its pods' slot claims and the
// extender's reservations all name slots by position, and a round-robin layout renumbers
// every slot when one node comes or goes. So:
//   - a slot whose node is still in the bed keeps its position;
//   - a slot whose node left (or beyond slotsPerNode) stays, Leaving, while it is held, and
//     goes once it is not;
//   - a node's missing slots (a node that joined, a larger slotsPerNode) are added after the
//     highest position, in Layout's order.
//
// Once nothing is held, the bed takes Layout's shape again, positions 0 to n-1 round-robin.
func Relayout(previous []v1alpha1.SlotStatus, nodes []Node, slotsPerNode int32, held func(v1alpha1.SlotStatus) bool) []Slot {
	fresh := Layout(nodes, slotsPerNode)
	if !slices.ContainsFunc(previous, held) {
		return fresh
	}
	byName := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	type place struct {
		node     string
		position int32
	}
	kept := map[place]bool{}
	out := make([]Slot, 0, max(len(previous), len(fresh)))
	last := int32(-1)
	for _, p := range previous {
		last = max(last, p.Position)
		s := Slot{Position: p.Position, PositionOnNode: p.PositionOnNode, NodeName: p.NodeName, NodeID: p.NodeID}
		n, in := byName[p.NodeName]
		switch {
		case in && p.PositionOnNode < slotsPerNode && !kept[place{p.NodeName, p.PositionOnNode}]:
			s.NodeID, s.Unready, s.Taint, s.NoRoom = n.ID, n.Unready, n.Taint, n.noRoom(p.PositionOnNode)
			kept[place{p.NodeName, p.PositionOnNode}] = true
		case held(p):
			s.Leaving = true
			if p.LeavingSince != nil {
				s.LeavingSince = p.LeavingSince.Time
			}
		default:
			continue
		}
		out = append(out, s)
	}
	for _, s := range fresh {
		if !kept[place{s.NodeName, s.PositionOnNode}] {
			last++
			s.Position = last
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Slot) int { return cmp.Compare(a.Position, b.Position) })
	return out
}

// Unavailable is why a slot of the layout goes to no new job ("" when it may).
func (s Slot) Unavailable() string {
	switch {
	case s.Leaving:
		return "the node left the test bed; the slot stays while a job holds it or a grant may still name it"
	case s.Unready:
		return "the node is not Ready"
	case s.Taint != "":
		return "the node has the taint " + s.Taint + ", which ghosts do not tolerate"
	case s.NoRoom != "":
		return "the node has no room for it: " + s.NoRoom
	}
	return ""
}

// noRoom is what the node lacks when its slot at positionOnNode has no room ("" when it
// has).
func (n Node) noRoom(positionOnNode int32) string {
	if n.Fits == nil || positionOnNode < *n.Fits {
		return ""
	}
	return n.Lacks
}

// WithoutRoom lists each node of the layout that lacks room for some of its slots, with
// what it lacks ("node-3: room for 1 of its 2 slots (...)"), in node order.
func WithoutRoom(layout []Slot) []string {
	lacks := map[string]string{}
	for _, s := range layout {
		if s.NoRoom != "" && !s.Leaving {
			lacks[s.NodeName] = s.NoRoom
		}
	}
	out := make([]string, 0, len(lacks))
	for _, node := range slices.Sorted(maps.Keys(lacks)) {
		out = append(out, node+": "+lacks[node])
	}
	return out
}

// Fit is how many slots of perSlot the allocatable resources of a node hold, up to want, and,
// when fewer than want, what the node lacks for want, by resource. A resource of perSlot the
// node does not have (a GPU) holds none.
func Fit(allocatable, perSlot corev1.ResourceList, want int32) (fits int32, lacks string) {
	fits = want
	var short []string
	for _, name := range slices.Sorted(maps.Keys(perSlot)) {
		one := perSlot[name]
		if one.Sign() <= 0 {
			continue
		}
		have := allocatable[name]
		n := int64(want)
		if q := have.MilliValue() / one.MilliValue(); q < n {
			n = q
		}
		if int32(n) < fits {
			fits = int32(n)
		}
		if n < int64(want) {
			need := one.DeepCopy()
			need.Mul(int64(want))
			short = append(short, fmt.Sprintf("%s: %d slots need %s, %s allocatable", name, want, need.String(), have.String()))
		}
	}
	if fits < want {
		lacks = fmt.Sprintf("room for %d of its %d slots (%s)", fits, want, strings.Join(short, "; "))
	}
	return fits, lacks
}

func compareNodes(a, b Node) int {
	ai, aErr := strconv.ParseInt(a.ID, 10, 64)
	bi, bErr := strconv.ParseInt(b.ID, 10, 64)
	var c int
	if aErr == nil && bErr == nil {
		c = cmp.Compare(ai, bi)
	} else {
		c = cmp.Compare(a.ID, b.ID)
	}
	if c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Statuses turns a fresh layout into status entries, carrying over the occupation of every
// slot whose position still lies on the same node in previous; anything else starts free.
// A reshaped test bed thus keeps the reservations and occupants that are still valid.
func Statuses(layout []Slot, previous []v1alpha1.SlotStatus) []v1alpha1.SlotStatus {
	prev := make(map[int32]v1alpha1.SlotStatus, len(previous))
	for _, s := range previous {
		prev[s.Position] = s
	}
	out := make([]v1alpha1.SlotStatus, len(layout))
	for i, s := range layout {
		st := v1alpha1.SlotStatus{
			Position:       s.Position,
			PositionOnNode: s.PositionOnNode,
			NodeID:         s.NodeID,
			NodeName:       s.NodeName,
			State:          v1alpha1.SlotFree,
			Unavailable:    s.Unavailable(),
		}
		if s.Leaving && !s.LeavingSince.IsZero() {
			since := metav1.NewMicroTime(s.LeavingSince)
			st.LeavingSince = &since
		}
		if p, ok := prev[s.Position]; ok && p.NodeName == s.NodeName && p.PositionOnNode == s.PositionOnNode {
			st.State, st.PodName, st.PodUID = p.State, p.PodName, p.PodUID
			if st.State == "" {
				st.State = v1alpha1.SlotFree
			}
		}
		out[i] = st
	}
	return out
}
