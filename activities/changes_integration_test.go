//go:build integration

package activities_test

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/activities"
	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/queue"
	"slotplane/slots"
)

// WatchChanges wakes a waiter when a pod of its job is made, changed or deleted, and not for
// another job's pods.
func TestWatchChanges_WakesTheJobsWaiters(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kubeclient.Live(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	job := types.NamespacedName{Namespace: "default", Name: "etl"}
	pod := func(name, job string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{v1alpha1.BatchJobLabel: job}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	}
	// The watches start asynchronously: wait until a change of the job's own pod is seen.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		wake, stop := ch.Wait(job)
		p := pod("warm-"+string(rune('a'+i%26))+time.Now().Format("150405.000000")[7:], "etl")
		if err := cl.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		case <-time.After(time.Second):
			stop()
			if time.Now().After(deadline) {
				t.Fatal("no wake-up for the job's pod in 30s")
			}
			continue
		}
		break
	}
	other, stop := ch.Wait(types.NamespacedName{Namespace: "default", Name: "other"})
	defer stop()
	wake, _ := ch.Wait(job)
	start := time.Now()
	if err := cl.Create(ctx, pod("etl-driver", "etl")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Logf("woken %s after the create", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("the job's waiter was not woken by its pod's creation")
	}
	select {
	case <-other:
		t.Fatal("another job's waiter was woken")
	default:
	}
}

// countingClient counts the reads that reach the API server, by kind.
type countingClient struct {
	client.Client
	mu           sync.Mutex
	reads, lists map[string]int
}

func (c *countingClient) count(obj runtime.Object, list bool) {
	gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads == nil {
		c.reads, c.lists = map[string]int{}, map[string]int{}
	}
	kind := strings.TrimSuffix(gvk.Kind, "List")
	c.reads[kind]++
	if list {
		c.lists[kind]++
	}
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.count(obj, false)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.count(list, true)
	return c.Client.List(ctx, list, opts...)
}

// listsOf counts the lists of a kind among its reads.
func (c *countingClient) listsOf(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists[kind]
}

func (c *countingClient) readsOf(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[kind]
}

// The worker's copy finds a job's pods by its index: exactly that job's pods of that namespace,
// and again after a pod's label moves it to another job.
func TestWatchChanges_FindsAJobsPodsByIndex(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, c)
	require.NoError(t, live.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))
	ch, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	pod := func(ns, name, job string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.BatchJobLabel: job}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	}
	for _, p := range []*corev1.Pod{pod("default", "a-driver", "a"), pod("default", "a-exec-1", "a"), pod("default", "b-driver", "b"), pod("other", "a-driver", "a")} {
		require.NoError(t, live.Create(ctx, p))
	}
	a := &activities.Activities{Client: live, Changes: ch}
	names := func(ns, job string) []string {
		t.Helper()
		got, indexed, err := activities.JobPodNames(ctx, a, ns, job)
		require.NoError(t, err)
		require.True(t, indexed, "the pods come by the index")
		return got
	}
	require.Eventually(t, func() bool {
		return len(names("default", "a")) == 2 && len(names("default", "b")) == 1 && len(names("other", "a")) == 1
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"a-driver", "a-exec-1"}, names("default", "a"))
	require.Equal(t, []string{"b-driver"}, names("default", "b"))
	require.Equal(t, []string{"a-driver"}, names("other", "a"))
	require.Empty(t, names("default", "c"))

	var moved corev1.Pod
	require.NoError(t, live.Get(ctx, client.ObjectKey{Namespace: "default", Name: "a-exec-1"}, &moved))
	moved.Labels[v1alpha1.BatchJobLabel] = "b"
	require.NoError(t, live.Update(ctx, &moved))
	require.Eventually(t, func() bool { return len(names("default", "b")) == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"a-driver"}, names("default", "a"))
	require.Equal(t, []string{"a-exec-1", "b-driver"}, names("default", "b"))

	// Without the hub, the same pods come from the API server by their label.
	got, indexed, err := activities.JobPodNames(ctx, &activities.Activities{Client: live}, "default", "b")
	require.NoError(t, err)
	require.False(t, indexed)
	require.Equal(t, []string{"a-exec-1", "b-driver"}, got)
}

