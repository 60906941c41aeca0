package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// feedKinds maps the ?kinds= words to kinds and to the resources an Authorizer is asked
// to allow watching.
var feedKinds = map[string]struct{ kind, resource string }{
	"schedulings": {apitypes.KindScheduling, "schedulings"},
	"jobs":        {apitypes.KindBatchJob, "batchjobs"},
	"testbeds":    {apitypes.KindTestBed, "testbeds"},
	// The slots are part of a test bed: who may watch test beds may watch their slices.
	"slotslices": {apitypes.KindSlotSlice, "testbeds"},
}

// record is an event as the hub keeps it: encoded once, sent to every client as is.
type record struct {
	seq       uint64
	rv        string
	kind      string
	namespace string
	name      string
	data      []byte // the Event, JSON
}

type objectKey struct{ kind, namespace, name string }

// hub turns the informers' notifications into the feed: a numbered history of the last
// changes (so a client can resume), the current picture (for RESYNC), and the clients.
// Sending never waits for a client: each has a bounded queue, and a client whose queue
// overflows is sent a RESYNC instead of what it missed.
//
// Everything is bounded: the history by count and bytes, each client's queue by count and
// bytes (its entries share the history's encoded events), the connections in all and per
// user (admit), and the RESYNCs built at once (resyncSlots). A RESYNC is put together
// outside the lock the informers' notifications need, and one already built for the same
// namespace, kinds and last change is sent again rather than rebuilt: a storm of clients
// asking from versions the server does not have costs one encoding.
type hub struct {
	log *slog.Logger
	// id names this hub's feed in its RESYNCs: a client resumes only on the hub whose
	// history it followed. Two API replicas watch the kinds apart, and interleave them in
	// different orders; the same resourceVersion is not the same place in both.
	id string

	mu           sync.Mutex
	seq          uint64                           // the last change's number
	history      []*record                        // the last changes, oldest first
	historyBytes int                              // the encoded size of history
	bySeqRV      map[string]uint64                // a change's resourceVersion -> its number, for the history
	state        map[string]map[objectKey]*record // by namespace: each object's latest ADDED or MODIFIED
	clients      map[*feedClient]struct{}
	kinds        int             // the kinds watched
	listed       map[string]bool // the kinds whose first list is in
	conns        int             // feed connections admitted
	userConns    map[string]int  // the same, by user
	resyncs      map[string][]byte
	resyncsAt    uint64 // the change resyncs were built at; they go when another comes
	resyncBytes  int    // their size, kept under historyMaxBytes

	historySize, historyMaxBytes int
	queueSize, queueMaxBytes     int
	maxConns, maxUserConns       int
	resyncSlots                  chan struct{}
}

// The feed's default bounds (Options can change the connection caps).
const (
	DefaultFeedConnections        = 1000
	DefaultFeedConnectionsPerUser = 100
	defaultHistorySize            = 10000
	defaultHistoryBytes           = 64 << 20
	defaultQueueSize              = 1000
	defaultQueueBytes             = 16 << 20
)

func newHub(log *slog.Logger) *hub {
	return &hub{
		id: newFeedID(), log: log, bySeqRV: map[string]uint64{}, state: map[string]map[objectKey]*record{}, clients: map[*feedClient]struct{}{}, listed: map[string]bool{},
		userConns: map[string]int{}, resyncs: map[string][]byte{},
		historySize: defaultHistorySize, historyMaxBytes: defaultHistoryBytes,
		queueSize: defaultQueueSize, queueMaxBytes: defaultQueueBytes,
		maxConns: DefaultFeedConnections, maxUserConns: DefaultFeedConnectionsPerUser,
		resyncSlots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0))),
	}
}

// newFeedID is a hub's random name.
func newFeedID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}

// admit counts a new feed connection of user, or says why it may not open: the caps keep
// what a flood of connections can hold (goroutines, sockets, queues) within bounds.
func (h *hub) admit(user string) (release func(), refused string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.conns >= h.maxConns:
		return nil, fmt.Sprintf("the change feed serves at most %d connections, and has them all", h.maxConns)
	case h.userConns[user] >= h.maxUserConns:
		return nil, fmt.Sprintf("user %s has %d change feed connections open, the most one user may", user, h.maxUserConns)
	}
	h.conns++
	h.userConns[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.conns--
			if h.userConns[user]--; h.userConns[user] <= 0 {
				delete(h.userConns, user)
			}
		})
	}, ""
}

