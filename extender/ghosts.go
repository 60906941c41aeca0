package extender

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// GhostIndex is the cache's field index of ghost pods by test bed, node and position on the
// node: the preemption path finds a slot's ghost without scanning every pod.
const GhostIndex = "slotplane.io/ghost-slot"

// GhostIndexValue is the GhostIndex value of a pod ("" for pods that are not ghosts).
func GhostIndexValue(p *corev1.Pod) string {
	if p.Labels[v1alpha1.GhostLabel] != "true" || p.Spec.NodeName == "" {
		return ""
	}
	return ghostKey(p.Namespace, p.Labels[v1alpha1.TestBedLabel], p.Spec.NodeName, p.Labels[v1alpha1.PositionOnNodeLabel])
}

func ghostKey(namespace, bed, node, positionOnNode string) string {
	return namespace + "/" + bed + "/" + node + "/" + positionOnNode
}

// ghostsAt lists the ghost pods of one slot, found by the GhostIndex.
func (r *Reserver) ghostsAt(ctx context.Context, bed types.NamespacedName, slot v1alpha1.SlotStatus) ([]corev1.Pod, error) {
	var pods corev1.PodList
	key := ghostKey(bed.Namespace, bed.Name, slot.NodeName, strconv.Itoa(int(slot.PositionOnNode)))
	if err := r.Cache.List(ctx, &pods, client.InNamespace(bed.Namespace), client.MatchingFields{GhostIndex: key}); err != nil {
		return nil, fmt.Errorf("list ghosts of %s: %w", bed, err)
	}
	return pods.Items, nil
}

// Ghost returns the ghost pod holding a slot, preferring one that is not terminating.
func (r *Reserver) Ghost(ctx context.Context, bed types.NamespacedName, slot v1alpha1.SlotStatus) (*corev1.Pod, error) {
	ghosts, err := r.ghostsAt(ctx, bed, slot)
	if err != nil {
		return nil, err
	}
	var found *corev1.Pod
	for i := range ghosts {
		p := &ghosts[i]
		if p.DeletionTimestamp == nil {
			return p, nil
		}
		found = p
	}
	if found == nil {
		return nil, fmt.Errorf("slot %d on node %s has no ghost pod yet", slot.Position, slot.NodeName)
	}
	return found, nil
}

// ClearGhost deletes the ghost of a slot just reserved on the filter path. The scheduler
// passed the slot's node on room alone, so the pod is about to bind beside its own slot's
// ghost, into the room of another slot on the node: without this, the slot would have two
// live pods until the ghost reconciler's next pass, and the room the pod took would be
// missing when that other slot's pod or ghost comes. The slot is reserved for the pod
// first, and it is assigned to the pod's job, so the reconciler makes it no new ghost.
// Each delete is conditional on the ghost's UID: a ghost made since for another slot
// under the same name is left alone. It returns how many ghosts it deleted.
func (r *Reserver) ClearGhost(ctx context.Context, res Reservation) (int, error) {
	ghosts, err := r.ghostsAt(ctx, res.TestBed, res.Slot)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for i := range ghosts {
		g := &ghosts[i]
		if g.DeletionTimestamp != nil {
			continue
		}
		uid := g.UID
		err := r.Client.Delete(ctx, g, client.Preconditions{UID: &uid}, client.GracePeriodSeconds(0))
		switch {
		case err == nil:
			deleted++
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// gone already, or another pod under that name: not this slot's ghost any more
		default:
			return deleted, fmt.Errorf("delete ghost %s/%s of slot %d: %w", g.Namespace, g.Name, res.Slot.Position, err)
		}
	}
	return deleted, nil
}

// DisplacedGhost finds the ghost to evict for a pod whose slot has lost its ghost but whose
// node is still full: another pod took the room. That happens when a slot pod binds beside
// its own slot's ghost, on the room of a slot whose ghost was evicted for a pod still waiting
// to bind (the waiting pod lost its nomination, say while the extender was away). The ghost
// of the binder's slot then stands on room nobody may use; evicting it is what the ghost
// reconciler would do, and lets the waiting pod in. Only a ghost whose slot is held by a pod
// already bound to the node qualifies.
func (r *Reserver) DisplacedGhost(ctx context.Context, bed types.NamespacedName, slot v1alpha1.SlotStatus) (*corev1.Pod, error) {
	var held []v1alpha1.SlotStatus // the node's other slots, as held now
	b := r.known(bed)
	if b == nil {
		return nil, fmt.Errorf("%w: test bed %s was deleted", ErrUnknownTestBed, bed)
	}
	b.mu.Lock()
	if b.bed != nil {
		ix := b.index()
		for _, sl := range b.base {
			for _, s := range sl.Slots {
				if s.NodeName != slot.NodeName || s.Position == slot.Position {
					continue
				}
				if cur, ok := ix.Slot(s.Position); ok && cur.PodUID != "" {
					held = append(held, cur)
				}
			}
		}
	}
	b.mu.Unlock()

	for _, h := range held {
		var holder corev1.Pod
		if err := r.Cache.Get(ctx, types.NamespacedName{Namespace: bed.Namespace, Name: h.PodName}, &holder); err != nil {
			continue // gone, or not seen yet: its ghost is not known to be in the way
		}
		if holder.UID != h.PodUID || holder.Spec.NodeName != slot.NodeName || holder.DeletionTimestamp != nil {
			continue
		}
		ghosts, err := r.ghostsAt(ctx, bed, h)
		if err != nil {
			return nil, err
		}
		for i := range ghosts {
			if ghosts[i].DeletionTimestamp == nil {
				return &ghosts[i], nil
			}
		}
	}
	return nil, fmt.Errorf("slot %d on node %s has no ghost pod yet", slot.Position, slot.NodeName)
}
