//go:build integration

package standin_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/standin"
)

const (
	ns      = "default"
	slotRes = corev1.ResourceName("slotplane.io/slot")
	waitFor = 30 * time.Second
	tick    = 50 * time.Millisecond
)

// env is one local cluster with the stand-in running on it.
type env struct {
	cl      client.WithWatch
	cluster *localcluster.Cluster
	mu      sync.Mutex
	sim     *standin.Sim
}

func newEnv(t *testing.T) *env {
	// Two nodes that also offer the slot resource, so that executors and TaskManagers carrying
	// it are placed without the extender.
	c := localcluster.New(t, localcluster.Options{Nodes: 2, NodeResources: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), slotRes: resource.MustParse("100"),
	}})
	cl, err := client.NewWithWatch(c.Config, client.Options{Scheme: kubeclient.Scheme()})
	require.NoError(t, err)
	e := &env{cl: cl, cluster: c}
	e.start(t)
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		require.NoError(t, e.sim.Stop())
	})
	return e
}

func (e *env) start(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	sim, err := standin.Start(context.Background(), e.cluster.Config, log, standin.Options{})
	require.NoError(t, err)
	e.mu.Lock()
	e.sim = sim
	e.mu.Unlock()
}

func (e *env) restart(t *testing.T) {
	e.mu.Lock()
	require.NoError(t, e.sim.Stop())
	e.mu.Unlock()
	e.start(t)
}

// pods lists an application's pods of one role, as the API server has them now.
func (e *env) pods(t *testing.T, uid types.UID, role string) []corev1.Pod {
	var list corev1.PodList
	require.NoError(t, e.cl.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{standin.AppUIDLabel: string(uid), standin.RoleLabel: role}))
	return list.Items
}

func running(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (e *env) spark(t *testing.T, name string) *sparkv1beta2.SparkApplication {
	var app sparkv1beta2.SparkApplication
	require.NoError(t, e.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &app))
	return &app
}

func (e *env) flink(t *testing.T, name string) *flinkv1beta1.FlinkDeployment {
	var dep flinkv1beta1.FlinkDeployment
	require.NoError(t, e.cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &dep))
	return &dep
}

// history records every value an object's status takes, in order, without repeats.
type history struct {
	mu     sync.Mutex
	values []string
}

func (h *history) add(v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v != "" && (len(h.values) == 0 || h.values[len(h.values)-1] != v) {
		h.values = append(h.values, v)
	}
}

func (h *history) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.values)
}

// settled is the history once it holds n values, or as it is after waitFor. A test waits
// for an object's last state with a read, which can see the state before the watch has
// delivered its event: comparing the history at once raced with that event.
func (h *history) settled(n int) []string {
	deadline := time.Now().Add(waitFor)
	for {
		if v := h.get(); len(v) >= n || time.Now().After(deadline) {
			return v
		}
		time.Sleep(tick)
	}
}

// watchStates follows the objects named name of list's kind, and records read(object) for
// each version the API server shows. A watch the server ends, or an error it sends, is
// logged and the watch made again from the last version seen, so that no state goes
// unrecorded on a loaded machine.
func watchStates(t *testing.T, cl client.WithWatch, list client.ObjectList, name string, read func(runtimeObject any) string) *history {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	watchFrom := func(rv string) (watch.Interface, error) {
		opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{"metadata.name": name}}
		if rv != "" {
			opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		}
		return cl.Watch(ctx, list, opts...)
	}
	w, err := watchFrom("")
	require.NoError(t, err)
	h := &history{}
	go func() {
		rv := ""
		for {
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified:
					h.add(read(ev.Object))
					if o, ok := ev.Object.(client.Object); ok {
						rv = o.GetResourceVersion()
					}
				case watch.Error:
					// Most likely its version is too old to watch from: the next watch starts
					// from now, and the log says a state may be missing.
					t.Logf("the watch of %s sent an error: %v", name, ev.Object)
					rv = ""
				}
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			t.Logf("the watch of %s ended; watching again from version %q", name, rv)
			for {
				if w, err = watchFrom(rv); err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(tick)
			}
			if err != nil {
				return
			}
		}
	}()
	return h
}

