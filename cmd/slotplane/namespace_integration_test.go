//go:build integration

package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/internal/localplatform/temporaltest"
)

// The command registers a namespace, leaves it as it is when run again, sets a new
// retention when asked, refuses one Temporal refuses, and checks visibility for an
// installation with a prefix too.
func TestTemporalNamespace_RegistersOnceAndSetsRetention(t *testing.T) {
	t.Parallel()
	srv, _ := temporaltest.Start(t)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := temporalNamespaceCommand(context.Background(), append([]string{"-temporal-address", srv.FrontendAddress, "-temporal-namespace", "team-x"}, args...), &out)
		return out.String(), err
	}
	out, err := run("-retention", "48h")
	require.NoError(t, err)
	require.Contains(t, out, "namespace team-x registered, retention 48h0m0s")
	require.Contains(t, out, "visibility answers the bridge's queries for task queue slotplane")
	out, err = run("-retention", "48h")
	require.NoError(t, err)
	require.Contains(t, out, "namespace team-x exists, retention 48h0m0s")
	out, err = run("-retention", "72h", "-task-queue", "eu", "-workflow-id-prefix", "eu-1/")
	require.NoError(t, err)
	require.Contains(t, out, "retention set to 72h0m0s (was 48h0m0s)")
	require.Contains(t, out, "task queue eu and workflow ids under eu-1/")
	_, err = run("-retention", "1h")
	require.ErrorContains(t, err, "a day at least")
	_, err = run("-workflow-id-prefix", "it's")
	require.ErrorContains(t, err, "-workflow-id-prefix")
}
