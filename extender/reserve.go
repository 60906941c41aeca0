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
// docs/architecture.md).
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/slots"
)

// ErrBadPod: the pod lacks what a slot pod must carry (test bed label, slot ids).
var ErrBadPod = errors.New("not a valid slot pod")

// ErrNotThePod: the request names a pod the cluster does not have under that name and UID
// (deleted, created again, or never there). Nothing is written for such a request.
var ErrNotThePod = errors.New("the request does not name a live pod")

// ErrUnknownTestBed: the pod names a test bed that does not exist (or was just deleted).
var ErrUnknownTestBed = errors.New("unknown test bed")

// ErrNoGrant: the pod's BatchJob holds no grant in the pod's test bed, or the pod names no
// BatchJob. It is an error, not a "no slot" answer: the scheduler then tries the pod again
// within seconds, and a grant the extender's cache has not seen yet is seen by then.
var ErrNoGrant = errors.New("no grant")

const (
	// flushRetry is the pause after a slice write that failed for another reason than a
	// conflict (the API server is away): the reservations stay pending and are written later.
	flushRetry = time.Second
	// DefaultFlushInterval is the least time between two flushes of one test bed. The first
	// reservation after a quiet spell is written at once; under load, a flush carries every
	// reservation of the interval, and each write goes to every watcher of SlotSlices.
	DefaultFlushInterval = 250 * time.Millisecond
)

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

// SlotRequest is what a pod asks for, read from its labels and annotations.
type SlotRequest struct {
	TestBed types.NamespacedName
	Allowed []int32
	Pod     slots.Pod
}

// RequestOf reads a pod's slot request; a pod without test bed label or with bad slot ids
// is ErrBadPod with the reason.
func RequestOf(pod *corev1.Pod) (SlotRequest, error) {
	if pod == nil {
		return SlotRequest{}, fmt.Errorf("%w: the request has no pod", ErrBadPod)
	}
	bed := pod.Labels[v1alpha1.TestBedLabel]
	if bed == "" {
		return SlotRequest{}, fmt.Errorf("%w: pod %s/%s has no %s label", ErrBadPod, pod.Namespace, pod.Name, v1alpha1.TestBedLabel)
	}
	if pod.UID == "" {
		return SlotRequest{}, fmt.Errorf("%w: pod %s/%s has no uid", ErrBadPod, pod.Namespace, pod.Name)
	}
	allowed, err := slots.ParseSlotIDs(pod.Annotations[v1alpha1.SlotIDsAnnotation])
	if err != nil {
		return SlotRequest{}, fmt.Errorf("%w: pod %s/%s: %w", ErrBadPod, pod.Namespace, pod.Name, err)
	}
	return SlotRequest{
		TestBed: types.NamespacedName{Namespace: pod.Namespace, Name: bed},
		Allowed: allowed,
		Pod:     slots.Pod{Name: pod.Name, UID: pod.UID},
	}, nil
}

// LivePod returns the cluster's copy of the pod a request names, which must carry the UID the
// request gives: from the informer cache, or read live when the cache does not have it under
// that UID (it has not seen the pod yet, or still holds the one deleted before). The caller
// decides on what this returns, never on what the request says of the pod.
// A pod that is gone, has another UID, is bound already or being deleted is ErrNotThePod.
func (r *Reserver) LivePod(ctx context.Context, key types.NamespacedName, uid types.UID) (*corev1.Pod, error) {
	if key.Name == "" || uid == "" {
		return nil, fmt.Errorf("%w: the request's pod %s has no name or no uid", ErrBadPod, key)
	}
	pod := &corev1.Pod{}
	err := r.Cache.Get(ctx, key, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get pod %s: %w", key, err)
	}
	if err != nil || pod.UID != uid {
		pod = &corev1.Pod{}
		if err := r.Client.Get(ctx, key, pod); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: pod %s does not exist", ErrNotThePod, key)
			}
			return nil, fmt.Errorf("get pod %s: %w", key, err)
		}
	}
	switch {
	case pod.UID != uid:
		return nil, fmt.Errorf("%w: pod %s has uid %s, the request names uid %s", ErrNotThePod, key, pod.UID, uid)
	case pod.DeletionTimestamp != nil:
		return nil, fmt.Errorf("%w: pod %s is being deleted", ErrNotThePod, key)
	case pod.Spec.NodeName != "":
		return nil, fmt.Errorf("%w: pod %s is bound to node %s already", ErrNotThePod, key, pod.Spec.NodeName)
	}
	return pod, nil
}

