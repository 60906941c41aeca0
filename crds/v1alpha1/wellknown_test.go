package v1alpha1

import "testing"

func TestIsReservedKey(t *testing.T) {
	cases := map[string]bool{
		GroupName + "/slot-id":       true,
		SlotClaimAnnotation:          true,
		TestBedLabel:                 true,
		"appsim.slotplane.io/role":   true,
		"SlotPlane.IO/slot-id":       true,
		"team":                       false,
		"example.com/team":           false,
		"notslotplane.io/x":          false,
		"slotplane.io.example.com/x": false,
		"slotplane.io":               false, // a bare name, no prefix
		"kubernetes.io/hostname":     false,
	}
	for key, want := range cases {
		if got := IsReservedKey(key); got != want {
			t.Errorf("IsReservedKey(%q) = %v, want %v", key, got, want)
		}
	}
}
