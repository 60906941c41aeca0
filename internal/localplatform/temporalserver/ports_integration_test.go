//go:build integration

package temporalserver

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/internal/freeport"
)

// takenPort listens on a free port for the rest of the test, as another process that won
// the port between freeport.Get and the server's bind would.
func takenPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// pickPortsWith makes the first n calls of pickPorts put port at index i, and counts calls.
func pickPortsWith(t *testing.T, n, i, port int) *int {
	t.Helper()
	calls := 0
	pickPorts = func(k int) ([]int, error) {
		calls++
		ports, err := freeport.Get(k)
		if err == nil && calls <= n {
			ports[i] = port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freeport.Get })
	return &calls
}

// A port taken between the search and the bind costs a try, not the start: the frontend's
// HTTP port, as in a CI run where a parallel package's platform took it, and the gRPC ports,
// whose bind failure the server reports only through its logger's Fatal (with a log file,
// Temporal's logger would have ended the process).
func TestStart_TriesOtherPortsWhenOneIsTaken(t *testing.T) {
	for name, i := range map[string]int{"frontend gRPC": 0, "frontend HTTP": 1, "history gRPC": 2, "matching gRPC": 3, "worker gRPC": 4} {
		for _, logged := range []bool{false, true} {
			t.Run(name+" logged "+strconv.FormatBool(logged), func(t *testing.T) {
				taken := takenPort(t)
				calls := pickPortsWith(t, 1, i, taken)
				opts := Options{}
				if logged {
					opts.LogFile = filepath.Join(t.TempDir(), "temporal.log")
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				srv, err := Start(ctx, opts)
				require.NoError(t, err)
				defer srv.Stop()
				require.Equal(t, 2, *calls, "the start should have taken a second set of ports")
				c, err := srv.Dial()
				require.NoError(t, err)
				defer c.Close()
				_, err = c.CheckHealth(ctx, nil)
				require.NoError(t, err)
			})
		}
	}
}

// A port the caller named is kept on every try: taken, the start fails with the bind
// error after the last try, and does not move the server elsewhere.
func TestStart_NamedPortTakenFails(t *testing.T) {
	taken := takenPort(t)
	calls := pickPortsWith(t, 0, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, Options{FrontendPort: taken})
	require.ErrorContains(t, err, "address already in use")
	require.ErrorContains(t, err, strconv.Itoa(taken))
	require.Equal(t, freeport.Attempts, *calls)
}