// Granted narrows a request to the slots Admission granted the pod's BatchJob in the pod's
// test bed: the slots of the job's creation request there, or, once preemption took some
// back, those it holds now (AssignedSlotsAnnotation; a preempted job's pods, asked for again
// by Spark or Flink, must not take back the slots they lost). A pod's own slot ids only
// narrow that further. A pod of no BatchJob, of a job that holds no grant in the pod's bed, or
// whose ids name none of the granted slots gets no slot: naming the bed and some slot ids is
// not a grant. Only slotplane writes the job's request and labels (the admission policy
// slotplane-own-keys).
func (r *Reserver) Granted(ctx context.Context, pod *corev1.Pod, req SlotRequest) (SlotRequest, error) {
	noSlot := func(format string, args ...any) (SlotRequest, error) {
		why := fmt.Sprintf(format, args...)
		return req, &slots.NoSlotError{Reason: why, Nodes: map[string]string{}, OtherNodes: why}
	}
	name := pod.Labels[v1alpha1.BatchJobLabel]
	if name == "" {
		return req, fmt.Errorf("%w: pod %s/%s names no batch job (label %s): slots go only to a batch job's granted run", ErrNoGrant, pod.Namespace, pod.Name, v1alpha1.BatchJobLabel)
	}
	job := batchJobMeta()
	if err := r.Cache.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return req, fmt.Errorf("%w: the batch job %s/%s of pod %s does not exist", ErrNoGrant, pod.Namespace, name, pod.Name)
		}
		return req, fmt.Errorf("get batch job %s/%s: %w", pod.Namespace, name, err)
	}
	bed := req.TestBed.Name
	grant, err := v1alpha1.CreationRequestOf(job.Annotations)
	switch {
	case err != nil:
		return req, fmt.Errorf("%w: the batch job %s/%s of pod %s holds no grant: %w", ErrNoGrant, pod.Namespace, name, pod.Name, err)
	case grant == nil || grant.TestBed != bed || job.Labels[v1alpha1.GrantedTestBedLabel] != bed:
		return req, fmt.Errorf("%w: the batch job %s/%s of pod %s holds no grant in test bed %s", ErrNoGrant, pod.Namespace, name, pod.Name, bed)
	}
	granted := grant.Slots
	if v, ok := job.Annotations[v1alpha1.AssignedSlotsAnnotation]; ok {
		if strings.TrimSpace(v) == "" {
			return noSlot("its batch job %s holds no slot now (preempted)", name)
		}
		assigned, err := slots.ParseSlotIDs(v)
		if err != nil {
			return req, fmt.Errorf("%w: batch job %s/%s: %s: %w", ErrBadPod, pod.Namespace, name, v1alpha1.AssignedSlotsAnnotation, err)
		}
		granted = assigned
	}
	allowed := intersect(req.Allowed, granted)
	if len(allowed) == 0 {
		return noSlot("none of the pod's slots %s is among the slots %s granted to its batch job %s", shortList(req.Allowed), shortList(granted), name)
	}
	req.Allowed = allowed
	return req, nil
}

