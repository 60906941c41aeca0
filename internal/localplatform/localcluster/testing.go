package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// New starts a cluster for a test and stops it when the test ends. If the test failed, the
// folder with every component's log is kept and named in the output, with the last lines of
// each log.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	opts.KeepDir = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start local control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("stop local control plane: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(c.Dir)
			return
		}
		t.Logf("control plane logs kept in %s", c.Dir)
		logs, _ := filepath.Glob(filepath.Join(c.Dir, "*.log"))
		for _, path := range logs {
			t.Logf("--- last lines of %s:\n%s", filepath.Base(path), tail(path, 15))
		}
	})
	return c
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
