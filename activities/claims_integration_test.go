//go:build integration

package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/activities"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/operatorapp"
	"slotplane/queue"
)

// Two Schedulings claim overlapping jobs at the same moment, many times: every job ends with
// exactly one holder, each Scheduling's result agrees with the labels, and a release gives
// back only what the releasing Scheduling holds, creation request included.
func TestClaims_RacingSchedulingsNeverShareAJob(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()

	for round := range 10 {
		names := make([]string, 6)
		for i := range names {
			names[i] = fmt.Sprintf("r%d-job-%d", round, i)
			require.NoError(t, cl.Create(ctx, testobjects.BatchJob(names[i]).Obj()))
		}
		results := map[string]activities.ClaimResult{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, sched := range []string{"left", "right"} {
			// Each claims in its own order, the classic recipe for a deadlock without the rule.
			order := append([]string(nil), names...)
			if sched == "right" {
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			wg.Go(func() {
				res, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: sched, Names: order})
				require.NoError(t, err)
				mu.Lock()
				results[sched] = res
				mu.Unlock()
			})
		}
		wg.Wait()
		for _, name := range names {
			var job v1alpha1.BatchJob
			require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &job))
			holder := job.Labels[v1alpha1.ActiveSchedulingLabel]
			require.Contains(t, []string{"left", "right"}, holder)
			require.Contains(t, results[holder].Claimed, name, "round %d: %s holds %s but was not told", round, holder, name)
			other := map[string]string{"left": "right", "right": "left"}[holder]
			require.Contains(t, results[other].Lost, activities.LostClaim{Name: name, Holder: holder})
		}
	}

	// Release: only the releasing Scheduling's jobs lose their label and request.
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("mine").Obj()))
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("theirs").Obj()))
	_, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: []string{"mine"}})
	require.NoError(t, err)
	_, err = a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "them", Names: []string{"theirs"}})
	require.NoError(t, err)
	req := v1alpha1.CreationRequest{Scheduling: "me", TestBed: "bed", Slots: []int32{1}, Run: 1, GrantedAt: grantedAt()}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "mine", Request: req}))
	var requested v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "mine"}, &requested))
	require.Equal(t, "bed", requested.Labels[v1alpha1.GrantedTestBedLabel], "the request names its test bed in a label too")
	err = a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "theirs", Request: req})
	require.True(t, activities.IsNotHeld(err), "a request for a job another Scheduling holds: %v", err)

	require.NoError(t, a.ReleaseJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: []string{"mine", "theirs", "gone"}}))
	var mine, theirs v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "mine"}, &mine))
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "theirs"}, &theirs))
	require.NotContains(t, mine.Labels, v1alpha1.ActiveSchedulingLabel)
	require.NotContains(t, mine.Annotations, v1alpha1.CreationRequestAnnotation)
	require.NotContains(t, mine.Labels, v1alpha1.GrantedTestBedLabel)
	require.Equal(t, "them", theirs.Labels[v1alpha1.ActiveSchedulingLabel])

	res, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: []string{"absent"}})
	require.NoError(t, err)
	require.Equal(t, []string{"absent"}, res.Missing)
}

