package apiclient

import (
	"os/exec"
	"strings"
	"testing"
)

// An external scheduler that imports the client must not pull in the server: no web
// framework, no Temporal SDK, no controller-runtime among the client's dependencies.
func TestTheClientDoesNotPullInTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "slotplane/apiclient").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/gin-gonic/", "go.temporal.io/", "sigs.k8s.io/controller-runtime", "slotplane/api", "slotplane/workflows"} {
			if strings.HasPrefix(dep, heavy) && dep != "slotplane/apiclient" && dep != "slotplane/apitypes" {
				t.Errorf("apiclient depends on %s", dep)
			}
		}
	}
}
