//go:build integration

package workflows_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/activities"
	"slotplane/installation"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/queue"
	"slotplane/workflows"
)

// shiftingBed is a test bed whose free slots change once Admission has sent a grant: slots
// 0 and 1 are free until then, and from then on only 2 and 3 are (0 and 1 went to someone
// else in between). It records every grant Admission sends.
type shiftingBed struct {
	mu     sync.Mutex
	grants []queue.Grant
}

func (b *shiftingBed) ReadSlots(context.Context, activities.TestBedRef) (activities.TestBedSlots, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	free := []int32{0, 1}
	if len(b.grants) > 0 {
		free = []int32{2, 3}
	}
	return activities.TestBedSlots{Exists: true, Positions: []int32{0, 1, 2, 3}, Free: free,
		SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}, nil
}

func (b *shiftingBed) SignalWorkflows(_ context.Context, in activities.SignalWorkflowsInput) (activities.SignalWorkflowsResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range in.Signals {
		if s.Name != workflows.AdmittedBatchSignal {
			continue
		}
		raw, err := json.Marshal(s.Arg)
		if err != nil {
			return activities.SignalWorkflowsResult{}, err
		}
		gs := []queue.Grant{{}}
		var into any = &gs[0]
		if s.Name == workflows.AdmittedBatchSignal {
			into = &gs
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return activities.SignalWorkflowsResult{}, err
		}
		b.grants = append(b.grants, gs...)
	}
	return activities.SignalWorkflowsResult{}, nil
}

func (b *shiftingBed) LoadAllocationFile(context.Context, activities.AllocationFileRef) (*queue.ConfigUpdate, error) {
	return nil, nil
}

func (b *shiftingBed) CheckHolds(context.Context, activities.CheckHoldsInput) (activities.HoldsCheck, error) {
	return activities.HoldsCheck{}, nil
}

func (b *shiftingBed) AssignSlots(context.Context, activities.AssignSlotsInput) error { return nil }

// loseTheWorker makes the worker's first workflow task that ran the activity named after (a
// local activity or an activity) fail right after it returned, as a worker killed at that
// moment would: the task is not completed, so nothing it did since the last completed task
// is in the history, and another attempt runs it again.
type loseTheWorker struct {
	interceptor.WorkerInterceptorBase
	lost  *atomic.Bool
	after string
}

func (l *loseTheWorker) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &loseInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, l: l}
}

type loseInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	l *loseTheWorker
}

func (i *loseInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&loseOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, l: i.l})
}

type loseOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	l *loseTheWorker
}

func (o *loseOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	f := o.Next.ExecuteLocalActivity(ctx, activityType, args...)
	if activityType != o.l.after {
		return f
	}
	return lostAfter{Future: f, l: o.l}
}

func (o *loseOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	f := o.Next.ExecuteActivity(ctx, activityType, args...)
	if activityType != o.l.after {
		return f
	}
	return lostAfter{Future: f, l: o.l}
}

// startLosingWorker starts a worker of queue on c with wf and acts registered, which is lost
// once, after the activity named after returns (loseTheWorker); the flag says it was. The
// worker stops when t ends.
func startLosingWorker(t *testing.T, c client.Client, queue, after string, wf, acts any) *atomic.Bool {
	t.Helper()
	var lost atomic.Bool
	wk := sdkworker.New(c, queue, sdkworker.Options{Interceptors: []interceptor.WorkerInterceptor{&loseTheWorker{lost: &lost, after: after}}})
	wk.RegisterWorkflow(wf)
	wk.RegisterActivity(acts)
	require.NoError(t, wk.Start())
	t.Cleanup(wk.Stop)
	return &lost
}

type lostAfter struct {
	workflow.Future
	l *loseTheWorker
}

func (f lostAfter) Get(ctx workflow.Context, v any) error {
	err := f.Future.Get(ctx, v)
	if err == nil && f.l.lost.CompareAndSwap(false, true) {
		panic("the worker is lost after " + f.l.after + " returned")
	}
	return err
}

// A worker lost after Admission's grants went out, before its workflow task completed: what
// Admission holds the job to is the grant that went out, though the slots it would read now
// are others, and any grant sent again is the same. Had it decided again on a new read, it
// would hold the job to slots 2 and 3 while the Scheduling runs it in 0 and 1 (the grant it
// has), and would give 0 and 1 to the next job.
func TestAdmission_AWorkerLostAfterItsGrantsWentOutGrantsTheSameSlots(t *testing.T) {
	_, c := temporaltest.Start(t)
	bed := &shiftingBed{}
	lost := startLosingWorker(t, c, "admission-lost", "SignalWorkflows", workflows.AdmissionWorkflow, bed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	id := installation.Default.AdmissionID("ns", "bed")
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "admission-lost", WorkflowTaskTimeout: 2 * time.Second},
		workflows.AdmissionWorkflow, workflows.AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour})
	require.NoError(t, err)
	defer func() { _ = c.TerminateWorkflow(context.Background(), id, "", "test over") }()
	key := queue.JobKey{Scheduling: "sa", SchedulingUID: "uid-sa", Job: "etl", Run: 1}
	_, err = activities.Update(ctx, c, id, workflows.AdmissionRequestUpdate, workflows.AdmissionRequest{JobKey: key, User: "u", Slots: 2})
	require.NoError(t, err)

	// The grant goes out, the worker is lost, and the next attempt completes the task.
	var held []int32
	require.Eventually(t, func() bool {
		if !lost.Load() {
			return false
		}
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueuesQuery)
		if err != nil {
			return false
		}
		var r workflows.AdmissionReport
		if v.Get(&r) != nil || len(r.Running) != 1 {
			return false
		}
		held = slices.Clone(r.Running[0].Slots)
		return true
	}, 45*time.Second, 50*time.Millisecond, "the workflow never went on after the worker was lost")
	slices.Sort(held)
	require.Equal(t, []int32{0, 1}, held, "Admission holds the job to other slots than the grant that went out")
	// A grant sent again comes with the attempt that went on: none, then or for a second
	// after, names other slots.
	other := func() bool {
		bed.mu.Lock()
		defer bed.mu.Unlock()
		for _, g := range bed.grants {
			slots := slices.Clone(g.Slots)
			slices.Sort(slots)
			if g.JobKey != key || g.Refused != "" || !slices.Equal(slots, []int32{0, 1}) {
				t.Logf("grants sent: %+v", bed.grants)
				return true
			}
		}
		return false
	}
	require.False(t, other())
	require.Never(t, other, time.Second, 50*time.Millisecond)
	bed.mu.Lock()
	defer bed.mu.Unlock()
	require.NotEmpty(t, bed.grants)
}