// A claim writes the InQueue status of a job that rests, keeping its conditions, and says so;
// a job with something of an earlier run left is claimed but left to its workflow. The
// workflow's own Ready or InQueue write, decided on an older picture, is not written over a
// claim; once the picture is true again, it is.
func TestClaimJobs_QueuesTheJobsThatRest(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	get := func(name string) *v1alpha1.BatchJob {
		var job v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &job))
		return &job
	}
	allowed := metav1.Condition{Type: v1alpha1.ConditionSpecAllowed, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSpecAllowed,
		Message: "kept", LastTransitionTime: metav1.Now()}
	for _, name := range []string{"fresh", "ran", "requested"} {
		require.NoError(t, cl.Create(ctx, testobjects.BatchJob(name).Obj()))
	}
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("own").Queue("root.own").Obj()))
	fresh := get("fresh")
	fresh.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobReady, Conditions: []metav1.Condition{allowed}}
	require.NoError(t, cl.Status().Update(ctx, fresh))
	ran := get("ran")
	ran.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Run: 2, Application: &v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: "ran-old-2"}}
	require.NoError(t, cl.Status().Update(ctx, ran))
	requested := get("requested")
	requested.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: "{}"}
	require.NoError(t, cl.Update(ctx, requested))

	in := activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: []string{"fresh", "ran", "requested", "own"}, Queue: "root.nightly"}
	res, err := a.ClaimJobs(ctx, in)
	require.NoError(t, err)
	require.ElementsMatch(t, in.Names, res.Claimed)
	require.Equal(t, []string{"fresh", "own"}, res.Queued)
	st := get("fresh").Status
	require.Equal(t, v1alpha1.JobInQueue, st.State)
	require.Equal(t, "me", st.Scheduling)
	require.NotNil(t, st.QueuedAt)
	require.Len(t, st.Conditions, 1)
	require.Equal(t, "kept", st.Conditions[0].Message)
	require.Equal(t, "root.nightly", st.Queue, "a job that asks for no queue asks for its Scheduling's")
	require.Equal(t, "root.own", get("own").Status.Queue, "a job's own queue comes first")
	require.Equal(t, v1alpha1.JobCompleted, get("ran").Status.State, "the earlier run's status is the workflow's to change")
	require.Equal(t, v1alpha1.JobReady, get("requested").Status.State)

	again, err := a.ClaimJobs(ctx, in)
	require.NoError(t, err)
	require.Equal(t, []string{"fresh", "own"}, again.Queued, "a retry finds the status written")

	// What the statuses show is what Admission need not write again; a status of another
	// holder's run shows nothing for this one.
	infos, err := a.ReadJobs(ctx, activities.ReadJobsInput{Namespace: "default", Scheduling: "me", Names: []string{"fresh", "ran", "own"}})
	require.NoError(t, err)
	require.Equal(t, []string{"root.nightly", "", "root.own"}, []string{infos[0].Shown, infos[1].Shown, infos[2].Shown})
	require.Equal(t, "root.own", infos[2].Queue)

	// The workflow saw "fresh" free before the claim: its Ready is not written, nor an
	// InQueue for someone else; an InQueue for the holder is.
	key := activities.JobKey{Namespace: "default", Name: "fresh"}
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobReady}}))
	require.Equal(t, v1alpha1.JobInQueue, get("fresh").Status.State)
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: "them"}}))
	require.Equal(t, "me", get("fresh").Status.Scheduling)
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: "me", Message: "mine"}}))
	require.Equal(t, "mine", get("fresh").Status.Message)
	require.Equal(t, "root.nightly", get("fresh").Status.Queue, "the workflow's write keeps the queue")
	require.NoError(t, a.ReleaseJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: []string{"fresh"}}))
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobReady}}))
	require.Equal(t, v1alpha1.JobReady, get("fresh").Status.State, "released, the job is Ready again")
	require.Empty(t, get("fresh").Status.Queue, "released, the job is in no queue")
}