// requireStates waits until h holds want, and says what it holds if it never does.
func requireStates(t *testing.T, h *history, want []string, what string) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return slices.Equal(h.get(), want) }, waitFor, tick) {
		t.Fatalf("%s: %v, want %v", what, h.get(), want)
	}
}

func sparkApp(name, runFor, outcome string, executors int32) *sparkv1beta2.SparkApplication {
	app := &sparkv1beta2.SparkApplication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{standin.SimDurationAnnotation: runFor}},
		Spec: sparkv1beta2.SparkApplicationSpec{
			Type: sparkv1beta2.SparkApplicationTypeScala, SparkVersion: "3.5.3", Image: "spark:3.5.3",
			MainApplicationFile: "local:///opt/app.jar",
			Executor: sparkv1beta2.ExecutorSpec{
				Instances: &executors,
				SparkPodSpec: sparkv1beta2.SparkPodSpec{
					Memory: "512m", SchedulerName: "slot-scheduler",
					Labels: map[string]string{"team": "a"},
					Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: standin.SparkExecutorContainer,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{slotRes: resource.MustParse("1")},
							Limits:   corev1.ResourceList{slotRes: resource.MustParse("1")},
						},
					}}}},
				},
			},
		},
	}
	if outcome != "" {
		app.Annotations[standin.SimOutcomeAnnotation] = outcome
	}
	return app
}

// flinkDep is a FlinkDeployment that runs for runFor, its job on taskManagers TaskManagers of
// memory each, one slot resource apiece.
func flinkDep(name, runFor string, taskManagers int32, memory string) *flinkv1beta1.FlinkDeployment {
	cpu := 1.0
	return &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{standin.SimDurationAnnotation: runFor}},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image: "flink:1.20", Mode: flinkv1beta1.DeploymentModeNative,
			JobManager: &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: "1024m"}},
			TaskManager: &flinkv1beta1.TaskManagerSpec{
				Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: memory}, Replicas: &taskManagers,
				PodTemplate: &flinkv1beta1.PodTemplate{Spec: &corev1.PodSpec{Containers: []corev1.Container{{
					Name: standin.FlinkMainContainer,
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{slotRes: resource.MustParse("1")},
						Limits:   corev1.ResourceList{slotRes: resource.MustParse("1")},
					},
				}}}},
			},
			Job: &flinkv1beta1.JobSpec{JarURI: "local:///opt/flink/usrlib/app.jar", Parallelism: taskManagers, State: flinkv1beta1.JobStateRunning},
		},
	}
}

func sparkState(o any) string {
	return string(o.(*sparkv1beta2.SparkApplication).Status.AppState.State)
}
func flinkState(o any) string {
	return string(o.(*flinkv1beta1.FlinkDeployment).Status.JobStatus.State)
}

