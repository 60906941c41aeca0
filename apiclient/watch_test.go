package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// feedServer is a fake change feed: it upgrades requests with the right token and hands
// each connection to serve; every request's query and offered subprotocols are sent on
// requests.
type feedServer struct {
	url      string
	requests chan *http.Request
	ended    chan struct{} // a connection's serve returned
}

func newFeedServer(t *testing.T, serve func(conn *websocket.Conn)) *feedServer {
	t.Helper()
	f := &feedServer{requests: make(chan *http.Request, 10), ended: make(chan struct{}, 10)}
	up := websocket.Upgrader{Subprotocols: []string{apitypes.Subprotocol}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests <- r
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"unauthorized","message":"the bearer token is not known"}`))
			return
		}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer func() { f.ended <- struct{}{} }()
		defer conn.Close()
		serve(conn)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

const resync = `{"type":"RESYNC","resourceVersion":"10","reason":"the current picture","items":[
 {"type":"ADDED","kind":"Scheduling","resourceVersion":"9","object":{"name":"nightly","namespace":"team-a","testBed":"bed","mode":"QueueBased","jobs":[{"name":"a","replication":2}],"status":{"state":"Scheduling","totalJobs":1}}},
 {"type":"ADDED","kind":"BatchJob","resourceVersion":"8","object":{"name":"a","framework":"spark","application":{"image":"i","mainApplicationFile":"f"},"status":{"state":"Running","slots":[0,1]}}},
 {"type":"ADDED","kind":"TestBed","resourceVersion":"6","object":{"name":"bed","namespace":"team-a","resourceVersion":"6","spec":{"nodeLabel":"n","slotsPerNode":2,"resourcesPerSlot":{"cpu":"1"}},"status":{"nodes":1,"total":2,"free":1,"occupied":1}}},
 {"type":"ADDED","kind":"SlotSlice","resourceVersion":"5","object":{"name":"bed-slots-0","namespace":"team-a","resourceVersion":"5","testBed":"bed","index":0,"slots":[{"position":0,"nodeName":"node-00","state":"occupied"},{"position":1,"nodeName":"node-00","state":"free"}]}}]}`

const modified = `{"type":"MODIFIED","kind":"Scheduling","resourceVersion":"11","object":{"name":"nightly","status":{"state":"Completed","totalJobs":1,"finishedJobs":1}}}`

func next(t *testing.T, w *Watcher) Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		require.True(t, ok, "the feed ended: %v", w.Err())
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return Event{}
}

func TestWatch_DecodesEventsAndReportsTheEnd(t *testing.T) {
	f := newFeedServer(t, func(conn *websocket.Conn) {
		_ = conn.WriteMessage(websocket.TextMessage, []byte(resync))
		_ = conn.WriteMessage(websocket.TextMessage, []byte(modified))
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "the server is stopping"), time.Now().Add(time.Second))
	})
	c, err := New(f.url, "tok-1", WithNamespace("team-a"))
	require.NoError(t, err)
	w, err := c.Watch(context.Background(), []string{WatchSchedulings, WatchJobs, WatchTestBeds, WatchSlotSlices}, Position{Feed: "f1", ResourceVersion: "7"})
	require.NoError(t, err)
	defer w.Close()

	r := <-f.requests
	require.Equal(t, "/api/v1/watch", r.URL.Path)
	require.Equal(t, url.Values{"kinds": {"schedulings,jobs,testbeds,slotslices"}, "resourceVersion": {"7"}, "feed": {"f1"}, "namespace": {"team-a"}}, r.URL.Query())
	require.Equal(t, []string{apitypes.Subprotocol}, websocket.Subprotocols(r))

	first := next(t, w)
	require.Equal(t, apitypes.Resync, first.Type)
	require.Equal(t, "10", first.ResourceVersion)
	require.Len(t, first.Items, 4)
	s, err := first.Items[0].Scheduling()
	require.NoError(t, err)
	require.Equal(t, "nightly", s.Name)
	require.Equal(t, v1alpha1.SchedulingScheduling, s.Status.State)
	require.Equal(t, "nightly", first.Items[0].Name())
	j, err := first.Items[1].Job()
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1}, j.Status.Slots)
	_, err = first.Items[1].Scheduling()
	require.ErrorContains(t, err, "not a Scheduling", "the kind is checked")
	_, err = first.Items[1].TestBed()
	require.Error(t, err)
	// A TestBed event carries the counts; the bed's slots come in its SlotSlice events.
	tb, err := first.Items[2].TestBed()
	require.NoError(t, err)
	require.Equal(t, "bed", tb.Name)
	require.Equal(t, int32(2), tb.Status.Total)
	require.Empty(t, tb.Status.Slots)
	slice, err := first.Items[3].SlotSlice()
	require.NoError(t, err)
	require.Equal(t, apitypes.SlotSlice{Name: "bed-slots-0", Namespace: "team-a", ResourceVersion: "5", TestBed: "bed", Index: 0,
		Slots: []v1alpha1.SlotStatus{{Position: 0, NodeName: "node-00", State: v1alpha1.SlotOccupied}, {Position: 1, NodeName: "node-00", State: v1alpha1.SlotFree}}},
		slice)
	_, err = first.Items[2].SlotSlice()
	require.ErrorContains(t, err, "not a SlotSlice")

	second := next(t, w)
	require.Equal(t, apitypes.Modified, second.Type)
	require.Equal(t, "11", second.ResourceVersion)
	s, err = second.Scheduling()
	require.NoError(t, err)
	require.Equal(t, int32(1), s.Status.FinishedJobs)

	// The server closes with a reason: the channel closes and Err carries it.
	select {
	case _, ok := <-w.Events():
		require.False(t, ok, "no more events")
	case <-time.After(5 * time.Second):
		t.Fatal("the feed did not end")
	}
	require.ErrorContains(t, w.Err(), "the server is stopping")
	var ce *websocket.CloseError
	require.ErrorAs(t, w.Err(), &ce)
	require.Equal(t, websocket.CloseGoingAway, ce.Code)
}

func TestWatch_RefusedIsAStatusError(t *testing.T) {
	f := newFeedServer(t, func(*websocket.Conn) {})
	c, err := New(f.url, "wrong")
	require.NoError(t, err)
	_, err = c.Watch(context.Background(), nil, Position{})
	require.True(t, IsUnauthorized(err), "%v", err)
	require.Contains(t, err.Error(), "the bearer token is not known")
	r := <-f.requests
	require.Empty(t, r.URL.Query(), "no kinds: the server's default")

	dead, err := New("http://127.0.0.1:1", "tok-1")
	require.NoError(t, err)
	_, err = dead.Watch(context.Background(), nil, Position{})
	require.ErrorContains(t, err, "open the change feed")
	require.Zero(t, StatusOf(err))
}

// A cancelled context, and Close, end the feed even while the server keeps sending and
// nobody reads; every goroutine of the watcher ends, and the server sees the connection go.
func TestWatch_EndsOnCancelAndCloseWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	f := newFeedServer(t, func(conn *websocket.Conn) {
		for {
			if err := conn.WriteMessage(websocket.TextMessage, []byte(modified)); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	c, err := New(f.url, "tok-1")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, nil, Position{})
	require.NoError(t, err)
	next(t, w)
	time.Sleep(50 * time.Millisecond) // the reader is now stuck on a send nobody takes
	cancel()
	select {
	case <-w.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not end on cancel")
	}
	for range w.Events() { // closed: drains what was in flight, if anything, and ends
	}
	require.ErrorIs(t, w.Err(), context.Canceled)
	select {
	case <-f.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's connection did not end")
	}

	w, err = c.Watch(context.Background(), nil, Position{})
	require.NoError(t, err)
	next(t, w)
	done := make(chan struct{})
	go func() { _ = w.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	require.NoError(t, w.Err(), "a closed feed ended as asked")
	require.NoError(t, w.Close(), "twice is fine")
	<-f.ended

	// Nothing of either watcher is left (the test server's own goroutines may take a moment
	// to go).
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 5*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d now", before, runtime.NumGoroutine())
	require.False(t, errors.Is(w.Err(), context.Canceled))
}