// The InQueue status a claim writes shows the queue the namespace's placement rules put the
// job in: the queue Admission's Admitter places its request in (so Admission need not write
// it again), for a job that asks for a queue the rules keep, one they pass over, and none. A
// file that does not parse leaves the claim the queue asked for (Admission keeps its last
// good file, which the claim cannot know), and Admission writes where it differs.
func TestClaimJobs_ShowsTheQueueThePlacementRulesChoose(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	// Without the ConfigMap, the default rules: a job that asks for no queue is in its
	// user's.
	unset := testobjects.BatchJob("unset").Obj()
	unset.Spec.User = "erin"
	require.NoError(t, cl.Create(ctx, unset))
	_, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "first", Names: []string{"unset"}})
	require.NoError(t, err)
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(unset), unset))
	require.Equal(t, "root.erin", unset.Status.Queue)

	file := `<allocations>
  <queue name="analytics"/>
  <queue name="etl"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="primaryGroup" create="false"/>
    <rule name="user" create="true"/>
  </queuePlacementPolicy>
</allocations>`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"}, Data: map[string]string{v1alpha1.QueuesConfigMapKey: file}}
	require.NoError(t, cl.Create(ctx, cm))
	jobs := []struct {
		name, queue, user string
		groups            []string
		want              string
	}{
		{"kept", "root.analytics", "alice", nil, "root.analytics"},
		{"passed-over", "root.undeclared", "bob", nil, "root.bob"},
		{"by-group", "", "carol", []string{"etl"}, "root.etl"},
		{"no-queue", "", "dave", []string{"nobody"}, "root.dave"},
	}
	var names []string
	for _, j := range jobs {
		job := testobjects.BatchJob(j.name).Queue(j.queue).Obj()
		job.Spec.User, job.Spec.Groups = j.user, j.groups
		require.NoError(t, cl.Create(ctx, job))
		names = append(names, j.name)
	}
	res, err := a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: names})
	require.NoError(t, err)
	require.ElementsMatch(t, names, res.Queued)

	u := queue.ReadConfigFiles(queue.Config{}, queue.ConfigFiles{Allocations: []byte(file), HasAllocations: true}, "v1")
	require.NotNil(t, u.Allocations, u.Rejected)
	admitter := queue.NewAdmitter(queue.AdmitterState{Config: queue.Config{}.Apply(*u)})
	infos, err := a.ReadJobs(ctx, activities.ReadJobsInput{Namespace: "default", Scheduling: "me", Names: names})
	require.NoError(t, err)
	for i, j := range jobs {
		var got v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: j.name}, &got))
		require.Equal(t, j.want, got.Status.Queue, j.name)
		require.Equal(t, j.want, infos[i].Shown, "what Admission is told the status shows")
		key := queue.JobKey{Scheduling: "me", SchedulingUID: "uid", Job: j.name, Run: 1}
		require.Nil(t, admitter.Request(queue.Request{JobKey: key, Queue: infos[i].Queue, User: infos[i].User, Groups: infos[i].Groups, Slots: 1, Driver: queue.MBVCores(256, 1)}))
		require.Equal(t, j.want, admitter.QueuesOf([]queue.JobKey{key})[key], "Admission places %s where the claim said", j.name)
	}

	// A file that does not parse: the queue asked for.
	require.NoError(t, a.ReleaseJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: names}))
	cm.Data[v1alpha1.QueuesConfigMapKey] = "<allocations><queue name=\"analytics\"><weight>heavy</weight></queue></allocations>"
	require.NoError(t, cl.Update(ctx, cm))
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("later").Queue("root.undeclared").Obj()))
	require.Eventually(t, func() bool {
		// The claim reads the file from the watch cache, a moment behind the update.
		var seen corev1.ConfigMap
		err := cl.Get(ctx, client.ObjectKeyFromObject(cm), &seen, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
		return err == nil && seen.ResourceVersion == cm.ResourceVersion
	}, 10*time.Second, 20*time.Millisecond)
	_, err = a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "other", Names: []string{"later"}})
	require.NoError(t, err)
	var later v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "later"}, &later))
	require.Equal(t, "root.undeclared", later.Status.Queue)
}

// Claimed from the worker's copy, which keeps the jobs without their wrapped specs, ClaimJobs
// lists nothing from the API server and writes only the claim: the wrapped spec and the
// user's annotations stay, and a kill of an earlier claim goes. A copy that lags decides
// nothing: a job it shows free that another Scheduling has claimed since is lost to that
// one, a job changed since is claimed all the same, and one created since is read from the
// API server.
func TestClaimJobs_FromTheWorkersCopy(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	ctx := context.Background()
	wrapped := &runtime.RawExtension{Raw: []byte(`{"sparkConf":{"spark.sql.shuffle.partitions":"8"}}`)}
	for _, name := range []string{"a", "b", "taken-since", "changed-since"} {
		job := testobjects.BatchJob(name).Annotation("team.example/owner", "ml").Obj()
		job.Spec.SparkApplication = wrapped
		require.NoError(t, cl.Create(ctx, job))
	}
	var jobs v1alpha1.BatchJobList
	require.NoError(t, cl.List(ctx, &jobs, client.InNamespace("default")))
	snapshot := make([]client.Object, len(jobs.Items))
	for i := range jobs.Items {
		j := &jobs.Items[i]
		j.ManagedFields, j.Spec.SparkApplication = nil, nil // as the worker keeps them
		snapshot[i] = j
	}
	copied := activities.ChangesCopying(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(snapshot...).Build(),
		v1alpha1.GroupVersion.WithKind("BatchJob"))

	plain := &activities.Activities{Client: cl}
	res, err := plain.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "other", Names: []string{"taken-since"}})
	require.NoError(t, err)
	require.Equal(t, []string{"taken-since"}, res.Claimed)
	var changed v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "changed-since"}, &changed))
	changed.Annotations[v1alpha1.KillAnnotation] = "an earlier claim's"
	require.NoError(t, cl.Update(ctx, &changed))
	fresh := testobjects.BatchJob("created-since").Obj()
	fresh.Spec.SparkApplication = wrapped
	require.NoError(t, cl.Create(ctx, fresh))

	watching, err := client.NewWithWatch(c.Config, client.Options{Scheme: kubeclient.Scheme()})
	require.NoError(t, err)
	var lists atomic.Int32
	counted := interceptor.NewClient(watching, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			return cl.List(ctx, list, opts...)
		},
	})
	a := &activities.Activities{Client: counted, Changes: copied}
	names := []string{"a", "b", "taken-since", "changed-since", "created-since"}
	res, err = a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "me", Names: names})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "changed-since", "created-since"}, res.Claimed)
	require.Equal(t, []string{"a", "b", "changed-since", "created-since"}, res.Queued)
	require.Equal(t, []activities.LostClaim{{Name: "taken-since", Holder: "other"}}, res.Lost)
	require.Zero(t, lists.Load(), "the jobs come from the copy")
	for _, name := range names {
		var job v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &job))
		require.NotNil(t, job.Spec.SparkApplication, "%s keeps its wrapped spec", name)
		require.JSONEq(t, string(wrapped.Raw), string(job.Spec.SparkApplication.Raw), name)
		require.NotContains(t, job.Annotations, v1alpha1.KillAnnotation, name)
		if name == "taken-since" {
			require.Equal(t, "other", job.Labels[v1alpha1.ActiveSchedulingLabel])
			continue
		}
		require.Equal(t, "me", job.Labels[v1alpha1.ActiveSchedulingLabel], name)
		require.Equal(t, v1alpha1.JobInQueue, job.Status.State, name)
		if name != "created-since" {
			require.Equal(t, "ml", job.Annotations["team.example/owner"], name)
		}
	}
}