// A wait on an application reads it and its pods from the worker's copy (WatchChanges), not
// from the API server, and still ends when the application does; an application the copy
// lacks is read from the API server before it counts as gone.
func TestWaitFinished_ReadsTheWorkersCopy(t *testing.T) {
	t.Parallel()
	ctx, live, ch, seen := watchedJob(t)
	var err error
	ref := runApplication(ctx, t, live, seen)
	seen("a pod of the job", func() {
		require.NoError(t, live.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etl-driver", Namespace: "default", Labels: map[string]string{v1alpha1.BatchJobLabel: "etl"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}))
	})
	seen("the application's end", func() {
		var app sparkv1beta2.SparkApplication
		require.NoError(t, live.Get(ctx, client.ObjectKey{Namespace: "default", Name: ref.Name}, &app))
		app.Status.AppState.State = sparkv1beta2.ApplicationStateCompleted
		require.NoError(t, live.Status().Update(ctx, &app))
	})

	counted := &countingClient{Client: live}
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	a := &activities.Activities{Client: counted, Changes: ch}
	aenv.RegisterActivity(a)
	val, err := aenv.ExecuteActivity(a.WaitFinished, activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1})
	require.NoError(t, err)
	var p activities.AppProgress
	require.NoError(t, val.Get(&p))
	require.True(t, p.Outcome.Terminal && p.Outcome.Succeeded, "%+v", p.Outcome)
	require.Zero(t, counted.readsOf("SparkApplication"), "the application is read from the copy")
	require.Zero(t, counted.readsOf("Pod"), "the pods are read from the copy")

	gone := ref
	gone.Name = "etl-s-never-made"
	val, err = aenv.ExecuteActivity(a.WaitFinished, activities.AppKey{Namespace: "default", Job: "etl", App: gone, Replicas: 1})
	require.NoError(t, err)
	require.NoError(t, val.Get(&p))
	require.True(t, p.Gone)
	require.Equal(t, 1, counted.readsOf("SparkApplication"), "one the copy lacks is asked of the API server")
}

// WriteJobStatus reads the job from the worker's copy, which lacks the wrapped spec and the
// managed fields: the write sends no spec and costs no read, and the stored spec and
// managed fields stay. A copy behind the stored job, or without it, costs a read of etcd
// and the write still lands.
func TestWriteJobStatus_ReadsTheWorkersCopy(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	job := testobjects.BatchJob("wordcount").Obj()
	job.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(`{"sparkConf":{"spark.sql.shuffle.partitions":"8"}}`)}
	require.NoError(t, cl.Create(ctx, job))
	key := activities.JobKey{Namespace: "default", Name: "wordcount"}
	stored := func() *v1alpha1.BatchJob {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, types.NamespacedName{Namespace: "default", Name: "wordcount"}, &j))
		return &j
	}
	before := stored()
	require.NotNil(t, before.Spec.SparkApplication)

	live, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	counted := &countingClient{Client: cl}
	a := &activities.Activities{Client: counted, Changes: live}
	// Once the copy holds the job, a write reads nothing from the API server.
	require.Eventually(t, func() bool {
		n := counted.readsOf("BatchJob")
		require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Message: "from the copy"}}))
		return counted.readsOf("BatchJob") == n
	}, 30*time.Second, 100*time.Millisecond, "every write read the job from the API server")
	after := stored()
	require.Equal(t, v1alpha1.JobRunning, after.Status.State)
	require.Equal(t, "from the copy", after.Status.Message)
	require.Equal(t, before.Spec, after.Spec, "the spec the copy lacks stays")
	require.NotEmpty(t, after.ManagedFields, "the managed fields the copy lacks stay")

	// A copy frozen before the last write: the write conflicts, reads etcd, and lands.
	frozen := after.DeepCopy()
	require.NoError(t, a.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Message: "moved on"}}))
	stale := &activities.Activities{Client: counted, Changes: activities.ChangesCopying(
		fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(frozen).Build(), v1alpha1.GroupVersion.WithKind("BatchJob"))}
	n := counted.readsOf("BatchJob")
	require.NoError(t, stale.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Message: "past a stale copy"}}))
	require.Equal(t, n+1, counted.readsOf("BatchJob"), "the conflict's retry read etcd")
	require.Equal(t, "past a stale copy", stored().Status.Message)
	require.Equal(t, before.Spec, stored().Spec)

	// A copy without the job: etcd decides.
	empty := &activities.Activities{Client: counted, Changes: activities.ChangesCopying(
		fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).Build(), v1alpha1.GroupVersion.WithKind("BatchJob"))}
	require.NoError(t, empty.WriteJobStatus(ctx, activities.WriteJobStatusInput{Job: key, Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobFailed, Message: "not in the copy"}}))
	require.Equal(t, "not in the copy", stored().Status.Message)
}

