package workflows

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
)

func TestPick(t *testing.T) {
	jobs := []v1alpha1.SchedulingJob{
		{Name: "big", Replication: 3},
		{Name: "small", Replication: 1},
		{Name: "pair", Replication: 2},
	}
	// Three free slots: big takes them; nothing is left for the others.
	if diff := cmp.Diff(map[string][]int32{"big": {0, 2, 7}}, Pick(v1alpha1.QueueBased, jobs, []int32{7, 2, 0})); diff != "" {
		t.Errorf("QueueBased (-want +got)\n%s", diff)
	}
	// Two free slots: big cannot start, the ones behind it can (the first runnable jobs).
	got := Pick(v1alpha1.QueueBased, jobs, []int32{1, 4})
	if diff := cmp.Diff(map[string][]int32{"small": {1}}, got); diff != "" {
		t.Errorf("QueueBased with two free (-want +got)\n%s", diff)
	}
	slotted := []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2, SlotIDs: []int32{3, 5}},
		{Name: "b", Replication: 1, SlotIDs: []int32{5}},
		{Name: "c", Replication: 1, SlotIDs: []int32{6}},
	}
	if diff := cmp.Diff(map[string][]int32{"a": {3, 5}, "c": {6}}, Pick(v1alpha1.SlotBased, slotted, []int32{3, 5, 6})); diff != "" {
		t.Errorf("SlotBased (-want +got)\n%s", diff)
	}
	if got := Pick(v1alpha1.SlotBased, slotted, []int32{3}); len(got) != 0 {
		t.Errorf("SlotBased with slot 5 taken started %v", got)
	}
}

// fakeBed plays the cluster for the Scheduling's activities: four slots, taken while a job
// the Scheduling started runs, and job workflows that report Running after a second and
// Completed after runFor.
type fakeBed struct {
	mu        sync.Mutex
	env       *testsuite.TestWorkflowEnvironment
	runFor    map[string]time.Duration
	taken     map[string][]int32
	requests  []string
	released  []string
	finalized bool
	// neverPlaced jobs report nothing: their pods never get their slots.
	neverPlaced map[string]bool
}

func (f *fakeBed) readSlots(_ context.Context, _ activities.ReconcileTestBedInput) (activities.TestBedSlots, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := []int32{0, 1, 2, 3}
	free := slices.DeleteFunc(slices.Clone(all), func(p int32) bool {
		for _, s := range f.taken {
			if slices.Contains(s, p) {
				return true
			}
		}
		return false
	})
	return activities.TestBedSlots{Exists: true, Positions: all, Free: free}, nil
}

func (f *fakeBed) requestCreation(_ context.Context, in activities.RequestCreationInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, in.Job)
	f.taken[in.Job] = in.Request.Slots
	job, run := in.Job, in.Request.Run
	if f.neverPlaced[job] {
		return nil
	}
	f.env.RegisterDelayedCallback(func() {
		f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: job, Run: run, State: v1alpha1.JobRunning})
	}, time.Second)
	f.env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		delete(f.taken, job)
		f.mu.Unlock()
		f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: job, Run: run, State: v1alpha1.JobCompleted})
	}, f.runFor[job])
	return nil
}

func newSchedulingEnv(t *testing.T, spec v1alpha1.SchedulingSpec, claim func(activities.ClaimInput) activities.ClaimResult) (*testsuite.TestWorkflowEnvironment, *fakeBed, *[]v1alpha1.SchedulingStatus) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SchedulingWorkflow)
	env.RegisterActivity(&activities.Activities{})
	// These tests cover the first version, where a Scheduling claims its test bed and picks
	// its own jobs (histories of it must keep working); admission_scheduling_test.go covers
	// the Admission version.
	env.OnGetVersion("admission", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	f := &fakeBed{env: env, taken: map[string][]int32{}, runFor: map[string]time.Duration{}}
	var statuses []v1alpha1.SchedulingStatus
	env.OnActivity(acts.ReadScheduling, mock.Anything, mock.Anything).Return(activities.SchedulingObservation{Exists: true, Spec: spec}, nil)
	env.OnActivity(acts.ClaimTestBed, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
		return activities.ClaimResult{Claimed: in.Names}, nil
	})
	env.OnActivity(acts.ClaimJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
		return claim(in), nil
	})
	env.OnActivity(acts.ReleaseJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.released = append(f.released, in.Names...)
		return nil
	})
	env.OnActivity(acts.ReleaseTestBed, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.NudgeWorkflows, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(f.readSlots)
	env.OnActivity(acts.RequestCreation, mock.Anything, mock.Anything).Return(f.requestCreation)
	env.OnActivity(acts.WriteSchedulingStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.WriteSchedulingStatusInput) error {
		statuses = append(statuses, in.Status)
		return nil
	})
	env.OnActivity(acts.RemoveSchedulingFinalizer, mock.Anything, mock.Anything).Return(func(context.Context, activities.SchedulingKey) error {
		f.finalized = true
		return nil
	})
	return env, f, &statuses
}

