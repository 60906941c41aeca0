// Package extender is slotplane's kube-scheduler extender. For every pod that requests the
// slot resource, the scheduler asks it where the pod may go (/filter) or whom to evict for it
// (/preempt), and it binds the pod (/bind); the extender answers with the node of a free
// slot among the pod's allowed slot ids, reserves that slot, names the slot's ghost pod as
// the only victim, and binds the pod with its claim on the slot. Which slot a pod gets is
// decided by the slots package; this package keeps the reservations and does the I/O.
//
// # Reservations
//
// A decision is made in memory, under one lock per test bed, on the newest slot slices of
// the bed the extender knows plus the reservations it made since (its pending reservations), less the
// slots whose holder it has seen go (its releases: the pod informer reported the holder's
// deletion, or shows it finished). No decision waits on the API server, and /filter writes
// nothing for a pod: the scheduler calls it inside its scheduling cycle, one pod at a time.
// The reservation is made durable on the pod itself when the scheduler binds it: the
// extender is its binder, and the binding carries the claim annotation that ties the slot
// to the pod's UID (slots.ProvenSlot), so the pod is bound and its slot recorded in one
// write, in the scheduler's binding cycle, which runs beside the next pods' scheduling. On
// the preemption path the claim is patched onto the pod at once, since the pod waits for its
// victim to go before it binds. The bed's slot slices follow a few milliseconds later: a
// flusher per test bed writes every pending reservation, with the releases, in one
// optimistic update per slice that has any, and on a conflict reads the fresh slice and
// applies them again. A slice holds at most v1alpha1.SlotsPerSlice slots, so a write costs
// the same on a bed of 8 slots and of 8,000; batching them makes one write carry the
// reservations of many pods, which is what lets slot pods schedule at the scheduler's pace.
//
// After a restart the extender reads the slices and the pods: a pod whose proven claim names
// a slot its slice shows free is pending again. A reservation that /filter made in memory
// and a restart lost is made again when the pod is bound, on the node the scheduler chose. One extender process decides for
// a test bed at a time; a second one would not see the first's pending reservations (see
// docs/extender.md).
//
// # What a request may not do
//
// A request names a pod; it is never trusted for more. The pod is looked up by name and must
// have the UID the request gives (LivePod); its labels and annotations are read from the
// cluster's copy, and every write to it carries that UID as a precondition, so a pod deleted
// and created again under the same name is never written for its predecessor. Per-bed state,
// and the flusher goroutine that goes with it, exists only for TestBeds the informer has: a
// pod naming a test bed that does not exist costs an answer and nothing that stays.
package extender

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// ErrUnknownTestBed: the pod names a test bed that does not exist (or was just deleted).
var ErrUnknownTestBed = errors.New("unknown test bed")

// Reserver reserves slots for pods and writes the reservations to the test beds' slot
// slices.
type Reserver struct {
	// Cache serves TestBeds and test bed pods from informers; Client writes, and reads the
	// live TestBed when the cached one may be stale.
	Cache  client.Reader
	Client client.Client
	Log    *slog.Logger
	// FlushInterval is the least time between two flushes of one test bed.
	FlushInterval time.Duration

	ctx context.Context
	mu  sync.Mutex
	// beds holds a state for each existing TestBed that a request has named; TestBedDeleted
	// drops it. Never keyed by what a request says alone: see bed.
	beds map[types.NamespacedName]*bedState
	// flushes counts slice writes; conflicts counts reservations found held by another pod;
	// releases counts slots seen freed before their slice said so.
	flushes, conflicts, releases prometheus.Counter
	bedCount                     prometheus.GaugeFunc
}

// bedState is what the extender knows of one test bed.
type bedState struct {
	key types.NamespacedName
	mu  sync.Mutex
	// bed is the newest TestBed read; nil until the first call, and after the bed is gone.
	bed *v1alpha1.TestBed
	// base holds the newest of each of the bed's slot slices read (informer, live read, or
	// the extender's own write), by index. Never modified in place: the cache shares them.
	base map[int32]*v1alpha1.SlotSlice
	// pending are reservations made since base, by slot position.
	pending map[int32]slots.Pod
	// released are slots base shows held by a pod that no longer holds them (the pod was
	// deleted, or finished), by slot position: the holder base names. They are free here
	// at once, and written to their slice with the next flush.
	released map[int32]slots.Pod
	// ix is base's slots, less released, plus pending; nil when it must be rebuilt.
	ix *slots.Index
	// seeded: pods claimed before this process started are in pending.
	seeded bool
	wake   chan struct{}
	// stop ends the bed's flusher; dropped is set (under mu) once the TestBed is gone, so a
	// call that found the state just before is turned away instead of reserving into it.
	stop    context.CancelFunc
	stopped <-chan struct{}
	dropped bool
}