// A wait taken up after a short run ended, its executor and driver deleted, still learns
// when the executor was placed and the driver ran: the worker's watch remembered both
// (Changes.NotePod), with the times it first saw the executor bound in its proven slot and
// the driver running. A pod of an earlier run of the same name, placed before this run's
// application was made, does not count; without the run's name and start (a workflow from
// before them) the wait knows only what it sees.
func TestWaitPlaced_LearnsOfPlacementsItCameTooLateToSee(t *testing.T) {
	t.Parallel()
	ctx, live, ch, seen := watchedJob(t)
	// placedPod makes a slot pod of the run, bound to node-00 in slot 0, and claims the slot
	// for it as the extender does once it knows the pod's UID.
	placedPod := func(name string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{
			v1alpha1.BatchJobLabel: "etl", v1alpha1.ActiveSchedulingLabel: "s", v1alpha1.TestBedLabel: "bed"}},
			Spec: corev1.PodSpec{NodeName: "node-00", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		seen("pod "+name, func() { require.NoError(t, live.Create(ctx, p)) })
		seen("the claim of "+name, func() {
			p.Annotations = map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(0, p.UID)}
			require.NoError(t, live.Update(ctx, p))
		})
		return p
	}
	gone := func(p *corev1.Pod) {
		seen("the deletion of "+p.Name, func() { require.NoError(t, live.Delete(ctx, p, client.GracePeriodSeconds(0))) })
	}
	gone(placedPod("etl-before-exec-1")) // an earlier run's, gone before this one began
	time.Sleep(10 * time.Millisecond)
	since := time.Now()
	ref := runApplication(ctx, t, live, seen)
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etl-driver", Namespace: "default", Labels: map[string]string{v1alpha1.BatchJobLabel: "etl"}},
		Spec: corev1.PodSpec{NodeName: "node-00", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	seen("the driver", func() { require.NoError(t, live.Create(ctx, driver)) })
	driverFrom := time.Now()
	seen("the driver running", func() {
		driver.Status.Phase = corev1.PodRunning
		require.NoError(t, live.Status().Update(ctx, driver))
	})
	before := time.Now()
	gone(placedPod("etl-exec-1"))
	after := time.Now()
	gone(driver)
	seen("the application's end", func() { completeApp(ctx, t, live, ref.Name, nil) })
	wait := endedWaits(t, live, ch, func(a *activities.Activities) any { return a.WaitPlaced })
	p := wait(activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1, Scheduling: "s", Since: since})
	require.Len(t, p.PlacedAt, 1, "the executor this run had, and not the earlier run's")
	require.True(t, !p.PlacedAt[0].Before(before) && !p.PlacedAt[0].After(after), "placed at %s, between %s and %s", p.PlacedAt[0], before, after)
	require.Zero(t, p.Placed, "none is placed now")
	require.True(t, !p.DriverRunningAt.Before(driverFrom) && p.DriverRunningAt.Before(before), "the driver seen running at %s", p.DriverRunningAt)
	p = wait(activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1})
	require.Empty(t, p.PlacedAt, "a key without the run's name and start learns nothing remembered")
	require.True(t, p.DriverRunningAt.IsZero())
}

