package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

func job(ns, name, rv string) *v1alpha1.BatchJob {
	return &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

func newClient(h *hub, ns string) *feedClient {
	return &feedClient{namespace: ns, kinds: map[string]bool{apitypes.KindBatchJob: true, apitypes.KindScheduling: true}, max: h.queueSize, wake: make(chan struct{}, 1)}
}

func decodeAll(t *testing.T, batch [][]byte) []apitypes.Event {
	t.Helper()
	out := make([]apitypes.Event, len(batch))
	for i, b := range batch {
		require.NoError(t, json.Unmarshal(b, &out[i]))
	}
	return out
}

func rvs(evs []apitypes.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type) + "@" + e.ResourceVersion
	}
	return out
}

func TestHub_ResumesFromAChangeItHasAndResyncsOtherwise(t *testing.T) {
	h := newHub(slog.Default())
	// The initial list is the picture, not changes: nobody resumes from it.
	h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", "a", "1"), true)
	h.observe(apitypes.KindBatchJob, apitypes.Added, job("other", "x", "2"), true)

	c := newClient(h, "ns")
	first := h.subscribe(c, h.id, "")
	var resync apitypes.Event
	require.NoError(t, json.Unmarshal(first, &resync))
	require.Equal(t, apitypes.Resync, resync.Type)
	require.Empty(t, resync.ResourceVersion, "no change seen yet")
	require.Len(t, resync.Items, 1, "only the client's namespace")
	require.Equal(t, "1", resync.Items[0].ResourceVersion)
	require.Equal(t, h.id, resync.Feed, "a RESYNC names its feed")

	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", "3"), false)
	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", "3"), false) // a relist repeats it: no change
	h.observe(apitypes.KindBatchJob, apitypes.Added, job("other", "y", "4"), false)
	h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", "b", "5"), false)
	h.observe(apitypes.KindBatchJob, apitypes.Deleted, toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: job("ns", "a", "6")}, false)
	h.observe(apitypes.KindTestBed, apitypes.Added, &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bed", ResourceVersion: "7"}}, false)
	batch, lost := c.take()
	require.False(t, lost)
	require.Equal(t, []string{"MODIFIED@3", "ADDED@5", "DELETED@6"}, rvs(decodeAll(t, batch)), "its namespace and kinds, in order, once each")

	// Resuming from a change the hub holds replays what came after it.
	c2 := newClient(h, "ns")
	require.Nil(t, h.subscribe(c2, h.id, "3"))
	batch, _ = c2.take()
	require.Equal(t, []string{"ADDED@5", "DELETED@6"}, rvs(decodeAll(t, batch)))

	// An unknown version (older than the history, or from before a restart) is a RESYNC of
	// the picture now, whose version is the last change's.
	c3 := newClient(h, "ns")
	first = h.subscribe(c3, h.id, "2")
	require.NoError(t, json.Unmarshal(first, &resync))
	require.Equal(t, apitypes.Resync, resync.Type)
	require.Contains(t, resync.Reason, "not among the changes this server keeps")
	require.Equal(t, "7", resync.ResourceVersion)
	require.Len(t, resync.Items, 1)
	require.Equal(t, "5", resync.Items[0].ResourceVersion, "a deleted, b added; the test bed is not asked for")
}

