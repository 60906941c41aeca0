//go:build integration

package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
)

// attackAPI is the API on a real API server, with its change feed, and a Temporal client
// that never connects: the attacks here need no workflow.
func attackAPI(t *testing.T, o api.Options) (*api.Server, *localcluster.Cluster) {
	t.Helper()
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	o.Client, o.Temporal, o.Config = cl, tc, c.Config
	if o.Auth == nil {
		o.Auth = api.StaticTokens{token: {Name: "alice"}}
	}
	srv, err := api.Start(o, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Stop()) })
	return srv, c
}

// settledGoroutines is the process's goroutine count once it holds still for a second: the
// feed's watches open a moment after the API starts.
func settledGoroutines() int {
	_, last := heapAndGoroutines()
	for still := 0; still < 5; {
		time.Sleep(200 * time.Millisecond)
		_, g := heapAndGoroutines()
		if g == last {
			still++
		} else {
			still, last = 0, g
		}
	}
	return last
}

// heapAndGoroutines measures the process after a collection.
func heapAndGoroutines() (uint64, int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// Clients that dribble their request headers are cut off after the API's header timeout,
// and an honest client is served meanwhile.
func TestAttack_APISlowLorisIsCutOff(t *testing.T) {
	// Not parallel: it counts the process's goroutines and heap.
	srv, _ := attackAPI(t, api.Options{})
	addr := strings.TrimPrefix(srv.URL, "http://")
	goroutines := settledGoroutines()
	const lorises = 20
	type result struct {
		took time.Duration
		err  error
	}
	results := make(chan result, lorises)
	for range lorises {
		go func() {
			start := time.Now()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer conn.Close()
			req := "GET /api/v1/jobs HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer " + token + "\r\nX-Slow: " + strings.Repeat("a", 1000)
			for j := range len(req) {
				if _, err := conn.Write([]byte{req[j]}); err != nil {
					results <- result{time.Since(start), err}
					return
				}
				_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := conn.Read(make([]byte, 256)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					results <- result{time.Since(start), err}
					return
				}
				if time.Since(start) > 30*time.Second {
					break
				}
			}
			results <- result{time.Since(start), nil}
		}()
	}
	c := client{t: t, base: srv.URL + "/api/v1"}
	var list apitypes.JobList
	require.Equal(t, http.StatusOK, c.call("GET", "/jobs", nil, &list), "an honest client is served while the lorises hang on")
	for range lorises {
		r := <-results
		require.Error(t, r.err, "a slow client was never cut off")
		require.Less(t, r.took, api.ReadHeaderTimeout+3*time.Second, "cut off late: %v", r.err)
	}
	require.Eventually(t, func() bool { _, g := heapAndGoroutines(); return g <= goroutines+10 }, 10*time.Second, 100*time.Millisecond,
		"goroutines of the cut connections stay")
}

// A storm of feed connections asking from versions the server does not have (each one a
// RESYNC of the whole namespace) is answered, every one, while the process's heap and
// goroutines stay within bounds; versions that are not versions are refused before the
// upgrade.
func TestAttack_ResourceVersionStormStaysBounded(t *testing.T) {
	// Not parallel: it counts the process's goroutines and heap.
	srv, cluster := attackAPI(t, api.Options{FeedConnectionsPerUser: 1000})
	ctx := context.Background()
	cl, err := kubeclient.Live(cluster.Config)
	require.NoError(t, err)
	// 200 jobs of about 8 KB each: a RESYNC of jobs is about 1.6 MB.
	pad := strings.Repeat("x", 8000)
	for i := range 200 {
		require.NoError(t, cl.Create(ctx, &v1alpha1.BatchJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%03d", i), Namespace: "default", Annotations: map[string]string{"example.com/pad": pad}},
			Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, Application: v1alpha1.Application{Image: "i", MainApplicationFile: "local:///a.jar"},
				DriverResources: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}))
	}
	header := http.Header{"Authorization": {"Bearer " + token}}
	require.Eventually(t, func() bool {
		conn, _, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, "kinds=jobs"), header)
		if err != nil {
			return false
		}
		defer conn.Close()
		var ev feedEvent
		return conn.ReadJSON(&ev) == nil && len(ev.Items) == 200
	}, 30*time.Second, 200*time.Millisecond, "the feed holds the 200 jobs")

	// Not versions at all: refused with the API's error, no upgrade.
	for _, bogus := range []string{"abc", "-1", "1e9", strings.Repeat("9", 40)} {
		_, resp, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, "kinds=jobs&resourceVersion="+bogus), header)
		require.Error(t, err)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, bogus)
		var e apitypes.Error
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		require.Equal(t, "resourceVersion", e.Fields[0].Field)
		resp.Body.Close()
	}

	heap, goroutines := heapAndGoroutines()
	const storm, wave = 400, 100
	start := time.Now()
	for w := 0; w < storm; w += wave {
		var wg sync.WaitGroup
		errs := make(chan error, wave)
		conns := make(chan *websocket.Conn, wave)
		for i := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, _, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, fmt.Sprintf("kinds=jobs&resourceVersion=%d", 9_000_000_000+w+i)), header)
				if err != nil {
					errs <- err
					return
				}
				conns <- conn
				var ev feedEvent
				if err := conn.ReadJSON(&ev); err != nil {
					errs <- err
					return
				}
				if ev.Type != apitypes.Resync || len(ev.Items) != 200 {
					errs <- fmt.Errorf("first message %s with %d items, want a RESYNC of 200", ev.Type, len(ev.Items))
				}
			}()
		}
		wg.Wait()
		close(errs)
		close(conns)
		for err := range errs {
			require.NoError(t, err)
		}
		// The wave stays connected while the next heap is measured.
		heapDuring, goroutinesDuring := heapAndGoroutines()
		t.Logf("wave %d: heap %d MiB (+%d), goroutines %d (+%d)", w/wave, heapDuring>>20, (int64(heapDuring)-int64(heap))>>20, goroutinesDuring, goroutinesDuring-goroutines)
		// Each open connection costs its reader and writer goroutines plus this test's
		// client side; the RESYNC they were sent is one shared encoding.
		require.Less(t, int64(heapDuring)-int64(heap), int64(64<<20), "the heap grew with the storm")
		for conn := range conns {
			conn.Close()
		}
	}
	t.Logf("%d RESYNCs of 200 jobs (%.1f MB each) in %s", storm, 200*8.3/1000, time.Since(start).Round(time.Millisecond))
	require.Eventually(t, func() bool {
		h, g := heapAndGoroutines()
		return g <= goroutines+10 && int64(h)-int64(heap) < 16<<20
	}, 20*time.Second, 200*time.Millisecond, "what the storm held was let go")
}