// A run whose executors came and went while no worker watched (it was restarting) has no
// placement the wait or the watch saw. The wait, finding the application ended with fewer
// placements than executors, takes each missing executor's time from the kube-scheduler's
// Scheduled event, found by the name the SparkApplication's executorState gives. An event
// from before this run's application (an earlier application of the same name) does not
// count, nor does any event for a wait that does not name its run.
func TestWaitFinished_TakesUnwatchedPlacementsFromTheSchedulersEvents(t *testing.T) {
	t.Parallel()
	ctx, live, ch, seen := watchedJob(t)
	since := time.Now()
	ref := runApplication(ctx, t, live, seen)
	scheduled := func(pod string, uid types.UID, at time.Time) {
		require.NoError(t, live.Create(ctx, schedulerEvent(pod, uid, at)))
	}
	placed := time.Now().Add(200 * time.Millisecond)
	scheduled(ref.Name+"-exec-1", "uid-exec-1", placed)
	scheduled(ref.Name+"-exec-2", "uid-exec-2-earlier", since.Add(-time.Minute)) // an earlier application's
	scheduled(ref.Name+"-driver", "uid-driver", placed)                          // not an executor
	seen("the application's end", func() {
		completeApp(ctx, t, live, ref.Name, map[string]sparkv1beta2.ExecutorState{
			ref.Name + "-exec-1": sparkv1beta2.ExecutorStateCompleted, ref.Name + "-exec-2": sparkv1beta2.ExecutorStateCompleted,
			ref.Name + "-exec-3": sparkv1beta2.ExecutorStatePending})
	})
	counted := &countingClient{Client: live}
	wait := endedWaits(t, counted, ch, func(a *activities.Activities) any { return a.WaitFinished })
	p := wait(activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 2, Scheduling: "s", Since: since})
	require.Len(t, p.PlacedAt, 1, "the executor this run had, from its event; not the earlier application's, nor the driver")
	require.True(t, p.PlacedAt[0].Equal(placed.Truncate(time.Microsecond)), "placed at %s, the event says %s", p.PlacedAt[0], placed)
	require.Equal(t, 2, counted.listsOf("Event"), "one read per executor, none for the one that never left Pending")
	p = wait(activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1, Scheduling: "s", Since: since})
	require.Len(t, p.PlacedAt, 1)
	require.Equal(t, 3, counted.listsOf("Event"), "reading stops once the run has as many placements as executors")
	p = wait(activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 2})
	require.Empty(t, p.PlacedAt, "a key without the run's name and start takes nothing from events")
}

// The same for a FlinkDeployment's run, whose status names no TaskManager: the wait finds
// the run's TaskManagers among the namespace's Scheduled events by the names Flink gives
// them ("<deployment>-taskmanager-<attempt>-<index>"), the earliest first, in one read. An
// earlier deployment's TaskManager (an event before the run began), the JobManager and a pod
// whose name only starts alike do not count, nor does anything for a wait that does not
// name its run.
func TestWaitFinished_TakesUnwatchedTaskManagersFromTheSchedulersEvents(t *testing.T) {
	t.Parallel()
	ctx, live, ch, _ := watchedJob(t)
	require.NoError(t, live.Create(ctx, testobjects.BatchJob("stream").Flink().Obj()))
	since := time.Now()
	made, err := (&activities.Activities{Client: live}).CreateApplication(ctx, activities.CreateApplicationInput{Job: activities.JobKey{Namespace: "default", Name: "stream"},
		Request: v1alpha1.CreationRequest{Scheduling: "s", TestBed: "bed", Slots: []int32{0}, Run: 1, GrantedAt: grantedAt()}})
	require.NoError(t, err)
	ref := made.ApplicationRef
	require.Equal(t, flinkv1beta1.FlinkDeploymentKind, ref.Kind)
	scheduled := func(pod string, uid types.UID, at time.Time) {
		require.NoError(t, live.Create(ctx, schedulerEvent(pod, uid, at)))
	}
	placed := time.Now().Add(200 * time.Millisecond)
	scheduled(ref.Name+"-taskmanager-1-1", "uid-tm-1", placed)
	scheduled(ref.Name+"-taskmanager-2-1", "uid-tm-1-again", placed.Add(100*time.Millisecond)) // its replacement
	scheduled(ref.Name+"-taskmanager-1-2", "uid-tm-earlier", since.Add(-time.Minute))          // an earlier deployment's
	scheduled(ref.Name+"-6d9f7c8b5-x2x4q", "uid-jobmanager", placed)                           // the JobManager
	scheduled(ref.Name+"-taskmanager-1-1-copy", "uid-alike", placed)                           // not a TaskManager of it
	var dep flinkv1beta1.FlinkDeployment
	require.NoError(t, live.Get(ctx, client.ObjectKey{Namespace: "default", Name: ref.Name}, &dep))
	dep.Status.JobStatus.State = flinkv1beta1.FlinkJobFinished
	require.NoError(t, live.Status().Update(ctx, &dep))

	counted := &countingClient{Client: live}
	wait := endedWaits(t, counted, ch, func(a *activities.Activities) any { return a.WaitFinished })
	key := activities.AppKey{Namespace: "default", Job: "stream", App: ref, Replicas: 1, Scheduling: "s", Since: since}
	p := wait(key)
	require.Len(t, p.PlacedAt, 1, "the run's first TaskManager, from its event")
	require.True(t, p.PlacedAt[0].Equal(placed.Truncate(time.Microsecond)), "placed at %s, the event says %s", p.PlacedAt[0], placed)
	require.Equal(t, 1, counted.listsOf("Event"), "one read of the events")
	key.Replicas = 3
	p = wait(key)
	require.Len(t, p.PlacedAt, 2, "both of the run's TaskManagers, and nothing else")
	require.True(t, p.PlacedAt[1].Equal(placed.Add(100*time.Millisecond).Truncate(time.Microsecond)), "the replacement placed at %s", p.PlacedAt[1])
	p = wait(activities.AppKey{Namespace: "default", Job: "stream", App: ref, Replicas: 1})
	require.Empty(t, p.PlacedAt, "a key without the run's name and start takes nothing from events")
}