func TestHub_ASlowClientGetsAResyncAndNeverHoldsTheOthers(t *testing.T) {
	h := newHub(slog.Default())
	h.queueSize = 10
	slow, fast := newClient(h, "ns"), newClient(h, "ns")
	h.subscribe(slow, h.id, "")
	h.subscribe(fast, h.id, "")
	for i := 1; i <= 25; i++ {
		h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", fmt.Sprintf("j%02d", i), fmt.Sprint(i)), false)
		if i%5 == 0 { // the fast client keeps up
			batch, lost := fast.take()
			require.False(t, lost)
			require.Len(t, batch, 5)
		}
	}
	batch, lost := slow.take()
	require.True(t, lost, "25 changes overflowed a queue of 10")
	require.Empty(t, batch, "what overflowed is dropped: the RESYNC covers it")
	require.LessOrEqual(t, len(slow.queue), 10)

	var resync apitypes.Event
	require.NoError(t, json.Unmarshal(h.resync(slow, "behind"), &resync))
	require.Equal(t, "25", resync.ResourceVersion)
	require.Len(t, resync.Items, 25)
	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "j01", "26"), false)
	batch, lost = slow.take()
	require.False(t, lost)
	require.Equal(t, []string{"MODIFIED@26"}, rvs(decodeAll(t, batch)), "after the RESYNC, changes one by one again")
}

func TestHub_HistoryIsBounded(t *testing.T) {
	h := newHub(slog.Default())
	h.historySize = 100
	for i := 1; i <= 1000; i++ {
		h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", fmt.Sprint(i)), false)
	}
	require.Len(t, h.history, 100)
	require.Len(t, h.bySeqRV, 100)
	c := newClient(h, "ns")
	require.Nil(t, h.subscribe(c, h.id, "950"))
	batch, _ := c.take()
	require.Len(t, batch, 50)
	require.NotNil(t, h.subscribe(newClient(h, "ns"), h.id, "900"), "900 has left the history")
}

func TestHub_HistoryIsBoundedByBytesToo(t *testing.T) {
	h := newHub(slog.Default())
	one := len(mustEvent(t, job("ns", "a", "1")))
	h.historyMaxBytes = 10 * one
	for i := 1; i <= 100; i++ {
		h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", fmt.Sprint(i)), false)
	}
	require.LessOrEqual(t, h.historyBytes, 10*one+10) // resourceVersions grow by a digit or two
	require.GreaterOrEqual(t, len(h.history), 8)
	require.LessOrEqual(t, len(h.history), 10)
	total := 0
	for _, r := range h.history {
		total += len(r.data)
	}
	require.Equal(t, total, h.historyBytes, "the count follows what is kept")
	require.Len(t, h.bySeqRV, len(h.history))

	// One change larger than the bound stays (the newest always does), alone.
	h.historyMaxBytes = 1
	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", "101"), false)
	require.Len(t, h.history, 1)
}

func TestHub_AClientQueueIsBoundedByBytes(t *testing.T) {
	h := newHub(slog.Default())
	c := newClient(h, "ns")
	c.maxBytes = 3 * len(mustEvent(t, job("ns", "a", "10")))
	h.subscribe(c, h.id, "")
	for i := 10; i < 13; i++ {
		h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", fmt.Sprint(i)), false)
	}
	_, lost := c.take()
	require.False(t, lost, "three fit")
	for i := 13; i < 17; i++ {
		h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", fmt.Sprint(i)), false)
	}
	batch, lost := c.take()
	require.True(t, lost, "four do not")
	require.Empty(t, batch)
}

// A storm of clients asking for versions the server does not have (or for the picture)
// costs one encoding while nothing changes: they get the very same bytes.
func TestHub_AResyncStormIsBuiltOnce(t *testing.T) {
	h := newHub(slog.Default())
	for i := range 50 {
		h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", fmt.Sprintf("j%02d", i), fmt.Sprint(i+1)), false)
	}
	first := h.subscribe(newClient(h, "ns"), h.id, "999999")
	for range 100 {
		again := h.subscribe(newClient(h, "ns"), h.id, "123")
		require.Same(t, &first[0], &again[0], "built again")
	}
	other := newClient(h, "ns")
	other.kinds = map[string]bool{apitypes.KindScheduling: true}
	require.NotEqual(t, first, h.subscribe(other, h.id, "123"), "other kinds, another RESYNC")

	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "j00", "51"), false)
	after := h.subscribe(newClient(h, "ns"), h.id, "123")
	var resync apitypes.Event
	require.NoError(t, json.Unmarshal(after, &resync))
	require.Equal(t, "51", resync.ResourceVersion, "a change since: built anew")
}

