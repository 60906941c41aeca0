package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
	"slotplane/workflows"
)

// A burst of changes to one test bed is told to its workflow once at once, and once more
// when SignalEvery has passed; another bed is told at once; a signal that fails is tried
// again at the next change, not held back.
func TestTestBedSignaller_TellsABurstOnceAtOnceAndOnceAfter(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(testobjects.TestBed("a").Obj(), testobjects.TestBed("b").Obj()).Build()
	tc := &signalCounter{signalled: map[string]int{}}
	signalled := tc.signalled
	const every = 200 * time.Millisecond
	clock := time.Now()
	s := &TestBedSignaller{Reader: cl, Temporal: tc, SignalEvery: every, Now: func() time.Time { return clock }}
	reconcileBed := func(name string) reconcile.Result {
		t.Helper()
		res, err := s.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
		if tc.fail {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
		}
		return res
	}
	idA, idB := installation.Default.TestBedID("default", "a"), installation.Default.TestBedID("default", "b")

	require.Zero(t, reconcileBed("a").RequeueAfter, "the first change is told at once")
	for range 5 {
		res := reconcileBed("a")
		require.Positive(t, res.RequeueAfter, "a change within SignalEvery waits")
		require.LessOrEqual(t, res.RequeueAfter, every)
	}
	require.Equal(t, 1, signalled[idA])
	require.Zero(t, reconcileBed("b").RequeueAfter, "another bed is told at once")
	require.Equal(t, 1, signalled[idB])

	clock = clock.Add(every - time.Nanosecond)
	require.Positive(t, reconcileBed("a").RequeueAfter, "a change just inside SignalEvery waits")
	clock = clock.Add(time.Nanosecond)
	require.Zero(t, reconcileBed("a").RequeueAfter, "the change held back is told once SignalEvery passed")
	require.Equal(t, 2, signalled[idA])

	clock = clock.Add(every)
	tc.fail = true
	reconcileBed("a")
	tc.fail = false
	require.Zero(t, reconcileBed("a").RequeueAfter, "after a failed signal the next change is told at once")
	require.Equal(t, 3, signalled[idA])
}

// A pod may carry any test bed label: one naming a bed that never existed signals no
// workflow, while the deletion of a bed that existed tells it and every other bed.
func TestTestBedSignaller_APodOfAnUnknownBedSignalsNothing(t *testing.T) {
	bed := testobjects.TestBed("a").Obj()
	other := testobjects.TestBed("b").Obj()
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(bed, other).Build()
	tc := &signalCounter{signalled: map[string]int{}, ifRunning: map[string]int{}}
	s := &TestBedSignaller{Reader: cl, Temporal: tc}
	reconcileBed := func(name string) {
		t.Helper()
		_, err := s.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
		require.NoError(t, err)
	}
	reconcileBed("a")
	reconcileBed("b")
	for i := range 1000 {
		reconcileBed(fmt.Sprintf("bed-%d", i))
	}
	require.Empty(t, tc.ifRunning, "beds that never existed signalled workflows")
	require.Len(t, tc.signalled, 2)

	require.NoError(t, cl.Delete(context.Background(), bed))
	reconcileBed("a")
	require.Equal(t, map[string]int{installation.Default.TestBedID("default", "a"): 1, installation.Default.TestBedID("default", "b"): 1}, tc.ifRunning)
	reconcileBed("a") // a pod of the deleted bed, later: the bed is unknown now
	require.Equal(t, 1, tc.ifRunning[installation.Default.TestBedID("default", "b")])
}

// signalCounter is a Temporal client that counts the signal-with-starts it is asked for, and
// the signals of running workflows.
type signalCounter struct {
	temporal.Client
	signalled map[string]int
	ifRunning map[string]int
	fail      bool
}

func (c *signalCounter) SignalWorkflow(_ context.Context, id, _, signal string, _ any) error {
	if signal == workflows.TestBedChangedSignal {
		c.ifRunning[id]++
	}
	return nil
}

func (c *signalCounter) SignalWithStartWorkflow(_ context.Context, id, signal string, _ any, _ temporal.StartWorkflowOptions, _ any, _ ...any) (temporal.WorkflowRun, error) {
	if c.fail {
		return nil, errors.New("frontend away")
	}
	if signal == workflows.TestBedChangedSignal {
		c.signalled[id]++
	}
	return nil, nil
}

// A controller whose object fails again and again (Temporal away) tries it again at least
// every MaxRetryDelay, and each controller counts its own failures.
func TestControllerOptions_RetryWithinMaxRetryDelay(t *testing.T) {
	opts := controllerOptions()
	obj := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "bed"}}
	var last time.Duration
	for range 40 {
		last = opts.RateLimiter.When(obj)
	}
	require.Equal(t, MaxRetryDelay, last)
	require.Less(t, controllerOptions().RateLimiter.When(obj), time.Second, "another controller's failures counted")
}