// CreateApplication builds the run's SparkApplication from the job and the test bed, the API
// server stores it as built, and a second call (a retry) returns the same application.
func TestCreateApplication_MakesTheRunsSparkApplicationOnce(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	tb := bedOfTwoFreeSlots(t, cl)
	job := testobjects.BatchJob("wordcount").Obj()
	// The creation moment is slotplane's to write: one the user puts on the job goes nowhere.
	job.Annotations = map[string]string{"slotplane.io/sim-duration": "5s", v1alpha1.CreatedAtAnnotation: "2001-01-01T00:00:00Z"}
	require.NoError(t, cl.Create(ctx, job))

	in := activities.CreateApplicationInput{
		Job:     activities.JobKey{Namespace: "default", Name: "wordcount"},
		Request: v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{1, 0}, Run: 3, GrantedAt: grantedAt()},
	}
	before := time.Now()
	ref, err := a.CreateApplication(ctx, in)
	require.NoError(t, err)
	after := time.Now()
	require.Equal(t, "SparkApplication", ref.Kind)
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 3), ref.Name)
	require.True(t, !ref.CreatedAt.Before(before) && !ref.CreatedAt.After(after), "asked for at %s, between %s and %s", ref.CreatedAt, before, after)
	time.Sleep(50 * time.Millisecond)
	again, err := a.CreateApplication(ctx, in)
	require.NoError(t, err)
	require.Equal(t, ref.UID, again.UID, "a retry finds the application it made")
	require.True(t, again.CreatedAt.Equal(ref.CreatedAt), "and the moment it was asked for: %s, not %s", ref.CreatedAt, again.CreatedAt)

	var app sparkv1beta2.SparkApplication
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: ref.Name}, &app))
	require.Equal(t, int32(2), *app.Spec.Executor.Instances)
	require.Equal(t, "1,0", app.Spec.Executor.Annotations[v1alpha1.SlotIDsAnnotation])
	require.Equal(t, "5s", app.Annotations["slotplane.io/sim-duration"])
	require.Equal(t, "wordcount", app.OwnerReferences[0].Name)
	slot := app.Spec.Executor.Template.Spec.Containers[0].Resources.Requests[v1alpha1.SlotResource]
	require.Equal(t, int64(1), slot.Value(), "the slot resource survives the API server's pruning")

	bad := in
	bad.Request.Slots = []int32{7}
	_, err = a.CreateApplication(ctx, bad)
	require.ErrorContains(t, err, "has no slot 7")

	// A grant of a slot the bed no longer has (its node left after Admission read the
	// slots) is not written on the job: the Scheduling gives it back and asks again.
	_, err = a.ClaimJobs(ctx, activities.ClaimInput{Namespace: "default", Scheduling: "nightly", Names: []string{"wordcount"}})
	require.NoError(t, err)
	lost := v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{0, 2}, Run: 4, GrantedAt: grantedAt()}
	err = a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "wordcount", Request: lost})
	require.True(t, activities.IsSlotsGone(err), "a request naming slot 2 of a bed of two: %v", err)
	require.ErrorContains(t, err, "no longer has slot 2")
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(job), job))
	require.NotContains(t, job.Annotations, v1alpha1.CreationRequestAnnotation)
	kept := lost
	kept.Slots = []int32{1, 0}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "wordcount", Request: kept}))
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(job), job))
	require.Contains(t, job.Annotations[v1alpha1.CreationRequestAnnotation], `"slots":[1,0]`)

	// A slot whose node is leaving the bed is gone for a new grant too.
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	statuses := slotsOf(t, cl, tb)
	since := metav1.NewMicroTime(time.Now())
	statuses[1].LeavingSince, statuses[1].Unavailable = &since, "the node left the test bed"
	require.NoError(t, slotslices.Put(ctx, cl, tb, statuses))
	// The check reads the API server's watch cache, which may lag the write by a moment (as
	// if the node had left a moment after the check); here the check must see the change.
	var slice v1alpha1.SlotSlice
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: tb.Namespace, Name: v1alpha1.SlotSliceName(tb.Name, 0)}, &slice))
	cacheHas(t, cl, &slice)
	next := kept
	next.Run, next.Slots = 5, []int32{1}
	err = a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "wordcount", Request: next})
	require.True(t, activities.IsSlotsGone(err), "a request naming a leaving slot: %v", err)
}

