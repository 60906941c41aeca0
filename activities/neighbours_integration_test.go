//go:build integration

package activities_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
)

// A run's end says where it ran: the nodes of its slots, and the jobs whose runs held slots
// on those nodes while its application existed, from their current runs and their
// histories; a run that ended before it began, or held slots on other nodes only, is not a
// neighbour. The worker's copy and the API server's watch cache give the same answer.
func TestWaitFinished_RecordsTheNodesAndTheNeighbours(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, c)

	tb := testobjects.TestBed("bed").Slots(2, "1", "2Gi").Obj()
	require.NoError(t, live.Create(ctx, tb))
	require.NoError(t, slotslices.Put(ctx, live, tb, []v1alpha1.SlotStatus{
		{Position: 0, NodeName: "node-00", NodeID: "00", State: v1alpha1.SlotOccupied},
		{Position: 1, NodeName: "node-01", NodeID: "01", State: v1alpha1.SlotOccupied},
		{Position: 2, NodeName: "node-00", NodeID: "00", PositionOnNode: 1, State: v1alpha1.SlotOccupied},
		{Position: 3, NodeName: "node-01", NodeID: "01", PositionOnNode: 1, State: v1alpha1.SlotFree},
	}))

	start := time.Now().Add(-time.Minute).UTC()
	at := func(d time.Duration) *metav1.MicroTime { t := metav1.NewMicroTime(start.Add(d)); return &t }
	running := func(slots []int32, created time.Duration) v1alpha1.BatchJobStatus {
		return v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "s", TestBed: "bed", Slots: slots, Run: 1,
			Phases: &v1alpha1.RunPhases{AdmittedAt: at(created - time.Second), ApplicationCreatedAt: at(created)}}
	}
	record := func(nodes []string, from, to time.Duration) v1alpha1.RunRecord {
		return v1alpha1.RunRecord{Run: 1, Scheduling: "old", TestBed: "bed", Nodes: nodes, ApplicationCreatedAt: at(from), EndedAt: at(to), Outcome: v1alpha1.RunCompleted}
	}
	statuses := map[string]v1alpha1.BatchJobStatus{
		// etl runs in slot 0 (node-00) from the start; its application is ended below.
		"etl": running([]int32{0}, 0),
		// Runs in slot 2, on node-00 too, since before etl's start.
		"beside": running([]int32{2}, -time.Hour),
		// Runs on node-01 only.
		"elsewhere": running([]int32{1}, 0),
		// Ended on node-00 before etl's application was made.
		"before": {State: v1alpha1.JobReady, History: []v1alpha1.RunRecord{record([]string{"node-00"}, -time.Hour, -time.Minute)}},
		// Ended on node-00 while etl ran; it has run elsewhere since.
		"during": {State: v1alpha1.JobReady, History: []v1alpha1.RunRecord{
			record([]string{"node-00"}, -time.Minute, 10*time.Second), record([]string{"node-01"}, 20*time.Second, 30*time.Second)}},
		// Its current run ended on node-00 while etl ran (its status says so, its record is
		// still to come).
		"ending": func() v1alpha1.BatchJobStatus {
			st := running([]int32{2}, 5*time.Second)
			st.State, st.Phases.EndedAt = v1alpha1.JobCompleted, at(15*time.Second)
			return st
		}(),
		// Another test bed's job.
		"other-bed": func() v1alpha1.BatchJobStatus { st := running([]int32{0}, 0); st.TestBed = "bed-2"; return st }(),
	}
	for name, st := range statuses {
		job := testobjects.BatchJob(name).Obj()
		require.NoError(t, live.Create(ctx, job))
		job.Status = st
		require.NoError(t, live.Status().Update(ctx, job))
	}
	made, err := (&activities.Activities{Client: live}).CreateApplication(ctx, activities.CreateApplicationInput{Job: activities.JobKey{Namespace: "default", Name: "etl"},
		Request: v1alpha1.CreationRequest{Scheduling: "s", TestBed: "bed", Slots: []int32{0}, Run: 1, GrantedAt: grantedAt()}})
	require.NoError(t, err)
	ref := made.ApplicationRef
	var app sparkv1beta2.SparkApplication
	require.NoError(t, live.Get(ctx, client.ObjectKey{Namespace: "default", Name: ref.Name}, &app))
	app.Status.AppState.State = sparkv1beta2.ApplicationStateCompleted
	require.NoError(t, live.Status().Update(ctx, &app))

	ch, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	var env testsuite.WorkflowTestSuite
	finished := func(a *activities.Activities) activities.AppProgress {
		aenv := env.NewTestActivityEnvironment()
		aenv.RegisterActivity(a)
		val, err := aenv.ExecuteActivity(a.WaitFinished, activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1})
		require.NoError(t, err)
		var p activities.AppProgress
		require.NoError(t, val.Get(&p))
		require.True(t, p.Outcome.Terminal, "%+v", p.Outcome)
		return p
	}
	want := []string{"beside", "during", "ending"}
	p := finished(&activities.Activities{Client: live})
	require.Equal(t, []string{"node-00"}, p.Nodes)
	require.Equal(t, want, p.SharedWith, "from the API server's watch cache")
	var counted *countingClient
	require.Eventually(t, func() bool {
		counted = &countingClient{Client: live}
		p = finished(&activities.Activities{Client: counted, Changes: ch})
		// Once the copy has synced, the jobs and the test bed are read there alone.
		return len(p.SharedWith) == len(want) && counted.readsOf("BatchJob") == 0 && counted.readsOf("TestBed") == 0
	}, 20*time.Second, 100*time.Millisecond, "the copy never answered alone")
	require.Equal(t, want, p.SharedWith, "from the worker's copy")
	require.Equal(t, []string{"node-00"}, p.Nodes)
}