// The stand-in plays the Spark and Flink operators on one cluster: the common paths, the
// failures, the detours and suspensions run side by side, and a restart of the stand-in
// mid-run comes after them, alone.
func TestAppsim_PlaysTheOperators(t *testing.T) {
	e := newEnv(t)

	t.Run("operators", func(t *testing.T) {
		t.Run("SparkRunsDriverThenExecutorsAndCompletes", e.sparkRunsDriverThenExecutorsAndCompletes)
		t.Run("SparkRunFails", e.sparkRunFails)
		t.Run("SparkRefusesAnUnreadableRunTime", e.sparkRefusesAnUnreadableRunTime)
		t.Run("SparkFailsWhenItsDriverIsDeleted", e.sparkFailsWhenItsDriverIsDeleted)
		t.Run("SparkKeepsEndedExecutorsWhenTold", e.sparkKeepsEndedExecutorsWhenTold)
		t.Run("FlinkRunsJobManagerThenTaskManagersAndFinishes", e.flinkRunsJobManagerThenTaskManagersAndFinishes)
		t.Run("FlinkFailsWhenItCannotDeploy", e.flinkFailsWhenItCannotDeploy)
		t.Run("FlinkFailsWhenItsJobManagerIsDeleted", e.flinkFailsWhenItsJobManagerIsDeleted)

		// The states the operators publish besides the common path, asked for by annotation or
		// reached by suspending the application.
		t.Run("SparkDetoursThroughTheStatesAskedFor", e.sparkDetoursThroughTheStatesAskedFor)
		t.Run("SparkSuspends", e.sparkSuspends)
		t.Run("FlinkDetoursAndSuspends", e.flinkDetoursAndSuspends)
		t.Run("FlinkEndsSuspendedWhenAsked", e.flinkEndsSuspendedWhenAsked)
		t.Run("DeletingARunningApplicationDeletesItsPods", e.deletingARunningApplicationDeletesItsPods)
	})

	t.Run("RestartMidRunDuplicatesNothing", e.restartMidRunDuplicatesNothing)
}

// sparkRunsDriverThenExecutorsAndCompletes checks that a SparkApplication gets its driver,
// then its executors, labelled and sized as the operator makes them, and completes through the
// operator's states, its executors deleted and its driver kept.
func (e *env) sparkRunsDriverThenExecutorsAndCompletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := watchStates(t, e.cl, &sparkv1beta2.SparkApplicationList{}, "wc", sparkState)
	app := sparkApp("wc", "3s", "", 2)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool {
		return len(running(e.pods(t, app.UID, standin.RoleExecutor))) == 2 && len(running(e.pods(t, app.UID, standin.RoleDriver))) == 1
	}, waitFor, tick, "driver and two executors run")
	require.Equal(t, sparkv1beta2.ApplicationStateRunning, e.spark(t, "wc").Status.AppState.State)

	driver := e.pods(t, app.UID, standin.RoleDriver)[0]
	execs := e.pods(t, app.UID, standin.RoleExecutor)
	require.Equal(t, "wc-driver", driver.Name)
	require.Equal(t, []string{"wc-exec-1", "wc-exec-2"}, running(execs))
	st := e.spark(t, "wc").Status
	assert.Equal(t, "wc-driver", st.DriverInfo.PodName)
	assert.Equal(t, st.SparkApplicationID, driver.Labels["spark-app-selector"])
	assert.Equal(t, "driver", driver.Labels["spark-role"])
	assert.Equal(t, "wc", driver.Labels["sparkoperator.k8s.io/app-name"])
	assert.Equal(t, "3s", driver.Annotations[standin.SimDurationAnnotation])
	assert.Equal(t, "1408Mi", quantity(&driver, corev1.ResourceMemory), "1g plus the 384 MiB floor")
	for _, ex := range execs {
		assert.Equal(t, "executor", ex.Labels["spark-role"])
		assert.Equal(t, st.SparkApplicationID, ex.Labels["spark-app-selector"])
		assert.Equal(t, "a", ex.Labels["team"])
		assert.Equal(t, driver.UID, ex.OwnerReferences[0].UID)
		assert.Equal(t, "slot-scheduler", ex.Spec.SchedulerName)
		assert.Equal(t, "896Mi", quantity(&ex, corev1.ResourceMemory), "512m plus the 384 MiB floor")
		assert.Equal(t, "1", quantity(&ex, corev1.ResourceCPU))
		assert.Equal(t, "1", quantity(&ex, slotRes))
		assert.Empty(t, ex.Annotations[standin.SimDurationAnnotation])
	}

	require.Eventually(t, func() bool {
		return e.spark(t, "wc").Status.AppState.State == sparkv1beta2.ApplicationStateCompleted
	}, waitFor, tick, "completes after its simulated run")
	require.Eventually(t, func() bool { return len(e.pods(t, app.UID, standin.RoleExecutor)) == 0 }, waitFor, tick, "executors deleted")
	st = e.spark(t, "wc").Status
	assert.Equal(t, map[string]sparkv1beta2.ExecutorState{"wc-exec-1": "COMPLETED", "wc-exec-2": "COMPLETED"}, st.ExecutorState)
	assert.False(t, st.TerminationTime.IsZero())
	assert.Equal(t, int32(1), st.SubmissionAttempts)
	want := []string{"SUBMITTED", "RUNNING", "SUCCEEDING", "COMPLETED"}
	assert.Equal(t, want, states.settled(len(want)), "the operator's states, in its order")
	assert.Equal(t, corev1.PodSucceeded, e.pods(t, app.UID, standin.RoleDriver)[0].Status.Phase, "the driver stays as the run's record")
}

