package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/internal/cli/render"
)

// WatchOptions says which Schedulings Watch follows and how it keeps to the change feed.
type WatchOptions struct {
	// Names are the Schedulings to follow; none follows every Scheduling of the namespace.
	Names []string
	// RetryFor is how long to keep reconnecting after the feed is lost; zero gives up at once.
	RetryFor time.Duration
	// Backoff is the first wait before reconnecting; it doubles up to ten seconds. Zero
	// means a second.
	Backoff time.Duration
}

// The waits between attempts to open a lost feed again, unless WatchOptions.Backoff says.
const (
	defaultBackoff = time.Second
	maxBackoff     = 10 * time.Second
)

// Watch follows Schedulings on the change feed and draws one progress bar for each until
// all have ended. A lost connection is opened again, resuming after the last event seen,
// for up to o.RetryFor; a refused one (token, namespace) is not retried.
func Watch(ctx context.Context, conn Connection, o WatchOptions, out io.Writer) error {
	c, err := conn.Client()
	if err != nil {
		return err
	}
	w := &watch{c: c, o: o, p: newProgress(o.Names), v: render.NewProgressView(out, render.IsTerminal(out))}
	return w.run(ctx)
}

// watch is one run of Watch: what it follows, what it drew, and where the feed stands.
type watch struct {
	c       *apiclient.Client
	o       WatchOptions
	p       *progress
	v       *render.ProgressView
	at      apiclient.Position // the last event's: where a new connection resumes
	lostAt  time.Time          // when the feed was lost; zero while it is up
	lostErr error              // why it was lost
}

// run opens the feed and follows it, opening it again while it is lost and may come back.
func (w *watch) run(ctx context.Context) error {
	first := w.o.Backoff
	if first <= 0 {
		first = defaultBackoff
	}
	wait := first
	for {
		feed, err := w.c.Watch(ctx, []string{apiclient.WatchSchedulings}, w.at)
		if err != nil {
			if err := w.giveUp(ctx, err); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, maxBackoff)
			continue
		}
		if !w.lostAt.IsZero() {
			w.v.Note(fmt.Sprintf("reconnected to the change feed, resuming after resourceVersion %s", cmp.Or(w.at.ResourceVersion, "-")))
			w.lostAt, wait = time.Time{}, first
		}
		done, err := w.follow(ctx, feed)
		_ = feed.Close()
		if err != nil {
			return err
		}
		if done {
			w.v.Finish(w.p.bars())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.lostErr = feed.Err()
		if w.o.RetryFor <= 0 {
			return fmt.Errorf("lost the change feed: %v", w.lostErr)
		}
		w.lostAt = time.Now()
		w.v.Note(fmt.Sprintf("lost the change feed (%v); reconnecting for up to %s", w.lostErr, w.o.RetryFor))
	}
}

// giveUp is the error that ends the watch after the feed could not be opened, or nil to
// try again: the first connection and a refusal that a retry would not change end it, and
// so does a feed lost for longer than RetryFor.
func (w *watch) giveUp(ctx context.Context, err error) error {
	switch st := apiclient.StatusOf(err); {
	case ctx.Err() != nil:
		return ctx.Err()
	case w.lostAt.IsZero(), st != 0 && st != 503 && st != 502 && st != 504:
		return explain(err, w.c.Server())
	case time.Since(w.lostAt) > w.o.RetryFor:
		return fmt.Errorf("lost the change feed (%v), and could not reconnect within %s: %w", w.lostErr, w.o.RetryFor, explain(err, w.c.Server()))
	}
	return nil
}

// follow applies the feed's events to the progress and draws it, until every watched
// Scheduling has ended (true) or the feed ends (false).
func (w *watch) follow(ctx context.Context, feed *apiclient.Watcher) (bool, error) {
	p := w.p
	for ev := range feed.Events() {
		w.at.Apply(ev)
		switch ev.Type {
		case apitypes.Resync:
			var items []apitypes.Scheduling
			for _, it := range ev.Items {
				if s, err := it.Scheduling(); err == nil {
					items = append(items, s)
				}
			}
			p.resync(items)
			if !p.checked {
				if err := w.findMissing(ctx); err != nil {
					return false, err
				}
				if len(p.tracked) == 0 {
					return true, nil // nothing to wait for
				}
			}
		case apitypes.Added, apitypes.Modified:
			if s, err := ev.Scheduling(); err == nil {
				p.set(s)
			}
		case apitypes.Deleted:
			p.deleted(ev.Name())
		}
		if p.checked {
			w.v.Draw(p.bars())
			if p.allEnded() {
				return true, nil
			}
		}
	}
	return false, nil
}

// findMissing asks the API for the named Schedulings the feed's first picture lacks: they
// may be younger than the picture (created a moment ago), and the API says whether they
// exist at all.
func (w *watch) findMissing(ctx context.Context) error {
	for _, name := range w.p.missing() {
		s, err := w.c.GetScheduling(ctx, name)
		if err != nil {
			return explain(err, w.c.Server())
		}
		w.p.set(s)
	}
	w.p.checked = true
	return nil
}

// progress is what is known of the watched Schedulings.
type progress struct {
	all     bool            // no names given: every Scheduling of the namespace
	tracked map[string]bool // the Schedulings followed
	latest  map[string]apitypes.Scheduling
	gone    map[string]bool // deleted while watched: ended
	checked bool            // the named ones were found
}

func newProgress(names []string) *progress {
	p := &progress{all: len(names) == 0, tracked: map[string]bool{}, latest: map[string]apitypes.Scheduling{}, gone: map[string]bool{}}
	for _, n := range names {
		p.tracked[n] = true
	}
	return p
}

func (p *progress) set(s apitypes.Scheduling) {
	if p.all {
		p.tracked[s.Name] = true
	}
	if p.tracked[s.Name] {
		p.latest[s.Name] = s
		delete(p.gone, s.Name)
	}
}

func (p *progress) deleted(name string) {
	if p.tracked[name] {
		p.gone[name] = true
	}
}

// resync replaces the picture: a followed Scheduling that is not in it was deleted
// meanwhile.
func (p *progress) resync(items []apitypes.Scheduling) {
	in := map[string]bool{}
	for _, s := range items {
		in[s.Name] = true
		p.set(s)
	}
	for name := range p.tracked {
		if _, seen := p.latest[name]; seen && !in[name] {
			p.gone[name] = true
		}
	}
}

// missing are the followed Schedulings not seen yet.
func (p *progress) missing() []string {
	var out []string
	for name := range p.tracked {
		if _, ok := p.latest[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (p *progress) allEnded() bool {
	for name := range p.tracked {
		if !p.gone[name] && !render.Ended(p.latest[name].Status.State) {
			return false
		}
	}
	return len(p.tracked) > 0
}

// bars are the followed Schedulings as their progress bars show them, by name.
func (p *progress) bars() []render.Bar {
	names := slices.Sorted(maps.Keys(p.tracked))
	out := make([]render.Bar, 0, len(names))
	for _, n := range names {
		out = append(out, render.Bar{Name: n, Scheduling: p.latest[n], Deleted: p.gone[n]})
	}
	return out
}
