package slots

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

func TestProvenSlot(t *testing.T) {
	pod := func(uid types.UID, claim string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "exec-1", UID: uid, Annotations: map[string]string{}}}
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
		"written by the extender":               {pod: pod("u1", SlotClaim(3, "u1")), wantSlot: 3, wantOK: true},
		"slot 0 counts":                         {pod: pod("u1", "0/u1"), wantSlot: 0, wantOK: true},
		"no claim":                              {pod: pod("u1", ""), wantSlot: -1},
		"a claim naming another pod's UID":      {pod: pod("u1", "3/u2"), wantSlot: -1},
		"a claim naming a UID that starts ours": {pod: pod("u1", "3/u1x"), wantSlot: -1},
		"a claim without a UID":                 {pod: pod("u1", "3"), wantSlot: -1},
		"a position that is no number":          {pod: pod("u1", "three/u1"), wantSlot: -1},
		"a negative position":                   {pod: pod("u1", "-1/u1"), wantSlot: -1},
		"a position not as SlotClaim writes it": {pod: pod("u1", "+3/u1"), wantSlot: -1},
		"a position with leading zeros":         {pod: pod("u1", "03/u1"), wantSlot: -1},
		"a position beyond int32":               {pod: pod("u1", "4294967299/u1"), wantSlot: -1},
		"a pod without a UID (not created yet)": {pod: pod("", "3/"), wantSlot: -1},
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
