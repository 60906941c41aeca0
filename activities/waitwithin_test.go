package activities

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// A wait bounded by Within answers once that long has passed, with what it saw (here: no
// executor placed), where an unbounded one would wait on.
func TestWaitPlaced_WithinAnswersWithWhatItSaw(t *testing.T) {
	a, env, key := submittedWait(t) // unbounded, the wait would not end: nothing is ever placed
	key.Replicas, key.Within = 2, 300*time.Millisecond
	began := time.Now()
	val, err := env.ExecuteActivity(a.WaitPlaced, key)
	require.NoError(t, err)
	took := time.Since(began)
	var p AppProgress
	require.NoError(t, val.Get(&p))
	require.Zero(t, p.Placed)
	require.False(t, p.Gone || p.Outcome.Terminal)
	require.GreaterOrEqual(t, took, key.Within)
}

// A wait says it is alive every heartbeatEvery from its start (shortened here to a second),
// and not at the start: a wait that ends sooner (most placements) costs the Temporal server
// no heartbeat.
func TestWaitPlaced_HeartbeatsEveryIntervalFromItsStartNotAtIt(t *testing.T) {
	heartbeatEvery = time.Second
	t.Cleanup(func() { heartbeatEvery = HeartbeatEvery })
	for _, c := range []struct {
		within time.Duration
		beats  int
	}{{300 * time.Millisecond, 0}, {2500 * time.Millisecond, 2}} {
		a, env, key := submittedWait(t)
		key.Within = c.within
		beats := countBeats(t)
		_, err := env.ExecuteActivity(a.WaitPlaced, key)
		require.NoError(t, err)
		got := beats()
		require.Len(t, got, c.beats, "a wait of %s heartbeat at %v", c.within, got)
		for i, at := range got {
			require.GreaterOrEqual(t, at, time.Duration(i+1)*heartbeatEvery, "heartbeat %d of a wait of %s", i+1, c.within)
		}
	}
}

// countBeats counts every heartbeat a wait sends from now on (the SDK would hold some
// back): the returned func gives when each was sent, from now.
func countBeats(t *testing.T) func() []time.Duration {
	began := time.Now()
	var mu sync.Mutex
	var beats []time.Duration
	recordHeartbeat = func(context.Context, ...any) {
		mu.Lock()
		defer mu.Unlock()
		beats = append(beats, time.Since(began))
	}
	t.Cleanup(func() { recordHeartbeat = activity.RecordHeartbeat })
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(beats)
	}
}

// submittedWait is a wait's activities and environment, and its key (one executor, one
// enough), for a SparkApplication that was submitted and whose executor is never placed.
func submittedWait(t *testing.T) (*Activities, *testsuite.TestActivityEnvironment, AppKey) {
	t.Helper()
	app := &sparkv1beta2.SparkApplication{ObjectMeta: metav1.ObjectMeta{Name: "wordcount-nightly-r1", Namespace: "ns"}}
	app.Status.AppState.State = sparkv1beta2.ApplicationStateSubmitted
	a := &Activities{Client: fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(app).Build()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	env.SetTestTimeout(30 * time.Second)
	return a, env, AppKey{Namespace: "ns", Job: "wordcount", Replicas: 1, Enough: 1,
		App: v1alpha1.ApplicationRef{Kind: sparkv1beta2.SparkApplicationKind, Name: app.Name}}
}

// The wait for a running job's end heartbeats at its own, longer interval: it lasts as long
// as the job runs, and every running job has one.
func TestWaitFinished_HeartbeatsAtItsOwnInterval(t *testing.T) {
	heartbeatEvery, finishedHeartbeatEvery = 200*time.Millisecond, time.Second
	t.Cleanup(func() { heartbeatEvery, finishedHeartbeatEvery = HeartbeatEvery, FinishedHeartbeatEvery })
	a, env, key := submittedWait(t)
	key.Within = 2500 * time.Millisecond
	beats := countBeats(t)
	_, err := env.ExecuteActivity(a.WaitFinished, key)
	require.NoError(t, err)
	got := beats()
	require.Len(t, got, 2, "a wait of 2.5 s heartbeat at %v", got)
	for i, at := range got {
		require.GreaterOrEqual(t, at, time.Duration(i+1)*finishedHeartbeatEvery)
	}
}

// A wait until the driver runs alone answers once the driver runs with no executor pod; once
// an executor pod exists, placed or not, the driver is no longer alone and the wait goes on
// (here until its bound).
func TestWaitPlaced_UntilTheDriverRunsAlone(t *testing.T) {
	a, env, key := submittedWait(t)
	pod := func(name string, slot bool, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{v1alpha1.BatchJobLabel: "wordcount"}}}
		if slot {
			p.Labels[v1alpha1.TestBedLabel] = "bed"
		}
		p.Status.Phase = phase
		return p
	}
	ctx := context.Background()
	require.NoError(t, a.Client.Create(ctx, pod("driver", false, corev1.PodRunning)))
	key.UntilDriverAlone, key.Within = true, 5*time.Second
	began := time.Now()
	val, err := env.ExecuteActivity(a.WaitPlaced, key)
	require.NoError(t, err)
	var p AppProgress
	require.NoError(t, val.Get(&p))
	require.True(t, p.DriverAlone(), "%+v", p)
	require.Less(t, time.Since(began), key.Within, "it answered when it saw the driver alone")

	require.NoError(t, a.Client.Create(ctx, pod("exec-1", true, corev1.PodPending)))
	key.Within = 300 * time.Millisecond
	val, err = env.ExecuteActivity(a.WaitPlaced, key)
	require.NoError(t, err)
	p = AppProgress{}
	require.NoError(t, val.Get(&p))
	require.Equal(t, 1, p.Asked)
	require.Zero(t, p.Placed)
	require.False(t, p.DriverAlone(), "an executor is asked for")
}