// sparkRunFails checks that a SparkApplication told to fail ends Failed with the driver's exit
// code, its executors deleted.
func (e *env) sparkRunFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := sparkApp("broken", "1s", standin.SimOutcomeFailed, 1)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool {
		return e.spark(t, "broken").Status.AppState.State == sparkv1beta2.ApplicationStateFailed
	}, waitFor, tick)
	assert.Contains(t, e.spark(t, "broken").Status.AppState.ErrorMessage, "ExitCode: 1")
	require.Eventually(t, func() bool { return len(e.pods(t, app.UID, standin.RoleExecutor)) == 0 }, waitFor, tick, "executors deleted")
}

// sparkRefusesAnUnreadableRunTime checks that a SparkApplication whose run time does not parse
// fails its submission and gets no driver.
func (e *env) sparkRefusesAnUnreadableRunTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := watchStates(t, e.cl, &sparkv1beta2.SparkApplicationList{}, "typo", sparkState)
	app := sparkApp("typo", "3 seconds", "", 1)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool {
		return e.spark(t, "typo").Status.AppState.State == sparkv1beta2.ApplicationStateFailed
	}, waitFor, tick)
	requireStates(t, states, []string{"SUBMISSION_FAILED", "FAILED"}, "with restart policy Never a failed submission is FAILED next")
	assert.Contains(t, e.spark(t, "typo").Status.AppState.ErrorMessage, standin.SimDurationAnnotation)
	assert.Empty(t, e.pods(t, app.UID, standin.RoleDriver))
}

// sparkFailsWhenItsDriverIsDeleted checks that a SparkApplication whose driver is deleted mid-
// run fails, and its executors go.
func (e *env) sparkFailsWhenItsDriverIsDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := sparkApp("orphaned", "1h", "", 1)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool { return len(running(e.pods(t, app.UID, standin.RoleExecutor))) == 1 }, waitFor, tick)
	require.NoError(t, e.cl.Delete(ctx, &e.pods(t, app.UID, standin.RoleDriver)[0]))
	require.Eventually(t, func() bool {
		st := e.spark(t, "orphaned").Status.AppState
		return st.State == sparkv1beta2.ApplicationStateFailed && len(e.pods(t, app.UID, standin.RoleExecutor)) == 0
	}, waitFor, tick, "the application fails and its executors go")
	assert.Contains(t, e.spark(t, "orphaned").Status.AppState.ErrorMessage, "driver pod orphaned-driver not found")
}

// sparkKeepsEndedExecutorsWhenTold checks that a SparkApplication whose executors are not to
// be deleted on termination keeps its ended executor.
func (e *env) sparkKeepsEndedExecutorsWhenTold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := sparkApp("kept", "2s", "", 1)
	app.Spec.Executor.DeleteOnTermination = new(false)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool {
		execs := e.pods(t, app.UID, standin.RoleExecutor)
		return e.spark(t, "kept").Status.AppState.State == sparkv1beta2.ApplicationStateCompleted &&
			len(execs) == 1 && execs[0].Status.Phase == corev1.PodSucceeded
	}, waitFor, tick, "the executor ends with the driver and stays")
}