// Past the feed's connection caps, in all and for one user, a connection is refused before
// the upgrade with a 429 in the API's error shape and Retry-After; the connections already
// open still get every change, and a closed one makes room.
func TestAttack_ConnectionFloodIsRefusedPastTheCaps(t *testing.T) {
	// Not parallel: it counts the process's goroutines and heap.
	srv, cluster := attackAPI(t, api.Options{FeedConnections: 30, FeedConnectionsPerUser: 20,
		Auth: api.StaticTokens{token: {Name: "alice"}, "bob-token": {Name: "bob"}}})
	ctx := context.Background()
	cl, err := kubeclient.Live(cluster.Config)
	require.NoError(t, err)
	dial := func(tok string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial(watchURL(srv.URL, "kinds=jobs"), http.Header{"Authorization": {"Bearer " + tok}})
	}
	refused := func(tok, want string) {
		t.Helper()
		_, resp, err := dial(tok)
		require.Error(t, err)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		var e apitypes.Error
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		require.Equal(t, apitypes.CodeTooManyRequests, e.Code)
		require.Contains(t, e.Message, want)
	}
	var open []*websocket.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range 20 {
		conn, _, err := dial(token)
		require.NoError(t, err)
		open = append(open, conn)
	}
	refused(token, "user alice has 20 change feed connections open")
	for range 10 {
		conn, _, err := dial("bob-token")
		require.NoError(t, err)
		open = append(open, conn)
	}
	refused("bob-token", "at most 30 connections")

	// Those open still hear every change.
	for _, conn := range open {
		var ev feedEvent
		require.NoError(t, conn.ReadJSON(&ev))
		require.Equal(t, apitypes.Resync, ev.Type)
	}
	require.NoError(t, cl.Create(ctx, &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "flood", Namespace: "default"},
		Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, Application: v1alpha1.Application{Image: "i", MainApplicationFile: "local:///a.jar"}}}))
	for _, conn := range open {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var ev feedEvent
		require.NoError(t, conn.ReadJSON(&ev))
		require.Equal(t, apitypes.Added, ev.Type)
	}

	// A closed connection makes room (its release is counted when its handler returns).
	open[0].Close()
	open = open[1:]
	require.Eventually(t, func() bool {
		conn, _, err := dial("bob-token")
		if err != nil {
			return false
		}
		open = append(open, conn)
		return true
	}, 10*time.Second, 100*time.Millisecond, "room after a close")
}
