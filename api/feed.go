package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
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

	mu           sync.Mutex
	seq          uint64                           // the last change's number
	history      []*record                        // the last changes, oldest first
	historyBytes int                              // the encoded size of history
	bySeqRV      map[string]uint64                // a change's resourceVersion -> its number, for the history
	state        map[string]map[objectKey]*record // by namespace: each object's latest ADDED or MODIFIED
	clients      map[*feedClient]struct{}
	synced       []func() bool
	conns        int            // feed connections admitted
	userConns    map[string]int // the same, by user
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
		log: log, bySeqRV: map[string]uint64{}, state: map[string]map[objectKey]*record{}, clients: map[*feedClient]struct{}{},
		userConns: map[string]int{}, resyncs: map[string][]byte{},
		historySize: defaultHistorySize, historyMaxBytes: defaultHistoryBytes,
		queueSize: defaultQueueSize, queueMaxBytes: defaultQueueBytes,
		maxConns: DefaultFeedConnections, maxUserConns: DefaultFeedConnectionsPerUser,
		resyncSlots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0))),
	}
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

// watch registers the hub with the informers of the four kinds. The informers' initial
// lists fill the picture without being changes: nobody can resume from them.
func (h *hub) watch(ctx context.Context, informers cache.Informers) error {
	for _, k := range []struct {
		obj  client.Object
		kind string
	}{{&v1alpha1.Scheduling{}, apitypes.KindScheduling}, {&v1alpha1.BatchJob{}, apitypes.KindBatchJob}, {&v1alpha1.TestBed{}, apitypes.KindTestBed}, {&v1alpha1.SlotSlice{}, apitypes.KindSlotSlice}} {
		inf, err := informers.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("informer for %s: %w", k.kind, err)
		}
		kind := k.kind
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { h.observe(kind, apitypes.Added, obj, initial) },
			UpdateFunc: func(_, obj any) { h.observe(kind, apitypes.Modified, obj, false) },
			DeleteFunc: func(obj any) { h.observe(kind, apitypes.Deleted, obj, false) },
		})
		if err != nil {
			return fmt.Errorf("watch %s: %w", kind, err)
		}
		h.synced = append(h.synced, reg.HasSynced)
	}
	return nil
}

// ready is whether every kind's initial list is in the picture.
func (h *hub) ready() bool {
	for _, s := range h.synced {
		if !s() {
			return false
		}
	}
	return len(h.synced) > 0
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

func (h *hub) observe(kind string, typ apitypes.EventType, o any, initial bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	data, err := json.Marshal(apitypes.Event{Type: typ, Kind: kind, ResourceVersion: obj.GetResourceVersion(), Object: view(obj)})
	if err != nil {
		h.log.Error("feed: encode an event", "kind", kind, "name", obj.GetName(), "err", err)
		return
	}
	rec := &record{rv: obj.GetResourceVersion(), kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), data: data}
	key := objectKey{kind, rec.namespace, rec.name}

	h.mu.Lock()
	defer h.mu.Unlock()
	inNamespace := h.state[rec.namespace]
	if typ == apitypes.Deleted {
		delete(inNamespace, key)
		if len(inNamespace) == 0 {
			delete(h.state, rec.namespace)
		}
	} else {
		// A relist or a periodic resync repeats an object unchanged: not a change.
		if prev := inNamespace[key]; prev != nil && prev.rv == rec.rv {
			return
		}
		if inNamespace == nil {
			inNamespace = map[objectKey]*record{}
			h.state[rec.namespace] = inNamespace
		}
		inNamespace[key] = rec
	}
	if initial {
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
	lost     bool          // the queue overflowed: the client must be sent a RESYNC
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

// take empties the queue; lost says a RESYNC is due instead.
func (c *feedClient) take() (batch [][]byte, lost bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch, c.queue, c.bytes = c.queue, nil, 0
	return batch, c.lost
}

// subscribe adds a client. From a resourceVersion the hub still has in its history, the
// changes after it are queued; otherwise the client's first message is a RESYNC, returned.
func (h *hub) subscribe(c *feedClient, from string) []byte {
	h.mu.Lock()
	h.clients[c] = struct{}{}
	var snap *snapshot
	switch seq, ok := h.bySeqRV[from]; {
	case from == "":
		snap = h.snapshotLocked(c, "the current picture, before the changes that follow")
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
	c.queue, c.bytes, c.lost = nil, 0, false
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
	head, _ := json.Marshal(apitypes.Event{Type: apitypes.Resync, ResourceVersion: snap.rv, Reason: snap.reason})
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