// flinkRunsJobManagerThenTaskManagersAndFinishes checks that a FlinkDeployment gets its
// TaskManagers, sized and labelled as the operator makes them, runs with a ready JobManager
// and finishes through the operator's states.
func (e *env) flinkRunsJobManagerThenTaskManagersAndFinishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := watchStates(t, e.cl, &flinkv1beta1.FlinkDeploymentList{}, "clicks", flinkState)
	dep := flinkDep("clicks", "3s", 2, "2g")
	require.NoError(t, e.cl.Create(ctx, dep))
	require.Eventually(t, func() bool {
		return e.flink(t, "clicks").Status.JobStatus.State == flinkv1beta1.FlinkJobRunning &&
			len(running(e.pods(t, dep.UID, standin.RoleTaskManager))) == 2
	}, waitFor, tick, "job runs with two TaskManagers")
	assert.Equal(t, []string{"clicks-taskmanager-1-1", "clicks-taskmanager-1-2"}, running(e.pods(t, dep.UID, standin.RoleTaskManager)))
	for _, tm := range e.pods(t, dep.UID, standin.RoleTaskManager) {
		assert.Equal(t, "2Gi", quantity(&tm, corev1.ResourceMemory))
		assert.Equal(t, "1", quantity(&tm, slotRes))
		assert.Equal(t, "taskmanager", tm.Labels["component"])
	}
	st := e.flink(t, "clicks").Status
	assert.Equal(t, flinkv1beta1.JobManagerDeploymentReady, st.JobManagerDeploymentStatus)
	assert.Equal(t, flinkv1beta1.LifecycleStateStable, st.LifecycleState)
	assert.NotEmpty(t, st.JobStatus.JobID)
	assert.NotEmpty(t, st.JobStatus.StartTime)

	require.Eventually(t, func() bool {
		return e.flink(t, "clicks").Status.JobStatus.State == flinkv1beta1.FlinkJobFinished
	}, waitFor, tick, "finishes after its simulated run")
	require.Eventually(t, func() bool { return len(e.pods(t, dep.UID, standin.RoleTaskManager)) == 0 }, waitFor, tick, "TaskManagers deleted")
	want := []string{"RECONCILING", "RUNNING", "FINISHED"}
	assert.Equal(t, want, states.settled(len(want)))
}

// flinkFailsWhenItCannotDeploy checks that a FlinkDeployment with no memory for its JobManager
// fails without a pod.
func (e *env) flinkFailsWhenItCannotDeploy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sizeless", Namespace: ns},
		Spec:       flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", Job: &flinkv1beta1.JobSpec{Parallelism: 1}},
	}
	require.NoError(t, e.cl.Create(ctx, dep))
	require.Eventually(t, func() bool {
		return e.flink(t, "sizeless").Status.JobStatus.State == flinkv1beta1.FlinkJobFailed
	}, waitFor, tick)
	st := e.flink(t, "sizeless").Status
	assert.Equal(t, flinkv1beta1.JobManagerDeploymentError, st.JobManagerDeploymentStatus)
	assert.Contains(t, st.Error, "memory")
	assert.Empty(t, e.pods(t, dep.UID, standin.RoleJobManager))
}

