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

// BatchUpdate carries, to one workflow, messages that SignalWorkflows calls running side by
// side on one worker gave for it: a map from each message's name to their arguments, in
// the order they were given. Only the names in Activities.Batched travel this way, and only
// to a workflow that takes BatchUpdate as it takes each of them alone.
//
// A wave of jobs that end together sends Admission one end each; as separate messages they
// are a burst of as many history events and workflow wake-ups. A batch goes when the one
// before it has been delivered, so a lone message waits for nothing.
const BatchUpdate = "message-batch"

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
// whatever other callers send it meanwhile, through deliver. notRunning: the workflow does
// not run.
func (b *signalBatches) send(ctx context.Context, deliver deliverFunc, id string, signals []Signal) (notRunning bool, err error) {
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
		go b.deliver(deliver, id, t)
	}
	select {
	case <-part.done:
		return part.notRunning, part.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// deliver sends the target's queued signals, a batch at a time, until none is left.
func (b *signalBatches) deliver(deliver deliverFunc, id string, t *batchTarget) {
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
		notRunning, err := deliver(ctx, id, BatchUpdate, batch)
		cancel()
		if err != nil {
			err = fmt.Errorf("send a batch of %d to %s: %w", count, id, err)
		}
		for _, p := range parts {
			p.err, p.notRunning = err, notRunning
			close(p.done)
		}
	}
}

// deliverFunc sends one message to the running workflow of an id (Activities.deliver).
type deliverFunc func(ctx context.Context, id, name string, arg any) (notRunning bool, err error)

// deliver sends one message to the running workflow of id: an update (Update) when its name
// is one of Updates, a signal otherwise. A message without an argument (nil) carries none.
// notRunning: no workflow of that id runs (it never started, or it ended); that is no error.
func (a *Activities) deliver(ctx context.Context, id, name string, arg any) (notRunning bool, err error) {
	if a.Updates[name] {
		return Update(ctx, a.Temporal, id, name, arg)
	}
	return notRunningIsFine(a.Temporal.SignalWorkflow(ctx, id, "", name, arg))
}

// Update sends the update name, with arg unless it is nil, to the running workflow of id,
// and waits until the workflow has taken it in. An update the server aborts because its
// workflow is continuing as new is sent again by the client, and lands on the new run.
// notRunning: no workflow of that id runs; that is no error.
func Update(ctx context.Context, tc temporalclient.Client, id, name string, arg any) (notRunning bool, err error) {
	h, err := tc.UpdateWorkflow(ctx, temporalclient.UpdateWorkflowOptions{WorkflowID: id, UpdateName: name, Args: argsOf(arg),
		WaitForStage: temporalclient.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return notRunningIsFine(err)
}

// argsOf is a message's argument as the client's arguments: none for nil.
func argsOf(arg any) []any {
	if arg == nil {
		return nil
	}
	return []any{arg}
}

// notRunningIsFine turns the error of a message whose workflow does not run into notRunning.
func notRunningIsFine(err error) (notRunning bool, _ error) {
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return true, nil
	}
	return false, err
}