func claimAll(in activities.ClaimInput) activities.ClaimResult {
	return activities.ClaimResult{Claimed: in.Names}
}

func jobStatus(st v1alpha1.SchedulingStatus, name string) v1alpha1.SchedulingJobStatus {
	for _, j := range st.Jobs {
		if j.Name == name {
			return j
		}
	}
	return v1alpha1.SchedulingJobStatus{}
}

// Four slots, jobs of 2, 2 and 1 slots: the first two start at once, the third when a slot
// frees up; the Scheduling completes, holds its jobs, and releases them when cancelled.
func TestSchedulingWorkflow_QueueBasedRunsTheQueueInFreeSlots(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 2}, {Name: "c", Replication: 1},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 5 * time.Second}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", Resync: time.Minute})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"a", "b", "c"}, f.requests)
	require.ElementsMatch(t, []string{"a", "b", "c"}, f.released, "cancelling releases every job")
	require.True(t, f.finalized)

	var completed *v1alpha1.SchedulingStatus
	for i := range *statuses {
		if (*statuses)[i].State == v1alpha1.SchedulingCompleted {
			completed = &(*statuses)[i]
			break
		}
	}
	require.NotNil(t, completed, "a Completed status was written")
	require.Equal(t, int32(3), completed.FinishedJobs)
	require.Equal(t, time.Duration(0), jobStatus(*completed, "a").WaitTime.Duration)
	// c waits for a's slots: a runs 10 s.
	require.Equal(t, 10*time.Second, jobStatus(*completed, "c").WaitTime.Duration)
	require.Equal(t, []int32{0}, jobStatus(*completed, "c").Slots, "the first slot a freed")
}

// Another Scheduling holds one of the jobs: everything claimed is given back, the
// Scheduling fails and says who holds what.
func TestSchedulingWorkflow_LosingAJobReleasesEverything(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 1}, {Name: "b", Replication: 1}, {Name: "c", Replication: 1},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, func(in activities.ClaimInput) activities.ClaimResult {
		return activities.ClaimResult{Claimed: []string{"a", "c"}, Lost: []activities.LostClaim{{Name: "b", Holder: "other"}}}
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, f.requests, "no application is asked for")
	require.Contains(t, f.released, "a")
	require.Contains(t, f.released, "c")
	var failed bool
	for _, st := range *statuses {
		if st.State == v1alpha1.SchedulingFailed {
			failed = true
			require.Contains(t, st.Message, "job b is held by scheduling other")
		}
	}
	require.True(t, failed)
}

// SlotBased: a job waits for exactly its slots.
func TestSchedulingWorkflow_SlotBasedWaitsForItsSlots(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.SlotBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2, SlotIDs: []int32{1, 2}},
		{Name: "b", Replication: 1, SlotIDs: []int32{2}},
		{Name: "c", Replication: 1, SlotIDs: []int32{3}},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 5 * time.Second, "c": 5 * time.Second}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", Resync: time.Minute})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"a", "c", "b"}, f.requests, "c starts beside a; b waits for slot 2")
	last := (*statuses)[len(*statuses)-1]
	require.Equal(t, 10*time.Second, jobStatus(last, "b").WaitTime.Duration)
}

