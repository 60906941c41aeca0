package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// laggingCache is a client whose watch-cache reads (resourceVersion "0") answer with what
// stale holds, or "not found" when it holds nothing: a cache that has not seen the last
// writes. It counts the reads of each kind.
func laggingCache(stale map[string]client.Object, objs ...client.Object) (client.Client, *cacheReads) {
	reads := &cacheReads{}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.Scheduling{}, &v1alpha1.BatchJob{}).
		WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			var o client.GetOptions
			o.ApplyOptions(opts)
			if o.Raw == nil || o.Raw.ResourceVersion != "0" {
				reads.fresh++
				return c.Get(ctx, key, obj)
			}
			reads.cached++
			old, ok := stale[key.Name]
			if !ok {
				return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
			}
			return kubeclient.Scheme().Convert(old.DeepCopyObject(), obj, nil)
		}}).Build()
	return cl, reads
}

type cacheReads struct{ cached, fresh int }

// A copy the cache does not have yet is asked of etcd: "not found" decides too much (a test
// bed taken for deleted) to trust a lag with it.
func TestFromWatchCache_AMissingCopyIsAskedOfEtcd(t *testing.T) {
	bed := &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "ns"}}
	cl, reads := laggingCache(nil, bed)
	var got v1alpha1.TestBed
	require.NoError(t, fromWatchCache(context.Background(), cl, client.ObjectKeyFromObject(bed), &got))
	require.Equal(t, "bed", got.Name)
	require.Equal(t, cacheReads{cached: 1, fresh: 1}, *reads)
	slots, err := (&Activities{Client: cl}).ReadSlots(context.Background(), TestBedRef{Namespace: "ns", Name: "bed"})
	require.NoError(t, err)
	require.True(t, slots.Exists, "a bed the cache has not seen yet exists")
}

// A status write whose cached copy is stale conflicts, and the retry reads etcd: the write
// lands, on the current object.
func TestWriteJobStatus_AStaleCopyIsRetriedFromEtcd(t *testing.T) {
	ctx := context.Background()
	stale := map[string]client.Object{}
	job := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "wordcount", Namespace: "ns"}}
	cl, reads := laggingCache(stale, job)
	var current v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(job), &current))
	stale["wordcount"] = current.DeepCopy()
	current.Labels = map[string]string{"edited": "yes"}
	require.NoError(t, cl.Update(ctx, &current))
	*reads = cacheReads{}

	a := &Activities{Client: cl}
	require.NoError(t, a.WriteJobStatus(ctx, WriteJobStatusInput{Job: JobKey{Namespace: "ns", Name: "wordcount"}, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning}}))
	require.Equal(t, cacheReads{cached: 1, fresh: 1}, *reads, "the first attempt reads the cache, the retry etcd")
	var after v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(job), &after))
	require.Equal(t, v1alpha1.JobRunning, after.Status.State)
	require.Equal(t, "yes", after.Labels["edited"], "written on the current object")
}

// A delta of a Scheduling's status that does not fit the cached copy (the last write is not
// in the cache yet) is fitted to etcd's copy before it is called out of step.
func TestWriteSchedulingStatus_ADeltaIsFittedToEtcdBeforeItIsOutOfStep(t *testing.T) {
	ctx := context.Background()
	stale := map[string]client.Object{}
	s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"}}
	cl, reads := laggingCache(stale, s)
	a := &Activities{Client: cl}
	key := SchedulingKey{Namespace: "ns", Name: "nightly"}
	var before v1alpha1.Scheduling
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(s), &before))
	stale["nightly"] = before.DeepCopy()
	whole := v1alpha1.SchedulingStatus{TotalJobs: 2, Jobs: []v1alpha1.SchedulingJobStatus{{Name: "a"}, {Name: "b"}}}
	require.NoError(t, a.WriteSchedulingStatus(ctx, WriteSchedulingStatusInput{Scheduling: key, Status: whole}))
	*reads = cacheReads{}

	delta := v1alpha1.SchedulingStatus{TotalJobs: 2, Jobs: []v1alpha1.SchedulingJobStatus{{Name: "b", State: v1alpha1.JobRunning}}}
	require.NoError(t, a.WriteSchedulingStatus(ctx, WriteSchedulingStatusInput{Scheduling: key, Status: delta, Delta: true}))
	require.Equal(t, cacheReads{cached: 1, fresh: 1}, *reads)
	var after v1alpha1.Scheduling
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(s), &after))
	require.Len(t, after.Status.Jobs, 2)
	require.Equal(t, v1alpha1.JobRunning, after.Status.Jobs[1].State)
}
