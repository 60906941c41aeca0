package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// signalRecorder is a Temporal client that only takes signals: it notes them per workflow,
// and holds the first signal to each of "b" and "c" until both have arrived, which only a
// client that signals them side by side gets past.
type signalRecorder struct {
	client.Client
	mu     sync.Mutex
	got    map[string][]string
	bothIn sync.WaitGroup
	held   map[string]bool
}

func (r *signalRecorder) SignalWorkflow(_ context.Context, id, _, name string, _ any) error {
	r.mu.Lock()
	first := (id == "b" || id == "c") && !r.held[id]
	if first {
		r.held[id] = true
	}
	r.mu.Unlock()
	if first {
		r.bothIn.Done()
		waited := make(chan struct{})
		go func() { r.bothIn.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			return errors.New("b and c were not signalled side by side")
		}
	}
	switch id {
	case "gone":
		return serviceerror.NewNotFound("workflow not found")
	case "broken":
		return serviceerror.NewUnavailable("frontend is down")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[id] = append(r.got[id], name)
	return nil
}

func newSignalRecorder() *signalRecorder {
	r := &signalRecorder{got: map[string][]string{}, held: map[string]bool{}}
	r.bothIn.Add(2)
	return r
}

// Workflows are signalled side by side, each one's signals in their order; the ones not
// running are named by their index.
func TestSignalWorkflows_SideBySideInOrderPerWorkflow(t *testing.T) {
	r := newSignalRecorder()
	a := &Activities{Temporal: r}
	in := SignalWorkflowsInput{Signals: []Signal{
		{WorkflowID: "a", Name: "1"}, {WorkflowID: "b", Name: "1"}, {WorkflowID: "gone", Name: "x"},
		{WorkflowID: "a", Name: "2"}, {WorkflowID: "c", Name: "1"}, {WorkflowID: "a", Name: "3"},
		{WorkflowID: "b", Name: "2"}, {WorkflowID: "gone", Name: "y"},
	}}
	res, err := a.SignalWorkflows(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"a": {"1", "2", "3"}, "b": {"1", "2"}, "c": {"1"}}, r.got)
	require.Equal(t, []int{2, 7}, res.NotRunning)
}

// A signal that fails for another reason than "not running" fails the batch, for a retry
// (every message is keyed, so the repeats change nothing), and that workflow's later
// signals are not sent out of order.
func TestSignalWorkflows_AFailureFailsTheBatch(t *testing.T) {
	r := newSignalRecorder()
	r.bothIn.Add(-2) // nothing to hold here
	r.held["b"], r.held["c"] = true, true
	a := &Activities{Temporal: r}
	in := SignalWorkflowsInput{Signals: []Signal{{WorkflowID: "broken", Name: "1"}, {WorkflowID: "a", Name: "1"}}}
	_, err := a.SignalWorkflows(context.Background(), in)
	require.ErrorContains(t, err, "send 1 to broken")
	require.Equal(t, []string{"1"}, r.got["a"], "the other workflows are still signalled")
}

// batchGate is a Temporal client that notes every signal with its argument and holds each
// until the test lets it go.
type batchGate struct {
	client.Client
	gate chan struct{}
	mu   sync.Mutex
	got  []gotSignal
	fail error
}

type gotSignal struct {
	id, name string
	arg      any
}

func (g *batchGate) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = append(g.got, gotSignal{id, name, arg})
	if id == "gone" {
		return serviceerror.NewNotFound("workflow not found")
	}
	return g.fail
}

func (g *batchGate) signals() []gotSignal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]gotSignal(nil), g.got...)
}

