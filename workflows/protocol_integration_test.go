//go:build integration

package workflows_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/queue"
	"slotplane/workflows"
)

// protocolWorld answers the activities of a Scheduling and its test bed's Admission by name:
// a test bed of a few slots, and jobs that "run" when their creation is requested, reporting
// their progress to the Scheduling as BatchJob workflows would. It checks, as the jobs run,
// that no slot is given to two jobs at once and that no job is started twice.
type protocolWorld struct {
	c     client.Client
	id    string
	jobs  []string
	slots int32
	rng   *rand.Rand

	mu         sync.Mutex
	holder     map[int32]string // slot -> job running in it
	requests   map[string]int   // job -> creation requests
	completed  map[string]int
	violations []string
	done       chan struct{}
	once       sync.Once
	real       *activities.Activities // acts
}

func newProtocolWorld(c client.Client, jobs, slots int) *protocolWorld {
	w := &protocolWorld{c: c, id: installation.Default.SchedulingID("ns", "nightly"), slots: int32(slots), rng: rand.New(rand.NewPCG(1, 2)),
		holder: map[int32]string{}, requests: map[string]int{}, completed: map[string]int{}, done: make(chan struct{})}
	for i := range jobs {
		w.jobs = append(w.jobs, fmt.Sprintf("job-%03d", i))
	}
	return w
}

func (w *protocolWorld) ReadScheduling(context.Context, activities.SchedulingKey) (activities.SchedulingObservation, error) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased}
	for _, j := range w.jobs {
		spec.Jobs = append(spec.Jobs, v1alpha1.SchedulingJob{Name: j, Replication: 1})
	}
	return activities.SchedulingObservation{Exists: true, UID: "uid-nightly", Spec: spec}, nil
}

func (w *protocolWorld) ClaimJobs(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
	return activities.ClaimResult{Claimed: in.Names}, nil
}

func (w *protocolWorld) ReleaseJobs(context.Context, activities.ClaimInput) error { return nil }

func (w *protocolWorld) RemoveSchedulingFinalizer(context.Context, activities.SchedulingKey) error {
	return nil
}

// NudgeWorkflows sends Admission its requests for real, as the worker's activity does (an
// update-with-start), on the test's one task queue; the nudges of BatchJob workflows are
// played by RequestCreation.
func (w *protocolWorld) NudgeWorkflows(ctx context.Context, in activities.SignalWithStartInput) error {
	var toAdmission []activities.SignalWithStart
	for _, n := range in.Signals {
		if n.Signal == workflows.AdmissionRequestUpdate || n.Signal == workflows.AdmissionRequestsUpdate {
			n.TaskQueue = ""
			toAdmission = append(toAdmission, n)
		}
	}
	return w.acts().NudgeWorkflows(ctx, activities.SignalWithStartInput{TaskQueue: "protocol", Signals: toAdmission})
}

// SignalWorkflows is the worker's own: the workflows' messages to each other go through the
// real server.
func (w *protocolWorld) SignalWorkflows(ctx context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
	return w.acts().SignalWorkflows(ctx, in)
}

// acts are the worker's activities as the worker sets them up: Admission's messages go as
// updates, its job keys in batches.
func (w *protocolWorld) acts() *activities.Activities {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.real == nil {
		w.real = &activities.Activities{Temporal: w.c, Updates: workflows.AdmissionUpdates, Batched: workflows.AdmissionBatched}
	}
	return w.real
}

func (w *protocolWorld) ReadJobs(_ context.Context, in activities.ReadJobsInput) ([]activities.JobInfo, error) {
	out := make([]activities.JobInfo, len(in.Names))
	for i, n := range in.Names {
		out[i] = activities.JobInfo{Name: n, Exists: true, User: "u"}
	}
	return out, nil
}

