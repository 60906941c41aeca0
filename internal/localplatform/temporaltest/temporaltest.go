// Package temporaltest starts slotplane's embedded Temporal server (the real server on an
// in-memory SQLite database) for integration tests.
package temporaltest

import (
	"context"
	"os"
	"path/filepath"
	"slotplane/internal/localplatform/temporalserver"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// Start starts a fresh server for t and returns it with a client of its namespace. Both are
// stopped when t ends; the server's log is named in the test output if t failed.
func Start(t testing.TB) (*temporalserver.Server, client.Client) {
	t.Helper()
	dir, err := os.MkdirTemp("", "slotplane-temporal-")
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "temporal.log")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := temporalserver.Start(ctx, temporalserver.Options{LogFile: logFile})
	if err != nil {
		t.Fatalf("start embedded temporal: %v (log: %s)", err, logFile)
	}
	c, err := srv.Dial()
	if err != nil {
		srv.Stop()
		t.Fatalf("dial embedded temporal: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Stop()
		if t.Failed() {
			t.Logf("embedded temporal log kept at %s", logFile)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return srv, c
}
