package slots

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

func TestProvenSlot(t *testing.T) {
	pod := func(uid types.UID, label, claim string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec-1", UID: uid, Labels: map[string]string{}, Annotations: map[string]string{}}}
		if label != "" {
			p.Labels[v1alpha1.SlotIDLabel] = label
		}
		if claim != "" {
			p.Annotations[v1alpha1.SlotClaimAnnotation] = claim
		}
		return p
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		wantSlot int32
		wantOK   bool
	}{
		"written by the extender":               {pod: pod("u1", "3", SlotClaim(3, "u1")), wantSlot: 3, wantOK: true},
		"slot 0 counts":                         {pod: pod("u1", "0", "0/u1"), wantSlot: 0, wantOK: true},
		"no label":                              {pod: pod("u1", "", ""), wantSlot: -1},
		"a label without a claim (forged)":      {pod: pod("u1", "3", ""), wantSlot: -1},
		"a claim naming another pod's UID":      {pod: pod("u1", "3", "3/u2"), wantSlot: -1},
		"a claim naming another slot":           {pod: pod("u1", "3", "4/u1"), wantSlot: -1},
		"a claim without a label":               {pod: pod("u1", "", "3/u1"), wantSlot: -1},
		"a label that is no number":             {pod: pod("u1", "three", "three/u1"), wantSlot: -1},
		"a negative label":                      {pod: pod("u1", "-1", "-1/u1"), wantSlot: -1},
		"a pod without a UID (not created yet)": {pod: pod("", "3", "3/"), wantSlot: -1},
		"no pod":                                {pod: nil, wantSlot: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			slot, ok := ProvenSlot(tc.pod)
			if slot != tc.wantSlot || ok != tc.wantOK {
				t.Errorf("ProvenSlot = %d, %v; want %d, %v", slot, ok, tc.wantSlot, tc.wantOK)
			}
		})
	}
}