// A worker that starts again while a run's executor holds its slot lists that pod: its new
// watch cannot say when it was placed, only that it was before the watch began. The wait
// (taken up by the new worker) takes the moment the kube-scheduler bound it from its
// Scheduled event, not the listing's time, which would count the worker's absence in the
// run's start. A run whose workflow has every placement time already (AppKey.Known) reads
// no events.
func TestWaitPlaced_TakesTheBindingOfPodsPlacedBeforeTheWatchBegan(t *testing.T) {
	t.Parallel()
	c, ctx, live, _, seen := watchedJobIn(t)
	since := time.Now()
	ref := runApplication(ctx, t, live, seen)
	// The executor, bound in slot 0 while no worker ran, and the scheduler's event of it.
	exec := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ref.Name + "-exec-1", Namespace: "default", Labels: map[string]string{
		v1alpha1.BatchJobLabel: "etl", v1alpha1.ActiveSchedulingLabel: "s", v1alpha1.TestBedLabel: "bed"}},
		Spec: corev1.PodSpec{NodeName: "node-00", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	require.NoError(t, live.Create(ctx, exec))
	exec.Annotations = map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(0, exec.UID)}
	require.NoError(t, live.Update(ctx, exec))
	bound := time.Now()
	require.NoError(t, live.Create(ctx, schedulerEvent(exec.Name, exec.UID, bound)))
	time.Sleep(300 * time.Millisecond) // the worker's absence

	// The worker starts again: its watch lists the pod.
	restarted, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return maps.Equal(activities.ListedPods(restarted, "default", "etl", "s", since), map[types.UID]string{exec.UID: exec.Name})
	}, 30*time.Second, 10*time.Millisecond, "the new watch lists the executor as placed before it began")
	listedBy := time.Now()

	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	counted := &countingClient{Client: live}
	a := &activities.Activities{Client: counted, Changes: restarted}
	aenv.RegisterActivity(a)
	wait := func(key activities.AppKey) activities.AppProgress {
		t.Helper()
		val, err := aenv.ExecuteActivity(a.WaitPlaced, key)
		require.NoError(t, err)
		var p activities.AppProgress
		require.NoError(t, val.Get(&p))
		return p
	}
	key := activities.AppKey{Namespace: "default", Job: "etl", App: ref, Replicas: 1, Scheduling: "s", Since: since}
	p := wait(key)
	require.Equal(t, 1, p.Placed)
	require.Len(t, p.PlacedAt, 1)
	require.True(t, p.PlacedAt[0].Equal(bound.Truncate(time.Microsecond)), "placed at %s: the binding was at %s, the new watch listed it by %s", p.PlacedAt[0], bound, listedBy)
	require.Equal(t, 1, counted.listsOf("Event"))

	key.Known = 1
	p = wait(key)
	require.Len(t, p.PlacedAt, 1)
	require.False(t, p.PlacedAt[0].Before(bound.Add(300*time.Millisecond)), "a run with its times already reads no events: the listing's time stands")
	require.Equal(t, 1, counted.listsOf("Event"))
}

// runApplication creates the application of run 1 of job "etl" in Scheduling "s", on slot 0,
// and waits until the watch saw it.
func runApplication(ctx context.Context, t *testing.T, live client.Client, seen func(what string, change func())) v1alpha1.ApplicationRef {
	t.Helper()
	var ref v1alpha1.ApplicationRef
	seen("the application", func() {
		made, err := (&activities.Activities{Client: live}).CreateApplication(ctx, activities.CreateApplicationInput{Job: activities.JobKey{Namespace: "default", Name: "etl"},
			Request: v1alpha1.CreationRequest{Scheduling: "s", TestBed: "bed", Slots: []int32{0}, Run: 1, GrantedAt: grantedAt()}})
		require.NoError(t, err)
		ref = made.ApplicationRef
	})
	return ref
}

