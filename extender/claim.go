package extender

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

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
