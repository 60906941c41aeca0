package extender

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// PodDeleted drops the pending reservation of a deleted pod, so it is never written: a
// written one would hold the slot until the reconciler's next pass. A slot its slice shows
// the pod holding is free from now on (released): the informer's deletion event is the
// proof that the pod is gone, which its mere absence from the cache is not (the informer may
// not have seen a pod that the extender read live).
func (r *Reserver) PodDeleted(pod *corev1.Pod) {
	bed := pod.Labels[v1alpha1.TestBedLabel]
	if bed == "" || pod.Labels[v1alpha1.GhostLabel] == "true" {
		return
	}
	b := r.known(types.NamespacedName{Namespace: pod.Namespace, Name: bed})
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for pos, held := range b.pending {
		if held.UID == pod.UID {
			delete(b.pending, pos)
			b.ix = nil
		}
	}
	for _, sl := range b.base {
		for _, s := range sl.Slots {
			if s.PodUID == pod.UID && s.State != v1alpha1.SlotFree && s.State != "" {
				r.release(b, s)
			}
		}
	}
}

// release takes a slot that base shows held as free: its holder no longer holds it. Called
// with b.mu held.
func (r *Reserver) release(b *bedState, s v1alpha1.SlotStatus) {
	if isReleased(b.released, s.Position, s.PodUID) {
		return
	}
	if b.released == nil {
		b.released = map[int32]slots.Pod{}
	}
	b.released[s.Position] = slots.Pod{Name: s.PodName, UID: s.PodUID}
	b.ix = nil
	r.releases.Inc()
	r.Log.Info("slot free before its slice says so", "testbed", b.key.String(), "slot", s.Position, "holder", s.PodName)
}

// releaseFinished releases those of the allowed slots whose holder, as base shows it, has
// finished (Succeeded or Failed) in the pod informer, and tells whether it released any.
// It reads the informer only: no API call is made under the bed's lock. A holder the
// informer does not have, or has under another UID, is not taken as gone: the informer may
// not have seen it yet (a pod the extender read live), and a deletion reaches PodDeleted.
// Called with b.mu held, on the "no slot" path only.
func (r *Reserver) releaseFinished(ctx context.Context, b *bedState, allowed []int32) bool {
	ix := b.index()
	released := false
	var holder corev1.Pod // each Get overwrites it whole
	for _, pos := range allowed {
		s, ok := ix.Slot(pos)
		if !ok || s.State == v1alpha1.SlotFree || s.State == "" || s.PodUID == "" {
			continue
		}
		if _, ours := b.pending[pos]; ours {
			continue // a reservation of this process, for a pod not placed yet
		}
		if err := r.Cache.Get(ctx, types.NamespacedName{Namespace: b.key.Namespace, Name: s.PodName}, &holder); err != nil {
			continue
		}
		if holder.UID == s.PodUID && (holder.Status.Phase == corev1.PodSucceeded || holder.Status.Phase == corev1.PodFailed) {
			r.release(b, s)
			released = true
		}
	}
	return released
}

// isReleased tells whether released has the slot at pos released from holder uid.
func isReleased(released map[int32]slots.Pod, pos int32, uid types.UID) bool {
	held, ok := released[pos]
	return ok && held.UID == uid
}