// schedulerEvent is the kube-scheduler's Scheduled event of pod (uid) bound to node-00 at at.
func schedulerEvent(pod string, uid types.UID, at time.Time) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + "." + string(uid), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod, UID: uid, APIVersion: "v1"},
		Reason:         "Scheduled", Message: "Successfully assigned default/" + pod + " to node-00", Type: corev1.EventTypeNormal,
		EventTime: metav1.NewMicroTime(at), Action: "Binding", ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-vm"}
}

// completeApp marks the SparkApplication name Completed, its executors' states executors.
func completeApp(ctx context.Context, t *testing.T, live client.Client, name string, executors map[string]sparkv1beta2.ExecutorState) {
	t.Helper()
	var app sparkv1beta2.SparkApplication
	require.NoError(t, live.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &app))
	app.Status.AppState.State = sparkv1beta2.ApplicationStateCompleted
	app.Status.ExecutorState = executors
	require.NoError(t, live.Status().Update(ctx, &app))
}

// endedWaits returns a function that runs a wait of activities with the live client and the
// worker's watch (activity picks WaitPlaced or WaitFinished) on a key, for an application
// that has ended.
func endedWaits(t *testing.T, live client.Client, ch *activities.Changes, activity func(*activities.Activities) any) func(activities.AppKey) activities.AppProgress {
	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	a := &activities.Activities{Client: live, Changes: ch}
	aenv.RegisterActivity(a)
	return func(key activities.AppKey) activities.AppProgress {
		t.Helper()
		val, err := aenv.ExecuteActivity(activity(a), key)
		require.NoError(t, err)
		var p activities.AppProgress
		require.NoError(t, val.Get(&p))
		require.True(t, p.Outcome.Terminal)
		return p
	}
}

// watchedJob starts a cluster with the test bed "bed" (one slot, on node-00), the BatchJob
// "etl" and the worker's watch. seen(what, change) makes a change and waits until the watch
// wakes the job's waiters with it.
func watchedJob(t *testing.T) (context.Context, client.Client, *activities.Changes, func(what string, change func())) {
	t.Helper()
	_, ctx, live, ch, seen := watchedJobIn(t)
	return ctx, live, ch, seen
}

// watchedJobIn is watchedJob that also gives the cluster.
func watchedJobIn(t *testing.T) (*localcluster.Cluster, context.Context, client.Client, *activities.Changes, func(what string, change func())) {
	t.Helper()
	c := localcluster.New(t, localcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	live := newClient(t, c)
	ch, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	tb := testobjects.TestBed("bed").Slots(1, "1", "2Gi").Obj()
	require.NoError(t, live.Create(ctx, tb))
	require.NoError(t, slotslices.Put(ctx, live, tb, []v1alpha1.SlotStatus{{Position: 0, NodeName: "node-00", NodeID: "00", State: v1alpha1.SlotFree}}))
	require.NoError(t, live.Create(ctx, testobjects.BatchJob("etl").Obj()))
	job := types.NamespacedName{Namespace: "default", Name: "etl"}
	seen := func(what string, change func()) {
		t.Helper()
		wake, stop := ch.Wait(job)
		defer stop()
		change()
		select {
		case <-wake:
		case <-time.After(30 * time.Second):
			t.Fatalf("the copy never saw %s", what)
		}
	}
	return c, ctx, live, ch, seen
}

// The worker wakes a bed's Admission for the slot changes that may let a job start, and only
// after its copy holds them: ReadSlots, called in the wake-up, already sees the slot free, and
// reads nothing from the API server. Reservations and unavailable slots wake nobody. A
// worker of Admission alone (WatchCopies) does the same, and keeps no copy of the jobs' pods.
func TestWatchChanges_WakesAdmissionOnceTheCopyShowsTheFreedSlot(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{})
	t.Run("WatchChanges", func(t *testing.T) { wakesAdmission(t, c, "bed", activities.WatchChanges, true) })
	t.Run("WatchCopies", func(t *testing.T) { wakesAdmission(t, c, "admitted", activities.WatchCopies, false) })
}

