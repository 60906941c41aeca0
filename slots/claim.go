package slots

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

// SlotClaim is the value of a pod's SlotClaimAnnotation when it holds the slot at position.
func SlotClaim(position int32, uid types.UID) string {
	return strconv.Itoa(int(position)) + "/" + string(uid)
}

// ProvenSlot returns the position of the slot the extender put the pod into, and false when
// the pod carries no claim or one the extender did not write. A claim counts only when it
// names the pod's own UID, written exactly as SlotClaim writes it: the UID is unknown until
// the pod exists, so a claim copied into a pod template or written at creation never proves
// anything. This is the only rule for reading a pod's slot; every reader (the ghost
// reconciler, the extender after a restart, the activities that count or revoke a job's
// pods) goes through it.
func ProvenSlot(pod *corev1.Pod) (int32, bool) {
	if pod == nil || pod.UID == "" {
		return -1, false
	}
	claim, ok := pod.Annotations[v1alpha1.SlotClaimAnnotation]
	if !ok {
		return -1, false
	}
	text, uid, found := strings.Cut(claim, "/")
	if !found || types.UID(uid) != pod.UID {
		return -1, false
	}
	position, err := strconv.ParseInt(text, 10, 32)
	if err != nil || position < 0 || SlotClaim(int32(position), pod.UID) != claim {
		return -1, false
	}
	return int32(position), true
}
