//go:build integration

package activities_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
)

// A job's queue is written while its Scheduling holds it, whether or not the job has a
// status yet; a job another Scheduling holds, or none, keeps what it has, and a job that is
// gone is no error.
func TestRecordQueues_WritesOnlyWhileTheSchedulingHoldsTheJob(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	create := func(name, holder string, withStatus bool) {
		j := testobjects.BatchJob(name).Obj()
		if holder != "" {
			j.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: holder}
		}
		require.NoError(t, cl.Create(ctx, j))
		if withStatus {
			j.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: holder}
			require.NoError(t, cl.Status().Update(ctx, j))
		}
	}
	create("held", "nightly", true)
	create("held-no-status", "nightly", false)
	create("elsewhere", "weekly", true)
	create("free", "", false)
	err := a.RecordQueues(ctx, activities.RecordQueuesInput{Namespace: "default", Placements: []activities.QueuePlacement{
		{Scheduling: "nightly", Job: "held", Queue: "root.a"},
		{Scheduling: "nightly", Job: "held-no-status", Queue: "root.b"},
		{Scheduling: "nightly", Job: "elsewhere", Queue: "root.a"},
		{Scheduling: "nightly", Job: "free", Queue: "root.a"},
		{Scheduling: "nightly", Job: "gone", Queue: "root.a"},
	}})
	require.NoError(t, err)
	queueOf := func(name string) string {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &j))
		return j.Status.Queue
	}
	require.Equal(t, "root.a", queueOf("held"))
	require.Equal(t, "root.b", queueOf("held-no-status"))
	require.Empty(t, queueOf("elsewhere"))
	require.Empty(t, queueOf("free"))

	// The job's own status write keeps the queue, and a Ready one drops it.
	keep := v1alpha1.BatchJobStatus{State: v1alpha1.JobSubmitted, Scheduling: "nightly", Run: 1}
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: activities.JobKey{Namespace: "default", Name: "held"}, Status: keep}))
	require.Equal(t, "root.a", queueOf("held"))
}

// A kill is written on a job its Scheduling holds and whose run there has not ended; the
// first kill stands; a kill of an ended run, of a job another Scheduling holds, or of a job
// that is gone is ErrRunOver, and writes nothing. A new claim of the job removes the kill.
func TestKillJob_WritesTheKillOfAHeldRunOnly(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	for name, st := range map[string]v1alpha1.BatchJobState{"running": v1alpha1.JobRunning, "ended": v1alpha1.JobCompleted} {
		j := testobjects.BatchJob(name).Obj()
		j.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
		require.NoError(t, cl.Create(ctx, j))
		j.Status = v1alpha1.BatchJobStatus{State: st, Scheduling: "nightly", Run: 1}
		require.NoError(t, cl.Status().Update(ctx, j))
	}
	kill := func(job, scheduling, by string) error {
		return a.KillJob(ctx, activities.KillJobInput{Namespace: "default", Job: job,
			Kill: v1alpha1.KillRequest{Scheduling: scheduling, By: by, As: "the job's user", At: metav1.Now()}})
	}
	killOn := func(name string) *v1alpha1.KillRequest {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &j))
		raw, ok := j.Annotations[v1alpha1.KillAnnotation]
		if !ok {
			return nil
		}
		var k v1alpha1.KillRequest
		require.NoError(t, json.Unmarshal([]byte(raw), &k))
		return &k
	}
	require.NoError(t, kill("running", "nightly", "alice"))
	require.NoError(t, kill("running", "nightly", "olga"))
	require.Equal(t, "alice", killOn("running").By, "the first kill stands")
	for _, c := range []struct{ job, scheduling string }{{"ended", "nightly"}, {"running", "weekly"}, {"gone", "nightly"}} {
		err := kill(c.job, c.scheduling, "alice")
		require.True(t, activities.IsRunOver(err), "%s of %s: %v", c.job, c.scheduling, err)
	}
	require.Nil(t, killOn("ended"))

	// Released and claimed again (by a Scheduling of the same name, say): the kill is gone.
	require.NoError(t, a.ReleaseJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "nightly", Names: []string{"running"}}))
	require.Nil(t, killOn("running"))
}
