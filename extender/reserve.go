// Package extender is slotplane's kube-scheduler extender. For every pod that requests the
// slot resource, the scheduler asks it where the pod may go (/filter) or whom to evict for it
// (/preempt); the extender answers with the node of a free slot among the pod's allowed slot
// ids, reserves that slot in the TestBed status, and names the slot's ghost pod as the only
// victim. The TestBed status is the only record of reservations, written with optimistic
// concurrency, so two calls (in one process, or across a restart) never reserve one slot
// twice. Which slot a pod gets is decided by the slots package; this package does the I/O.
package extender

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// ErrBadPod: the pod lacks what a slot pod must carry (test bed label, slot ids).
var ErrBadPod = errors.New("not a valid slot pod")

// maxConflictRetries bounds the optimistic write loop; each retry reads the fresh status.
const maxConflictRetries = 8

// Reserver reserves slots for pods in TestBed statuses.
type Reserver struct {
	// Cache serves TestBeds and ghost pods from informers; Client writes and, after a
	// conflict, reads the fresh TestBed from the API server.
	Cache  client.Reader
	Client client.Client

	mu      sync.Mutex
	beds    map[types.NamespacedName]*sync.Mutex // one reservation at a time per test bed
	indexes map[types.NamespacedName]cachedIndex
	// latest is the newest TestBed this extender has read live or written, per test bed.
	// The informer lags behind the extender's own writes; deciding on its copy would make
	// nearly every reservation conflict once and cost two more round trips.
	latest map[types.NamespacedName]*v1alpha1.TestBed
}

type cachedIndex struct {
	resourceVersion string
	ix              *slots.Index
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

// Reserve finds the pod's slot among candidates (nil: any node) and records the reservation
// in the TestBed status. A *slots.NoSlotError says why there is none.
func (r *Reserver) Reserve(ctx context.Context, req SlotRequest, candidates []string) (Reservation, error) {
	lock := r.bedLock(req.TestBed)
	lock.Lock()
	defer lock.Unlock()

	var tb v1alpha1.TestBed
	if err := r.Cache.Get(ctx, req.TestBed, &tb); err != nil {
		if apierrors.IsNotFound(err) {
			r.remember(req.TestBed, nil)
			return Reservation{}, fmt.Errorf("%w: test bed %s does not exist", ErrBadPod, req.TestBed)
		}
		return Reservation{}, fmt.Errorf("get test bed %s: %w", req.TestBed, err)
	}
	if own := r.remembered(req.TestBed); own != nil && own.UID == tb.UID {
		// Possibly older than the informer's copy if someone else wrote since: then the
		// write below conflicts once and the live read replaces it.
		tb = *own
	}
	live := false
	for attempt := 0; ; attempt++ {
		d, err := r.index(req.TestBed, &tb).Choose(req.Pod.UID, req.Allowed, candidates)
		var noSlot *slots.NoSlotError
		if errors.As(err, &noSlot) && !live {
			// A "no" from a copy that may be stale (the reconciler may have freed slots since)
			// is confirmed on the live status before the pod is turned away.
			if err := r.Client.Get(ctx, req.TestBed, &tb); err != nil {
				return Reservation{}, fmt.Errorf("reread test bed %s: %w", req.TestBed, err)
			}
			r.remember(req.TestBed, tb.DeepCopy())
			live = true
			continue
		}
		if err != nil {
			return Reservation{}, err
		}
		res := Reservation{TestBed: req.TestBed, Slot: d.Slot, Held: d.Held}
		if d.Held {
			return res, nil
		}
		updated := tb.DeepCopy()
		i := d.Index // updated is a copy of the status the index was built from
		if err := slots.Reserve(&updated.Status.Slots[i], req.Pod); err != nil {
			return Reservation{}, err // the index and the status disagree: cannot happen
		}
		updated.Status.Free, updated.Status.Reserved, updated.Status.Occupied = slots.Count(updated.Status.Slots)
		err = r.Client.Status().Update(ctx, updated)
		if err == nil {
			r.remember(req.TestBed, updated)
			res.Slot = updated.Status.Slots[i]
			return res, nil
		}
		if !apierrors.IsConflict(err) || attempt >= maxConflictRetries {
			return Reservation{}, fmt.Errorf("reserve slot %d of %s: %w", d.Slot.Position, req.TestBed, err)
		}
		// Someone else wrote the status (another reservation, the ghost reconciler): decide
		// again on the fresh status.
		if err := r.Client.Get(ctx, req.TestBed, &tb); err != nil {
			return Reservation{}, fmt.Errorf("reread test bed %s: %w", req.TestBed, err)
		}
		r.remember(req.TestBed, tb.DeepCopy())
		live = true
	}
}

// LabelPod marks the pod with its slot id, so the ghost reconciler sees which slot it holds.
func (r *Reserver) LabelPod(ctx context.Context, pod *corev1.Pod, slot int32) error {
	want := strconv.Itoa(int(slot))
	if pod.Labels[v1alpha1.SlotIDLabel] == want {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, v1alpha1.SlotIDLabel, want)
	target := &corev1.Pod{}
	target.Namespace, target.Name = pod.Namespace, pod.Name
	if err := r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("label pod %s/%s with slot %d: %w", pod.Namespace, pod.Name, slot, err)
	}
	return nil
}

// Ghost returns the ghost pod holding a slot, preferring one that is not terminating.
func (r *Reserver) Ghost(ctx context.Context, bed types.NamespacedName, slot v1alpha1.SlotStatus) (*corev1.Pod, error) {
	var pods corev1.PodList
	err := r.Cache.List(ctx, &pods, client.InNamespace(bed.Namespace), client.MatchingLabels{
		v1alpha1.TestBedLabel:        bed.Name,
		v1alpha1.GhostLabel:          "true",
		v1alpha1.PositionOnNodeLabel: strconv.Itoa(int(slot.PositionOnNode)),
	})
	if err != nil {
		return nil, fmt.Errorf("list ghosts of %s: %w", bed, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != slot.NodeName {
			continue
		}
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

func (r *Reserver) remember(key types.NamespacedName, tb *v1alpha1.TestBed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest == nil {
		r.latest = map[types.NamespacedName]*v1alpha1.TestBed{}
	}
	if tb == nil {
		delete(r.latest, key)
		return
	}
	r.latest[key] = tb
}

func (r *Reserver) remembered(key types.NamespacedName) *v1alpha1.TestBed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest[key]
}

func (r *Reserver) bedLock(key types.NamespacedName) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.beds == nil {
		r.beds = map[types.NamespacedName]*sync.Mutex{}
	}
	l, ok := r.beds[key]
	if !ok {
		l = &sync.Mutex{}
		r.beds[key] = l
	}
	return l
}

// index returns the slot index of a test bed's status, rebuilt only when the status changed.
func (r *Reserver) index(key types.NamespacedName, tb *v1alpha1.TestBed) *slots.Index {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.indexes == nil {
		r.indexes = map[types.NamespacedName]cachedIndex{}
	}
	c, ok := r.indexes[key]
	if ok && c.resourceVersion == tb.ResourceVersion && tb.ResourceVersion != "" {
		return c.ix
	}
	ix := slots.NewIndex(tb.Status.Slots)
	r.indexes[key] = cachedIndex{resourceVersion: tb.ResourceVersion, ix: ix}
	return ix
}