// Signals of the batched names that calls side by side send to one workflow go as one
// BatchUpdate once the one before it was delivered: a lone signal waits for nothing, a wave
// makes two. A call's other signals keep their place in its order.
func TestSignalWorkflows_BatchesTheBatchedNamesOfCallsSideBySide(t *testing.T) {
	g := &batchGate{gate: make(chan struct{})}
	a := &Activities{Temporal: g, Batched: map[string]bool{"end": true, "start": true}}
	ctx := context.Background()
	call := func(signals ...Signal) chan SignalWorkflowsResult {
		out := make(chan SignalWorkflowsResult, 1)
		go func() {
			res, err := a.SignalWorkflows(ctx, SignalWorkflowsInput{Signals: signals})
			if err != nil {
				t.Errorf("signal: %v", err)
			}
			out <- res
		}()
		return out
	}
	first := call(Signal{WorkflowID: "adm", Name: "end", Arg: 1})
	// The first batch is on its way, held at the gate; these wait for the next.
	require.Eventually(t, func() bool {
		a.batches.mu.Lock()
		defer a.batches.mu.Unlock()
		return a.batches.targets["adm"] != nil
	}, 5*time.Second, time.Millisecond)
	var rest []chan SignalWorkflowsResult
	for i := 2; i <= 20; i++ {
		rest = append(rest, call(Signal{WorkflowID: "adm", Name: "end", Arg: i}, Signal{WorkflowID: "adm", Name: "start", Arg: -i}))
	}
	require.Eventually(t, func() bool {
		a.batches.mu.Lock()
		defer a.batches.mu.Unlock()
		return len(a.batches.targets["adm"].queued) == 19
	}, 5*time.Second, time.Millisecond)
	close(g.gate)
	<-first
	for _, c := range rest {
		require.Empty(t, (<-c).NotRunning)
	}
	got := g.signals()
	require.Len(t, got, 2, "one batch for the first, one for the nineteen calls that came while it went")
	require.Equal(t, gotSignal{"adm", BatchUpdate, map[string][]any{"end": {1}}}, got[0])
	second := got[1].arg.(map[string][]any)
	require.Len(t, second["end"], 19)
	require.Len(t, second["start"], 19)

	// In one call, a signal of another name between batched ones keeps its place, and a
	// workflow that does not run names every signal of its batch.
	res, err := a.SignalWorkflows(ctx, SignalWorkflowsInput{Signals: []Signal{
		{WorkflowID: "adm", Name: "end", Arg: 30}, {WorkflowID: "adm", Name: "request", Arg: 31},
		{WorkflowID: "adm", Name: "end", Arg: 32}, {WorkflowID: "adm", Name: "start", Arg: 33},
		{WorkflowID: "gone", Name: "end", Arg: 34}, {WorkflowID: "gone", Name: "start", Arg: 35},
	}})
	require.NoError(t, err)
	require.Equal(t, []int{4, 5}, res.NotRunning)
	var adm []gotSignal
	for _, s := range g.signals()[2:] {
		if s.id == "adm" {
			adm = append(adm, s)
		}
	}
	require.Equal(t, []gotSignal{
		{"adm", BatchUpdate, map[string][]any{"end": {30}}},
		{"adm", "request", 31},
		{"adm", BatchUpdate, map[string][]any{"end": {32}, "start": {33}}},
	}, adm)

	// A batch that fails fails every call in it, for a retry.
	g.mu.Lock()
	g.fail = serviceerror.NewUnavailable("frontend is down")
	g.mu.Unlock()
	_, err = a.SignalWorkflows(ctx, SignalWorkflowsInput{Signals: []Signal{{WorkflowID: "adm", Name: "end", Arg: 40}}})
	require.ErrorContains(t, err, "frontend is down")
}

// messageRecorder is a Temporal client that notes signals and updates, as "signal name" and
// "update name", with their arguments; an update to "gone" finds no workflow.
type messageRecorder struct {
	client.Client
	mu  sync.Mutex
	got []string
}

func (r *messageRecorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
}

func (r *messageRecorder) SignalWorkflow(_ context.Context, id, _, name string, arg any) error {
	r.note(fmt.Sprintf("signal %s %s %v", id, name, arg))
	return nil
}

func (r *messageRecorder) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	if o.WorkflowID == "gone" {
		return nil, serviceerror.NewNotFound("workflow execution already completed")
	}
	if o.WaitForStage != client.WorkflowUpdateStageCompleted {
		return nil, errors.New("an update must be waited on until the workflow took it in")
	}
	r.note(fmt.Sprintf("update %s %s %v", o.WorkflowID, o.UpdateName, o.Args))
	return tookIn{}, nil
}

// tookIn is the handle of an update its workflow took in.
type tookIn struct{ client.WorkflowUpdateHandle }

func (tookIn) Get(context.Context, any) error { return nil }

// The names of Updates go as updates, the batch of Batched names too when BatchUpdate is
// one of them, and the others as signals; an update whose workflow does not run is named
// as not running.
func TestSignalWorkflows_SendsTheUpdateNamesAsUpdates(t *testing.T) {
	r := &messageRecorder{}
	a := &Activities{Temporal: r, Updates: map[string]bool{"u": true, BatchUpdate: true}, Batched: map[string]bool{"b": true}}
	res, err := a.SignalWorkflows(context.Background(), SignalWorkflowsInput{Signals: []Signal{
		{WorkflowID: "a", Name: "u", Arg: 1}, {WorkflowID: "a", Name: "s", Arg: 2}, {WorkflowID: "gone", Name: "u", Arg: 3},
		{WorkflowID: "a", Name: "b", Arg: 4}, {WorkflowID: "a", Name: "u"},
	}})
	require.NoError(t, err)
	require.Equal(t, []int{2}, res.NotRunning)
	require.Equal(t, []string{"update a u [1]", "signal a s 2", "update a message-batch [map[b:[4]]]", "update a u []"}, r.got)
}