// feedKindTypes are the kinds the feed carries, with the objects and lists their
// reflectors read.
var feedKindTypes = []struct {
	kind, resource string
	obj            func() client.Object
	list           func() client.ObjectList
}{
	{apitypes.KindScheduling, "schedulings", func() client.Object { return &v1alpha1.Scheduling{} }, func() client.ObjectList { return &v1alpha1.SchedulingList{} }},
	{apitypes.KindBatchJob, "batchjobs", func() client.Object { return &v1alpha1.BatchJob{} }, func() client.ObjectList { return &v1alpha1.BatchJobList{} }},
	{apitypes.KindTestBed, "testbeds", func() client.Object { return &v1alpha1.TestBed{} }, func() client.ObjectList { return &v1alpha1.TestBedList{} }},
	{apitypes.KindSlotSlice, "slotslices", func() client.Object { return &v1alpha1.SlotSlice{} }, func() client.ObjectList { return &v1alpha1.SlotSliceList{} }},
}

// watch fills the hub from the cluster until ctx ends: a reflector per kind, whose store
// is the hub (feedStore). A reflector hands its watch's events over one by one, in the
// order they were written, and a relist (after a watch it could not resume, such as an
// API server restart) as one list: the hub turns that list into the changes it missed,
// in the order they were written, instead of the list's order by name. An informer would
// hand the same relist over object by object in the list's order, and the feed would show,
// for a moment, a slot taken before its holder let it go.
func (h *hub) watch(ctx context.Context, cfg *rest.Config) error {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: kubeclient.Scheme()})
	if err != nil {
		return fmt.Errorf("a client for the feed: %w", err)
	}
	h.kinds = len(feedKindTypes)
	for _, k := range feedKindTypes {
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (kruntime.Object, error) {
				l := k.list()
				return l, c.List(ctx, l, &client.ListOptions{Raw: &opts})
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return c.Watch(ctx, k.list(), &client.ListOptions{Raw: &opts})
			},
		}
		r := toolscache.NewReflectorWithOptions(lw, k.obj(), feedStore{h, k.kind}, toolscache.ReflectorOptions{Name: "change feed " + k.resource})
		go r.RunWithContext(ctx)
	}
	return nil
}

// feedStore is the hub as one kind's reflector's store. The reflector calls it from one
// goroutine, so a kind's objects in the hub change only through it.
type feedStore struct {
	h    *hub
	kind string
}

func (s feedStore) Add(obj any) error { s.h.observe(s.kind, apitypes.Added, obj, false); return nil }
func (s feedStore) Update(obj any) error {
	s.h.observe(s.kind, apitypes.Modified, obj, false)
	return nil
}
func (s feedStore) Delete(obj any) error {
	s.h.observe(s.kind, apitypes.Deleted, obj, false)
	return nil
}
func (s feedStore) Resync() error { return nil }
func (s feedStore) Replace(items []any, rv string) error {
	s.h.replace(s.kind, items, rv)
	return nil
}

// ready is whether every kind's first list is in the picture.
func (h *hub) ready() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kinds > 0 && len(h.listed) == h.kinds
}

// view is how the API shows an object of the feed.
func view(obj client.Object) any {
	switch o := obj.(type) {
	case *v1alpha1.Scheduling:
		return schedulingOf(o)
	case *v1alpha1.BatchJob:
		return jobOf(o)
	case *v1alpha1.TestBed:
		return testBedOf(o)
	case *v1alpha1.SlotSlice:
		return slotSliceOf(o)
	}
	return nil
}