// intersect is the ids of want that are in of, in want's order. Both lists are a job's
// slots (thousands at most), and every placement call makes one: a set past a few dozen.
func intersect(want, of []int32) []int32 {
	out := make([]int32, 0, len(want))
	if len(want)*len(of) <= 1024 {
		for _, id := range want {
			if slices.Contains(of, id) {
				out = append(out, id)
			}
		}
		return out
	}
	set := make(map[int32]struct{}, len(of))
	for _, id := range of {
		set[id] = struct{}{}
	}
	for _, id := range want {
		if _, ok := set[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// shortList writes slot ids for a message: all of a few, else how many.
func shortList(ids []int32) string {
	if len(ids) > 16 {
		return fmt.Sprintf("(%d slots)", len(ids))
	}
	return "[" + slots.FormatSlotIDs(ids) + "]"
}

// batchJobMeta is what a BatchJob is read as: its metadata alone. Granted reads a label and
// two annotations of it, and a whole BatchJob (its wrapped Spark or Flink spec, kubectl's
// last-applied copy of all of it) would be copied out of the cache on every call.
func batchJobMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("BatchJob"))
	return m
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

// ClaimSlot writes the pod's claim on its slot (slots.SlotClaim) by a merge patch: the
// preemption path's durable record of the reservation, made before the scheduler evicts the
// slot's ghost and binds the pod a cycle later. A claim the pod carries already for that
// slot is left as it is.
//
// The patch carries the pod's UID. The API server refuses to change a UID, so the patch
// fails (422) on any other pod of that name: one created after the pod was deleted, or any
// pod at all when the UID was made up.
func (r *Reserver) ClaimSlot(ctx context.Context, pod *corev1.Pod, slot int32) error {
	if held, ok := slots.ProvenSlot(pod); ok && held == slot {
		return nil
	}
	if pod.UID == "" {
		return fmt.Errorf("claim a slot for pod %s/%s: no uid to make the write conditional on", pod.Namespace, pod.Name)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"annotations":{%q:%q}}}`,
		pod.UID, v1alpha1.SlotClaimAnnotation, slots.SlotClaim(slot, pod.UID))
	target := &corev1.Pod{}
	target.Namespace, target.Name = pod.Namespace, pod.Name
	if err := r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if uidRefused(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: pod %s/%s with uid %s is gone: %w", ErrNotThePod, pod.Namespace, pod.Name, pod.UID, err)
		}
		return fmt.Errorf("claim slot %d for pod %s/%s: %w", slot, pod.Namespace, pod.Name, err)
	}
	return nil
}

// BindPod binds the pod to the node of its slot, and in the same write records its claim
// on the slot: the API server copies a binding's annotations onto the pod it binds. The
// binding names the pod's UID, so it fails (409) on any other pod of that name, and on a pod
// that is bound already.
func (r *Reserver) BindPod(ctx context.Context, pod *corev1.Pod, slot v1alpha1.SlotStatus) error {
	if pod.UID == "" {
		return fmt.Errorf("bind pod %s/%s: no uid to make the write conditional on", pod.Namespace, pod.Name)
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(slot.Position, pod.UID)}},
		Target: corev1.ObjectReference{Kind: "Node", Name: slot.NodeName},
	}
	target := &corev1.Pod{}
	target.Namespace, target.Name = pod.Namespace, pod.Name
	if err := r.Client.SubResource("binding").Create(ctx, target, binding); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return fmt.Errorf("%w: pod %s/%s with uid %s is gone or bound: %w", ErrNotThePod, pod.Namespace, pod.Name, pod.UID, err)
		}
		return fmt.Errorf("bind pod %s/%s to node %s in slot %d: %w", pod.Namespace, pod.Name, slot.NodeName, slot.Position, err)
	}
	return nil
}

// uidRefused tells whether the API server turned a write away for its UID precondition.
func uidRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

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

// isReleased tells whether released has the slot at pos released from holder uid.
func isReleased(released map[int32]slots.Pod, pos int32, uid types.UID) bool {
	held, ok := released[pos]
	return ok && held.UID == uid
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
