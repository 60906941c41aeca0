//go:build integration

package workflows_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/operatorapp"
	"slotplane/workflows"
)

// jobStandIn answers a BatchJobWorkflow's activities by name: claimed with a request, the
// application runs and completes, then the job is deleted.
type jobStandIn struct {
	mu      sync.Mutex
	gone    bool
	done    chan struct{}
	once    sync.Once
	written v1alpha1.BatchJobStatus // the last status written, which an observation reads
}

func (s *jobStandIn) ObserveJob(context.Context, activities.JobKey) (activities.JobObservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return activities.JobObservation{Status: v1alpha1.BatchJobStatus{Application: &v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: operatorapp.Name("wordcount", "nightly", 1)}}}, nil
	}
	return activities.JobObservation{Exists: true, Holder: "nightly", Status: s.written,
		Request: &v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{0, 1}, Run: 1}}, nil
}

func (s *jobStandIn) CreateApplication(_ context.Context, in activities.CreateApplicationInput) (activities.CreatedApplication, error) {
	return activities.CreatedApplication{ApplicationRef: v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: operatorapp.Name(in.Job.Name, in.Request.Scheduling, in.Request.Run)}}, nil
}

func (s *jobStandIn) WaitPlaced(context.Context, activities.AppKey) (activities.AppProgress, error) {
	time.Sleep(50 * time.Millisecond)
	return activities.AppProgress{Placed: 2}, nil
}

func (s *jobStandIn) WaitFinished(context.Context, activities.AppKey) (activities.AppProgress, error) {
	time.Sleep(100 * time.Millisecond)
	return activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil
}

func (s *jobStandIn) WriteJobStatus(_ context.Context, in activities.WriteJobStatusInput) error {
	s.mu.Lock()
	s.written = in.Status
	s.mu.Unlock()
	if in.Status.State == v1alpha1.JobCompleted {
		s.once.Do(func() { close(s.done) }) // a local activity's write may come again
	}
	return nil
}

func (s *jobStandIn) DeleteApplication(context.Context, activities.AppKey) error { return nil }

// SignalWorkflows: no Scheduling or Admission runs here, so nobody hears the job.
func (s *jobStandIn) SignalWorkflows(_ context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
	var out activities.SignalWorkflowsResult
	for i := range in.Signals {
		out.NotRunning = append(out.NotRunning, i)
	}
	return out, nil
}

// schedulingStandIn answers a SchedulingWorkflow's activities: four slots, two jobs of two
// that the stand-in "runs" by signalling their progress.
type schedulingStandIn struct {
	c         client.Client
	id        string
	mu        sync.Mutex
	taken     map[string][]int32
	completed chan struct{}
	once      sync.Once
}

func (s *schedulingStandIn) ReadScheduling(context.Context, activities.SchedulingKey) (activities.SchedulingObservation, error) {
	return activities.SchedulingObservation{Exists: true, UID: "uid-nightly", Spec: v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 3},
	}}}, nil
}

func (s *schedulingStandIn) ClaimJobs(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
	return activities.ClaimResult{Claimed: in.Names}, nil
}

func (s *schedulingStandIn) ReleaseJobs(context.Context, activities.ClaimInput) error { return nil }

// NudgeWorkflows plays Admission: every request is granted the next free slots at once, and
// the job then runs as RequestCreation makes it.
func (s *schedulingStandIn) NudgeWorkflows(ctx context.Context, in activities.SignalWithStartInput) error {
	for _, n := range in.Signals {
		var reqs []workflows.AdmissionRequest
		raw, _ := json.Marshal(n.SignalArg)
		switch n.Signal {
		case workflows.AdmissionRequestUpdate:
			reqs = make([]workflows.AdmissionRequest, 1)
			if err := json.Unmarshal(raw, &reqs[0]); err != nil {
				return err
			}
		case workflows.AdmissionRequestsUpdate:
			if err := json.Unmarshal(raw, &reqs); err != nil {
				return err
			}
		}
		for _, req := range reqs {
			if err := s.grant(ctx, req); err != nil {
				return err
			}
		}
	}
	return nil
}

// grant gives a request the next free slots.
func (s *schedulingStandIn) grant(ctx context.Context, req workflows.AdmissionRequest) error {
	s.mu.Lock()
	var slots []int32
	for p := int32(0); p < 16 && len(slots) < int(req.Slots); p++ {
		if !s.used(p) {
			slots = append(slots, p)
		}
	}
	s.taken[req.Job] = slots
	s.mu.Unlock()
	return s.c.SignalWorkflow(ctx, s.id, "", workflows.AdmittedBatchSignal, []workflows.AdmissionGrant{{JobKey: req.JobKey, Queue: "root.default", Slots: slots}})
}

func (s *schedulingStandIn) used(p int32) bool {
	for _, t := range s.taken {
		for _, q := range t {
			if q == p {
				return true
			}
		}
	}
	return false
}