// flinkFailsWhenItsJobManagerIsDeleted checks that a FlinkDeployment whose JobManager is
// deleted mid-run fails, and its TaskManagers go.
func (e *env) flinkFailsWhenItsJobManagerIsDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cpu := 0.5
	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "headless", Namespace: ns},
		Spec: flinkv1beta1.FlinkDeploymentSpec{
			Image:       "flink:1.20",
			JobManager:  &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: "1g"}},
			TaskManager: &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: "1g"}},
		},
	}
	require.NoError(t, e.cl.Create(ctx, dep))
	require.Eventually(t, func() bool { return len(running(e.pods(t, dep.UID, standin.RoleTaskManager))) == 1 }, waitFor, tick)
	require.NoError(t, e.cl.Delete(ctx, &e.pods(t, dep.UID, standin.RoleJobManager)[0]))
	require.Eventually(t, func() bool {
		return e.flink(t, "headless").Status.JobStatus.State == flinkv1beta1.FlinkJobFailed &&
			len(e.pods(t, dep.UID, standin.RoleTaskManager)) == 0
	}, waitFor, tick, "the job fails and its TaskManagers go")
	assert.Equal(t, flinkv1beta1.JobManagerDeploymentMissing, e.flink(t, "headless").Status.JobManagerDeploymentStatus)
}

// sparkDetoursThroughTheStatesAskedFor checks that a SparkApplication passes through the
// states its detour annotation names, and completes.
func (e *env) sparkDetoursThroughTheStatesAskedFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := watchStates(t, e.cl, &sparkv1beta2.SparkApplicationList{}, "detour", sparkState)
	app := sparkApp("detour", "5s", "", 1)
	app.Annotations[standin.SimDetourAnnotation] = "UNKNOWN,PENDING_RERUN,INVALIDATING"
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool {
		return e.spark(t, "detour").Status.AppState.State == sparkv1beta2.ApplicationStateCompleted
	}, waitFor, tick)
	want := []string{"SUBMITTED", "RUNNING", "UNKNOWN", "PENDING_RERUN", "INVALIDATING", "RUNNING", "SUCCEEDING", "COMPLETED"}
	assert.Equal(t, want, states.settled(len(want)))
}

// sparkSuspends checks that a running SparkApplication that is suspended ends Suspended with
// no pods.
func (e *env) sparkSuspends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	states := watchStates(t, e.cl, &sparkv1beta2.SparkApplicationList{}, "paused", sparkState)
	app := sparkApp("paused", "1h", "", 2)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool { return len(running(e.pods(t, app.UID, standin.RoleExecutor))) == 2 }, waitFor, tick)
	require.NoError(t, e.cl.Patch(ctx, app, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))))
	require.Eventually(t, func() bool {
		return e.spark(t, "paused").Status.AppState.State == sparkv1beta2.ApplicationStateSuspended &&
			len(e.pods(t, app.UID, standin.RoleDriver)) == 0 && len(e.pods(t, app.UID, standin.RoleExecutor)) == 0
	}, waitFor, tick, "suspended, with no pods")
	want := []string{"SUBMITTED", "RUNNING", "SUSPENDING", "SUSPENDED"}
	assert.Equal(t, want, states.settled(len(want)))
}