func (w *protocolWorld) ReadSlots(context.Context, activities.TestBedRef) (activities.TestBedSlots, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := activities.TestBedSlots{Exists: true, SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	for p := range w.slots {
		out.Positions = append(out.Positions, p)
		if w.holder[p] == "" {
			out.Free = append(out.Free, p)
		}
	}
	return out, nil
}

func (w *protocolWorld) LoadAllocationFile(context.Context, activities.AllocationFileRef) (*queue.ConfigUpdate, error) {
	return nil, nil
}

// protocolCopies are the worker's copies (workflows.Copies) of a protocol world: the slots
// as ReadSlots reads them, but every missEvery-th read misses, so the workflow reads them
// with the local activity instead; the allocation file as file holds it (nil: unchanged).
type protocolCopies struct {
	w         *protocolWorld
	file      *allocationStandIn
	missEvery int
	reads     atomic.Int32
}

func (p *protocolCopies) CopiedSlots(ctx context.Context, ref activities.TestBedRef) (activities.TestBedSlots, bool) {
	if n := p.reads.Add(1); p.missEvery > 0 && int(n)%p.missEvery == 0 {
		return activities.TestBedSlots{}, false
	}
	s, err := p.w.ReadSlots(ctx, ref)
	return s, err == nil
}

func (p *protocolCopies) AllocationFileUnchanged(_ context.Context, ref activities.AllocationFileRef) bool {
	if p.file == nil {
		return true
	}
	p.file.mu.Lock()
	defer p.file.mu.Unlock()
	return ref.Version == p.file.version
}

// withCopies are a worker's options with copies given to its workflows.
func withCopies(c workflows.Copies) sdkworker.Options {
	return sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{workflows.CopiesInterceptor(c)}}
}

// CheckHolds finds nothing: the test proves the protocol itself loses nothing, without the
// safety net of the claims check.
func (w *protocolWorld) CheckHolds(context.Context, activities.CheckHoldsInput) (activities.HoldsCheck, error) {
	return activities.HoldsCheck{}, nil
}

func (w *protocolWorld) AssignSlots(context.Context, activities.AssignSlotsInput) error { return nil }

// RecordQueues stands in for the writes of jobs' queues, which these tests do not check.
func (w *protocolWorld) RecordQueues(context.Context, activities.RecordQueuesInput) error { return nil }

func (w *protocolWorld) WriteSchedulingStatus(_ context.Context, in activities.WriteSchedulingStatusInput) error {
	if in.Status.State == v1alpha1.SchedulingCompleted {
		w.once.Do(func() { close(w.done) })
	}
	return nil
}

// RequestCreation starts the job in its slots: it reports Submitted (left Starting), Running
// and Completed to the Scheduling after short random pauses, and frees its slots just
// before it reports the end.
func (w *protocolWorld) RequestCreation(_ context.Context, in activities.RequestCreationInput) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests[in.Job]++
	if w.requests[in.Job] > 1 {
		return nil // an activity retry: the same request again (idempotent)
	}
	for _, p := range in.Request.Slots {
		if other := w.holder[p]; other != "" {
			w.violations = append(w.violations, fmt.Sprintf("slot %d given to %s while %s runs in it", p, in.Job, other))
		}
		w.holder[p] = in.Job
	}
	pause := func() time.Duration { return time.Duration(10+w.rng.IntN(60)) * time.Millisecond }
	p1, p2, p3 := pause(), pause(), pause()
	go func() {
		ctx := context.Background()
		progress := func(p workflows.JobProgress) {
			p.Job, p.Run = in.Job, in.Request.Run
			_ = w.c.SignalWorkflow(ctx, w.id, "", workflows.JobProgressSignal, p)
		}
		time.Sleep(p1)
		progress(workflows.JobProgress{State: v1alpha1.JobSubmitted, Started: true})
		time.Sleep(p2)
		progress(workflows.JobProgress{State: v1alpha1.JobRunning})
		time.Sleep(p3)
		w.mu.Lock()
		for _, p := range in.Request.Slots {
			if w.holder[p] == in.Job {
				delete(w.holder, p)
			}
		}
		w.completed[in.Job]++
		w.mu.Unlock()
		progress(workflows.JobProgress{State: v1alpha1.JobCompleted})
	}()
	return nil
}

// failedTasks counts the failed workflow tasks of every run of a workflow, and says why they
// failed.
func failedTasks(t *testing.T, c client.Client, id string) (n int, causes []string) {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	require.NoError(t, err)
	for _, e := range resp.Executions {
		for _, ev := range runEvents(t, c, id, e.GetExecution().GetRunId()) {
			if f := ev.GetWorkflowTaskFailedEventAttributes(); f != nil {
				n++
				causes = append(causes, f.GetCause().String())
			}
		}
	}
	return n, causes
}