// SignalWorkflows is the worker's own, through the embedded server.
func (s *schedulingStandIn) SignalWorkflows(ctx context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
	return (&activities.Activities{Temporal: s.c, Updates: workflows.AdmissionUpdates, Batched: workflows.AdmissionBatched}).SignalWorkflows(ctx, in)
}

func (s *schedulingStandIn) ReadJobs(_ context.Context, in activities.ReadJobsInput) ([]activities.JobInfo, error) {
	out := make([]activities.JobInfo, len(in.Names))
	for i, n := range in.Names {
		out[i] = activities.JobInfo{Name: n, Exists: true, User: "u"}
	}
	return out, nil
}
func (s *schedulingStandIn) RemoveSchedulingFinalizer(context.Context, activities.SchedulingKey) error {
	return nil
}

func (s *schedulingStandIn) ReadSlots(context.Context, activities.TestBedRef) (activities.TestBedSlots, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := activities.TestBedSlots{Exists: true, Positions: []int32{0, 1, 2, 3}}
	for _, p := range out.Positions {
		free := true
		for _, t := range s.taken {
			for _, q := range t {
				free = free && q != p
			}
		}
		if free {
			out.Free = append(out.Free, p)
		}
	}
	return out, nil
}

func (s *schedulingStandIn) RequestCreation(_ context.Context, in activities.RequestCreationInput) error {
	s.mu.Lock()
	s.taken[in.Job] = in.Request.Slots
	s.mu.Unlock()
	// The job runs for a while as a stand-in application would: Running after 100 ms, ended
	// 200 ms later.
	go func() {
		ctx := context.Background()
		time.Sleep(100 * time.Millisecond)
		_ = s.c.SignalWorkflow(ctx, s.id, "", workflows.JobProgressSignal, workflows.JobProgress{Job: in.Job, Run: in.Request.Run, State: v1alpha1.JobRunning})
		time.Sleep(200 * time.Millisecond)
		s.mu.Lock()
		delete(s.taken, in.Job)
		s.mu.Unlock()
		_ = s.c.SignalWorkflow(ctx, s.id, "", workflows.JobProgressSignal, workflows.JobProgress{Job: in.Job, Run: in.Request.Run, State: v1alpha1.JobCompleted})
	}()
	return nil
}

func (s *schedulingStandIn) WriteSchedulingStatus(_ context.Context, in activities.WriteSchedulingStatusInput) error {
	if in.Status.State == v1alpha1.SchedulingCompleted {
		s.once.Do(func() { close(s.completed) })
	}
	return nil
}

// TestRecordJobHistories records a BatchJobWorkflow and a SchedulingWorkflow run on the
// embedded server with stand-in activities (SLOTPLANE_RECORD=1, `make record-histories`).
func TestRecordJobHistories(t *testing.T) {
	if os.Getenv("SLOTPLANE_RECORD") != "1" {
		t.Skip("set SLOTPLANE_RECORD=1 to re-record workflow histories")
	}
	_, c := temporaltest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("batchjob", func(t *testing.T) {
		job := &jobStandIn{done: make(chan struct{})}
		w := sdkworker.New(c, "record-jobs", sdkworker.Options{})
		w.RegisterWorkflow(workflows.BatchJobWorkflow)
		w.RegisterActivity(job)
		require.NoError(t, w.Start())
		defer w.Stop()
		id := installation.Default.BatchJobID("ns", "wordcount")
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "record-jobs"}, workflows.BatchJobWorkflow, workflows.BatchJobInput{Namespace: "ns", Name: "wordcount"})
		require.NoError(t, err)
		<-job.done
		job.mu.Lock()
		job.gone = true
		job.mu.Unlock()
		require.NoError(t, c.SignalWorkflow(ctx, id, "", workflows.BatchJobChangedSignal, nil))
		require.NoError(t, run.Get(ctx, nil))
		saveHistory(t, c, id, run.GetRunID(), "batchjob.json")
	})

	t.Run("scheduling", func(t *testing.T) {
		id := installation.Default.SchedulingID("ns", "nightly")
		sched := &schedulingStandIn{c: c, id: id, taken: map[string][]int32{}, completed: make(chan struct{})}
		w := sdkworker.New(c, "record-scheduling", sdkworker.Options{})
		w.RegisterWorkflow(workflows.SchedulingWorkflow)
		w.RegisterActivity(sched)
		require.NoError(t, w.Start())
		defer w.Stop()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "record-scheduling"}, workflows.SchedulingWorkflow,
			workflows.SchedulingInput{Namespace: "ns", Name: "nightly"})
		require.NoError(t, err)
		<-sched.completed
		require.NoError(t, c.CancelWorkflow(ctx, id, ""))
		var out workflows.SchedulingOutput
		require.NoError(t, run.Get(ctx, &out))
		require.Equal(t, v1alpha1.SchedulingCompleted, out.Status.State)
		saveHistory(t, c, id, run.GetRunID(), "scheduling.json")
	})
}