func wakesAdmission(t *testing.T, c *localcluster.Cluster, name string,
	watch func(context.Context, *rest.Config, *slog.Logger, activities.SlotsWake) (*activities.Changes, error), pods bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, c)
	counted := &countingClient{Client: live}
	type wake struct {
		bed  types.NamespacedName
		free []int32
	}
	wakes := make(chan wake, 100)
	var a *activities.Activities
	var ready sync.WaitGroup
	var copiedAlone atomic.Int32
	ready.Add(1)
	ch, err := watch(ctx, c.Config, slog.Default(), func(bed types.NamespacedName) {
		ready.Wait()
		if bed.Name != name {
			return // another subtest's
		}
		s, err := a.ReadSlots(ctx, activities.TestBedRef{Namespace: bed.Namespace, Name: bed.Name})
		if err != nil {
			t.Errorf("read slots in the wake-up: %v", err)
		}
		// The copies alone read the same, once they hold the bed (the TestBed's copy may
		// come after its slices').
		if copied, ok := a.Changes.CopiedSlots(ctx, activities.TestBedRef{Namespace: bed.Namespace, Name: bed.Name}); ok {
			copiedAlone.Add(1)
			if !reflect.DeepEqual(copied, s) {
				t.Errorf("the copies alone read %+v, ReadSlots %+v", copied, s)
			}
		}
		wakes <- wake{bed, s.Free}
	})
	require.NoError(t, err)
	a = &activities.Activities{Client: counted, Changes: ch}
	ready.Done()
	require.Equal(t, pods, activities.Copies(ch, corev1.SchemeGroupVersion.WithKind("Pod")), "a copy of the jobs' pods")

	tb := testobjects.TestBed(name).Slots(1, "1", "2Gi").Obj()
	require.NoError(t, live.Create(ctx, tb))
	statuses := func(states ...v1alpha1.SlotState) []v1alpha1.SlotStatus {
		out := make([]v1alpha1.SlotStatus, len(states))
		for i, s := range states {
			out[i] = v1alpha1.SlotStatus{Position: int32(i), NodeID: "n", NodeName: "node", PositionOnNode: int32(i), State: s}
			if s != v1alpha1.SlotFree {
				out[i].PodName, out[i].PodUID = "p", types.UID("uid-"+string(rune('a'+i)))
			}
		}
		return out
	}
	bedKey := types.NamespacedName{Namespace: "default", Name: name}
	next := func(what string) wake {
		t.Helper()
		select {
		case w := <-wakes:
			require.Equal(t, bedKey, w.bed, what)
			return w
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up for %s in 30s", what)
		}
		return wake{}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case w := <-wakes:
			t.Fatalf("%s woke Admission: %+v", what, w)
		case <-time.After(time.Second):
		}
	}
	// Drain the wake-ups of the bed's creation until its slots are in the copy.
	require.NoError(t, slotslices.Put(ctx, live, tb, statuses(v1alpha1.SlotOccupied, v1alpha1.SlotFree, v1alpha1.SlotFree)))
	for w := next("the new bed"); !slices.Equal(w.free, []int32{1, 2}); w = next("the new bed's slots") {
	}
	// The bed's and its slice's own wake-ups may come in either order: let the other pass.
	for settled := false; !settled; {
		select {
		case w := <-wakes:
			require.Equal(t, []int32{1, 2}, w.free)
		case <-time.After(time.Second):
			settled = true
		}
	}
	// Before both copies synced, a read went to the API server; from now on none may.
	lists, gets := counted.listsOf("SlotSlice"), counted.readsOf("TestBed")

	set := func(what string, edit func([]v1alpha1.SlotStatus)) {
		t.Helper()
		have, err := slotslices.Read(ctx, live, tb)
		require.NoError(t, err)
		edit(have)
		require.NoError(t, slotslices.Put(ctx, live, tb, have), what)
	}
	set("a reservation", func(s []v1alpha1.SlotStatus) {
		s[1].State, s[1].PodName, s[1].PodUID = v1alpha1.SlotReserved, "q", "uid-q"
	})
	quiet("a reservation")
	set("a freed slot", func(s []v1alpha1.SlotStatus) { s[0].State, s[0].PodName, s[0].PodUID = v1alpha1.SlotFree, "", "" })
	require.Equal(t, []int32{0, 2}, next("a freed slot").free, "the wake-up comes after the copy shows the slot free")
	set("a slot made unavailable", func(s []v1alpha1.SlotStatus) { s[2].Unavailable = "node not Ready" })
	quiet("a slot made unavailable")
	set("a slot available again", func(s []v1alpha1.SlotStatus) { s[2].Unavailable = "" })
	require.Equal(t, []int32{0, 2}, next("a slot available again").free)
	require.Equal(t, lists, counted.listsOf("SlotSlice"), "the slots come from the copy")
	require.Equal(t, gets, counted.readsOf("TestBed"), "the bed comes from the copy")
	require.Positive(t, copiedAlone.Load(), "the copies alone answered")

	require.NoError(t, live.Delete(ctx, tb))
	require.Empty(t, next("the deleted bed").free)
	require.Equal(t, gets+1, counted.readsOf("TestBed"), "a bed the copy lacks is asked of the API server before it counts as gone")
}