// observe takes in one change of an object; initial says it is part of a first list,
// the picture before any change.
func (h *hub) observe(kind string, typ apitypes.EventType, o any, initial bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	rec, err := encodeRecord(kind, typ, obj)
	if err != nil {
		h.log.Error("feed: encode an event", "kind", kind, "name", obj.GetName(), "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applyLocked(typ, rec, initial)
}

func encodeRecord(kind string, typ apitypes.EventType, obj client.Object) (*record, error) {
	data, err := json.Marshal(apitypes.Event{Type: typ, Kind: kind, ResourceVersion: obj.GetResourceVersion(), Object: view(obj)})
	if err != nil {
		return nil, err
	}
	return &record{rv: obj.GetResourceVersion(), kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), data: data}, nil
}

// replace takes in a kind's whole list. The first is the picture, not changes. A later one
// (a relist, after a watch that could not resume) is the kind at one moment, after changes
// the watch missed: their order is lost, and an object shows only its latest state, so
// they cannot be sent as a sequence (an object changed again after the list's other
// changes would show its earlier change after theirs). The picture takes the list in, the
// history is cut (no one resumes across the gap), and every client of the kind gets a
// RESYNC. A list with no change is nothing. listRV is the list's resourceVersion.
func (h *hub) replace(kind string, items []any, listRV string) {
	h.mu.Lock()
	first := !h.listed[kind]
	had := map[objectKey]*record{}
	for _, recs := range h.state {
		for k, r := range recs {
			if k.kind == kind {
				had[k] = r
			}
		}
	}
	h.mu.Unlock()

	var changed, gone []*record
	listed := make(map[objectKey]bool, len(items))
	for _, o := range items {
		obj, ok := o.(client.Object)
		if !ok {
			continue
		}
		key := objectKey{kind, obj.GetNamespace(), obj.GetName()}
		listed[key] = true
		prev := had[key]
		if prev != nil && (prev.rv == obj.GetResourceVersion() || olderRV(obj.GetResourceVersion(), prev.rv)) {
			continue
		}
		typ := apitypes.Modified
		if prev == nil {
			typ = apitypes.Added
		}
		rec, err := encodeRecord(kind, typ, obj)
		if err != nil {
			h.log.Error("feed: encode an event", "kind", kind, "name", obj.GetName(), "err", err)
			continue
		}
		changed = append(changed, rec)
	}
	for key, prev := range had {
		if !listed[key] && !olderRV(listRV, prev.rv) { // not made after the list was read
			gone = append(gone, prev)
		}
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	h.listed[kind] = true
	for _, r := range gone {
		h.putLocked(apitypes.Deleted, r)
	}
	for _, r := range changed {
		h.putLocked(apitypes.Added, r)
	}
	if first || len(changed)+len(gone) == 0 {
		return
	}
	h.history, h.historyBytes = nil, 0
	clear(h.bySeqRV)
	h.seq++ // RESYNCs built before are not sent again
	why := fmt.Sprintf("the API's watch of %s could not resume, and it read them again: %d changed, %d gone", strings.ToLower(kind)+"s", len(changed), len(gone))
	for c := range h.clients {
		if c.kinds[kind] {
			c.lose(why)
		}
	}
	h.log.Info("feed: a watch could not resume; its clients get a RESYNC", "kind", kind, "changed", len(changed), "gone", len(gone), "clients", len(h.clients))
}

// olderRV says a is an older resourceVersion than b; versions that do not compare (one
// empty, or not a number) are not older.
func olderRV(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

// putLocked puts a change into the picture, and says whether it was one.
func (h *hub) putLocked(typ apitypes.EventType, rec *record) bool {
	key := objectKey{rec.kind, rec.namespace, rec.name}
	inNamespace := h.state[rec.namespace]
	if typ == apitypes.Deleted {
		delete(inNamespace, key)
		if len(inNamespace) == 0 {
			delete(h.state, rec.namespace)
		}
		return true
	}
	// A periodic resync repeats an object unchanged: not a change. An older state than the
	// one sent is never sent after it.
	if prev := inNamespace[key]; prev != nil && (prev.rv == rec.rv || olderRV(rec.rv, prev.rv)) {
		return false
	}
	if inNamespace == nil {
		inNamespace = map[objectKey]*record{}
		h.state[rec.namespace] = inNamespace
	}
	inNamespace[key] = rec
	return true
}

// applyLocked puts a change into the picture and, unless initial, into the history and
// every client's queue that wants it.
func (h *hub) applyLocked(typ apitypes.EventType, rec *record, initial bool) {
	if !h.putLocked(typ, rec) || initial {
		return
	}
	h.seq++
	rec.seq = h.seq
	h.history = append(h.history, rec)
	h.historyBytes += len(rec.data)
	h.bySeqRV[rec.rv] = rec.seq
	// Oldest out while over either bound; the newest change always stays.
	over := 0
	for over < len(h.history)-1 && (len(h.history)-over > h.historySize || h.historyBytes > h.historyMaxBytes) {
		old := h.history[over]
		h.historyBytes -= len(old.data)
		if h.bySeqRV[old.rv] == old.seq {
			delete(h.bySeqRV, old.rv)
		}
		over++
	}
	if over > 0 {
		h.history = append(h.history[:0:0], h.history[over:]...)
	}
	for c := range h.clients {
		if c.wants(rec) {
			c.push(rec.data)
		}
	}
}

// feedClient is one connection's subscription: what it watches and its bounded queue.
type feedClient struct {
	namespace string
	kinds     map[string]bool

	mu       sync.Mutex
	queue    [][]byte
	bytes    int // queued, encoded
	max      int
	maxBytes int
	lost     bool          // the queue overflowed, or the hub lost changes: the client must be sent a RESYNC
	why      string        // why, the RESYNC's reason
	wake     chan struct{} // a send-side nudge, capacity 1
}

func (c *feedClient) wants(r *record) bool {
	return r.namespace == c.namespace && c.kinds[r.kind]
}

// push queues an encoded event without ever waiting; on overflow it drops the queue, as a
// RESYNC will replace it.
func (c *feedClient) push(data []byte) {
	c.mu.Lock()
	switch {
	case c.lost:
	case len(c.queue) >= c.max || (c.maxBytes > 0 && c.bytes+len(data) > c.maxBytes):
		c.queue, c.bytes, c.lost = nil, 0, true
		c.why = fmt.Sprintf("the client fell more than %d changes or %d MiB behind", c.max, c.maxBytes>>20)
	default:
		c.queue = append(c.queue, data)
		c.bytes += len(data)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// lose drops the queue: a RESYNC is due instead, for why.
func (c *feedClient) lose(why string) {
	c.mu.Lock()
	if !c.lost {
		c.queue, c.bytes, c.lost, c.why = nil, 0, true, why
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take empties the queue; lost says a RESYNC is due instead.
func (c *feedClient) take() (batch [][]byte, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch, c.queue, c.bytes = c.queue, nil, 0
	return batch, c.lost
}

// lostWhy is why a RESYNC is due.
func (c *feedClient) lostWhy() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// subscribe adds a client. From a resourceVersion the hub still has in its history, and
// this hub's feed id, the changes after it are queued; otherwise the client's first
// message is a RESYNC, returned.
func (h *hub) subscribe(c *feedClient, feed, from string) []byte {
	h.mu.Lock()
	h.clients[c] = struct{}{}
	var snap *snapshot
	switch seq, ok := h.bySeqRV[from]; {
	case from == "":
		snap = h.snapshotLocked(c, "the current picture, before the changes that follow")
	case feed != h.id:
		snap = h.snapshotLocked(c, "the feed named is not this API replica's: each replica sends its changes in its own order")
	case !ok:
		snap = h.snapshotLocked(c, "the resourceVersion asked for is not among the changes this server keeps")
	default:
		first := h.history[0].seq
		for _, r := range h.history[seq-first+1:] {
			if c.wants(r) {
				c.push(r.data)
			}
		}
	}
	h.mu.Unlock()
	if snap == nil {
		return nil
	}
	return h.encode(snap)
}

func (h *hub) unsubscribe(c *feedClient) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// resync is the RESYNC for a client that fell behind; its queue starts again empty, after
// the picture.
func (h *hub) resync(c *feedClient, reason string) []byte {
	h.mu.Lock()
	snap := h.snapshotLocked(c, reason)
	h.mu.Unlock()
	return h.encode(snap)
}

// snapshot is a RESYNC's content, taken under the hub's lock: the records are immutable,
// so it is encoded after the lock is let go. The client's queue was emptied at the same
// moment, so every change after the snapshot reaches the client after the RESYNC.
type snapshot struct {
	key    string // namespace, kinds, reason and last change: equal keys, equal bytes
	seq    uint64 // the last change it includes
	rv     string
	reason string
	items  []*record
	built  []byte // the same RESYNC, built already
}

func (h *hub) snapshotLocked(c *feedClient, reason string) *snapshot {
	c.mu.Lock()
	c.queue, c.bytes, c.lost, c.why = nil, 0, false, ""
	c.mu.Unlock()
	snap := &snapshot{reason: reason, seq: h.seq}
	if n := len(h.history); n > 0 {
		snap.rv = h.history[n-1].rv
	}
	kinds := slices.Sorted(maps.Keys(c.kinds))
	snap.key = fmt.Sprintf("%s|%s|%s|%d", c.namespace, strings.Join(kinds, ","), reason, h.seq)
	if h.resyncsAt != h.seq {
		clear(h.resyncs)
		h.resyncsAt, h.resyncBytes = h.seq, 0
	}
	if built, ok := h.resyncs[snap.key]; ok {
		snap.built = built
		return snap
	}
	for _, r := range h.state[c.namespace] {
		if c.kinds[r.kind] {
			snap.items = append(snap.items, r)
		}
	}
	return snap
}

// encode builds a snapshot's RESYNC, or finds the one built for the same key. At most
// resyncSlots are built at once: each is the size of the namespace's whole picture.
func (h *hub) encode(snap *snapshot) []byte {
	if snap.built != nil {
		return snap.built
	}
	h.resyncSlots <- struct{}{}
	defer func() { <-h.resyncSlots }()
	slices.SortFunc(snap.items, func(a, b *record) int { // a stable order: by kind, then name
		return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.name, b.name))
	})
	head, _ := json.Marshal(apitypes.Event{Type: apitypes.Resync, ResourceVersion: snap.rv, Reason: snap.reason, Feed: h.id})
	size := len(head) + 16
	for _, r := range snap.items {
		size += len(r.data) + 1
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	b.Write(head[:len(head)-1])
	b.WriteString(`,"items":[`)
	for i, r := range snap.items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.data)
	}
	b.WriteString("]}")
	data := b.Bytes()
	h.mu.Lock()
	// No change since: a client asking now gets the same bytes.
	if h.resyncsAt == snap.seq && h.resyncBytes+len(data) <= h.historyMaxBytes {
		h.resyncs[snap.key] = data
		h.resyncBytes += len(data)
	}
	h.mu.Unlock()
	return data
}
