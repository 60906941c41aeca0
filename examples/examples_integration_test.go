//go:build integration

package examples_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/internal/localplatform/localcluster"
)

// Every example is accepted by the real API server with slotplane's CRDs (schema, CEL
// rules), as `kubectl apply -f examples/` would send it.
func TestExamples_ApplyOnTheRealAPIServer(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{})
	for _, file := range []string{"testbed.yaml", "batchjobs.yaml", "scheduling-queue.yaml", "scheduling-slots.yaml"} {
		out, err := exec.Command(c.Kubectl(), "--kubeconfig", c.Kubeconfig, "apply", "--dry-run=server", "-f", file).CombinedOutput()
		require.NoError(t, err, "%s: %s", file, out)
		require.Contains(t, string(out), "(server dry run)")
	}
}
