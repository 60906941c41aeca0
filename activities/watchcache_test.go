package activities

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
)

// laggingCache is a client whose watch-cache reads (resourceVersion "0") answer with what
// stale holds, or "not found" when it holds nothing: a cache that has not seen the last
// writes. It counts the reads of each kind; an activity may read side by side, and the
// counts are read once it has returned.
func laggingCache(stale map[string]client.Object, objs ...client.Object) (client.Client, *cacheReads) {
	reads := &cacheReads{}
	var mu sync.Mutex
	count := func(n *int) {
		mu.Lock()
		defer mu.Unlock()
		*n++
	}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.Scheduling{}, &v1alpha1.BatchJob{}).
		WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			var o client.GetOptions
			o.ApplyOptions(opts)
			if o.Raw == nil || o.Raw.ResourceVersion != "0" {
				count(&reads.fresh)
				return c.Get(ctx, key, obj)
			}
			count(&reads.cached)
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
	bed := testobjects.TestBed("bed").Namespace("ns").Obj()
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
	s := testobjects.Scheduling("nightly").Namespace("ns").Obj()
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

// bedWithSlots is a test bed and its slot slice, which has a slot at each position, on
// node-<position>.
func bedWithSlots(positions ...int32) (*v1alpha1.TestBed, *v1alpha1.SlotSlice) {
	tb := testobjects.TestBed("bed").Namespace("ns").UID("bed-uid").Slots(2, "1", "2Gi").Obj()
	sl := slotslices.New(tb, 0)
	for _, p := range positions {
		sl.Slots = append(sl.Slots, v1alpha1.SlotStatus{Position: p, NodeName: fmt.Sprintf("node-%d", p), State: v1alpha1.SlotFree})
	}
	return tb, sl
}

// withSlots is the objects of a test bed with a slot at each position (bedWithSlots).
func withSlots(positions ...int32) []client.Object {
	tb, sl := bedWithSlots(positions...)
	return []client.Object{tb, sl}
}

// A creation request is written from the watch cache's copies when they agree, with no read
// of etcd. A copy that lags decides nothing against the request: a job it shows held by
// another, or a slot it shows leaving, is looked for again in etcd, which has the last word.
func TestWriteRequest_ALaggingCacheDecidesNothingAgainstIt(t *testing.T) {
	ctx := context.Background()
	held := testobjects.BatchJob("wordcount").Namespace("ns").Obj()
	held.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
	in := RequestCreationInput{Namespace: "ns", Job: "wordcount", Request: v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{2}, Run: 1, GrantedAt: &metav1.MicroTime{Time: time.Now()}}}

	// current is what etcd holds of name, with its resourceVersion.
	current := func(cl client.Client, obj client.Object) client.Object {
		require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		return obj
	}
	// copyOf is what etcd holds now of the bed and its slice, for the cache to hold.
	copyOf := func(cl client.Client, stale map[string]client.Object) *v1alpha1.SlotSlice {
		tb, sl := bedWithSlots()
		stale["bed"], stale[sl.Name] = current(cl, tb), current(cl, sl)
		return stale[sl.Name].(*v1alpha1.SlotSlice)
	}
	t.Run("the copies agree", func(t *testing.T) {
		stale := map[string]client.Object{}
		cl, reads := laggingCache(stale, append(withSlots(1, 2), held)...)
		stale["wordcount"] = current(cl, &v1alpha1.BatchJob{ObjectMeta: held.ObjectMeta})
		copyOf(cl, stale)
		*reads = cacheReads{}
		require.NoError(t, (&Activities{Client: cl}).writeRequest(ctx, in))
		require.Equal(t, cacheReads{cached: 3}, *reads, "the job, the bed and its slice")
	})
	t.Run("the copies lag", func(t *testing.T) {
		stale := map[string]client.Object{}
		cl, reads := laggingCache(stale, append(withSlots(1, 2), held)...)
		job := current(cl, &v1alpha1.BatchJob{ObjectMeta: held.ObjectMeta}).(*v1alpha1.BatchJob)
		job.Labels = nil // the cache has not seen the claim yet
		sl := copyOf(cl, stale)
		sl.Slots[1].LeavingSince = &metav1.MicroTime{Time: time.Now()} // nor the node's return
		stale["wordcount"] = job
		*reads = cacheReads{}
		require.NoError(t, (&Activities{Client: cl}).writeRequest(ctx, in))
		require.Equal(t, cacheReads{cached: 3, fresh: 3}, *reads)
		var after v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(held), &after))
		require.Contains(t, after.Annotations[v1alpha1.CreationRequestAnnotation], `"scheduling":"nightly"`)
	})
	t.Run("etcd says no", func(t *testing.T) {
		stale := map[string]client.Object{}
		cl, _ := laggingCache(stale, append(withSlots(1, 2), held)...)
		job := current(cl, &v1alpha1.BatchJob{ObjectMeta: held.ObjectMeta}).(*v1alpha1.BatchJob)
		stale["wordcount"] = job.DeepCopy()
		copyOf(cl, stale)
		job.Labels[v1alpha1.ActiveSchedulingLabel] = "other" // claimed by another since the cache's copy
		require.NoError(t, cl.Update(ctx, job))
		require.True(t, IsNotHeld((&Activities{Client: cl}).writeRequest(ctx, in)), "held by another in etcd")

		stale = map[string]client.Object{}
		cl, _ = laggingCache(stale, append(withSlots(1), held)...)
		stale["wordcount"] = current(cl, &v1alpha1.BatchJob{ObjectMeta: held.ObjectMeta})
		copyOf(cl, stale)
		require.True(t, IsSlotsGone((&Activities{Client: cl}).writeRequest(ctx, in)), "slot 2 gone in the cache and in etcd")
	})
}

// A run's application is built from the watch cache's copies of the job and the test bed;
// a slot the bed's copy lacks is looked for in etcd before it fails the run for good.
func TestCreateApplication_ASlotMissingFromTheCacheIsLookedForInEtcd(t *testing.T) {
	ctx := context.Background()
	job := testobjects.BatchJob("wordcount").Namespace("ns").Obj()
	in := CreateApplicationInput{Job: JobKey{Namespace: "ns", Name: "wordcount"}, Request: v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{2}, Run: 1, GrantedAt: &metav1.MicroTime{Time: time.Now()}}}

	lagging := func() map[string]client.Object {
		tb, sl := bedWithSlots(1)
		return map[string]client.Object{"wordcount": job, "bed": tb, sl.Name: sl}
	}
	cl, reads := laggingCache(lagging(), append(withSlots(1, 2), job)...)
	app, err := (&Activities{Client: cl}).CreateApplication(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "SparkApplication", app.Kind)
	require.Equal(t, 2, reads.fresh, "two reads of etcd: the bed and its slice, for its missing slot")

	cl, _ = laggingCache(lagging(), append(withSlots(1), job)...)
	_, err = (&Activities{Client: cl}).CreateApplication(ctx, in)
	require.True(t, hasErrorType(err, ErrInvalidJob), "%v", err)
	require.ErrorContains(t, err, "has no slot 2")
}
