package slots

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ObservedPod is what the reconciler needs to know of a pod that carries the test bed's
// label: a ghost, or a real pod the extender placed into a slot.
type ObservedPod struct {
	Name     string
	UID      types.UID
	NodeName string // empty while unscheduled
	Ghost    bool
	// Slot is the position of the slot the pod holds by its proven claim (ProvenSlot); -1
	// if none, or if the claim is not the extender's.
	Slot int32
	// PositionOnNode is a ghost's position on its node.
	PositionOnNode int32
	// Requests are the pod's resource requests (a ghost's one container).
	Requests corev1.ResourceList
	// Terminating: the pod has a deletion timestamp. Overdue is how long ago that timestamp
	// passed (it is the end of the pod's grace period): a terminating pod overdue by more
	// than StuckTerminating is stuck, and holds nothing back any more.
	Terminating bool
	Overdue     time.Duration
	// Finished: the pod succeeded or failed; it no longer uses its slot.
	Finished bool
	// Unschedulable: the scheduler tried the pod and found no place (its PodScheduled
	// condition is False with reason Unschedulable).
	Unschedulable bool
}

// Plan is one pass of the ghost-pod reconciler.
type Plan struct {
	// InProgress is set when part of the bed was held back: acting there now could delete a
	// ghost a preemption is about to remove, or create one into room a pod is taking. The
	// rest of the bed is planned as usual. Retry soon for the part held back.
	InProgress bool
	// Reason says, for people, what was held back and why.
	Reason string
	// HeldNodes are the nodes whose ghosts are neither created nor deleted in this pass, in
	// name order: a pod on each is terminating.
	HeldNodes []string
	// HeldSlots are the slots whose ghost is neither created nor deleted in this pass, in
	// position order: a pod not bound to a node yet holds each by its proven claim (written
	// on the preemption path, before the pod binds).
	HeldSlots []int32
	// SkippedNodes are the nodes that are not Ready, in name order: their ghosts are neither
	// created nor deleted, and their pods hold nothing back. Nothing there is in progress:
	// it waits for the node.
	SkippedNodes []string
	// Create: slots that should hold a ghost and hold none (desired and missing).
	Create []Slot
	// Delete: ghosts no slot wants (existing and undesired): their node left the test bed,
	// the slot size changed, a real pod took their slot, or they are duplicates.
	Delete []ObservedPod
	// Keep: ghosts that are exactly as desired (desired and existing).
	Keep []ObservedPod
}

// ghostKey is what makes an observed ghost equal to a desired one: same node, same position
// on the node, same resource requests.
type ghostKey struct {
	node     string
	position int32
	requests string
}

// RequestsKey renders resource requests canonically (sorted names, canonical quantities),
// so equal requests give equal keys.
func RequestsKey(r corev1.ResourceList) string {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var b []byte
	for _, name := range names {
		q := r[corev1.ResourceName(name)]
		b = append(b, name...)
		b = append(b, '=')
		b = append(b, q.String()...)
		b = append(b, ';')
	}
	return string(b)
}

// PlanGhosts compares the ghosts the layout wants with the pods that exist. A slot wants a
// ghost unless a live real pod on the slot's node holds it. ghostRequests is what every
// ghost requests: the slot's resources plus one unit of the slot resource.
//
// Pods in motion hold back only what they touch. A terminating pod (ghost or real) holds
// back its node: its room is not free yet, and a ghost there may be the victim of a
// preemption under way. A pod not bound yet that holds a slot holds back that slot alone: the
// scheduler may be evicting its ghost for it. Everything else is planned: one pod stuck
// Terminating on a lost node must not freeze the ghosts of every other node.
//
// Holding back is bounded: a pod still terminating StuckTerminating after its grace period
// ended (a node that lost its kubelet, a finalizer nobody removes) holds back nothing, and
// its node is planned again (a stuck ghost still counts as its slot's ghost; a stuck real
// pod still takes its slot). Nodes that are not Ready are skipped whole. A slot a running
// job holds (Slot.Assigned) has no ghost, even when none of the job's pods is there.
//
// A pod not bound yet that holds no slot holds back nothing. It may wait for good (a
// preempted job's executor asked for again, the ninth pod for eight slots), and ghosts must be
// kept up meanwhile. It cannot race with this pass either: the extender writes a pod's slot
// label before it answers the scheduler, so by the time a ghost is evicted for a pod, the pod
// is listed with its slot.
func PlanGhosts(layout []Slot, ghostRequests corev1.ResourceList, pods []ObservedPod) Plan {
	skipped := map[string]bool{}
	for _, s := range layout {
		if s.Unready || s.Taint != "" {
			skipped[s.NodeName] = true
		}
	}
	held := findHeldBack(layout, pods, skipped)

	taken := map[int32]string{} // slot position -> node of the real pod holding it
	for _, p := range pods {
		if !p.Ghost && !p.Finished && p.Slot >= 0 {
			taken[p.Slot] = p.NodeName
		}
	}
	reqKey := RequestsKey(ghostRequests)
	want := make(map[ghostKey]Slot, len(layout))
	for _, s := range layout {
		if node, ok := taken[s.Position]; (ok && node == s.NodeName) || s.Unready || s.Taint != "" {
			continue
		}
		if s.Leaving {
			continue // its node is not the bed's: a ghost there would keep room nobody may use
		}
		if s.NoRoom != "" {
			continue // a ghost there would not fit beside the node's other slots
		}
		if s.Assigned {
			// No ghost: the job's pod may be on its way (Spark asks for a lost executor
			// again), and a ghost bound straight to the node would take its room; one still
			// there goes, so that the pod finds its own slot's room and not a neighbour's.
			continue
		}
		want[ghostKey{s.NodeName, s.PositionOnNode, reqKey}] = s
	}

	plan := Plan{HeldNodes: held.nodeNames(), HeldSlots: held.slotPositions(), SkippedNodes: slices.Sorted(maps.Keys(skipped))}
	if len(plan.HeldNodes)+len(plan.HeldSlots) > 0 {
		plan.InProgress, plan.Reason = true, held.reason()
	}
	ghosts := make([]ObservedPod, 0, len(pods))
	for _, p := range pods {
		if p.Ghost {
			ghosts = append(ghosts, p)
		}
	}
	// Oldest first would need timestamps; name order is stable and enough to pick which
	// duplicate survives.
	slices.SortFunc(ghosts, func(a, b ObservedPod) int { return cmp.Compare(a.Name, b.Name) })
	for _, g := range ghosts {
		k := ghostKey{g.NodeName, g.PositionOnNode, RequestsKey(g.Requests)}
		if _, ok := want[k]; ok && !g.Finished {
			plan.Keep = append(plan.Keep, g)
			delete(want, k)
			continue
		}
		if !held.ghost(g) && !skipped[g.NodeName] {
			plan.Delete = append(plan.Delete, g)
		}
	}
	for _, s := range layout {
		if _, ok := want[ghostKey{s.NodeName, s.PositionOnNode, reqKey}]; ok && !held.slot(s) {
			plan.Create = append(plan.Create, s)
		}
	}
	return plan
}

