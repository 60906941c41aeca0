package lifecycle

import (
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/installation"
	"slotplane/workflows"
)

// SchedulingOf is the Scheduling a workflow id of the installation ids names
// (installation.Names.SchedulingID), and false when it names none.
func SchedulingOf(ids installation.Names, id string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(id, ids.IDPrefix+"scheduling/")
	ns, name, found := strings.Cut(rest, "/")
	if !ok || !found || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// UIDOf reads the UID of the Scheduling a workflow runs for from its memo
// (workflows.SchedulingUIDMemo; "": none).
func UIDOf(memo *commonpb.Memo) string {
	p, ok := memo.GetFields()[workflows.SchedulingUIDMemo]
	if !ok {
		return ""
	}
	var uid string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &uid); err != nil {
		return ""
	}
	return uid
}
