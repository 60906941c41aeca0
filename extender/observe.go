package extender

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/slots"
)

// observe takes tb as the bed, and from the cache every slot slice of it that is newer than
// the one known, dropping the pending reservations they already show. A bed deleted and
// made again under the same name starts afresh. Called with b.mu held.
func (r *Reserver) observe(ctx context.Context, b *bedState, tb *v1alpha1.TestBed) error {
	if b.bed != nil && b.bed.UID != tb.UID {
		b.forget() // the test bed was deleted and created again: nothing carries over
	}
	if b.bed == nil || b.bed.ResourceVersion != tb.ResourceVersion {
		b.bed = tb.DeepCopy()
	}
	var list v1alpha1.SlotSliceList
	if err := r.Cache.List(ctx, &list, client.InNamespace(b.key.Namespace), client.MatchingLabels{v1alpha1.TestBedLabel: b.key.Name}); err != nil {
		return fmt.Errorf("list the slot slices of %s: %w", b.key, err)
	}
	for i := range list.Items {
		r.observeSlice(b, &list.Items[i])
	}
	return nil
}

// observeSlice takes sl into base if it is one of the bed's and newer than the one known,
// and drops the pending reservations and releases of its slots that it shows done. sl is
// kept as it is: the caller must not change it afterwards. A bed forgotten meanwhile (its
// TestBed deleted while a write was in flight) takes nothing. Called with b.mu held.
func (r *Reserver) observeSlice(b *bedState, sl *v1alpha1.SlotSlice) {
	if b.bed == nil || !slotslices.Owned(sl, b.bed) {
		return
	}
	if known, ok := b.base[sl.Index]; ok && known.UID == sl.UID {
		if newer, err := resourceversion.CompareResourceVersion(sl.ResourceVersion, known.ResourceVersion); err == nil && newer <= 0 {
			return
		}
	}
	b.base[sl.Index], b.ix = sl, nil
	byPosition := make(map[int32]v1alpha1.SlotStatus, len(sl.Slots))
	for _, s := range sl.Slots {
		byPosition[s.Position] = s
	}
	r.settle(b, sl.Index, byPosition)
}

// sliceDeleted drops a deleted slot slice from base: its slots left the bed (it shrank).
func (r *Reserver) sliceDeleted(b *bedState, sl *v1alpha1.SlotSlice) {
	if known, ok := b.base[sl.Index]; !ok || known.UID != sl.UID {
		return
	}
	delete(b.base, sl.Index)
	b.ix = nil
	r.settle(b, sl.Index, nil)
}

// settle drops, among the slots of slice index, the releases base shows done and the
// pending reservations base shows written, or that it makes impossible. byPosition is the
// slice's slots as base has them now. Called with b.mu held.
func (r *Reserver) settle(b *bedState, index int32, byPosition map[int32]v1alpha1.SlotStatus) {
	for pos, holder := range b.released {
		if v1alpha1.SliceOf(pos) != index {
			continue
		}
		if s, ok := byPosition[pos]; !ok || s.PodUID != holder.UID || s.State == v1alpha1.SlotFree || s.State == "" {
			delete(b.released, pos) // the slice caught up (or the slot left the bed)
		}
	}
	for pos, pod := range b.pending {
		if v1alpha1.SliceOf(pos) != index {
			continue
		}
		s, ok := byPosition[pos]
		switch {
		case !ok:
			r.Log.Warn("a reserved slot left the test bed before its reservation was written", "testbed", b.key.String(), "slot", pos, "pod", pod.Name)
			delete(b.pending, pos)
		case s.PodUID == pod.UID:
			delete(b.pending, pos) // written
		case s.State == v1alpha1.SlotFree || s.State == "":
		case isReleased(b.released, pos, s.PodUID):
			// held by the pod this process saw go: the flush writes the release with the
			// reservation.
		default:
			r.Log.Error("a slot reserved here is held by another pod in its slice", "testbed", b.key.String(), "slot", pos, "pod", pod.Name, "holder", s.PodName)
			r.conflicts.Inc()
			delete(b.pending, pos)
		}
	}
}

// SliceDeleted drops a deleted slot slice from the state of its test bed.
func (r *Reserver) SliceDeleted(sl *v1alpha1.SlotSlice) {
	b := r.known(types.NamespacedName{Namespace: sl.Namespace, Name: sl.TestBed})
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r.sliceDeleted(b, sl)
}

// seed makes pending the reservations of pods claimed before this process started whose
// slot its slice still shows free. Only a proven claim counts (slots.ProvenSlot): a pod
// created with a claim of its own choosing must not take a slot here. Called with b.mu
// held, after observe.
func (r *Reserver) seed(ctx context.Context, b *bedState) error {
	var pods corev1.PodList
	if err := r.Cache.List(ctx, &pods, client.InNamespace(b.key.Namespace), client.MatchingLabels{v1alpha1.TestBedLabel: b.key.Name}); err != nil {
		return fmt.Errorf("list slot pods of %s: %w", b.key, err)
	}
	free := map[int32]bool{}
	held := map[types.UID]bool{}
	for _, sl := range b.base {
		for _, s := range sl.Slots {
			if s.State == v1alpha1.SlotFree || s.State == "" {
				free[s.Position] = true
			} else {
				held[s.PodUID] = true
			}
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		pos, proven := slots.ProvenSlot(p)
		finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !proven || finished || p.Labels[v1alpha1.GhostLabel] == "true" || held[p.UID] || !free[pos] {
			continue
		}
		if other, taken := b.pending[pos]; taken {
			r.Log.Error("two pods claim one free slot; the first keeps it", "testbed", b.key.String(), "slot", pos, "pod", p.Name, "holder", other.Name)
			r.conflicts.Inc()
			continue
		}
		b.pending[pos] = slots.Pod{Name: p.Name, UID: p.UID}
	}
	b.seeded, b.ix = true, nil
	if len(b.pending) > 0 {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return nil
}
