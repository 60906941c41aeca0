package lifecycle

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"slotplane/installation"
	"slotplane/workflows"
)

func TestSchedulingOf(t *testing.T) {
	eu := installation.Names{TaskQueue: "eu", IDPrefix: "eu/"}
	for _, ids := range []installation.Names{installation.Default, eu} {
		key, ok := SchedulingOf(ids, ids.SchedulingID("team-a", "nightly"))
		if !ok || key.Namespace != "team-a" || key.Name != "nightly" {
			t.Errorf("%+v: got %v, %v", ids, key, ok)
		}
		for _, id := range []string{"batchjob/team-a/x", "scheduling/team-a", "scheduling//x", "scheduling/a/b/c", ids.IDPrefix + "batchjob/a/b"} {
			if _, ok := SchedulingOf(ids, id); ok {
				t.Errorf("%+v: %q names a scheduling", ids, id)
			}
		}
	}
	// Another installation's Scheduling is not this one's.
	if _, ok := SchedulingOf(eu, installation.Default.SchedulingID("team-a", "nightly")); ok {
		t.Error("the default installation's id names a Scheduling of eu/")
	}
	if _, ok := SchedulingOf(installation.Default, eu.SchedulingID("team-a", "nightly")); ok {
		t.Error("eu/'s id names a Scheduling of the default installation")
	}
}

// The UID comes from the memo the workflow writes; a memo without it, or one that does not
// decode, gives none.
func TestUIDOf(t *testing.T) {
	p, err := converter.GetDefaultDataConverter().ToPayload("0f1e")
	if err != nil {
		t.Fatal(err)
	}
	if got := UIDOf(&commonpb.Memo{Fields: map[string]*commonpb.Payload{workflows.SchedulingUIDMemo: p}}); got != "0f1e" {
		t.Errorf("UIDOf = %q", got)
	}
	if got := UIDOf(nil); got != "" {
		t.Errorf("no memo: %q", got)
	}
	bad := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte("{")}
	if got := UIDOf(&commonpb.Memo{Fields: map[string]*commonpb.Payload{workflows.SchedulingUIDMemo: bad}}); got != "" {
		t.Errorf("a memo that does not decode: %q", got)
	}
}
