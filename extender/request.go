package extender

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// ErrBadPod: the pod lacks what a slot pod must carry (test bed label, slot ids).
var ErrBadPod = errors.New("not a valid slot pod")

// ErrNotThePod: the request names a pod the cluster does not have under that name and UID
// (deleted, created again, or never there). Nothing is written for such a request.
var ErrNotThePod = errors.New("the request does not name a live pod")

// ErrNoGrant: the pod's BatchJob holds no grant in the pod's test bed, or the pod names no
// BatchJob. It is an error, not a "no slot" answer: the scheduler then tries the pod again
// within seconds, and a grant the extender's cache has not seen yet is seen by then.
var ErrNoGrant = errors.New("no grant")

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