// The RESYNC is encoded after the hub's lock is let go: a change that comes in between
// reaches the client after it, and is neither lost nor inside it.
func TestHub_AChangeDuringAResyncIsQueuedAfterIt(t *testing.T) {
	h := newHub(slog.Default())
	h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", "a", "1"), false)
	c := newClient(h, "ns")
	h.mu.Lock()
	h.clients[c] = struct{}{}
	snap := h.snapshotLocked(c, "test")
	h.mu.Unlock()
	h.observe(apitypes.KindBatchJob, apitypes.Modified, job("ns", "a", "2"), false) // while the RESYNC is being built
	var resync apitypes.Event
	require.NoError(t, json.Unmarshal(h.encode(snap), &resync))
	require.Equal(t, "1", resync.ResourceVersion)
	require.Len(t, resync.Items, 1)
	require.Equal(t, "1", resync.Items[0].ResourceVersion)
	batch, lost := c.take()
	require.False(t, lost)
	require.Equal(t, []string{"MODIFIED@2"}, rvs(decodeAll(t, batch)))
}

func TestHub_ConnectionCaps(t *testing.T) {
	h := newHub(slog.Default())
	h.maxConns, h.maxUserConns = 3, 2
	r1, why := h.admit("alice")
	require.Empty(t, why)
	_, why = h.admit("alice")
	require.Empty(t, why)
	_, why = h.admit("alice")
	require.Contains(t, why, "user alice has 2 change feed connections open")
	_, why = h.admit("bob")
	require.Empty(t, why)
	_, why = h.admit("carol")
	require.Contains(t, why, "at most 3 connections")
	r1()
	r1() // twice is once
	_, why = h.admit("carol")
	require.Empty(t, why)
	_, why = h.admit("dave")
	require.NotEmpty(t, why, "a second release of the same connection frees nothing")
}

func mustEvent(t *testing.T, obj client.Object) []byte {
	t.Helper()
	data, err := json.Marshal(apitypes.Event{Type: apitypes.Modified, Kind: apitypes.KindBatchJob, ResourceVersion: obj.GetResourceVersion(), Object: view(obj)})
	require.NoError(t, err)
	return data
}

