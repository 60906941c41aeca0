//go:build integration

package activities_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/activities"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
)

// Against a real API server, ReadJobs with its Scheduling named answers exactly as a Get of
// each name does, with one List and a Get for each job the Scheduling does not hold: one
// nobody holds, one another Scheduling holds, one deleted after the claim, one that never
// existed.
func TestReadJobs_OneListAnswersAsGetsDo(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx := context.Background()
	plain, err := client.NewWithWatch(c.Config, client.Options{Scheme: kubeclient.Scheme()})
	require.NoError(t, err)
	var gets, lists atomic.Int32
	counted := interceptor.NewClient(plain, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets.Add(1)
			return cl.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			return cl.List(ctx, list, opts...)
		},
	})
	a := &activities.Activities{Client: plain}

	for _, job := range []*testobjects.BatchJobWrapper{
		testobjects.BatchJob("mine-1").Queue("root.a").Driver("2", "3Gi"),
		testobjects.BatchJob("mine-2"),
		testobjects.BatchJob("mine-unasked"),
		testobjects.BatchJob("deleted"),
		testobjects.BatchJob("theirs").Queue("root.b"),
		testobjects.BatchJob("free").Queue("root.c"),
	} {
		require.NoError(t, plain.Create(ctx, job.Obj()))
	}
	res, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "s", Names: []string{"mine-1", "mine-2", "mine-unasked", "deleted"}})
	require.NoError(t, err)
	require.True(t, res.Complete(), "%+v", res)
	res, err = a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "other", Names: []string{"theirs"}})
	require.NoError(t, err)
	require.True(t, res.Complete(), "%+v", res)
	require.NoError(t, plain.Delete(ctx, testobjects.BatchJob("deleted").Obj()))

	names := []string{"free", "mine-2", "deleted", "theirs", "never-made", "mine-1"}
	want, err := a.ReadJobs(ctx, activities.ReadJobsInput{Namespace: "default", Names: names})
	require.NoError(t, err)
	exists := map[string]bool{}
	for _, info := range want {
		exists[info.Name] = info.Exists
	}
	require.Equal(t, map[string]bool{"free": true, "mine-2": true, "deleted": false, "theirs": true, "never-made": false, "mine-1": true}, exists)

	got, err := (&activities.Activities{Client: counted}).ReadJobs(ctx, activities.ReadJobsInput{Namespace: "default", Names: names, Scheduling: "s"})
	require.NoError(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one List answers otherwise than a Get per name (-want +got)\n%s", diff)
	}
	require.Equal(t, int32(1), lists.Load(), "one List")
	require.Equal(t, int32(4), gets.Load(), "a Get for free, deleted, theirs and never-made")
}