// NewReserver returns a Reserver whose flushers run until ctx ends.
func NewReserver(ctx context.Context, cache client.Reader, cl client.Client, log *slog.Logger) *Reserver {
	r := &Reserver{
		Cache: cache, Client: cl, Log: log, ctx: ctx, FlushInterval: DefaultFlushInterval,
		flushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slotplane_extender_slice_writes_total",
			Help: "Slot slice writes that carried reservations, including conflicts.",
		}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slotplane_extender_reservation_conflicts_total",
			Help: "Reservations dropped because the slot's slice shows it held by another pod; nonzero means two extenders decided for one test bed.",
		}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "slotplane_extender_holders_released_total",
			Help: "Slots the extender took as free before their slice did, because their holder pod was deleted or finished.",
		}),
	}
	r.bedCount = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "slotplane_extender_testbeds",
		Help: "Test beds the extender keeps state (and a slice flusher) for: existing TestBeds that a call named.",
	}, func() float64 { return float64(r.Beds()) })
	return r
}

// Collectors are the reserver's metrics.
func (r *Reserver) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.flushes, r.conflicts, r.releases, r.bedCount}
}

// Beds is the number of test beds the reserver keeps state for.
func (r *Reserver) Beds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.beds)
}

// Reservation is a slot reserved for a pod.
type Reservation struct {
	TestBed types.NamespacedName
	Slot    v1alpha1.SlotStatus
	// Held: the pod had this slot already (the scheduler retried).
	Held bool
}

// Reserve finds the pod's slot among candidates (nil: any node) and reserves it in memory;
// BindPod, or ClaimSlot on the preemption path, makes it durable. A *slots.NoSlotError says
// why there is no slot.
func (r *Reserver) Reserve(ctx context.Context, req SlotRequest, candidates []string) (Reservation, error) {
	var tb v1alpha1.TestBed // read-only: the cache may hand out its own copy
	b, err := r.bed(ctx, req.TestBed, &tb)
	if err != nil {
		return Reservation{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return Reservation{}, fmt.Errorf("%w: test bed %s was deleted", ErrUnknownTestBed, req.TestBed)
	}
	if err := r.observe(ctx, b, &tb); err != nil {
		return Reservation{}, err
	}
	if !b.seeded {
		if err := r.seed(ctx, b); err != nil {
			return Reservation{}, err
		}
	}
	d, err := b.index().Choose(req.Pod.UID, req.Allowed, candidates)
	if _, ok := errors.AsType[*slots.NoSlotError](err); ok && r.releaseFinished(ctx, b, req.Allowed) {
		// A slot of the pod's was held by a pod that has finished since: its slice, which
		// the reconciler writes, has not caught up yet, and need not.
		d, err = b.index().Choose(req.Pod.UID, req.Allowed, candidates)
	}
	if err != nil {
		return Reservation{}, err
	}
	res := Reservation{TestBed: req.TestBed, Slot: d.Slot, Held: d.Held}
	if d.Held {
		return res, nil
	}
	if res.Slot, err = b.ix.Reserve(d.Slot.Position, req.Pod); err != nil {
		return Reservation{}, err // Choose just said the slot is free: cannot happen
	}
	b.pending[d.Slot.Position] = req.Pod
	select {
	case b.wake <- struct{}{}:
	default: // a flush is due already and will take this reservation along
	}
	return res, nil
}

// Unreserve takes back a reservation that went no further: its ghost could not be cleared,
// or its claim could not be written (the pod is gone, or the API server refused). A
// reservation already in its slice stays; the reconciler releases it once the pod is gone.
func (r *Reserver) Unreserve(res Reservation, pod slots.Pod) {
	b := r.known(res.TestBed)
	if b == nil {
		return // the test bed is gone, and its reservations with it
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if held, ok := b.pending[res.Slot.Position]; ok && held.UID == pod.UID {
		delete(b.pending, res.Slot.Position)
		b.ix = nil
	}
}

// bed returns the state of an existing test bed, reading the TestBed into tb, and makes the
// state (and starts its flusher) on the first call for the bed. A test bed the cache does
// not have is ErrUnknownTestBed, and nothing is kept for it: what a request names must not
// grow the process.
//
// The read happens under r.mu, so that TestBedDeleted, which the informer calls only after
// its cache has dropped the TestBed, cannot run between a read that found it and the
// state's creation and leave a state behind for a bed that is gone.
func (r *Reserver) bed(ctx context.Context, key types.NamespacedName, tb *v1alpha1.TestBed) (*bedState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.Cache.Get(ctx, key, tb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: test bed %s does not exist", ErrUnknownTestBed, key)
		}
		return nil, fmt.Errorf("get test bed %s: %w", key, err)
	}
	if b, ok := r.beds[key]; ok {
		return b, nil
	}
	if r.beds == nil {
		r.beds = map[types.NamespacedName]*bedState{}
	}
	ctx, cancel := context.WithCancel(r.ctx)
	b := &bedState{key: key, base: map[int32]*v1alpha1.SlotSlice{}, pending: map[int32]slots.Pod{}, wake: make(chan struct{}, 1), stop: cancel, stopped: ctx.Done()}
	r.beds[key] = b
	go r.flushLoop(ctx, b)
	return b, nil
}

// known returns the state of a test bed if there is one.
func (r *Reserver) known(key types.NamespacedName) *bedState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.beds[key]
}