// The allocation file is read from its ConfigMap and parsed in the activity; the version
// the caller holds (in force or rejected) is not sent again; a missing ConfigMap or key is
// the defaults, not an error.
func TestLoadAllocationFile(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	ref := activities.AllocationFileRef{Namespace: "default", ConfigMap: "queues"}

	got, err := a.LoadAllocationFile(ctx, ref)
	require.NoError(t, err)
	require.Nil(t, got, "no file while holding the defaults")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "queues", Namespace: "default"}, Data: map[string]string{"fair-scheduler.xml": `<allocations><queue name="a"/></allocations>`}}
	require.NoError(t, cl.Create(ctx, cm))
	first, err := a.LoadAllocationFile(ctx, ref)
	require.NoError(t, err)
	require.NotNil(t, first.Allocations)
	require.NotNil(t, first.Allocations.Queue("a"))

	held := ref
	held.Version = first.Version
	again, err := a.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.Nil(t, again, "the version held is not sent again")

	cm.Data["fair-scheduler.xml"] = "<allocations>\n<queue name=\"a\"><weight>heavy</weight></queue>\n</allocations>"
	require.NoError(t, cl.Update(ctx, cm))
	bad, err := a.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.Nil(t, bad.Allocations)
	require.Contains(t, bad.Rejected, "line 2")
	require.NotEqual(t, first.Version, bad.Version)

	other, err := a.LoadAllocationFile(ctx, activities.AllocationFileRef{Namespace: "default", ConfigMap: "queues", Key: "other.xml", Version: first.Version})
	require.NoError(t, err)
	require.True(t, other.Missing, "a missing key is no file: the defaults")

	// The settings, next to the file: a change of either is a new version, a bad one
	// rejects the pair.
	cm.Data["fair-scheduler.xml"] = `<allocations><queue name="a"/></allocations>`
	cm.Data[v1alpha1.QueuesSettingsKey] = `<configuration><property><name>yarn.scheduler.fair.preemption</name><value>true</value></property></configuration>`
	require.NoError(t, cl.Update(ctx, cm))
	withSettings, err := a.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.NotNil(t, withSettings.Allocations, withSettings.Rejected)
	require.True(t, withSettings.Allocations.Preemption.Enabled, "the settings are read")
	held.Version = withSettings.Version
	cm.Data[v1alpha1.QueuesSettingsKey] = `<configuration><property><name>yarn.scheduler.fair.preemption</name><value>yes</value></property></configuration>`
	require.NoError(t, cl.Update(ctx, cm))
	badSettings, err := a.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.Nil(t, badSettings.Allocations)
	require.Contains(t, badSettings.Rejected, "yarn-site.xml line 1, property yarn.scheduler.fair.preemption")
}

