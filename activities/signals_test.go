package activities

import (
	"context"
	"errors"
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
	require.ErrorContains(t, err, "signal 1 to broken")
	require.Equal(t, []string{"1"}, r.got["a"], "the other workflows are still signalled")
}
