package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"slotplane/apitypes"
)

// The kinds Watch can ask for (the feed's ?kinds= words).
const (
	WatchSchedulings = "schedulings"
	WatchJobs        = "jobs"
	WatchTestBeds    = "testbeds"
	// WatchSlotSlices carries the test beds' slots, as SlotSlice events.
	WatchSlotSlices = "slotslices"
)

// feedIdle is how long the feed may stay silent before the connection counts as lost: the
// server pings every 30 s, so three missed pings.
const feedIdle = 90 * time.Second

// Event is one message of the change feed (apitypes.Event) with the object kept as raw JSON:
// Scheduling, Job and TestBed decode it. A RESYNC holds every watched object in Items,
// each an ADDED or MODIFIED event; the client replaces what it knows with them.
type Event struct {
	Type            apitypes.EventType `json:"type"`
	Kind            string             `json:"kind,omitempty"`
	ResourceVersion string             `json:"resourceVersion"`
	Object          json.RawMessage    `json:"object,omitempty"`
	Items           []Event            `json:"items,omitempty"`
	Reason          string             `json:"reason,omitempty"`
	Feed            string             `json:"feed,omitempty"`
}

// Position is where a follower of the feed is: the feed (an API replica's) of the last
// RESYNC it took, and the last resourceVersion. Watching from it resumes on the same
// replica, and brings a RESYNC from any other.
type Position struct {
	Feed, ResourceVersion string
}

// Apply moves the position past ev.
func (p *Position) Apply(ev Event) {
	switch {
	case ev.Type == apitypes.Resync:
		p.Feed, p.ResourceVersion = ev.Feed, ev.ResourceVersion
	case ev.ResourceVersion != "":
		p.ResourceVersion = ev.ResourceVersion
	}
}

// Name is the name of the event's object ("" for a RESYNC or an object without one).
func (e Event) Name() string {
	var o struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(e.Object, &o)
	return o.Name
}

// Scheduling decodes the object of a Scheduling event.
func (e Event) Scheduling() (apitypes.Scheduling, error) {
	var s apitypes.Scheduling
	return s, e.decode(apitypes.KindScheduling, &s)
}

// Job decodes the object of a BatchJob event.
func (e Event) Job() (apitypes.Job, error) {
	var j apitypes.Job
	return j, e.decode(apitypes.KindBatchJob, &j)
}

// TestBed decodes the object of a TestBed event.
func (e Event) TestBed() (apitypes.TestBed, error) {
	var tb apitypes.TestBed
	return tb, e.decode(apitypes.KindTestBed, &tb)
}

// SlotSlice decodes the object of a SlotSlice event.
func (e Event) SlotSlice() (apitypes.SlotSlice, error) {
	var s apitypes.SlotSlice
	return s, e.decode(apitypes.KindSlotSlice, &s)
}

func (e Event) decode(kind string, out any) error {
	if e.Kind != kind {
		return fmt.Errorf("a %s event holds a %q, not a %s", e.Type, e.Kind, kind)
	}
	if err := json.Unmarshal(e.Object, out); err != nil {
		return fmt.Errorf("decode a %s event's %s: %w", e.Type, kind, err)
	}
	return nil
}

// Watcher is an open change feed. Events delivers its messages until the connection ends,
// the context is cancelled or Close is called; then the channel closes and Err says why.
type Watcher struct {
	conn    *websocket.Conn
	events  chan Event
	done    chan struct{}
	cancel  context.CancelFunc
	closing sync.Once
	closed  atomic.Bool // Close was called: the end is no error
	err     error       // written by the reader before done closes
}

// Watch opens the change feed for the client's namespace: kinds picks what it carries
// (WatchSchedulings, WatchJobs, WatchTestBeds, WatchSlotSlices; none means all), and from,
// if set, resumes after that event: the changes since are sent, or a RESYNC when the
// server no longer has them or is another replica. Without it the first event is a
// RESYNC of everything.
// A refused connection (a bad token, an unknown kind) is a *StatusError.
//
// The Watcher's goroutines end when the connection does, when ctx is cancelled, or on
// Close: nothing is left behind, even when the events are not read.
func (c *Client) Watch(ctx context.Context, kinds []string, from Position) (*Watcher, error) {
	q := url.Values{}
	if len(kinds) > 0 {
		q.Set("kinds", strings.Join(kinds, ","))
	}
	if from.ResourceVersion != "" {
		q.Set("resourceVersion", from.ResourceVersion)
		q.Set("feed", from.Feed)
	}
	u := c.endpoint("/watch", q)
	httpPath := u.Path
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	header := map[string][]string{}
	if c.token != "" {
		header["Authorization"] = []string{"Bearer " + c.token}
	}
	d := c.dialer
	d.Subprotocols = []string{apitypes.Subprotocol}
	conn, resp, err := d.DialContext(ctx, u.String(), header)
	if err != nil {
		if resp != nil && resp.StatusCode != 101 {
			raw, _ := io.ReadAll(resp.Body)
			return nil, statusError("GET", httpPath, resp, raw)
		}
		return nil, fmt.Errorf("open the change feed at %s: %w", u.Redacted(), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{conn: conn, events: make(chan Event), done: make(chan struct{}), cancel: cancel}
	// Answer the server's pings, and count each as a sign of life.
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(feedIdle))
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
			return err
		}
		return nil
	})
	// The closer ends the connection when the context does (the reader's end cancels it
	// too, so this goroutine always returns).
	go func() {
		<-ctx.Done()
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = conn.Close()
	}()
	go w.read(ctx)
	return w, nil
}

// Events delivers the feed's messages in order; it is closed when the feed ends.
func (w *Watcher) Events() <-chan Event { return w.events }

// Done is closed when the feed has ended and Err says why; Events closes right after.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err says why the feed ended, once Events is closed: nil after Close, the context's error
// after it was cancelled, else the lost connection's cause (a server that stopped closes
// with a reason, which the error carries).
func (w *Watcher) Err() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// Close ends the feed and waits until its goroutines have; Err is then nil, unless the
// feed had ended by itself before. It may be called more than once.
func (w *Watcher) Close() error {
	w.closing.Do(func() {
		w.closed.Store(true)
		w.cancel()
	})
	<-w.done
	return nil
}

func (w *Watcher) read(ctx context.Context) {
	// Events closes last: whoever sees it closed finds Done closed and Err set.
	defer close(w.events)
	defer close(w.done)
	defer w.cancel()
	end := func(err error) {
		switch {
		case w.closed.Load():
			w.err = nil
		case ctx.Err() != nil:
			w.err = context.Cause(ctx)
		default:
			w.err = err
		}
	}
	for {
		_ = w.conn.SetReadDeadline(time.Now().Add(feedIdle))
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			end(fmt.Errorf("the change feed ended: %w", err))
			return
		}
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			end(fmt.Errorf("the change feed sent a message that is not an event: %w", err))
			return
		}
		select {
		case w.events <- ev:
		case <-ctx.Done():
			end(nil)
			return
		}
	}
}