// TestBedDeleted drops the state of a deleted TestBed and stops its flusher. A state that
// already follows a newer TestBed of the same name (deleted and created again, the events
// seen late) is kept.
func (r *Reserver) TestBedDeleted(tb *v1alpha1.TestBed) {
	key := types.NamespacedName{Namespace: tb.Namespace, Name: tb.Name}
	r.mu.Lock()
	b, ok := r.beds[key]
	if !ok {
		r.mu.Unlock()
		return
	}
	b.mu.Lock()
	if b.bed != nil && tb.UID != "" && b.bed.UID != tb.UID {
		b.mu.Unlock()
		r.mu.Unlock()
		return
	}
	delete(r.beds, key)
	r.mu.Unlock()
	b.dropped = true
	b.forget()
	b.mu.Unlock()
	b.stop()
}

// forget drops what is known of a test bed that is gone. Called with b.mu held.
func (b *bedState) forget() {
	b.bed, b.ix, b.seeded = nil, nil, false
	clear(b.base)
	clear(b.pending)
	clear(b.released)
}

// index returns base's slots, less released, plus pending, building it when needed. Called
// with b.mu held, bed set.
func (b *bedState) index() *slots.Index {
	if b.ix == nil {
		statuses := b.slots()
		b.freeReleased(statuses)
		b.ix = slots.NewIndex(statuses)
		for pos, pod := range b.pending {
			// observe dropped what conflicts with base less released, so this succeeds.
			_, _ = b.ix.Reserve(pos, pod)
		}
	}
	return b.ix
}

// slots is a copy of base's slots, ordered by position. Called with b.mu held.
func (b *bedState) slots() []v1alpha1.SlotStatus {
	n := 0
	for _, sl := range b.base {
		n += len(sl.Slots)
	}
	out := make([]v1alpha1.SlotStatus, 0, n)
	for _, sl := range b.base {
		out = append(out, sl.Slots...)
	}
	slices.SortFunc(out, func(x, y v1alpha1.SlotStatus) int { return cmp.Compare(x.Position, y.Position) })
	return out
}

// freeReleased frees the released slots in statuses, a copy of base's. Called with b.mu
// held.
func (b *bedState) freeReleased(statuses []v1alpha1.SlotStatus) {
	if len(b.released) == 0 {
		return
	}
	for i := range statuses {
		if holder, ok := b.released[statuses[i].Position]; ok {
			_ = slots.Release(&statuses[i], holder) // observe dropped releases base does not show
		}
	}
}
