package slots

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

// SlotClaim is the value of a pod's SlotClaimAnnotation when it holds the slot at position.
func SlotClaim(position int32, uid types.UID) string {
	return strconv.Itoa(int(position)) + "/" + string(uid)
}

// ProvenSlot returns the position of the slot the extender put the pod into, and false when
// the pod carries no slot label or one the extender did not write. The slot-id label counts
// only with a SlotClaimAnnotation naming the same position and the pod's own UID: the UID is
// unknown until the pod exists, so a label copied into a pod template or written at creation
// never proves anything. This is the only rule for reading a pod's slot; every reader (the
// ghost reconciler, the extender after a restart, the activities that count or revoke a
// job's pods) goes through it.
func ProvenSlot(pod *corev1.Pod) (int32, bool) {
	if pod == nil || pod.UID == "" {
		return -1, false
	}
	label, ok := pod.Labels[v1alpha1.SlotIDLabel]
	if !ok {
		return -1, false
	}
	position, err := strconv.ParseInt(label, 10, 32)
	if err != nil || position < 0 {
		return -1, false
	}
	if pod.Annotations[v1alpha1.SlotClaimAnnotation] != SlotClaim(int32(position), pod.UID) {
		return -1, false
	}
	return int32(position), true
}
