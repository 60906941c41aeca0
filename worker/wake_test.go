package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/installation"
	"slotplane/workflows"
)

// signalGate is a Temporal client whose UpdateWorkflow records the workflow and waits for
// the test to open the gate.
type signalGate struct {
	client.Client
	gate chan struct{}

	mu   sync.Mutex
	sent map[string]int
	err  error
}

func (g *signalGate) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if o.UpdateName != workflows.AdmissionSlotsUpdate || len(o.Args) != 0 {
		panic("unexpected update " + o.UpdateName)
	}
	g.sent[o.WorkflowID]++
	if g.err != nil {
		return nil, g.err
	}
	return taken{}, nil
}

// taken is the handle of an update the workflow took in.
type taken struct{ client.WorkflowUpdateHandle }

func (taken) Get(context.Context, any) error { return nil }

func (g *signalGate) count(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent[id]
}

// settled waits until the waker has no signal on its way.
func settled(t *testing.T, w *AdmissionWaker) {
	t.Helper()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.beds) == 0
	}, 5*time.Second, time.Millisecond)
}

// A wave of wake-ups while a signal is on its way makes one more signal, after the wave;
// beds are signalled apart; a wake-up after the last signal left makes another.
func TestAdmissionWaker_CoalescesAWaveAndLosesNoWake(t *testing.T) {
	g := &signalGate{gate: make(chan struct{}), sent: map[string]int{}}
	w := &AdmissionWaker{Temporal: g}
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	idA, idB := installation.Default.AdmissionID("ns", "a"), installation.Default.AdmissionID("ns", "b")

	w.Wake(a) // on its way, held at the gate
	for range 1000 {
		w.Wake(a)
	}
	w.Wake(b)
	close(g.gate)
	settled(t, w)
	require.Equal(t, 2, g.count(idA), "the first signal and one for the wave")
	require.Equal(t, 1, g.count(idB))

	w.Wake(a)
	settled(t, w)
	require.Equal(t, 3, g.count(idA), "a change after the last signal left is signalled")
}

// A bed whose Admission does not run is fine, and so is a failed signal: the next change
// is signalled all the same.
func TestAdmissionWaker_ASignalThatFailsStopsNothing(t *testing.T) {
	g := &signalGate{gate: make(chan struct{}), sent: map[string]int{}, err: serviceerror.NewNotFound("no such workflow")}
	close(g.gate)
	w := &AdmissionWaker{Temporal: g}
	bed := types.NamespacedName{Namespace: "ns", Name: "a"}
	w.Wake(bed)
	settled(t, w)
	g.mu.Lock()
	g.err = serviceerror.NewUnavailable("down")
	g.mu.Unlock()
	w.Wake(bed)
	settled(t, w)
	w.Wake(bed)
	settled(t, w)
	require.Equal(t, 3, g.count(installation.Default.AdmissionID("ns", "a")))
}
