//go:build integration

package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/testobjects"
)

// feedEvent is apitypes.Event with the object kept raw.
type feedEvent struct {
	Type            apitypes.EventType `json:"type"`
	Kind            string             `json:"kind"`
	ResourceVersion string             `json:"resourceVersion"`
	Object          json.RawMessage    `json:"object"`
	Items           []json.RawMessage  `json:"items"`
	Reason          string             `json:"reason"`
}

// named is what every object of the feed has, with the states the test follows.
type named struct {
	Name   string `json:"name"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func (e feedEvent) named(t *testing.T) named {
	var n named
	require.NoError(t, json.Unmarshal(e.Object, &n))
	return n
}

// watchURL is the feed's address for the API at base (http://...).
func watchURL(base, query string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/api/v1/watch?" + query
}

// The change feed on the real platform: 100 clients watching while a 50-job Scheduling runs
// all receive the same changes, each object's in order, with every job's completion; a
// client that never reads gets a RESYNC or is cut off, and does not hold the others back.
func TestFeed_HundredClientsSeeEveryChangeInOrder(t *testing.T) {
	t.Parallel()
	p := platformtest.Start(t, platformtest.DefaultBed)
	// 101 connections of one user: over the default cap per user (100).
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Config: p.Cluster.Config,
		Auth: api.StaticTokens{token: {Name: "alice"}}, FeedConnectionsPerUser: 200}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	c := client{t: t, base: srv.URL + "/api/v1"}
	ctx := context.Background()
	header := http.Header{"Authorization": {"Bearer " + token}}

	// Refusals are JSON, before any upgrade.
	var e apitypes.Error
	require.Equal(t, http.StatusBadRequest, c.call("GET", "/watch", nil, &e), "a plain GET")
	require.Contains(t, e.Message, "websocket")
	require.Equal(t, http.StatusUnprocessableEntity, c.call("GET", "/watch?kinds=pods", nil, &e))
	require.Equal(t, "kinds", e.Fields[0].Field)
	_, resp, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, ""), http.Header{"Origin": {"https://evil.example"}, "Authorization": {"Bearer " + token}})
	require.Error(t, err)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a foreign origin")
	_, resp, err = websocket.DefaultDialer.Dial(watchURL(srv.URL, ""), nil)
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no token")
	// A browser offers the token as a subprotocol, and its own origin is fine.
	conn, resp, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, "kinds=testbeds"), http.Header{
		"Origin": {srv.URL}, "Sec-WebSocket-Protocol": {apitypes.Subprotocol + ", bearer." + token}})
	require.NoError(t, err)
	require.Equal(t, apitypes.Subprotocol, resp.Header.Get("Sec-WebSocket-Protocol"))
	var first feedEvent
	require.NoError(t, conn.ReadJSON(&first))
	require.Equal(t, apitypes.Resync, first.Type)
	require.Len(t, first.Items, 1, "the test bed")
	conn.Close()

	const jobs = 50
	// Each reader stops at the Scheduling's end and notes when it saw it.
	type reader struct {
		events []feedEvent
		end    time.Time
		err    error
	}
	const clients = 100
	readers := make([]*reader, clients)
	var wg sync.WaitGroup
	for i := range clients {
		conn, _, err := websocket.DefaultDialer.Dial(watchURL(srv.URL, "kinds=schedulings,jobs"), header)
		require.NoError(t, err)
		r := &reader{}
		readers[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for {
				_ = conn.SetReadDeadline(time.Now().Add(4 * time.Minute))
				var ev feedEvent
				if r.err = conn.ReadJSON(&ev); r.err != nil {
					return
				}
				r.events = append(r.events, ev)
				if ev.Kind == apitypes.KindScheduling && ev.Type == apitypes.Modified && ev.named(t).Status.State == string(v1alpha1.SchedulingCompleted) {
					r.end = time.Now()
					return
				}
			}
		}()
	}
	// The client that never reads, with a tiny receive buffer: the server's writes to it
	// stall at once.
	stalledDialer := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		return d.DialContext(ctx, network, addr)
	}}
	stalled, _, err := stalledDialer.Dial(watchURL(srv.URL, "kinds=schedulings,jobs"), header)
	require.NoError(t, err)
	defer stalled.Close()

	// The jobs are made only now that every client watches: each sees every change of
	// them, from the same start.
	names := make([]map[string]any, jobs)
	for i := range jobs {
		j := testobjects.BatchJob(fmt.Sprintf("wave-%02d", i)).RunFor("1s").Obj()
		j.Spec.DriverResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
		require.NoError(t, p.Client.Create(ctx, j))
		names[i] = map[string]any{"name": j.Name, "replication": 1}
	}
	var created apitypes.Scheduling
	require.Equal(t, http.StatusCreated, c.call("POST", "/schedulings", map[string]any{"name": "wave", "testBed": "bed", "mode": "QueueBased", "jobs": names}, &created))
	wg.Wait()

	want := readers[0].events
	require.NoError(t, readers[0].err)
	require.Equal(t, apitypes.Resync, want[0].Type)
	require.Empty(t, want[0].Items, "no job existed when the clients came")
	bytes := 0
	for _, ev := range want {
		raw, _ := json.Marshal(ev)
		bytes += len(raw)
	}
	t.Logf("each client received %d events, %d KiB", len(want), bytes>>10)
	// Each object's changes come in the order etcd made them (its revisions, numbers in
	// this cluster, only rise), and every job's completion is among them.
	last := map[string]int{}
	completed := map[string]bool{}
	for _, ev := range want[1:] {
		require.NotEqual(t, apitypes.Resync, ev.Type, "a reading client never falls behind here")
		n := ev.named(t)
		rv, err := strconv.Atoi(ev.ResourceVersion)
		require.NoError(t, err)
		key := ev.Kind + "/" + n.Name
		require.Greater(t, rv, last[key], "%s out of order", key)
		last[key] = rv
		if ev.Kind == apitypes.KindBatchJob && n.Status.State == string(v1alpha1.JobCompleted) {
			completed[n.Name] = true
		}
	}
	require.Len(t, completed, jobs, "every job's completion")
	first0, lastEnd := readers[0].end, readers[0].end
	for i, r := range readers {
		require.NoError(t, r.err, "client %d", i)
		require.Equal(t, len(want), len(r.events), "client %d", i)
		for k := range want {
			require.Equal(t, want[k].Type, r.events[k].Type, "client %d event %d", i, k)
			if k > 0 { // the opening RESYNC carries the feed's newest version when the client came
				require.Equal(t, want[k].ResourceVersion, r.events[k].ResourceVersion, "client %d event %d", i, k)
			}
		}
		if r.end.Before(first0) {
			first0 = r.end
		}
		if r.end.After(lastEnd) {
			lastEnd = r.end
		}
	}
	t.Logf("the Scheduling's end reached all %d clients within %v", clients, lastEnd.Sub(first0))
	require.Less(t, lastEnd.Sub(first0), 5*time.Second, "a stalled client must not hold the others")

	// The stalled client, read at last: what it got before stalling is the others' prefix,
	// then a RESYNC in place of what it missed, or the end of the connection. Read only
	// once the feed has given up on it: its last blocked write began before the others had
	// everything, and a write blocked for FeedWriteWait closes the connection. Read sooner,
	// a run quick enough to end within that time lets it catch up on all of it.
	time.Sleep(time.Until(lastEnd.Add(api.FeedWriteWait + time.Second)))
	var got []feedEvent
	var readErr error
	for {
		_ = stalled.SetReadDeadline(time.Now().Add(15 * time.Second))
		var ev feedEvent
		if readErr = stalled.ReadJSON(&ev); readErr != nil {
			break
		}
		got = append(got, ev)
		if len(got) > 1 && ev.Type == apitypes.Resync {
			break
		}
	}
	t.Logf("the stalled client read %d events, then %v", len(got), readErr)
	require.NotEmpty(t, got)
	resynced := len(got) > 1 && got[len(got)-1].Type == apitypes.Resync
	prefix := got
	if resynced {
		prefix = got[:len(got)-1]
		require.Contains(t, got[len(got)-1].Reason, "fell more than")
	} else {
		require.Error(t, readErr, "cut off")
	}
	require.Less(t, len(prefix), len(want), "it cannot have had everything one by one")
	// Its first event is its own opening RESYNC, empty like the others'. That marker carries
	// the feed's newest resourceVersion when the client came, which a test bed's status
	// write between the readers' connections and this one may have moved on.
	require.Equal(t, apitypes.Resync, prefix[0].Type)
	require.Empty(t, prefix[0].Items)
	for k := 1; k < len(prefix); k++ {
		require.Equal(t, want[k].ResourceVersion, prefix[k].ResourceVersion, "event %d", k)
	}
}
