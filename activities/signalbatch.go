package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
)

// BatchSignal carries, to one workflow, signals that SignalWorkflows calls running side by
// side on one worker gave for it: a map from each signal's name to their arguments, in the
// order they were given. Only the names in Activities.Batched travel this way, and only to a
// workflow that takes BatchSignal as it takes each of them alone.
//
// A wave of jobs that end together sends Admission one end each; as separate signals they
// are a burst of as many history events, and a burst that comes while Admission's workflow
// task runs passes the Temporal server's limit of buffered events, which fails the task. A
// batch goes when the one before it has been delivered, so a lone signal waits for nothing.
const BatchSignal = "signal-batch"

// batchLimit bounds the signals of one batch: about a hundred bytes each as JSON.
const batchLimit = 500

// batchTimeout bounds the delivery of one batch; a caller whose own context ends first
// stops waiting, and its activity is retried.
const batchTimeout = 10 * time.Second

// signalBatches holds, per target workflow, the signals waiting for the batch in flight.
type signalBatches struct {
	mu      sync.Mutex
	targets map[string]*batchTarget
}

type batchTarget struct {
	sending bool
	queued  []*batchPart
}

// batchPart is one caller's run of signals to a target: delivered in one batch, in order.
type batchPart struct {
	signals []Signal
	// done is closed when the batch went; err and notRunning say how.
	done       chan struct{}
	err        error
	notRunning bool
}

// send delivers signals, all to the workflow id and each of a Batched name, in a batch with
// whatever other callers send it meanwhile. notRunning: the workflow does not run.
func (b *signalBatches) send(ctx context.Context, tc temporalclient.Client, id string, signals []Signal) (notRunning bool, err error) {
	part := &batchPart{signals: signals, done: make(chan struct{})}
	b.mu.Lock()
	if b.targets == nil {
		b.targets = map[string]*batchTarget{}
	}
	t := b.targets[id]
	if t == nil {
		t = &batchTarget{}
		b.targets[id] = t
	}
	t.queued = append(t.queued, part)
	lead := !t.sending
	t.sending = true
	b.mu.Unlock()
	if lead {
		go b.deliver(tc, id, t)
	}
	select {
	case <-part.done:
		return part.notRunning, part.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// deliver sends the target's queued signals, a batch at a time, until none is left.
func (b *signalBatches) deliver(tc temporalclient.Client, id string, t *batchTarget) {
	for {
		b.mu.Lock()
		if len(t.queued) == 0 {
			t.sending = false
			delete(b.targets, id)
			b.mu.Unlock()
			return
		}
		// Whole parts, up to batchLimit signals, and at least one part however long.
		n, count := 0, 0
		for n < len(t.queued) && (n == 0 || count+len(t.queued[n].signals) <= batchLimit) {
			count += len(t.queued[n].signals)
			n++
		}
		parts := t.queued[:n:n]
		t.queued = t.queued[n:]
		b.mu.Unlock()

		batch := map[string][]any{}
		for _, p := range parts {
			for _, s := range p.signals {
				batch[s.Name] = append(batch[s.Name], s.Arg)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err := tc.SignalWorkflow(ctx, id, "", BatchSignal, batch)
		cancel()
		var notFound *serviceerror.NotFound
		notRunning := errors.As(err, &notFound)
		if err != nil && !notRunning {
			err = fmt.Errorf("signal a batch of %d to %s: %w", count, id, err)
		} else {
			err = nil
		}
		for _, p := range parts {
			p.err, p.notRunning = err, notRunning
			close(p.done)
		}
	}
}