// A job whose pods never get placed holds the next decision only for the placement timeout;
// a job added meanwhile through the extend Update starts after it. A bad extension is
// refused by the validator and changes nothing.
func TestSchedulingWorkflow_ExtendAndPlacementTimeout(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "stuck", Replication: 2}}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.neverPlaced = map[string]bool{"stuck": true}
	f.runFor = map[string]time.Duration{"late": time.Minute}
	var refused, accepted error
	var queued any
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(ExtendUpdate, "bad", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { refused = err },
			OnAccept:   func() {},
			OnComplete: func(any, error) {},
		}, []v1alpha1.SchedulingJob{{Name: "late", Replication: 1}}) // drops "stuck"
		env.UpdateWorkflow(ExtendUpdate, "good", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { accepted = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { queued, accepted = v, err },
		}, []v1alpha1.SchedulingJob{{Name: "stuck", Replication: 2}, {Name: "late", Replication: 1}})
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", Resync: time.Minute, PlacementTimeout: 10 * time.Minute})

	require.NoError(t, env.GetWorkflowError())
	require.ErrorContains(t, refused, "job stuck is queued already and cannot be removed")
	require.NoError(t, accepted)
	require.Equal(t, 2, queued)
	require.Equal(t, []string{"stuck", "late"}, f.requests)
	last := (*statuses)[len(*statuses)-1]
	require.Equal(t, 10*time.Minute, jobStatus(last, "late").WaitTime.Duration, "late starts when the placement wait gives up")
	require.Contains(t, jobStatus(last, "stuck").Message, "did not all hold their slots within 10m0s")
}

// The API and the bridge may pass on the same edit at once: two extends in flight with the
// same list append each new job once, and the Scheduling still ends.
func TestSchedulingWorkflow_ConcurrentExtendsAppendOnce(t *testing.T) {
	results, statuses, f := concurrentExtends(t, false)
	require.Equal(t, []any{2, 2}, results)
	require.Equal(t, []string{"first", "late"}, f.requests)
	last := statuses[len(statuses)-1]
	require.Equal(t, v1alpha1.SchedulingCompleted, last.State)
	require.Len(t, last.Jobs, 2)
}

// A run recorded before the lock (version "serialize-extends" absent) keeps interleaving
// its extends, as it did then, so that its history replays.
func TestSchedulingWorkflow_ConcurrentExtendsBeforeTheLockInterleave(t *testing.T) {
	results, _, _ := concurrentExtends(t, true)
	// Both appended "late": whichever appended second saw a queue of 3, the duplicate the
	// lock removed. Which one returns first varies between runs.
	require.Contains(t, results, 3, "both appended: the behaviour the lock removed")
}

// concurrentExtends sends two identical extends at once, each adding "late"; old runs the
// workflow as recorded before the serialize-extends version.
func concurrentExtends(t *testing.T, old bool) ([]any, []v1alpha1.SchedulingStatus, *fakeBed) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "first", Replication: 2}}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	if old {
		env.OnGetVersion("serialize-extends", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	}
	f.runFor = map[string]time.Duration{"first": 10 * time.Minute, "late": time.Minute}
	var results []any
	var errs []error
	extended := []v1alpha1.SchedulingJob{{Name: "first", Replication: 2}, {Name: "late", Replication: 1}}
	env.RegisterDelayedCallback(func() {
		for _, id := range []string{"api", "bridge"} {
			env.UpdateWorkflow(ExtendUpdate, id, &testsuite.TestUpdateCallback{
				OnReject:   func(err error) { errs = append(errs, err) },
				OnAccept:   func() {},
				OnComplete: func(v any, err error) { results, errs = append(results, v), append(errs, err) },
			}, extended)
		}
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", Resync: time.Minute})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []error{nil, nil}, errs)
	return results, *statuses, f
}

// Past StepsPerRun the workflow continues as new with its queue; the next run picks up
// where it stopped, without claiming again.
func TestSchedulingWorkflow_ContinueAsNewCarriesTheQueue(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 4}, {Name: "b", Replication: 4},
	}}
	env, f, _ := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 10 * time.Second}
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", Resync: time.Minute, StepsPerRun: 1})

	var next *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &next)
	var in SchedulingInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(next.Input, &in))
	require.NotNil(t, in.Carried)
	require.True(t, in.Carried.HoldsBed)
	require.Len(t, in.Carried.Entries, 2)
	require.Equal(t, v1alpha1.JobCompleted, in.Carried.Entries[0].State, "a ran in the first run")

	env2, f2, statuses := newSchedulingEnv(t, spec, func(activities.ClaimInput) activities.ClaimResult {
		t.Error("the next run claimed again")
		return activities.ClaimResult{}
	})
	f2.runFor = f.runFor
	env2.RegisterDelayedCallback(env2.CancelWorkflow, time.Hour)
	in.StepsPerRun = 500
	env2.ExecuteWorkflow(SchedulingWorkflow, in)
	require.NoError(t, env2.GetWorkflowError())
	require.Equal(t, []string{"b"}, f2.requests)
	var completed bool
	for _, st := range *statuses {
		completed = completed || st.State == v1alpha1.SchedulingCompleted
	}
	require.True(t, completed)
}
