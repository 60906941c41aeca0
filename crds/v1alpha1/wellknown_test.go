package v1alpha1

import (
	"strings"
	"testing"
)

func TestIsReservedKey(t *testing.T) {
	cases := map[string]bool{
		GroupName + "/slot-id":       true,
		SlotClaimAnnotation:          true,
		TestBedLabel:                 true,
		"standin.slotplane.io/role":  true,
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

func TestCreationRequestOf(t *testing.T) {
	if req, err := CreationRequestOf(map[string]string{"team": "a"}); req != nil || err != nil {
		t.Errorf("no annotation: got %+v, %v; want nothing", req, err)
	}
	if req, err := CreationRequestOf(map[string]string{CreationRequestAnnotation: ""}); req != nil || err != nil {
		t.Errorf("an empty annotation: got %+v, %v; want nothing", req, err)
	}
	req, err := CreationRequestOf(map[string]string{CreationRequestAnnotation: `{"scheduling":"nightly","testBed":"bed","slots":[3,4],"run":2,"grantedAt":"2026-12-05T00:00:00.000000Z"}`})
	if err != nil || req == nil || req.Scheduling != "nightly" || req.TestBed != "bed" || len(req.Slots) != 2 || req.Slots[1] != 4 || req.Run != 2 {
		t.Errorf("a request: got %+v, %v", req, err)
	}
	for _, bad := range []string{"{", `"bed"`, `{"slots":"3"}`} {
		req, err := CreationRequestOf(map[string]string{CreationRequestAnnotation: bad})
		if err == nil || req != nil || !strings.Contains(err.Error(), CreationRequestAnnotation) {
			t.Errorf("%q: got %+v, %v; want an error that names the annotation", bad, req, err)
		}
	}
}

func TestIsSlotplanesOwn(t *testing.T) {
	cases := map[string]bool{
		ActiveSchedulingLabel:           true,
		CreationRequestAnnotation:       true,
		KillAnnotation:                  true,
		GroupName + "/anything-new":     true,
		GroupName + "/sim-duration":     false, // the stand-in operators' notes are the user's
		SchedulerDataPrefix + "est":     false, // scheduler data is the schedulers'
		"standin." + GroupName + "/app": false,
		"team":                          false,
		"slotplane.io.example.com/x":    false,
	}
	for key, want := range cases {
		if got := IsSlotplanesOwn(key); got != want {
			t.Errorf("IsSlotplanesOwn(%q) = %v, want %v", key, got, want)
		}
	}
}

// A creation request is whole or none: each missing part is named.
func TestCreationRequestOf_RefusesAPartialRequest(t *testing.T) {
	req, err := CreationRequestOf(map[string]string{CreationRequestAnnotation: `{"scheduling":"s","testBed":"bed","slots":[1],"run":1,"grantedAt":"2026-12-05T00:00:00.000000Z"}`})
	if err != nil || req == nil || req.GrantedAt == nil {
		t.Fatalf("a whole request: %+v, %v", req, err)
	}
	_, err = CreationRequestOf(map[string]string{CreationRequestAnnotation: `{"scheduling":"s","slots":[],"run":0}`})
	if err == nil || !strings.Contains(err.Error(), "it has no testBed, run, slots, grantedAt") {
		t.Fatalf("a partial request: %v", err)
	}
	if req, err := CreationRequestOf(nil); req != nil || err != nil {
		t.Fatalf("no request: %+v, %v", req, err)
	}
}