// flinkDetoursAndSuspends checks that a FlinkDeployment passes through the job and lifecycle
// states its detour annotation names, and a suspended one ends with no pods.
func (e *env) flinkDetoursAndSuspends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	jobs := watchStates(t, e.cl, &flinkv1beta1.FlinkDeploymentList{}, "stream", flinkState)
	lifecycles := watchStates(t, e.cl, &flinkv1beta1.FlinkDeploymentList{}, "stream", func(o any) string {
		return string(o.(*flinkv1beta1.FlinkDeployment).Status.LifecycleState)
	})
	dep := flinkDep("stream", "1h", 1, "1g")
	dep.Annotations[standin.SimDetourAnnotation] = "job=RESTARTING,lifecycle=UPGRADING,job=FAILING"
	require.NoError(t, e.cl.Create(ctx, dep))
	requireStates(t, jobs, []string{"RECONCILING", "RUNNING", "RESTARTING", "RUNNING", "FAILING", "RUNNING"}, "the job's detour")
	require.NoError(t, e.cl.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"job":{"state":"suspended"}}}`))))
	require.Eventually(t, func() bool {
		d := e.flink(t, "stream")
		return d.Status.JobStatus.State == flinkv1beta1.FlinkJobSuspended && d.Status.LifecycleState == flinkv1beta1.LifecycleStateSuspended &&
			len(e.pods(t, dep.UID, standin.RoleJobManager)) == 0 && len(e.pods(t, dep.UID, standin.RoleTaskManager)) == 0
	}, waitFor, tick, "suspended, with no pods")
	want := []string{"DEPLOYED", "STABLE", "UPGRADING", "STABLE", "SUSPENDED"}
	assert.Equal(t, want, lifecycles.settled(len(want)))
	assert.Equal(t, flinkv1beta1.JobManagerDeploymentMissing, e.flink(t, "stream").Status.JobManagerDeploymentStatus)
}

// flinkEndsSuspendedWhenAsked checks that a FlinkDeployment told to end suspended does.
func (e *env) flinkEndsSuspendedWhenAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dep := flinkDep("nightly-stop", "2s", 1, "1g")
	dep.Annotations[standin.SimOutcomeAnnotation] = standin.SimOutcomeSuspended
	require.NoError(t, e.cl.Create(ctx, dep))
	require.Eventually(t, func() bool {
		return e.flink(t, "nightly-stop").Status.LifecycleState == flinkv1beta1.LifecycleStateSuspended
	}, waitFor, tick)
	assert.Equal(t, flinkv1beta1.FlinkJobSuspended, e.flink(t, "nightly-stop").Status.JobStatus.State)
}

// deletingARunningApplicationDeletesItsPods checks that a running SparkApplication that is
// deleted goes after its pods.
func (e *env) deletingARunningApplicationDeletesItsPods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	app := sparkApp("forever", "1h", "", 2)
	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool { return len(running(e.pods(t, app.UID, standin.RoleExecutor))) == 2 }, waitFor, tick)
	require.NoError(t, e.cl.Delete(ctx, app))
	require.Eventually(t, func() bool {
		err := e.cl.Get(ctx, client.ObjectKeyFromObject(app), &sparkv1beta2.SparkApplication{})
		return apierrors.IsNotFound(err) && len(e.pods(t, app.UID, standin.RoleDriver)) == 0 &&
			len(e.pods(t, app.UID, standin.RoleExecutor)) == 0
	}, waitFor, tick, "the pods go, then the application")
}

// restartMidRunDuplicatesNothing checks that a stand-in restarted mid-run completes the run
// without making any of its pods twice.
func (e *env) restartMidRunDuplicatesNothing(t *testing.T) {
	ctx := context.Background()
	app := sparkApp("again", "4s", "", 2)
	seen := map[types.UID]string{}
	var seenMu sync.Mutex
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := e.cl.Watch(wctx, &corev1.PodList{}, client.InNamespace(ns))
	require.NoError(t, err)
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Annotations[standin.AppAnnotation] == "again" {
				seenMu.Lock()
				seen[pod.UID] = pod.Name
				seenMu.Unlock()
			}
		}
	}()

	require.NoError(t, e.cl.Create(ctx, app))
	require.Eventually(t, func() bool { return len(running(e.pods(t, app.UID, standin.RoleExecutor))) == 2 }, waitFor, tick)
	e.restart(t)
	require.Eventually(t, func() bool {
		return e.spark(t, "again").Status.AppState.State == sparkv1beta2.ApplicationStateCompleted
	}, waitFor, tick, "the run completes after the restart")
	require.Eventually(t, func() bool { return len(e.pods(t, app.UID, standin.RoleExecutor)) == 0 }, waitFor, tick)

	st := e.spark(t, "again").Status
	assert.Equal(t, int32(1), st.SubmissionAttempts)
	seenMu.Lock()
	defer seenMu.Unlock()
	var names []string
	for _, name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"again-driver", "again-exec-1", "again-exec-2"}, names, "one pod each, none made twice")
}

func quantity(p *corev1.Pod, name corev1.ResourceName) string {
	q := p.Spec.Containers[0].Resources.Requests[name]
	return q.String()
}