// CheckHolds names the admission keys nobody holds any more, and why; held ones pass.
func TestCheckHolds(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	sched := testobjects.Scheduling("nightly").Job("held", 1).Obj()
	require.NoError(t, cl.Create(ctx, sched))
	for _, name := range []string{"held", "free", "ended"} {
		job := testobjects.BatchJob(name).Obj()
		if name != "free" {
			job.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
		}
		require.NoError(t, cl.Create(ctx, job))
		if name == "ended" {
			job.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Scheduling: "nightly", Run: 1}
			require.NoError(t, cl.Status().Update(ctx, job))
		}
	}
	uid := string(sched.UID)
	k := func(job, uid string) queue.JobKey {
		return queue.JobKey{Scheduling: "nightly", SchedulingUID: uid, Job: job, Run: 1}
	}
	got, err := a.CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", Keys: []queue.JobKey{
		k("held", uid), k("free", uid), k("gone", uid), k("ended", uid), k("held", "an-older-uid"),
	}})
	require.NoError(t, err)
	require.Empty(t, got.Found, "no test bed asked about")
	why := map[string]string{}
	for _, u := range got.Unheld {
		why[u.Key.Job+"/"+u.Key.SchedulingUID] = u.Why()
	}
	require.Len(t, got.Unheld, 4, "%v", why)
	require.Contains(t, why["free/"+uid], "no longer held")
	require.Contains(t, why["gone/"+uid], "deleted")
	require.Contains(t, why["ended/"+uid], "ended Completed")
	require.Contains(t, why["held/an-older-uid"], "made again")

	// From the worker's copy: the same answers while it agrees with etcd.
	snapshot := jobsOf(t, cl)
	counted := &countingClient{Client: cl}
	copying := func(objs ...client.Object) *activities.Activities {
		return &activities.Activities{Client: counted, Changes: copyingJobs(objs...)}
	}
	keys := []queue.JobKey{k("held", uid), k("free", uid), k("gone", uid), k("ended", uid), k("held", "an-older-uid")}
	fromCopy, err := copying(snapshot...).CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", Keys: keys})
	require.NoError(t, err)
	require.ElementsMatch(t, got.Unheld, fromCopy.Unheld)
	require.Equal(t, 4, counted.readsOf("BatchJob"), "no list of the jobs from etcd: one read of each key the copy finds unheld")
	require.Equal(t, 1, counted.readsOf("Scheduling"))

	// A copy that lags: "free" was claimed since, and "ended" has a new run; the copy still
	// says both are unheld, etcd says they are held, and nothing held is released.
	free := &v1alpha1.BatchJob{}
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "free"}, free))
	free.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
	require.NoError(t, cl.Update(ctx, free))
	ended := &v1alpha1.BatchJob{}
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "ended"}, ended))
	ended.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", Run: 1}
	require.NoError(t, cl.Status().Update(ctx, ended))
	lagging, err := copying(snapshot...).CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", Keys: keys})
	require.NoError(t, err)
	why = map[string]string{}
	for _, u := range lagging.Unheld {
		why[u.Key.Job+"/"+u.Key.SchedulingUID] = u.Why()
	}
	require.Len(t, lagging.Unheld, 2, "only the gone job and the older Scheduling's key: %v", why)
	require.Contains(t, why["gone/"+uid], "deleted")
	require.Contains(t, why["held/an-older-uid"], "made again")

	// A copy that lacks a job asks etcd too, and a job deleted since is found deleted.
	require.NoError(t, cl.Delete(ctx, free))
	lacking, err := copying().CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", Keys: []queue.JobKey{k("free", uid), k("held", uid)}})
	require.NoError(t, err)
	require.Len(t, lacking.Unheld, 1)
	require.Equal(t, "free", lacking.Unheld[0].Key.Job)
	require.Contains(t, lacking.Unheld[0].Why(), "deleted")
}

