package slots

import (
	"cmp"
	"slices"

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
	// Slot is the position of the slot the pod holds (its slot-id label); -1 if none.
	Slot int32
	// PositionOnNode is a ghost's position on its node.
	PositionOnNode int32
	// Requests are the pod's resource requests (a ghost's one container).
	Requests corev1.ResourceList
	// Terminating: the pod has a deletion timestamp.
	Terminating bool
	// Finished: the pod succeeded or failed; it no longer uses its slot.
	Finished bool
	// Unschedulable: the scheduler tried the pod and found no place (its PodScheduled
	// condition is False with reason Unschedulable).
	Unschedulable bool
}

// Plan is one pass of the ghost-pod reconciler.
type Plan struct {
	// InProgress is set when the pass must not act now: slot pods are still being scheduled
	// or terminated, and acting on that picture could delete a ghost that a preemption is
	// about to remove, or create one into a slot being taken. Retry later.
	InProgress bool
	Reason     string
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
// A pod the scheduler found no place for, and that holds no slot, is waiting, not being
// placed: it does not stop the pass. Such a pod may wait for good (a preempted job's
// executor asked for again, the ninth pod for eight slots), and ghosts must be kept up
// meanwhile. The extender labels a pod with its slot before it answers, so a pod whose
// placement could race with this pass carries a slot.
func PlanGhosts(layout []Slot, ghostRequests corev1.ResourceList, pods []ObservedPod) Plan {
	for _, p := range pods {
		if p.Finished || (p.NodeName == "" && p.Unschedulable && p.Slot < 0 && !p.Ghost) {
			continue
		}
		if p.NodeName == "" {
			return Plan{InProgress: true, Reason: "pod " + p.Name + " is not scheduled yet"}
		}
		if p.Terminating {
			return Plan{InProgress: true, Reason: "pod " + p.Name + " is terminating"}
		}
	}

	taken := map[int32]string{} // slot position -> node of the real pod holding it
	for _, p := range pods {
		if !p.Ghost && !p.Finished && p.Slot >= 0 {
			taken[p.Slot] = p.NodeName
		}
	}
	reqKey := RequestsKey(ghostRequests)
	want := make(map[ghostKey]Slot, len(layout))
	for _, s := range layout {
		if node, ok := taken[s.Position]; ok && node == s.NodeName {
			continue
		}
		want[ghostKey{s.NodeName, s.PositionOnNode, reqKey}] = s
	}

	var plan Plan
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
		plan.Delete = append(plan.Delete, g)
	}
	for _, s := range layout {
		if _, ok := want[ghostKey{s.NodeName, s.PositionOnNode, reqKey}]; ok {
			plan.Create = append(plan.Create, s)
		}
	}
	return plan
}
