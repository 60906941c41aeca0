package extender

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

const (
	// flushRetry is the pause after a slice write that failed for another reason than a
	// conflict (the API server is away): the reservations stay pending and are written later.
	flushRetry = time.Second
	// DefaultFlushInterval is the least time between two flushes of one test bed. The first
	// reservation after a quiet spell is written at once; under load, a flush carries every
	// reservation of the interval, and each write goes to every watcher of SlotSlices.
	DefaultFlushInterval = 250 * time.Millisecond
)

// flushLoop writes a test bed's pending reservations to its slices whenever there are some,
// at most once per FlushInterval, until ctx ends (the reserver's, or the bed is deleted).
func (r *Reserver) flushLoop(ctx context.Context, b *bedState) {
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		for !r.flush(b) {
			if !pause(flushRetry) {
				return
			}
		}
		if !pause(r.FlushInterval) {
			return
		}
	}
}

// flush writes the pending reservations once, one write per slot slice that has any,
// rereading a slice after a conflict; false means try again later. Reservations made
// during the writes, in a slice written already, go in the next flush.
func (r *Reserver) flush(b *bedState) bool {
	written := map[int32]bool{}
	for {
		b.mu.Lock()
		if len(b.pending) == 0 || b.bed == nil {
			b.mu.Unlock()
			return true
		}
		// The first slice, by index, that has a pending reservation and was not written.
		index := int32(-1)
		for pos := range b.pending {
			if i := v1alpha1.SliceOf(pos); !written[i] && (index < 0 || i < index) {
				index = i
			}
		}
		if index < 0 {
			select {
			case b.wake <- struct{}{}:
			default:
			}
			b.mu.Unlock()
			return true
		}
		known, ok := b.base[index]
		if !ok {
			// observeSlice drops what no slice of base holds: cannot happen.
			for pos := range b.pending {
				if v1alpha1.SliceOf(pos) == index {
					delete(b.pending, pos)
				}
			}
			b.ix = nil
			b.mu.Unlock()
			continue
		}
		updated := known.DeepCopy()
		b.freeReleased(updated.Slots)
		batch := 0
		for i := range updated.Slots {
			s := &updated.Slots[i]
			if pod, ok := b.pending[s.Position]; ok && slots.Reserve(s, pod) == nil {
				batch++
			}
		}
		b.mu.Unlock()

		err := r.Client.Update(r.ctx, updated)
		r.flushes.Inc()
		b.mu.Lock()
		switch {
		case err == nil:
			r.observeSlice(b, updated) // drops the written reservations from pending
			written[index] = true
			b.mu.Unlock()
			continue // the next slice, if any
		case apierrors.IsConflict(err):
			b.mu.Unlock()
			var live v1alpha1.SlotSlice
			if err := r.Client.Get(r.ctx, client.ObjectKeyFromObject(known), &live); err != nil {
				if apierrors.IsNotFound(err) {
					b.mu.Lock()
					r.sliceDeleted(b, known)
					b.mu.Unlock()
					continue
				}
				r.Log.Warn("reread a slot slice after a conflict", "testbed", b.key.String(), "slice", known.Name, "err", err)
				return false
			}
			b.mu.Lock()
			r.observeSlice(b, &live)
			b.mu.Unlock()
			continue
		case apierrors.IsNotFound(err):
			r.sliceDeleted(b, known)
			b.mu.Unlock()
			continue
		default:
			b.mu.Unlock()
			if r.ctx.Err() == nil {
				r.Log.Warn("write reservations to a slot slice", "testbed", b.key.String(), "slice", known.Name, "pending", batch, "err", err)
			}
			return false
		}
	}
}