// At a resync Admission asks whether its allocation file changed: the worker's copy answers
// when it shows the version held, with no read of the API server. A change in the copy is
// read from the API server before it is sent, so a copy that lags never sends an older file
// than the one held; a Fresh ask (Admission was told of a change) reads the API server.
func TestLoadAllocationFile_AsksTheWorkersCopyFirst(t *testing.T) {
	t.Parallel()
	ctx, live, ch, _ := watchedJob(t)
	counted := &countingClient{Client: live}
	a := &activities.Activities{Client: counted, Changes: ch}
	file := func(queue string) map[string]string {
		return map[string]string{v1alpha1.QueuesConfigMapKey: `<allocations><queue name="` + queue + `"/></allocations>`}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"}, Data: file("a")}
	require.NoError(t, live.Create(ctx, cm))
	ref := activities.AllocationFileRef{Namespace: "default", ConfigMap: v1alpha1.QueuesConfigMap}
	// The copy may not hold the new ConfigMap yet: until it does, the first load takes its
	// word (no file).
	var first *queue.ConfigUpdate
	require.Eventually(t, func() bool {
		var err error
		first, err = a.LoadAllocationFile(ctx, ref)
		require.NoError(t, err)
		return first != nil
	}, 30*time.Second, 50*time.Millisecond, "the copy never held the file")
	require.NotNil(t, first.Allocations.Queue("a"))

	held := ref
	held.Version = first.Version
	require.Eventually(t, func() bool {
		before := counted.readsOf("ConfigMap")
		got, err := a.LoadAllocationFile(ctx, held)
		require.NoError(t, err)
		require.Nil(t, got, "the version held is not sent again")
		return counted.readsOf("ConfigMap") == before
	}, 30*time.Second, 50*time.Millisecond, "once the copy holds the file, a resync reads nothing from the API server")
	require.True(t, ch.AllocationFileUnchanged(ctx, held))
	require.False(t, ch.AllocationFileUnchanged(ctx, ref), "the copy holds a version the caller does not")
	require.False(t, (*activities.Changes)(nil).AllocationFileUnchanged(ctx, held), "no copies: ask LoadAllocationFile")
	before := counted.readsOf("ConfigMap")
	fresh := held
	fresh.Fresh = true
	got, err := a.LoadAllocationFile(ctx, fresh)
	require.NoError(t, err)
	require.Nil(t, got)
	require.Equal(t, before+1, counted.readsOf("ConfigMap"), "a fresh ask reads the API server")

	// The copy as it was at the first version, while the API server moved on to the second.
	old := cm.DeepCopy()
	cm.Data = file("b")
	require.NoError(t, live.Update(ctx, cm))
	frozen := func(o *corev1.ConfigMap) *activities.Changes {
		return activities.ChangesCopying(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(o).Build(), corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	}
	lagging := &activities.Activities{Client: live, Changes: frozen(old)}
	second, err := lagging.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.Nil(t, second, "a copy that shows the version held says nothing changed")
	second, err = lagging.LoadAllocationFile(ctx, fresh)
	require.NoError(t, err)
	require.NotNil(t, second.Allocations.Queue("b"), "a fresh ask gets the API server's file")

	// Held: the second version; the copy still shows the first, which is not sent.
	held.Version = second.Version
	got, err = lagging.LoadAllocationFile(ctx, held)
	require.NoError(t, err)
	require.Nil(t, got, "a copy behind the version held sends no older file")
	require.False(t, lagging.Changes.AllocationFileUnchanged(ctx, held), "a copy behind the version held does not answer alone")

	// Another ConfigMap name is never in the copy: it is read from the API server.
	other := ref
	other.ConfigMap = "queues-elsewhere"
	before = counted.readsOf("ConfigMap")
	require.False(t, ch.AllocationFileUnchanged(ctx, other), "another name is not in the copy")
	got, err = a.LoadAllocationFile(ctx, other)
	require.NoError(t, err)
	require.Nil(t, got, "no file while holding the defaults")
	require.Equal(t, before+1, counted.readsOf("ConfigMap"))
}