// CheckHolds, asked about a test bed, finds the runs granted in it that the keys lack: jobs
// held by a live Scheduling whose creation request names the bed and whose run has not
// ended. A run of another bed, of an earlier Scheduling of the name, of no holder, one the
// keys name, and one that ended are not found; nor is one the worker's copy still shows but
// etcd shows released.
func TestCheckHolds_FindsTheGrantsInUseItLacks(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	a := &activities.Activities{Client: cl}
	ctx := context.Background()
	sched := testobjects.Scheduling("nightly").Job("running", 1).Obj()
	require.NoError(t, cl.Create(ctx, sched))
	uid := string(sched.UID)
	granted := metav1.NewMicroTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	put := func(name, holder, bed, reqUID string, slots []int32, st *v1alpha1.BatchJobStatus, assigned string) {
		job := testobjects.BatchJob(name).Obj()
		job.Spec.User, job.Spec.Queue = "alice", "etl"
		job.Labels = map[string]string{}
		if holder != "" {
			job.Labels[v1alpha1.ActiveSchedulingLabel] = holder
		}
		body, err := json.Marshal(v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: reqUID, TestBed: bed, Slots: slots, Run: 1,
			GrantedAt: &granted, Queue: "root.etl"})
		require.NoError(t, err)
		job.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: string(body)}
		if assigned != "" {
			job.Annotations[v1alpha1.AssignedSlotsAnnotation] = assigned
		}
		require.NoError(t, cl.Create(ctx, job))
		if st != nil {
			job.Status = *st
			require.NoError(t, cl.Status().Update(ctx, job))
		}
	}
	running := &v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", Run: 1}
	put("running", "nightly", "bed", uid, []int32{0, 1, 2}, running, "1,2")
	put("requested", "nightly", "bed", uid, []int32{3}, &v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: "nightly"}, "")
	put("known", "nightly", "bed", uid, []int32{4}, running, "")
	put("ended", "nightly", "bed", uid, []int32{5}, &v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Scheduling: "nightly", Run: 1}, "")
	put("other-bed", "nightly", "bed-2", uid, []int32{0}, running, "")
	put("remade", "nightly", "bed", "an-older-uid", []int32{6}, running, "")
	put("unheld", "", "bed", uid, []int32{7}, nil, "")
	known := queue.JobKey{Scheduling: "nightly", SchedulingUID: uid, Job: "known", Run: 1}

	got, err := a.CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", TestBed: "bed", Keys: []queue.JobKey{known}})
	require.NoError(t, err)
	require.Empty(t, got.Unheld)
	found := map[string]activities.FoundGrant{}
	for _, f := range got.Found {
		found[f.Key.Job] = f
	}
	require.ElementsMatch(t, []string{"running", "requested"}, slices.Collect(maps.Keys(found)))
	r := found["running"]
	require.Equal(t, queue.JobKey{Scheduling: "nightly", SchedulingUID: uid, Job: "running", Run: 1}, r.Key)
	require.Equal(t, []int32{1, 2}, r.Granted.Slots, "what preemption left")
	require.Equal(t, v1alpha1.JobRunning, r.Granted.State)
	require.Equal(t, "root.etl", r.Granted.Request.Queue)
	require.True(t, granted.Time.Equal(r.Granted.Request.GrantedAt.Time))
	require.Equal(t, "alice", r.Job.User)
	require.Equal(t, "etl", r.Job.Queue)
	require.Empty(t, found["requested"].Granted.State, "its run has not started")
	require.Equal(t, []int32{3}, found["requested"].Granted.Slots)

	// The worker's copy still shows "requested" held; etcd shows it released.
	snapshot := jobsOf(t, cl)
	released := &v1alpha1.BatchJob{}
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "requested"}, released))
	delete(released.Labels, v1alpha1.ActiveSchedulingLabel)
	delete(released.Annotations, v1alpha1.CreationRequestAnnotation)
	require.NoError(t, cl.Update(ctx, released))
	copying := &activities.Activities{Client: cl, Changes: copyingJobs(snapshot...)}
	fromCopy, err := copying.CheckHolds(ctx, activities.CheckHoldsInput{Namespace: "default", TestBed: "bed", Keys: []queue.JobKey{known}})
	require.NoError(t, err)
	require.Len(t, fromCopy.Found, 1)
	require.Equal(t, "running", fromCopy.Found[0].Key.Job)
}

// jobsOf are the BatchJobs of namespace default as etcd has them now, for a worker's copy.
func jobsOf(t *testing.T, cl client.Client) []client.Object {
	t.Helper()
	var jobs v1alpha1.BatchJobList
	require.NoError(t, cl.List(context.Background(), &jobs, client.InNamespace("default")))
	out := make([]client.Object, len(jobs.Items))
	for i := range jobs.Items {
		out[i] = &jobs.Items[i]
	}
	return out
}

// copyingJobs is a worker's copy of BatchJobs that holds objs, and lags as they do.
func copyingJobs(objs ...client.Object) *activities.Changes {
	return activities.ChangesCopying(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(objs...).Build(),
		v1alpha1.GroupVersion.WithKind("BatchJob"))
}

