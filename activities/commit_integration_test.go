//go:build integration

package activities_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
	"slotplane/queue"
)

// commitWitness is a Temporal client that takes signals and signal-with-starts. It notes the
// grants each Scheduling's workflow is signalled, and for each nudge the job and the bed's
// ghosts etcd still has; a signal to a workflow named in gone finds no such workflow.
type commitWitness struct {
	temporalclient.Client
	t      *testing.T
	cl     client.Client
	gone   map[string]bool
	mu     sync.Mutex
	grants map[string][]queue.Grant
	nudged []string
	ghosts []int
}

func (w *commitWitness) SignalWorkflow(_ context.Context, id, _, _ string, arg any) error {
	if w.gone[id] {
		return serviceerror.NewNotFound("workflow not found")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.grants[id] = append(w.grants[id], arg.([]queue.Grant)...)
	return nil
}

func (w *commitWitness) SignalWithStartWorkflow(_ context.Context, id, _ string, _ any, _ temporalclient.StartWorkflowOptions, _ any, _ ...any) (temporalclient.WorkflowRun, error) {
	n := countGhosts(ghosts(w.t, w.cl, "bed"))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nudged = append(w.nudged, id)
	w.ghosts = append(w.ghosts, n)
	return nil, nil
}

// Admission's commit (CommitGrants) writes a grant's request only where its Scheduling
// would take it, clears the slots' ghosts before it wakes the job, and says so in the
// signal; every other grant goes out unwritten, for the Scheduling to handle as before. A
// Scheduling that does not run has the requests written for it taken back. A repeated
// attempt writes nothing.
func TestCommitGrants_WritesWhatTheSchedulingWouldTake(t *testing.T) {
	cl, a, _ := newBed(t, 4)
	ctx := context.Background()
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 8)

	uid := map[string]string{}
	for _, name := range []string{"nightly", "stopped"} {
		s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "a", Replication: 1}}}}
		require.NoError(t, cl.Create(ctx, s))
		uid[name] = string(s.UID)
	}
	at := time.Now().UTC()
	grant := func(scheduling, job string, slot int32) queue.Grant {
		return queue.Grant{JobKey: queue.JobKey{Scheduling: scheduling, SchedulingUID: uid[scheduling], Job: job, Run: 1}, Queue: "root.u", Slots: []int32{slot}, Seq: int64(slot + 1), At: at}
	}
	body := func(g queue.Grant) string {
		raw, err := json.Marshal(activities.GrantRequest(g, "bed", g.At))
		require.NoError(t, err)
		return string(raw)
	}
	job := func(name, holder string, annotations map[string]string) {
		j := testobjects.BatchJob(name).Obj()
		j.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: holder}
		j.Annotations = annotations
		require.NoError(t, cl.Create(ctx, j))
	}
	annotation := func(name string) (string, bool) {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &j))
		v, ok := j.Annotations[v1alpha1.CreationRequestAnnotation]
		return v, ok
	}
	other := grant("nightly", "b", 7)
	other.Slots = []int32{6}
	kill, err := json.Marshal(v1alpha1.KillRequest{Scheduling: "nightly", By: "u", As: "the job's user"})
	require.NoError(t, err)
	job("a", "nightly", nil)
	job("b", "nightly", map[string]string{v1alpha1.CreationRequestAnnotation: body(other)}) // another grant of nightly's
	job("c", "someone-else", nil)
	job("d", "nightly", map[string]string{v1alpha1.KillAnnotation: string(kill)})
	job("e", "stopped", nil)
	job("f", "nightly", nil)

	w := &commitWitness{t: t, cl: cl, grants: map[string][]queue.Grant{}, gone: map[string]bool{"scheduling/default/stopped": true}}
	a.Temporal = w
	nudge := func(job string) activities.SignalWithStart {
		return activities.SignalWithStart{WorkflowID: "batchjob/default/" + job, WorkflowType: "BatchJobWorkflow", Signal: "look-again"}
	}
	group := func(scheduling string, grants ...queue.Grant) activities.GrantGroup {
		g := activities.GrantGroup{WorkflowID: "scheduling/default/" + scheduling, Signal: "admitted-batch", Grants: grants}
		for _, gr := range grants {
			g.Nudges = append(g.Nudges, nudge(gr.Job))
		}
		return g
	}
	stale := grant("nightly", "f", 5)
	stale.SchedulingUID = "uid-of-an-older-nightly"
	in := activities.CommitGrantsInput{Namespace: "default", TestBed: "bed", TaskQueue: "q", Groups: []activities.GrantGroup{
		group("nightly", grant("nightly", "a", 0), grant("nightly", "b", 1), grant("nightly", "c", 2), grant("nightly", "d", 3)),
		group("stopped", grant("stopped", "e", 4)),
	}}
	res, err := activities.CommitGrantsAttempt(ctx, a, in, 1)
	require.NoError(t, err)
	require.Equal(t, []int{1}, res.NotRunning, "the stopped Scheduling's signal found nobody")

	written := map[string]bool{}
	for _, g := range w.grants["scheduling/default/nightly"] {
		written[g.Job] = g.Written
	}
	require.Equal(t, map[string]bool{"a": true, "b": false, "c": false, "d": false}, written, "only a's request could be written")
	got, _ := annotation("a")
	require.Equal(t, body(grant("nightly", "a", 0)), got, "a carries the grant's request, the same bytes its Scheduling would write")
	got, _ = annotation("b")
	require.Equal(t, body(other), got, "b keeps the request its Scheduling wrote")
	for _, name := range []string{"c", "d", "e"} {
		_, ok := annotation(name)
		require.False(t, ok, "%s carries no request", name)
	}
	require.ElementsMatch(t, []string{"batchjob/default/a", "batchjob/default/e", "batchjob/default/e"}, w.nudged,
		"a and e were woken once written, e again once its request was taken back")
	require.Equal(t, 6, w.ghosts[0], "the first nudge came once the ghosts of slots 0 and 4 were gone")

	// A grant of an older Scheduling of the same name is not written; nor is anything in a
	// repeated attempt.
	res, err = activities.CommitGrantsAttempt(ctx, a, activities.CommitGrantsInput{Namespace: "default", TestBed: "bed", TaskQueue: "q",
		Groups: []activities.GrantGroup{group("nightly", stale)}}, 1)
	require.NoError(t, err)
	require.Empty(t, res.NotRunning)
	res, err = activities.CommitGrantsAttempt(ctx, a, activities.CommitGrantsInput{Namespace: "default", TestBed: "bed", TaskQueue: "q",
		Groups: []activities.GrantGroup{group("nightly", grant("nightly", "f", 5))}}, 2)
	require.NoError(t, err)
	_, ok := annotation("f")
	require.False(t, ok, "neither the stale grant nor a second attempt wrote f's request")
	last := w.grants["scheduling/default/nightly"]
	require.Len(t, last, 6)
	require.False(t, last[4].Written)
	require.False(t, last[5].Written, "a second attempt says nothing written, even of a grant the first may have written")

	// The Scheduling's own write of a grant the commit wrote finds it done.
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "a", Request: activities.GrantRequest(grant("nightly", "a", 0), "bed", at)}))
	got, _ = annotation("a")
	require.Equal(t, body(grant("nightly", "a", 0)), got)

	// WithdrawGrant takes a's request off, once; a request since replaced stays.
	require.NoError(t, a.WithdrawGrant(ctx, activities.WithdrawGrantInput{Namespace: "default", TestBed: "bed", TaskQueue: "q", Grant: grant("nightly", "a", 0), Nudge: nudge("a")}))
	_, ok = annotation("a")
	require.False(t, ok)
	require.NoError(t, a.WithdrawGrant(ctx, activities.WithdrawGrantInput{Namespace: "default", TestBed: "bed", TaskQueue: "q", Grant: grant("nightly", "b", 1), Nudge: nudge("b")}))
	got, _ = annotation("b")
	require.Equal(t, body(other), got, "a request that is not the grant's is left")
}
