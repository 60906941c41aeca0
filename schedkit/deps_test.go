package schedkit

import (
	"os/exec"
	"strings"
	"testing"
)

// A scheduler built on the kit carries only the API's client: no web framework, no Temporal,
// no controller-runtime, none of the server's packages.
func TestTheKitDoesNotPullInTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "slotplane/schedkit").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/gin-gonic/", "go.temporal.io/", "sigs.k8s.io/controller-runtime", "slotplane/api", "slotplane/workflows", "slotplane/activities", "slotplane/queue"} {
			if strings.HasPrefix(dep, heavy) && dep != "slotplane/apiclient" && dep != "slotplane/apitypes" {
				t.Errorf("schedkit depends on %s", dep)
			}
		}
	}
}
