package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
	"slotplane/queue"
)

// requestCount counts a client's reads.
type requestCount struct{ gets, lists int }

// countingClient is a fake client holding objs whose Gets and Lists are counted in n.
func countingClient(n *requestCount, objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				n.gets++
				return cl.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				n.lists++
				return cl.List(ctx, list, opts...)
			},
		}).Build()
}

// claimed is job with the claim of scheduling.
func claimed(job *v1alpha1.BatchJob, scheduling string) *v1alpha1.BatchJob {
	job.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: scheduling}
	return job
}

// With its Scheduling named, ReadJobs answers what a Get of each name answers, in the order
// asked, with one List and a Get for each name the List lacks: a job nobody holds, one
// another Scheduling holds, one that does not exist. Jobs of the same name in another
// namespace, and held jobs not asked for, change nothing.
func TestReadJobs_OneListAnswersAsGetsDo(t *testing.T) {
	mine := testobjects.BatchJob("mine").Queue("root.a").Driver("2", "4Gi").Obj()
	mine.Spec.User, mine.Spec.Groups = "ann", []string{"eng", "ml"}
	mine.Spec.ExpectedDuration = &metav1.Duration{Duration: 90 * time.Second}
	mine.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: "s", Queue: "root.a"}
	// Its status still speaks of the run of s, which held it before other.
	theirs := claimed(testobjects.BatchJob("theirs").Queue("root.b").Obj(), "other")
	theirs.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Scheduling: "s", Queue: "root.b"}
	objs := []client.Object{
		claimed(mine, "s"),
		claimed(testobjects.BatchJob("mine-too").Obj(), "s"),
		claimed(testobjects.BatchJob("not-asked").Obj(), "s"),
		theirs,
		testobjects.BatchJob("free").Queue("root.c").Obj(),
		// Same name, other namespace, same Scheduling name: never read.
		claimed(testobjects.BatchJob("gone").Namespace("elsewhere").Obj(), "s"),
		claimed(testobjects.BatchJob("mine-too").Namespace("elsewhere").Queue("root.wrong").Obj(), "s"),
	}
	names := []string{"theirs", "mine-too", "gone", "mine", "free"}

	var perName requestCount
	want, err := (&Activities{Client: countingClient(&perName, objs...)}).ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: names})
	require.NoError(t, err)
	require.Equal(t, requestCount{gets: len(names)}, perName, "without a Scheduling: a Get per name")
	require.Equal(t, JobInfo{Name: "mine", Exists: true, Queue: "root.a", User: "ann", Groups: []string{"eng", "ml"},
		Driver: mine.Spec.DriverResources, Expected: 90 * time.Second, Shown: "root.a"}, want[3])
	require.Empty(t, want[0].Shown, "a status of another holder's run shows no queue for this one")
	require.Equal(t, JobInfo{Name: "gone"}, want[2])

	var listed requestCount
	got, err := (&Activities{Client: countingClient(&listed, objs...)}).ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: names, Scheduling: "s"})
	require.NoError(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one List answers otherwise than a Get per name (-want +got)\n%s", diff)
	}
	require.Equal(t, requestCount{lists: 1, gets: 3}, listed, "one List, and a Get for theirs, gone and free")
}

// A Scheduling that holds every job asked for costs one request, however many jobs.
func TestReadJobs_AllHeld_OneRequest(t *testing.T) {
	var objs []client.Object
	var names []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		objs = append(objs, claimed(testobjects.BatchJob(name).Obj(), "s"))
		names = append(names, name)
	}
	var n requestCount
	got, err := (&Activities{Client: countingClient(&n, objs...)}).ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: names, Scheduling: "s"})
	require.NoError(t, err)
	require.Len(t, got, len(names))
	for i, info := range got {
		require.Equal(t, names[i], info.Name)
		require.True(t, info.Exists)
	}
	require.Equal(t, requestCount{lists: 1}, n)
}

// One name is one Get, Scheduling or not: a List would cost as much and carry every job
// the Scheduling holds.
func TestReadJobs_OneName_OneGet(t *testing.T) {
	var n requestCount
	cl := countingClient(&n, claimed(testobjects.BatchJob("a").Obj(), "s"), claimed(testobjects.BatchJob("b").Obj(), "s"))
	got, err := (&Activities{Client: cl}).ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: []string{"a"}, Scheduling: "s"})
	require.NoError(t, err)
	require.Equal(t, []JobInfo{{Name: "a", Exists: true, Driver: testobjects.BatchJob("a").Obj().Spec.DriverResources}}, got)
	require.Equal(t, requestCount{gets: 1}, n)
}

