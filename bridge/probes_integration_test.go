//go:build integration

package bridge_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/bridge"
	"slotplane/internal/freeport"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/temporaltest"
)

// The bridge is ready while it reaches Temporal and the API server, and not once Temporal
// is gone; it stays live, since a restart would not bring Temporal back.
func TestBridge_ReadyWhileItReachesTemporal(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	srv, tc := temporaltest.Start(t)
	ports, err := freeport.Get(1)
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	mgr, err := bridge.New(c.Config, tc, bridge.Options{HealthAddr: addr})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	status := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return status("/readyz") == http.StatusOK }, 30*time.Second, 100*time.Millisecond, "never ready")
	require.Equal(t, http.StatusOK, status("/healthz"))

	srv.Stop()
	// controller-runtime answers a failing check with 500; a probe takes any code from 400
	// on as a failure.
	require.Equal(t, http.StatusInternalServerError, status("/readyz"), "ready without Temporal")
	require.Equal(t, http.StatusOK, status("/healthz"))
}

// Two bridges share a Lease: one is elected and reconciles, the other waits, and takes over
// at once when the first stops (it gives the lease up).
func TestBridge_OneOfTwoReplicasLeads(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	_, tc := temporaltest.Start(t)
	type replica struct {
		mgr    interface{ Elected() <-chan struct{} }
		cancel context.CancelFunc
		done   chan error
	}
	start := func() *replica {
		mgr, err := bridge.New(c.Config, tc, bridge.Options{Lease: bridge.LeaseOptions{Namespace: "default", Name: "bridge-test"}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{mgr: mgr, cancel: cancel, done: make(chan error, 1)}
		go func() { r.done <- mgr.Start(ctx) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	elected := func(r *replica) bool {
		select {
		case <-r.mgr.Elected():
			return true
		default:
			return false
		}
	}
	a := start()
	require.Eventually(t, func() bool { return elected(a) }, 30*time.Second, 50*time.Millisecond, "the first bridge was never elected")
	b := start()
	time.Sleep(3 * time.Second) // b campaigns while a renews
	require.False(t, elected(b), "two bridges lead at once")
	a.cancel()
	require.NoError(t, <-a.done)
	a.done <- nil // for the cleanup
	require.Eventually(t, func() bool { return elected(b) }, 5*time.Second, 50*time.Millisecond, "b did not take over after a stopped")
}