// heldBack is what the pods in motion hold back from one pass. Each node or slot keeps the
// pod its reason names: the first by name, so the reason does not change with list order.
type heldBack struct {
	nodes map[string]ObservedPod // terminating pods, by node
	slots map[int32]ObservedPod  // pods not bound yet, by the slot they hold
	// places are the node and position on the node of each held slot: how a ghost names
	// its slot.
	places map[nodePosition]bool
}

type nodePosition struct {
	node     string
	position int32
}

// StuckTerminating is how long past its grace period a terminating pod may hold back its
// node's ghosts.
const StuckTerminating = 2 * time.Minute

func findHeldBack(layout []Slot, pods []ObservedPod, skipped map[string]bool) heldBack {
	h := heldBack{nodes: map[string]ObservedPod{}, slots: map[int32]ObservedPod{}, places: map[nodePosition]bool{}}
	for _, p := range pods {
		switch {
		case p.Finished, skipped[p.NodeName]:
		case p.Terminating && p.Overdue > StuckTerminating:
		case p.NodeName != "" && p.Terminating:
			if q, ok := h.nodes[p.NodeName]; !ok || p.Name < q.Name {
				h.nodes[p.NodeName] = p
			}
		case p.NodeName == "" && !p.Ghost && p.Slot >= 0:
			if q, ok := h.slots[p.Slot]; !ok || p.Name < q.Name {
				h.slots[p.Slot] = p
			}
		}
	}
	for _, s := range layout {
		if _, ok := h.slots[s.Position]; ok {
			h.places[nodePosition{s.NodeName, s.PositionOnNode}] = true
		}
	}
	return h
}

// ghost reports whether an existing ghost must be left as it is.
func (h heldBack) ghost(g ObservedPod) bool {
	_, node := h.nodes[g.NodeName]
	return node || h.places[nodePosition{g.NodeName, g.PositionOnNode}]
}

// slot reports whether a slot must not get a ghost in this pass.
func (h heldBack) slot(s Slot) bool {
	_, node := h.nodes[s.NodeName]
	_, slot := h.slots[s.Position]
	return node || slot
}

func (h heldBack) nodeNames() []string { return slices.Sorted(maps.Keys(h.nodes)) }

func (h heldBack) slotPositions() []int32 { return slices.Sorted(maps.Keys(h.slots)) }

// reason names what was held back, the first few items only: it ends up in a status
// condition, and a bed of a thousand pods being deleted must not make it huge.
func (h heldBack) reason() string {
	var parts []string
	for _, n := range h.nodeNames() {
		parts = append(parts, fmt.Sprintf("node %s (pod %s is terminating)", n, h.nodes[n].Name))
	}
	for _, pos := range h.slotPositions() {
		parts = append(parts, fmt.Sprintf("slot %d (pod %s is not scheduled yet)", pos, h.slots[pos].Name))
	}
	const shown = 5
	if len(parts) > shown {
		parts = append(parts[:shown], fmt.Sprintf("%d more", len(parts)-shown))
	}
	return "held back: " + strings.Join(parts, ", ")
}