// With the worker's copy, ReadJobs takes from it every job the copy shows claimed by the
// Scheduling, and asks the API server only about the rest, as it would without the copy: a
// job the copy lacks (created a moment ago), one the copy shows free while etcd has the claim
// (the copy lags), one another Scheduling holds, one that does not exist.
func TestReadJobs_TheCopyAnswersForTheJobsItShowsClaimed(t *testing.T) {
	inCopy := testobjects.BatchJob("copied").Queue("root.a").Driver("2", "4Gi").Obj()
	inCopy.Spec.User = "ann"
	etcd := []client.Object{
		claimed(inCopy.DeepCopy(), "s"),
		claimed(testobjects.BatchJob("copied-too").Obj(), "s"),
		claimed(testobjects.BatchJob("new").Queue("root.new").Obj(), "s"),
		claimed(testobjects.BatchJob("lagging").Queue("root.claimed").Obj(), "s"),
		claimed(testobjects.BatchJob("theirs").Obj(), "other"),
	}
	copied := []client.Object{
		claimed(inCopy.DeepCopy(), "s"),
		claimed(testobjects.BatchJob("copied-too").Obj(), "s"),
		testobjects.BatchJob("lagging").Queue("root.free").Obj(),
		claimed(testobjects.BatchJob("theirs").Obj(), "other"),
	}
	names := []string{"new", "copied", "lagging", "theirs", "gone", "copied-too"}
	var fromEtcd requestCount
	want, err := (&Activities{Client: countingClient(&fromEtcd, etcd...)}).ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: names})
	require.NoError(t, err)

	var n requestCount
	a := &Activities{Client: countingClient(&n, etcd...), Changes: ChangesCopying(countingClient(&requestCount{}, copied...), v1alpha1.GroupVersion.WithKind("BatchJob"))}
	got, err := a.ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: names, Scheduling: "s"})
	require.NoError(t, err)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the copy answers otherwise than etcd (-want +got)\n%s", diff)
	}
	require.Equal(t, "root.claimed", got[2].Queue, "a copy that lags the claim is not read")
	require.Equal(t, requestCount{lists: 1, gets: 2}, n, "one List for new, lagging, theirs and gone; a Get for theirs and gone")

	// All of them in the copy: no request at all.
	n = requestCount{}
	got, err = a.ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: []string{"copied", "copied-too"}, Scheduling: "s"})
	require.NoError(t, err)
	require.Equal(t, want[1], got[0])
	require.Equal(t, requestCount{}, n)
	// One left for the API server: one Get, not a List.
	got, err = a.ReadJobs(context.Background(), ReadJobsInput{Namespace: "default", Names: []string{"copied", "new"}, Scheduling: "s"})
	require.NoError(t, err)
	require.Equal(t, []JobInfo{want[1], want[0]}, got)
	require.Equal(t, requestCount{gets: 1}, n)
}

// Keys and unheld keys pass to and from CheckHolds packed, and come back as they went.
func TestCheckHoldsPayloads_RoundTrip(t *testing.T) {
	keys := JobKeys{{Scheduling: "nightly", SchedulingUID: "u-1", Job: "etl", Run: 2}, {Scheduling: "nightly", Job: "report", Run: 1}}
	data, err := json.Marshal(CheckHoldsInput{Namespace: "team-a", Keys: keys})
	require.NoError(t, err)
	require.NotContains(t, string(data), "nightly", "the keys travel packed")
	var in CheckHoldsInput
	require.NoError(t, json.Unmarshal(data, &in))
	require.Equal(t, CheckHoldsInput{Namespace: "team-a", Keys: keys}, in)

	out := UnheldKeys{{Key: keys[0], Reason: UnheldRunEnded + " Completed"}, {Key: keys[1], Reason: UnheldSchedulingRemade}}
	data, err = json.Marshal(out)
	require.NoError(t, err)
	var back UnheldKeys
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, out, back)
	require.Equal(t, "BatchJob etl's run 2 ended Completed", back[0].Why())
	require.Equal(t, "scheduling nightly was deleted and made again", back[1].Why())

	var none UnheldKeys
	require.NoError(t, json.Unmarshal([]byte("null"), &none))
	require.Empty(t, none)
	require.Error(t, json.Unmarshal([]byte(`"bm90IGd6aXA="`), &none), "damaged keys are an error")
}

// Placements not yet written travel packed, and come back as they went.
func TestQueuePlacements_RoundTrip(t *testing.T) {
	in := QueuePlacements{{Scheduling: "nightly", Job: "etl", Queue: "root.a"}, {Scheduling: "nightly", Job: "report", Queue: "root.b"}}
	data, err := json.Marshal(struct{ Unrecorded QueuePlacements }{in})
	require.NoError(t, err)
	require.NotContains(t, string(data), "report")
	var back struct{ Unrecorded QueuePlacements }
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, in, back.Unrecorded)
}

// The scan for grants Admission lacks, against the check of the keys it holds, over a bed
// whose 8,000 jobs all run on a grant Admission knows (the steady case at every resync), and
// the scan when it knows none (a fresh run). All run in one benchmark so that their ratios
// are taken in one run.
func BenchmarkCheckHolds_ScanAgainstKeys(b *testing.B) {
	const n = 8000
	granted := metav1.NewMicroTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	uids := map[string]string{"nightly": "uid-1"}
	jobs := make([]v1alpha1.BatchJob, n)
	keys := make([]queue.JobKey, n)
	for i := range jobs {
		name := fmt.Sprintf("job-%05d", i)
		body, err := json.Marshal(v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid-1", TestBed: "bed", Run: 1,
			Slots: []int32{int32(i)}, GrantedAt: &granted, Queue: "root.default"})
		require.NoError(b, err)
		jobs[i] = *testobjects.BatchJob(name).Obj()
		jobs[i].Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
		jobs[i].Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: string(body)}
		jobs[i].Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", Run: 1}
		keys[i] = queue.JobKey{Scheduling: "nightly", SchedulingUID: "uid-1", Job: name, Run: 1}
	}
	byName := make(map[string]*v1alpha1.BatchJob, n)
	for i := range jobs {
		byName[jobs[i].Name] = &jobs[i]
	}
	b.Run("keys", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				if unheldWhy(k, byName[k.Job], uids) != "" {
					b.Fatal("a held key is unheld")
				}
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if found := indexKeys(keys).lacking(jobs, "bed", uids); len(found) > 0 {
				b.Fatal("a known grant was found")
			}
		}
	})
	// The same scan when Admission lost every grant (a fresh run's): each request is read.
	b.Run("scan-all-lacking", func(b *testing.B) {
		for b.Loop() {
			if found := indexKeys(nil).lacking(jobs, "bed", uids); len(found) != n {
				b.Fatalf("found %d of %d", len(found), n)
			}
		}
	})
}
