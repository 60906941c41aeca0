package api

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/internal/kubeclient"
)

// lockedBuffer is a log sink the handler's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "\n")
}

// series counts the API's request series in reg.
func series(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "slotplane_api_request") {
			n += len(mf.GetMetric())
		}
	}
	return n
}

// 10,000 requests with invented methods and paths, with a token and without, add a bounded
// number of series to the API's metrics, and a bounded number of lines to its log.
func TestAPI_RandomMethodsAndPathsAddBoundedSeriesAndLogLines(t *testing.T) {
	reg := prometheus.NewRegistry()
	logs := &lockedBuffer{}
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	h, err := New(Options{Client: fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).Build(), Temporal: tc,
		Auth: StaticTokens{"t": {Name: "alice"}}, Metrics: reg, Log: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	send := func(method, path string, token bool) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Method, req.URL.Path = method, path
		if token {
			req.Header.Set("Authorization", "Bearer t")
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	// Every route the API knows, by each standard method, with and without a token.
	paths := []string{"/api/v1/healthz", "/api/v1/jobs", "/api/v1/jobs/x", "/api/v1/schedulings", "/api/v1/schedulings/x", "/api/v1/testbeds/x", "/nope"}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
	for _, p := range paths {
		for _, m := range methods {
			send(m, p, true)
			send(m, p, false)
		}
	}
	before := series(t, reg)
	logged := logs.lines()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for i := range 10_000 {
		send(fmt.Sprintf("M%d", rng.IntN(1<<30)), fmt.Sprintf("/api/v1/%x/%d", rng.Uint64(), i), i%2 == 0)
	}
	after := series(t, reg)
	// The invented methods all count as "other": per route and answer, one series of
	// counts and one of latency.
	require.LessOrEqual(t, after-before, 2*3, "series before %d, after %d", before, after)
	took := time.Since(start).Seconds()
	require.LessOrEqual(t, float64(logs.lines()-logged), requestLinesBurst+requestLinesRate*(took+1), "log lines for 10,000 bad requests in %.1f s", took)
}