// runs counts a workflow's runs (continue-as-new makes one more each time).
func runs(t *testing.T, c client.Client, id string) int {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	require.NoError(t, err)
	return len(resp.Executions)
}

// A Scheduling and its Admission both continue as new every few steps while grants, job
// starts and job ends are in flight between them, on the real Temporal server: every job
// starts once and completes once, no slot is given to two jobs at once, the Scheduling
// completes, and Admission holds nothing at the end.
func TestProtocol_ContinueAsNewWithMessagesInFlightLosesNothing(t *testing.T) {
	_, c := temporaltest.Start(t)
	w := newProtocolWorld(c, 60, 4)
	wk := sdkworker.New(c, "protocol", withCopies(&protocolCopies{w: w, missEvery: 3}))
	wk.RegisterWorkflow(workflows.SchedulingWorkflow)
	wk.RegisterWorkflow(workflows.AdmissionWorkflow)
	wk.RegisterActivity(w)
	require.NoError(t, wk.Start())
	defer wk.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: w.id, TaskQueue: "protocol"}, workflows.SchedulingWorkflow,
		workflows.SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 3, AdmissionStepsPerRun: 4})
	require.NoError(t, err)
	select {
	case <-w.done:
	case <-ctx.Done():
		w.mu.Lock()
		t.Fatalf("the Scheduling did not complete: %d of %d jobs started, %d completed", len(w.requests), len(w.jobs), len(w.completed))
	}

	admission := installation.Default.AdmissionID("ns", "bed")
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, admission, "", workflows.QueuesQuery)
		if err != nil {
			return false
		}
		var r workflows.AdmissionReport
		return v.Get(&r) == nil && len(r.Running) == 0 && len(r.Waiting) == 0
	}, 30*time.Second, 200*time.Millisecond, "Admission still holds jobs after every job ended")

	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.violations)
	for _, j := range w.jobs {
		require.Equal(t, 1, w.completed[j], "job %s completed %d times", j, w.completed[j])
	}
	require.Empty(t, w.holder, "slots still held")
	require.GreaterOrEqual(t, runs(t, c, w.id), 5, "the Scheduling continued as new")
	require.GreaterOrEqual(t, runs(t, c, admission), 5, "Admission continued as new")
	// Its messages are updates: one that comes in while a task continues the run as new goes
	// to the next run, where a signal would have failed that task.
	failed, causes := failedTasks(t, c, admission)
	require.Zero(t, failed, "Admission's failed workflow tasks: %v", causes)
	require.NoError(t, c.CancelWorkflow(ctx, w.id, ""))
}

// sink stands in for a Scheduling that takes grants: Admission's signals need a workflow.
func sink(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return false })
}