// cacheHas waits until the API server's watch cache holds obj as last written (its
// resourceVersion or a later one), for a check that reads the cache and must see the write.
func cacheHas(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	want, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	require.NoError(t, err)
	cached := obj.DeepCopyObject().(client.Object)
	require.Eventually(t, func() bool {
		err := cl.Get(context.Background(), client.ObjectKeyFromObject(obj), cached,
			&client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
		got, _ := strconv.ParseUint(cached.GetResourceVersion(), 10, 64)
		return err == nil && got >= want
	}, 10*time.Second, 5*time.Millisecond, "the watch cache holds %s at resourceVersion %d", obj.GetName(), want)
}

// A creation request is written on the job as the worker's copy holds it, with the test bed
// the copy holds: nothing is read from the API server, and the write, a patch of the
// annotations, keeps the wrapped spec the copy lacks and the user's annotations. A copy
// that lags decides nothing: a job changed since (a kill noted on it) makes the write
// conflict and the retry reads etcd; a job the copy shows held by no one, held since, is
// read again from etcd before the request is refused.
func TestRequestCreation_FromTheWorkersCopy(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	cl := newClient(t, c)
	ctx := context.Background()
	tb := bedOfTwoFreeSlots(t, cl)
	wrapped := &runtime.RawExtension{Raw: []byte(`{"sparkConf":{"spark.sql.shuffle.partitions":"8"}}`)}
	for _, name := range []string{"copied", "changed-since", "claimed-since"} {
		job := testobjects.BatchJob(name).Annotation("team.example/owner", "ml").Obj()
		job.Spec.SparkApplication = wrapped
		if name != "claimed-since" {
			job.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
		}
		require.NoError(t, cl.Create(ctx, job))
	}
	var jobs v1alpha1.BatchJobList
	require.NoError(t, cl.List(ctx, &jobs, client.InNamespace("default")))
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	snapshot := []client.Object{tb}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		j.ManagedFields, j.Spec.SparkApplication = nil, nil // as the worker keeps them
		snapshot = append(snapshot, j)
	}
	copied := activities.ChangesCopying(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(snapshot...).Build(),
		v1alpha1.GroupVersion.WithKind("BatchJob"), v1alpha1.GroupVersion.WithKind("TestBed"))
	counted := &countingClient{Client: cl}
	a := &activities.Activities{Client: counted, Changes: copied}
	request := func(job string, slot int32) error {
		return a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: job,
			Request: v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{slot}, Run: 1, GrantedAt: grantedAt()}})
	}
	written := func(job string) *v1alpha1.BatchJob {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: job}, &j))
		require.NotNil(t, j.Spec.SparkApplication, "%s keeps its wrapped spec", job)
		require.JSONEq(t, string(wrapped.Raw), string(j.Spec.SparkApplication.Raw), job)
		require.Equal(t, "ml", j.Annotations["team.example/owner"], job)
		return &j
	}

	require.NoError(t, request("copied", 0))
	require.Zero(t, counted.readsOf("BatchJob"), "the job comes from the copy")
	require.Zero(t, counted.readsOf("TestBed"), "the test bed comes from the copy")
	require.Contains(t, written("copied").Annotations[v1alpha1.CreationRequestAnnotation], `"slots":[0]`)

	var changed v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "changed-since"}, &changed))
	changed.Annotations[v1alpha1.AssignedSlotsAnnotation] = "1"
	require.NoError(t, cl.Update(ctx, &changed))
	require.NoError(t, request("changed-since", 1))
	require.Equal(t, 1, counted.readsOf("BatchJob"), "the conflict's retry reads etcd")
	got := written("changed-since")
	require.Contains(t, got.Annotations[v1alpha1.CreationRequestAnnotation], `"slots":[1]`)
	require.NotContains(t, got.Annotations, v1alpha1.AssignedSlotsAnnotation, "the request clears the last run's slots")

	var claimed v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "claimed-since"}, &claimed))
	claimed.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
	require.NoError(t, cl.Update(ctx, &claimed))
	require.NoError(t, request("claimed-since", 1), "held since the copy was taken: etcd says so")
	require.Equal(t, 2, counted.readsOf("BatchJob"))
	require.Contains(t, written("claimed-since").Annotations[v1alpha1.CreationRequestAnnotation], `"slots":[1]`)
}

// bedOfTwoFreeSlots creates test bed "bed" with its status showing two free slots, 0 on
// node-00 and 1 on node-01, as its reconciler would lay them out.
func bedOfTwoFreeSlots(t *testing.T, cl client.Client) *v1alpha1.TestBed {
	t.Helper()
	ctx := context.Background()
	tb := testobjects.TestBed("bed").Slots(2, "2", "2Gi").Obj()
	require.NoError(t, cl.Create(ctx, tb))
	require.NoError(t, slotslices.Put(ctx, cl, tb, []v1alpha1.SlotStatus{
		{Position: 0, NodeName: "node-00", NodeID: "00", State: v1alpha1.SlotFree},
		{Position: 1, NodeName: "node-01", NodeID: "01", State: v1alpha1.SlotFree},
	}))
	return tb
}
