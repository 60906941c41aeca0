package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// EventType is what happened to an object, or RESYNC: the whole picture, sent first and
// again whenever a client cannot be told the changes one by one.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Resync   EventType = "RESYNC"
)

// The kinds the feed carries, as events name them, and as ?kinds= selects them.
const (
	KindScheduling = "Scheduling"
	KindBatchJob   = "BatchJob"
	KindTestBed    = "TestBed"
)

// feedKinds maps the ?kinds= words to kinds and to the resources an Authorizer is asked
// to allow watching.
var feedKinds = map[string]struct{ kind, resource string }{
	"schedulings": {KindScheduling, "schedulings"},
	"jobs":        {KindBatchJob, "batchjobs"},
	"testbeds":    {KindTestBed, "testbeds"},
}

// Event is one message of the change feed. A change carries the object as the REST API
// shows it (Scheduling, Job or TestBed). A RESYNC carries every object the client watches in
// Items, each as its latest change (ADDED or MODIFIED) carried it, and Reason says why it
// was sent; the client replaces what it knows with it. ResourceVersion is where a
// client resumes from (?resourceVersion=): a change's is its object's, a RESYNC's is that of
// the last change it includes (empty before the first change the feed saw).
type Event struct {
	Type            EventType `json:"type"`
	Kind            string    `json:"kind,omitempty"`
	ResourceVersion string    `json:"resourceVersion"`
	Object          any       `json:"object,omitempty"`
	Items           []Event   `json:"items,omitempty"`
	Reason          string    `json:"reason,omitempty"`
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
type hub struct {
	log *slog.Logger

	mu      sync.Mutex
	seq     uint64                // the last change's number
	history []*record             // the last historySize changes, oldest first
	bySeqRV map[string]uint64     // a change's resourceVersion -> its number, for the history
	state   map[objectKey]*record // each object's latest ADDED or MODIFIED
	clients map[*feedClient]struct{}
	synced  []func() bool

	historySize int
	queueSize   int
}

func newHub(log *slog.Logger) *hub {
	return &hub{
		log: log, bySeqRV: map[string]uint64{}, state: map[objectKey]*record{}, clients: map[*feedClient]struct{}{},
		historySize: 10000, queueSize: 1000,
	}
}

// watch registers the hub with the informers of the three kinds. The informers' initial
// lists fill the picture without being changes: nobody can resume from them.
func (h *hub) watch(ctx context.Context, informers cache.Informers) error {
	for _, k := range []struct {
		obj  client.Object
		kind string
	}{{&v1alpha1.Scheduling{}, KindScheduling}, {&v1alpha1.BatchJob{}, KindBatchJob}, {&v1alpha1.TestBed{}, KindTestBed}} {
		inf, err := informers.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("informer for %s: %w", k.kind, err)
		}
		kind := k.kind
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { h.observe(kind, Added, obj, initial) },
			UpdateFunc: func(_, obj any) { h.observe(kind, Modified, obj, false) },
			DeleteFunc: func(obj any) { h.observe(kind, Deleted, obj, false) },
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
	}
	return nil
}

func (h *hub) observe(kind string, typ EventType, o any, initial bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	data, err := json.Marshal(Event{Type: typ, Kind: kind, ResourceVersion: obj.GetResourceVersion(), Object: view(obj)})
	if err != nil {
		h.log.Error("feed: encode an event", "kind", kind, "name", obj.GetName(), "err", err)
		return
	}
	rec := &record{rv: obj.GetResourceVersion(), kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), data: data}
	key := objectKey{kind, rec.namespace, rec.name}

	h.mu.Lock()
	defer h.mu.Unlock()
	if typ == Deleted {
		delete(h.state, key)
	} else {
		// A relist or a periodic resync repeats an object unchanged: not a change.
		if prev := h.state[key]; prev != nil && prev.rv == rec.rv {
			return
		}
		h.state[key] = rec
	}
	if initial {
		return
	}
	h.seq++
	rec.seq = h.seq
	h.history = append(h.history, rec)
	h.bySeqRV[rec.rv] = rec.seq
	if over := len(h.history) - h.historySize; over > 0 {
		for _, old := range h.history[:over] {
			if h.bySeqRV[old.rv] == old.seq {
				delete(h.bySeqRV, old.rv)
			}
		}
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

	mu    sync.Mutex
	queue [][]byte
	max   int
	lost  bool          // the queue overflowed: the client must be sent a RESYNC
	wake  chan struct{} // a send-side nudge, capacity 1
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
	case len(c.queue) >= c.max:
		c.queue, c.lost = nil, true
	default:
		c.queue = append(c.queue, data)
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
	batch, c.queue = c.queue, nil
	return batch, c.lost
}

// subscribe adds a client. From a resourceVersion the hub still has in its history, the
// changes after it are queued; otherwise the client's first message is a RESYNC, returned.
func (h *hub) subscribe(c *feedClient, from string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[c] = struct{}{}
	if from == "" {
		return h.resyncLocked(c, "the current picture, before the changes that follow")
	}
	seq, ok := h.bySeqRV[from]
	if !ok {
		return h.resyncLocked(c, fmt.Sprintf("resourceVersion %s is not among the last %d changes this server has seen", from, len(h.history)))
	}
	first := h.history[0].seq
	for _, r := range h.history[seq-first+1:] {
		if c.wants(r) {
			c.push(r.data)
		}
	}
	return nil
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
	defer h.mu.Unlock()
	return h.resyncLocked(c, reason)
}

func (h *hub) resyncLocked(c *feedClient, reason string) []byte {
	c.mu.Lock()
	c.queue, c.lost = nil, false
	c.mu.Unlock()
	rv := ""
	if n := len(h.history); n > 0 {
		rv = h.history[n-1].rv
	}
	var items []*record
	for _, r := range h.state {
		if c.wants(r) {
			items = append(items, r)
		}
	}
	slices.SortFunc(items, func(a, b *record) int { // a stable order: by kind, then name
		return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.name, b.name))
	})
	head, _ := json.Marshal(Event{Type: Resync, ResourceVersion: rv, Reason: reason})
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	b.WriteString(`,"items":[`)
	for i, r := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.data)
	}
	b.WriteString("]}")
	return b.Bytes()
}