// TestRecordAdmissionHistory records one run of AdmissionWorkflow on the embedded server with
// stand-in activities: two queues, preemption, a configuration reload, a release, and the
// continue-as-new at its end (SLOTPLANE_RECORD=1, `make record-histories`).
func TestRecordAdmissionHistory(t *testing.T) {
	if os.Getenv("SLOTPLANE_RECORD") != "1" {
		t.Skip("set SLOTPLANE_RECORD=1 to re-record workflow histories")
	}
	_, c := temporaltest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newProtocolWorld(c, 0, 8)
	file := &allocationStandIn{version: "1", data: `<allocations>
  <queue name="a"/><queue name="b"><fairSharePreemptionTimeout>1</fairSharePreemptionTimeout></queue></allocations>`,
		settings: `<configuration>
  <property><name>yarn.scheduler.fair.preemption</name><value>true</value></property>
  <property><name>yarn.scheduler.fair.preemption.cluster-utilization-threshold</name><value>0.5</value></property>
</configuration>`}
	wk := sdkworker.New(c, "record-admission", withCopies(&protocolCopies{w: w, file: file}))
	wk.RegisterWorkflow(workflows.AdmissionWorkflow)
	wk.RegisterWorkflowWithOptions(sink, workflow.RegisterOptions{Name: "Sink"})
	stand := &admissionStandIn{protocolWorld: w, file: file}
	wk.RegisterActivity(stand)
	require.NoError(t, wk.Start())
	defer wk.Stop()
	for _, s := range []string{"sa", "sb"} {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: installation.Default.SchedulingID("ns", s), TaskQueue: "record-admission"}, "Sink")
		require.NoError(t, err)
		defer func() {
			_ = c.TerminateWorkflow(context.Background(), installation.Default.SchedulingID("ns", s), "", "recorded")
		}()
	}
	id := installation.Default.AdmissionID("ns", "bed")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "record-admission"}, workflows.AdmissionWorkflow,
		workflows.AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 8, Resync: time.Second})
	require.NoError(t, err)
	key := func(s, job string) queue.JobKey {
		return queue.JobKey{Scheduling: s, SchedulingUID: "uid-" + s, Job: job, Run: 1}
	}
	_, err = activities.Update(ctx, c, id, workflows.AdmissionRequestUpdate, workflows.AdmissionRequest{JobKey: key("sa", "big"), Queue: "a", User: "u", Slots: 8})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return runningJobs(ctx, c, id) == 1 }, 30*time.Second, 50*time.Millisecond, "big never ran")
	_, err = activities.Update(ctx, c, id, workflows.AdmissionRequestUpdate, workflows.AdmissionRequest{JobKey: key("sb", "small"), Queue: "b", User: "u", Slots: 4})
	require.NoError(t, err)
	// b starves past its timeout, and a's job gives back slots.
	require.Eventually(t, func() bool { return stand.revoked.Load() > 0 }, 30*time.Second, 50*time.Millisecond, "nothing was preempted")
	file.set("2", `<allocations><queue name="a"/><queue name="b"/></allocations>`)
	_, err = activities.Update(ctx, c, id, workflows.AdmissionConfigUpdate, nil)
	require.NoError(t, err)
	_, err = activities.Update(ctx, c, id, workflows.AdmissionReleaseUpdate, key("sb", "small"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
		return err == nil && d.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, time.Minute, 100*time.Millisecond)
	require.Positive(t, stand.revoked.Load(), "the recorded run preempted")
	saveHistory(t, c, id, run.GetRunID(), admissionHistory)
	require.NoError(t, c.TerminateWorkflow(ctx, id, "", "recorded"))
}

// runningJobs is how many jobs the Admission workflow id says run (-1: no answer).
func runningJobs(ctx context.Context, c client.Client, id string) int {
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueuesQuery)
	if err != nil {
		return -1
	}
	var r workflows.AdmissionReport
	if v.Get(&r) != nil {
		return -1
	}
	return len(r.Running)
}

// admissionHistory is the file the recording writes.
const admissionHistory = "admission.json"

// allocationStandIn is an allocation file that changes when the test says so.
type allocationStandIn struct {
	mu                      sync.Mutex
	version, data, settings string
}

func (f *allocationStandIn) set(version, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version, f.data, f.settings = version, data, ""
}

// admissionStandIn is the world of the recording, with an allocation file and a bed whose
// slots free up as soon as they are given back.
type admissionStandIn struct {
	*protocolWorld
	file    *allocationStandIn
	revoked atomic.Int32 // slots taken back by preemption
}

func (a *admissionStandIn) AssignSlots(_ context.Context, in activities.AssignSlotsInput) error {
	a.revoked.Add(int32(len(in.Revoke)))
	return nil
}

func (a *admissionStandIn) LoadAllocationFile(_ context.Context, ref activities.AllocationFileRef) (*queue.ConfigUpdate, error) {
	a.file.mu.Lock()
	defer a.file.mu.Unlock()
	files := queue.ConfigFiles{Allocations: []byte(a.file.data), HasAllocations: true, Settings: []byte(a.file.settings), HasSettings: a.file.settings != ""}
	return queue.ReadConfigFiles(queue.Config{Version: ref.Version, RejectedVersion: ref.RejectedVersion}, files, a.file.version), nil
}

// saveHistory writes one run's history into testdata, for the replay tests.
func saveHistory(t *testing.T, c client.Client, id, runID, file string) {
	t.Helper()
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: runEvents(t, c, id, runID)})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("testdata", file), append(data, '\n'), 0o644))
}