// A relist (after a watch that could not resume) is the kind at one moment: the changes
// the watch missed lost their order, and each object shows its latest state only. They are
// not sent as a sequence, which could show a slot taken before its holder let it go: every
// client of the kind gets a RESYNC of the new picture, and no one resumes across the gap.
func TestHub_ARelistIsSentAsAResync(t *testing.T) {
	h := newHub(slog.Default())
	holding := func(name, rv string, state v1alpha1.BatchJobState, slots ...int32) *v1alpha1.BatchJob {
		j := job("ns", name, rv)
		j.Status.State, j.Status.Slots = state, slots
		return j
	}
	h.replace(apitypes.KindBatchJob, []any{
		holding("a", "1", v1alpha1.JobInQueue), holding("b", "2", v1alpha1.JobRunning, 3),
		holding("c", "3", v1alpha1.JobRunning, 4), holding("d", "4", v1alpha1.JobRunning, 5),
	}, "4")
	c := newClient(h, "ns")
	var first apitypes.Event
	require.NoError(t, json.Unmarshal(h.subscribe(c, h.id, ""), &first))
	require.Len(t, first.Items, 4, "the first list is the picture")
	batch, lost := c.take()
	require.Empty(t, batch, "and no change")
	require.False(t, lost)
	h.observe(apitypes.KindBatchJob, apitypes.Modified, holding("d", "5", v1alpha1.JobRunning, 5), false)
	testbeds := &feedClient{namespace: "ns", kinds: map[string]bool{apitypes.KindTestBed: true}, max: h.queueSize, wake: make(chan struct{}, 1)}
	require.Nil(t, h.subscribe(testbeds, h.id, "5"))

	// While the watch was down: b ended (rv 10) and was written again (rv 13), a took its
	// slot (rv 12), c was deleted, e was made (rv 11). The list shows b after a.
	h.replace(apitypes.KindBatchJob, []any{
		holding("a", "12", v1alpha1.JobSubmitted, 3), holding("b", "13", v1alpha1.JobCompleted),
		holding("d", "5", v1alpha1.JobRunning, 5), holding("e", "11", v1alpha1.JobInQueue),
	}, "13")
	batch, lost = c.take()
	require.True(t, lost, "a RESYNC is due")
	require.Empty(t, batch)
	var resync apitypes.Event
	require.NoError(t, json.Unmarshal(h.resync(c, c.lostWhy()), &resync))
	require.Equal(t, apitypes.Resync, resync.Type)
	require.Contains(t, resync.Reason, "could not resume")
	require.Contains(t, resync.Reason, "3 changed, 1 gone")
	var names []string
	for _, it := range resync.Items {
		names = append(names, it.ResourceVersion)
	}
	require.Equal(t, []string{"12", "13", "5", "11"}, names, "the list's picture, by name")
	_, lost = testbeds.take()
	require.False(t, lost, "a client of other kinds goes on")
	require.NotNil(t, h.subscribe(newClient(h, "ns"), h.id, "5"), "no one resumes from before the relist")

	// The same list again, or one with nothing new, is nothing.
	h.replace(apitypes.KindBatchJob, []any{
		holding("a", "12", v1alpha1.JobSubmitted, 3), holding("b", "13", v1alpha1.JobCompleted),
		holding("d", "5", v1alpha1.JobRunning, 5), holding("e", "11", v1alpha1.JobInQueue),
	}, "13")
	batch, lost = c.take()
	require.False(t, lost)
	require.Empty(t, batch)

	// No object's state goes back: a watch event or a list older than what was sent is not
	// taken in, and an object made after a list was read is not taken as deleted by it.
	h.observe(apitypes.KindBatchJob, apitypes.Added, holding("f", "14", v1alpha1.JobInQueue), false)
	h.observe(apitypes.KindBatchJob, apitypes.Modified, holding("b", "9", v1alpha1.JobRunning, 3), false)
	h.replace(apitypes.KindBatchJob, []any{
		holding("a", "12", v1alpha1.JobSubmitted, 3), holding("b", "9", v1alpha1.JobRunning, 3),
		holding("d", "5", v1alpha1.JobRunning, 5), holding("e", "11", v1alpha1.JobInQueue),
	}, "13")
	batch, lost = c.take()
	require.False(t, lost)
	require.Equal(t, []string{"ADDED@14"}, rvs(decodeAll(t, batch)))
}

// Two API replicas watch the kinds apart and interleave them in their own orders: a
// resourceVersion one sent is not the same place in the other's history. A client resumes
// only on the feed whose RESYNC it took.
func TestHub_ResumesOnlyOnItsOwnFeed(t *testing.T) {
	a, b := newHub(slog.Default()), newHub(slog.Default())
	require.NotEqual(t, a.id, b.id)
	for _, h := range []*hub{a, b} {
		h.observe(apitypes.KindBatchJob, apitypes.Added, job("ns", "j", "5"), false)
		h.observe(apitypes.KindScheduling, apitypes.Added, &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "6"}}, false)
	}
	require.Nil(t, a.subscribe(newClient(a, "ns"), a.id, "5"), "its own feed resumes")
	for _, feed := range []string{a.id, ""} {
		var ev apitypes.Event
		require.NoError(t, json.Unmarshal(b.subscribe(newClient(b, "ns"), feed, "5"), &ev))
		require.Equal(t, apitypes.Resync, ev.Type, "feed %q", feed)
		require.Contains(t, ev.Reason, "not this API replica's")
		require.Equal(t, b.id, ev.Feed)
		require.Len(t, ev.Items, 2)
	}
}
