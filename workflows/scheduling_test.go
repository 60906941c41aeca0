package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/schedplan"
)

// fakeAdmission stands in for everything around one Scheduling workflow: the BatchJobs
// (claims), the test bed's Admission workflow (it grants requests first come, first served
// on four slots, and takes slots back on a release), and the job workflows (a job reports
// Running a second after its application is asked for, and Completed after runFor).
type fakeAdmission struct {
	mu sync.Mutex
	// grantAfter is how long a grant takes to arrive. reportsWithGrant: the job's whole run
	// (Running, Completed) is reported together with its grant, as after a worker that
	// carried the grant out was lost before its task was recorded.
	grantAfter       time.Duration
	reportsWithGrant bool
	env              *testsuite.TestWorkflowEnvironment
	runFor           map[string]time.Duration
	free             []int32
	// waiting holds the requests not granted yet, held the slots of each granted key.
	waiting []AdmissionRequest
	held    map[string][]int32
	// requested: every request Admission received, in order (repeats included); created:
	// every application asked for; admissionReleases: every key Admission was told to
	// release; released: every claim given back.
	requested, created, admissionReleases, released []string
	finalized                                       bool
	// writes: every status write as sent; outOfStep delta writes are refused as the
	// activity refuses one that does not fit the object.
	writes    []activities.WriteSchedulingStatusInput
	wroteAt   []time.Time
	outOfStep int
	// seq numbers the grants; gone are slots whose node left the bed after Admission read
	// it: a creation request naming one fails (ErrSlotsGone), which slotsGone counts, and a
	// late copy of that grant follows. grants is the last grant of each key.
	seq       int64
	gone      map[int32]bool
	slotsGone int
	// gaveBack: every job whose request gave back the grant it held.
	gaveBack []string
	// jobNudges and requestNudges: the job workflows nudged on their own, and by their
	// creation requests.
	jobNudges, requestNudges []string
	grants                   map[string]AdmissionGrant
	// jobsTellAdmission: the jobs' reports say AdmissionTold, and Admission hears their
	// ends from them (as a job's workflow tells it); fromScheduling: what the Scheduling
	// itself sent Admission of its jobs' progress ("started a", "ended a").
	jobsTellAdmission bool
	fromScheduling    []string
	// quietStart: the grants say Admission needs no word of the jobs' starts; quietRequests
	// are the jobs whose creation requests passed that on.
	quietStart    bool
	quietRequests []string
	// batched: the grants of one turn come in one signal (AdmittedBatchSignal), as Admission
	// sends them; onCreate, when set, runs for each creation
	// request written (the caller holds mu).
	batched  bool
	onCreate func(job string)
	// was is the status the Scheduling object shows at the start (a run before this one
	// wrote it), shown the runs its jobs show (activities.JobInfo.Granted).
	was   v1alpha1.SchedulingStatus
	shown map[string]*activities.GrantedRun
}

func newSchedulingEnv(t *testing.T, spec v1alpha1.SchedulingSpec, claim func(activities.ClaimInput) activities.ClaimResult) (*testsuite.TestWorkflowEnvironment, *fakeAdmission, *[]v1alpha1.SchedulingStatus) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SchedulingWorkflow)
	env.RegisterActivity(&activities.Activities{})
	f := &fakeAdmission{env: env, runFor: map[string]time.Duration{}, free: []int32{0, 1, 2, 3}, held: map[string][]int32{}, grants: map[string]AdmissionGrant{}}
	var statuses []v1alpha1.SchedulingStatus
	env.OnActivity(acts.ReadScheduling, mock.Anything, mock.Anything).Return(func(context.Context, activities.SchedulingKey) (activities.SchedulingObservation, error) {
		return activities.SchedulingObservation{Exists: true, UID: "uid-nightly", Spec: spec, Status: f.was}, nil
	})
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(activities.TestBedSlots{Exists: true}, nil)
	env.OnActivity(acts.ClaimJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
		return claim(in), nil
	})
	env.OnActivity(acts.ReadJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ReadJobsInput) ([]activities.JobInfo, error) {
		infos := make([]activities.JobInfo, len(in.Names))
		for i, n := range in.Names {
			infos[i] = activities.JobInfo{Name: n, Exists: true, User: "u", Granted: f.shown[n]}
		}
		return infos, nil
	})
	env.OnActivity(acts.ReleaseJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.released = append(f.released, in.Names...)
		return nil
	})
	env.OnActivity(acts.NudgeWorkflows, mock.Anything, mock.Anything).Return(f.nudge)
	env.OnActivity(acts.RequestCreation, mock.Anything, mock.Anything).Return(f.requestCreation)
	onSignals(env, map[string]func(string, any) error{
		AdmissionReleaseUpdate: func(_ string, arg any) error {
			f.release(arg.(AdmissionKey))
			return nil
		},
		AdmissionEndedUpdate: func(_ string, arg any) error {
			f.mu.Lock()
			f.fromScheduling = append(f.fromScheduling, "ended "+arg.(AdmissionKey).Job)
			f.mu.Unlock()
			f.release(arg.(AdmissionKey))
			return nil
		},
		AdmissionStartedUpdate: func(_ string, arg any) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.fromScheduling = append(f.fromScheduling, "started "+arg.(AdmissionKey).Job)
			return nil
		},
	})
	env.OnActivity(acts.WriteSchedulingStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.WriteSchedulingStatusInput) error {
		f.writes, f.wroteAt = append(f.writes, in), append(f.wroteAt, env.Now())
		if in.Delta && f.outOfStep > 0 {
			f.outOfStep--
			return temporal.NewNonRetryableApplicationError("out of step", activities.ErrStatusOutOfStep, nil)
		}
		// As the object would hold it: a delta write merged into the last status.
		var last v1alpha1.SchedulingStatus
		if n := len(statuses); n > 0 {
			last = statuses[n-1]
		}
		st, ok := activities.ApplyStatus(last, in)
		if !ok {
			return fmt.Errorf("a delta write of %d jobs does not fit a status of %d, for %d in all", len(in.Status.Jobs), len(last.Jobs), in.Status.TotalJobs)
		}
		statuses = append(statuses, st)
		return nil
	})
	env.OnActivity(acts.RemoveSchedulingFinalizer, mock.Anything, mock.Anything).Return(func(context.Context, activities.SchedulingKey) error {
		f.finalized = true
		return nil
	})
	return env, f, &statuses
}

// nudge takes the Admission requests among the nudges (the job workflows' nudges need no
// answer here).
func (f *fakeAdmission) nudge(_ context.Context, in activities.SignalWithStartInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range in.Signals {
		if n.Signal == BatchJobChangedSignal {
			f.jobNudges = append(f.jobNudges, n.WorkflowID)
		}
		reqs, err := admissionRequestsIn(n)
		if err != nil {
			return err
		}
		for _, req := range reqs {
			f.take(req)
		}
	}
	f.grant()
	return nil
}

// inTestEnv is the installation of a workflow the SDK's test environment runs: on its own
// task queue, under an id that is none of slotplane's (so without a prefix).
var inTestEnv = installation.Names{TaskQueue: "default-test-taskqueue"}

// admissionRequestsIn reads the Admission requests a nudge carries: one, a batch, or none.
// The payload crossed the data converter as a map: it is read back as requests.
func admissionRequestsIn(n activities.SignalWithStart) ([]AdmissionRequest, error) {
	if n.Signal != AdmissionRequestUpdate && n.Signal != AdmissionRequestsUpdate {
		return nil, nil
	}
	if n.TaskQueue != inTestEnv.AdmissionQueue() {
		return nil, fmt.Errorf("a request starts Admission on task queue %q, not on %q", n.TaskQueue, inTestEnv.AdmissionQueue())
	}
	raw, err := json.Marshal(n.SignalArg)
	if err != nil {
		return nil, err
	}
	if n.Signal == AdmissionRequestsUpdate {
		var reqs []AdmissionRequest
		return reqs, json.Unmarshal(raw, &reqs)
	}
	var req AdmissionRequest
	return []AdmissionRequest{req}, json.Unmarshal(raw, &req)
}

// take is one request reaching Admission (the caller holds mu).
func (f *fakeAdmission) take(req AdmissionRequest) {
	f.requested = append(f.requested, req.Job)
	if g, ok := f.grants[req.String()]; ok && req.GaveBack != 0 && req.GaveBack == g.Seq {
		if _, held := f.held[req.String()]; held {
			f.gaveBack = append(f.gaveBack, req.Job)
			f.releaseLocked(req.JobKey)
		}
	}
	waits := slices.ContainsFunc(f.waiting, func(w AdmissionRequest) bool { return w.JobKey == req.JobKey })
	if _, granted := f.held[req.String()]; !waits && !granted {
		f.waiting = append(f.waiting, req)
	}
}

// grant gives the head requests their slots while they fit (the caller holds mu).
func (f *fakeAdmission) grant() {
	var batch []AdmissionGrant
	defer func() {
		if len(batch) > 0 {
			f.env.RegisterDelayedCallback(func() { f.env.SignalWorkflow(AdmittedBatchSignal, batch) }, f.grantAfter)
		}
	}()
	for len(f.waiting) > 0 && int(f.waiting[0].Slots) <= len(f.free) {
		req := f.waiting[0]
		f.waiting = f.waiting[1:]
		slots := slices.Clone(f.free[:req.Slots])
		f.free = f.free[req.Slots:]
		f.held[req.String()] = slots
		f.seq++
		g := AdmissionGrant{JobKey: req.JobKey, Queue: "root.default", Slots: slots, Seq: f.seq, QuietStart: f.quietStart}
		f.grants[req.String()] = g
		if f.batched {
			batch = append(batch, g)
			continue
		}
		reports := f.reportsWithGrant
		f.env.RegisterDelayedCallback(func() {
			f.env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{g})
			if reports {
				f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: g.Job, Run: g.Run, State: v1alpha1.JobRunning})
				f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: g.Job, Run: g.Run, State: v1alpha1.JobCompleted})
			}
		}, f.grantAfter)
	}
}

func (f *fakeAdmission) release(k AdmissionKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(k)
	f.grant()
}

func (f *fakeAdmission) releaseLocked(k AdmissionKey) {
	f.admissionReleases = append(f.admissionReleases, k.Job)
	f.waiting = slices.DeleteFunc(f.waiting, func(w AdmissionRequest) bool { return w.JobKey == k })
	if slots, ok := f.held[k.String()]; ok {
		delete(f.held, k.String())
		f.free = append(f.free, slices.DeleteFunc(slots, func(p int32) bool { return f.gone[p] })...)
		slices.Sort(f.free)
	}
}

func (f *fakeAdmission) requestCreation(_ context.Context, in activities.RequestCreationInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.ContainsFunc(in.Request.Slots, func(p int32) bool { return f.gone[p] }) {
		f.slotsGone++
		late := f.grants[AdmissionKey{Scheduling: in.Request.Scheduling, SchedulingUID: in.Request.SchedulingUID, Job: in.Job, Run: 1}.String()]
		f.env.RegisterDelayedCallback(func() { f.env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{late}) }, 0)
		return temporal.NewNonRetryableApplicationError("test bed bed no longer has slot 1", activities.ErrSlotsGone, nil)
	}
	f.created = append(f.created, in.Job)
	if f.onCreate != nil {
		f.onCreate(in.Job)
	}
	if in.Request.QuietStart {
		f.quietRequests = append(f.quietRequests, in.Job)
	}
	if in.Nudge != nil {
		f.requestNudges = append(f.requestNudges, in.Nudge.WorkflowID)
	}
	job, run, told := in.Job, in.Request.Run, f.jobsTellAdmission
	key := AdmissionKey{Scheduling: in.Request.Scheduling, SchedulingUID: in.Request.SchedulingUID, Job: in.Job, Run: in.Request.Run}
	f.env.RegisterDelayedCallback(func() {
		f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: job, Run: run, State: v1alpha1.JobRunning, AdmissionTold: told})
	}, time.Second)
	f.env.RegisterDelayedCallback(func() {
		if told {
			f.release(key) // the job's own release, sent with its report
		}
		f.env.SignalWorkflow(JobProgressSignal, JobProgress{Job: job, Run: run, State: v1alpha1.JobCompleted, AdmissionTold: told})
	}, f.runFor[job])
	return nil
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

// requireCreatedInWaves checks that got is the waves one after another, each wave in any
// order: the creation requests of the grants a Scheduling takes together are written side
// by side (handleGrants), so which of them the fake hears first is the goroutines' choice.
// Each creation request nudges its job's workflow itself, so the nudges come the same way.
func requireCreatedInWaves(t *testing.T, got []string, waves ...[]string) {
	t.Helper()
	rest := got
	for i, wave := range waves {
		require.GreaterOrEqual(t, len(rest), len(wave), "wave %d of %v in %v", i, wave, got)
		require.ElementsMatch(t, wave, rest[:len(wave)], "wave %d in %v", i, got)
		rest = rest[len(wave):]
	}
	require.Empty(t, rest, "nothing after the waves in %v", got)
}

func lastWithState(statuses []v1alpha1.SchedulingStatus, state v1alpha1.SchedulingState) *v1alpha1.SchedulingStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State == state {
			return &statuses[i]
		}
	}
	return nil
}

// Four slots, jobs of 2, 2 and 1 slots: the first two are granted at once, the third when a
// ends and its slots go back to Admission; the Scheduling completes, holds its jobs, and
// releases them when cancelled.
func TestSchedulingWorkflow_QueueBasedRunsTheQueueAsGrantsCome(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 2}, {Name: "c", Replication: 1},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 5 * time.Second}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"a", "b", "c"}, f.requested, "every job is sent to Admission once, in queue order")
	requireCreatedInWaves(t, f.created, []string{"a", "b"}, []string{"c"})
	requireCreatedInWaves(t, f.requestNudges, []string{installation.Default.BatchJobID("ns", "a"), installation.Default.BatchJobID("ns", "b")}, []string{installation.Default.BatchJobID("ns", "c")})
	require.Len(t, f.jobNudges, 6, "the jobs are nudged on their own when claimed and when released, not after their requests")
	require.Equal(t, []string{"a", "c", "b"}, f.admissionReleases, "each job's end gives its slots back: a at 10 s, c at 15 s, b at 20 s")
	require.ElementsMatch(t, []string{"started a", "started b", "started c", "ended a", "ended b", "ended c"}, f.fromScheduling,
		"the jobs' reports do not say Admission heard them: the Scheduling tells it")
	require.Empty(t, f.held, "Admission holds nothing for this Scheduling at the end")
	require.ElementsMatch(t, []string{"a", "b", "c"}, f.released, "cancelling releases every job")
	require.True(t, f.finalized)

	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed, "a Completed status was written")
	require.Equal(t, int32(3), completed.FinishedJobs)
	require.Equal(t, time.Duration(0), jobStatus(*completed, "a").WaitTime.Duration)
	require.Equal(t, 10*time.Second, jobStatus(*completed, "c").WaitTime.Duration, "c is granted the moment a ends")
	require.Equal(t, []int32{0}, jobStatus(*completed, "c").Slots, "the first slot a freed")
}

// A Scheduling whose workflow starts anew (the last run was terminated) takes up its status
// and its jobs' runs as the jobs show them: a job that ended counts as ended, a running one
// as running until it reports its end, a granted one that never started is nudged, and only
// the job that waits is asked for again. A run of an earlier Scheduling of the name (another
// UID) is not this one's: its job waits too.
func TestSchedulingWorkflow_AFreshRunTakesUpItsJobsRuns(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 1}, {Name: "b", Replication: 2}, {Name: "c", Replication: 1}, {Name: "d", Replication: 1}, {Name: "e", Replication: 1},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	started := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	f.was = v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, StartedAt: &metav1.Time{Time: started}, Message: "starting jobs"}
	granted := metav1.NewMicroTime(started.Add(time.Minute))
	run := func(uid string, slots []int32, st v1alpha1.BatchJobState) *activities.GrantedRun {
		return &activities.GrantedRun{Request: v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: uid, TestBed: "bed", Run: 1, Slots: slots, GrantedAt: &granted},
			Slots: slots, State: st, FinishedAt: map[bool]time.Time{true: started.Add(2 * time.Minute)}[st.Ended()]}
	}
	f.shown = map[string]*activities.GrantedRun{
		"a": run("uid-nightly", []int32{3}, v1alpha1.JobCompleted),
		"b": run("uid-nightly", []int32{0, 1}, v1alpha1.JobRunning),
		"c": run("uid-nightly", []int32{2}, ""),
		"e": run("an-older-uid", []int32{3}, v1alpha1.JobCompleted),
	}
	f.free = nil // b and c hold 0-2; a's slot 3 is not free until Admission hears of its end
	f.held = map[string][]int32{"b": {0, 1}, "c": {2}}
	env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		require.ElementsMatch(t, []string{"d", "e"}, f.requested, "only the jobs that wait are asked for")
		require.Empty(t, f.created, "no run is asked for again")
		require.Contains(t, f.jobNudges, installation.Default.BatchJobID("ns", "c"), "c's request is taken up")
		f.held = map[string][]int32{}
		f.free = []int32{0, 1, 2, 3}
		f.grant()
	}, 5*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "c", Run: 1, State: v1alpha1.JobRunning})
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "b", Run: 1, State: v1alpha1.JobCompleted})
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "c", Run: 1, State: v1alpha1.JobFailed, Message: "exit 1"})
	}, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	requireCreatedInWaves(t, f.created, []string{"d", "e"})
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed, "%+v", *statuses)
	require.Equal(t, int32(5), completed.FinishedJobs)
	require.Contains(t, completed.Message, "1 failed")
	require.True(t, completed.StartedAt.Time.Equal(started), "the start is the first run's")
	require.Equal(t, v1alpha1.JobCompleted, jobStatus(*completed, "a").State)
	require.Equal(t, []int32{3}, jobStatus(*completed, "a").Slots)
	require.Equal(t, v1alpha1.JobFailed, jobStatus(*completed, "c").State)
	require.NotEmpty(t, (*statuses)[0].Jobs, "the first write is whole")
	require.Equal(t, v1alpha1.SchedulingScheduling, (*statuses)[0].State, "no Acquiring again")
}

// A job that waits is asked for again every reaskEvery: an Admission that lost its request
// (its workflow ended and started anew) grants it at the next asking, not never.
func TestSchedulingWorkflow_AJobThatWaitsIsAskedForAgain(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 4}, {Name: "b", Replication: 4},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 2 * time.Minute, "b": time.Minute}
	env.RegisterDelayedCallback(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Equal(t, []string{"a", "b"}, f.requested)
		f.waiting = nil // Admission lost b's request
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"a", "b", "b"}, f.requested)
	require.Equal(t, []string{"a", "b"}, f.created)
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Equal(t, reaskEvery, jobStatus(*completed, "b").WaitTime.Duration, "b is granted when it is asked for again")
}

// Grants that come in batches (AdmittedBatchSignal) run the queue as single ones do: the
// jobs of one batch start together, and a stale key in a batch is given back.
func TestSchedulingWorkflow_GrantsInBatchesRunTheQueue(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 1}, {Name: "b", Replication: 2}, {Name: "c", Replication: 1}, {Name: "d", Replication: 2},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.batched = true
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 10 * time.Second, "d": 5 * time.Second}
	stale := AdmissionGrant{JobKey: AdmissionKey{Scheduling: "nightly", SchedulingUID: "uid-old", Job: "a", Run: 1}, Queue: "root.default", Slots: []int32{3}}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{stale}) }, 30*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	requireCreatedInWaves(t, f.created, []string{"a", "b", "c"}, []string{"d"})
	require.Contains(t, f.admissionReleases, "a", "the stale key is given back")
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed, "a Completed status was written")
	require.Equal(t, int32(4), completed.FinishedJobs)
	require.Equal(t, 10*time.Second, jobStatus(*completed, "d").WaitTime.Duration, "d is granted the moment a and c end")
}

// A batch of grants that comes while a run's last step is carried out is taken before the
// run continues as new: its jobs start, none is lost with the run.
func TestSchedulingWorkflow_ABatchInFlightAtContinueAsNewIsTaken(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 4}, {Name: "b", Replication: 1}, {Name: "c", Replication: 1},
	}}
	env, f, _ := newSchedulingEnv(t, spec, claimAll)
	f.batched = true
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 10 * time.Second, "c": 10 * time.Second}
	f.onCreate = func(job string) {
		if job != "a" {
			return
		}
		// While a's creation request is written, two of its slots come free (a shrank, say):
		// Admission grants b and c in one batch, which reaches the Scheduling before its step
		// ends.
		b := AdmissionGrant{JobKey: AdmissionKey{Scheduling: "nightly", SchedulingUID: "uid-nightly", Job: "b", Run: 1}, Queue: "root.default", Slots: []int32{4}, Seq: 100}
		c := AdmissionGrant{JobKey: AdmissionKey{Scheduling: "nightly", SchedulingUID: "uid-nightly", Job: "c", Run: 1}, Queue: "root.default", Slots: []int32{5}, Seq: 101}
		f.env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{b, c})
	}
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 1})
	in := continuedWith[SchedulingInput](t, env)
	require.ElementsMatch(t, []string{"a", "b", "c"}, f.created, "the batch that came during the last step started its jobs in this run")
	for _, e := range in.Carried.Entries {
		require.Equal(t, int32(1), e.Run, "job %s is carried over as started", e.Job.Name)
	}
}

// Jobs whose reports say Admission heard their start and end from them (AdmissionTold) get
// no second word from the Scheduling: Admission is not signalled for them, and the queue
// runs as before on the jobs' own releases. A grant's QuietStart reaches the job in its
// creation request.
func TestSchedulingWorkflow_WhatAJobToldAdmissionIsNotRepeated(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 2}, {Name: "c", Replication: 1},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.jobsTellAdmission, f.quietStart = true, true
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 5 * time.Second}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, f.fromScheduling, "Admission heard it all from the jobs")
	require.Equal(t, []string{"a", "c", "b"}, f.admissionReleases, "the jobs' own releases hand their slots on")
	requireCreatedInWaves(t, f.created, []string{"a", "b"}, []string{"c"})
	require.Equal(t, f.created, f.quietRequests, "every request says what its grant said")
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Equal(t, int32(3), completed.FinishedJobs)
}

// Jobs whose InQueue status their claim wrote are not nudged when claimed: only the one the
// claim left to its workflow is. Released at the end, all three are.
func TestSchedulingWorkflow_JobsTheClaimQueuedAreNotNudged(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 1}, {Name: "b", Replication: 1}, {Name: "c", Replication: 1},
	}}
	env, f, _ := newSchedulingEnv(t, spec, func(in activities.ClaimInput) activities.ClaimResult {
		r := claimAll(in)
		r.Queued = slices.DeleteFunc(slices.Clone(in.Names), func(n string) bool { return n == "b" })
		return r
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.ElementsMatch(t, []string{"a", "b", "c"}, f.created)
	id := func(n string) string { return installation.Default.BatchJobID("ns", n) }
	require.NotEmpty(t, f.jobNudges)
	require.Equal(t, id("b"), f.jobNudges[0], "b when claimed")
	require.ElementsMatch(t, []string{id("a"), id("b"), id("c")}, f.jobNudges[1:], "all three when released")
}

// A grant whose slot left the test bed before the job's request was written is given back:
// Admission releases it and gets the job again, a late copy of the old grant changes nothing,
// and the job runs on its second grant.
func TestSchedulingWorkflow_AGrantWhoseSlotLeftTheBedIsAskedForAgain(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "a", Replication: 2}}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second}
	f.gone = map[int32]bool{1: true}
	// Grants take longer than the pace of status writes, so one says the job waits again.
	f.grantAfter = 3 * schedplan.Pace
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 1, f.slotsGone, "one request named the slot that left")
	require.Equal(t, []string{"a", "a"}, f.requested, "the job is asked for again once; the late copy of its first grant is not taken")
	require.Equal(t, []string{"a"}, f.created)
	require.Equal(t, []string{"a"}, f.gaveBack, "the second request gave the first grant back")
	require.Equal(t, []string{"a", "a"}, f.admissionReleases, "the grant given back, then the job's end")
	require.Empty(t, f.held)
	var waitingAgain bool
	for _, st := range *statuses {
		waitingAgain = waitingAgain || strings.HasPrefix(jobStatus(st, "a").Message, "waiting again: test bed bed no longer has slot 1")
	}
	require.True(t, waitingAgain, "the job's status said why it waits again")
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Equal(t, v1alpha1.JobCompleted, jobStatus(*completed, "a").State)
	require.Equal(t, []int32{0, 2}, jobStatus(*completed, "a").Slots)
}

// Another Scheduling holds one of the jobs: everything claimed is given back, nothing is
// sent to Admission, and the Scheduling fails saying who holds what.
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
	require.Empty(t, f.requested, "nothing is sent to Admission")
	require.Empty(t, f.created, "no application is asked for")
	require.Contains(t, f.released, "a")
	require.Contains(t, f.released, "c")
	failed := lastWithState(*statuses, v1alpha1.SchedulingFailed)
	require.NotNil(t, failed)
	require.Contains(t, failed.Message, "job b is held by scheduling other")
}

// A job added through the extend Update is claimed and sent to Admission, and runs when the
// slots allow. A bad extension is refused by the validator and changes nothing.
func TestSchedulingWorkflow_ExtendSendsTheNewJobsToAdmission(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "long", Replication: 4}}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"long": 10 * time.Minute, "late": time.Minute}
	var refused, accepted error
	var queued any
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(ExtendUpdate, "bad", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { refused = err },
			OnAccept:   func() {},
			OnComplete: func(any, error) {},
		}, []v1alpha1.SchedulingJob{{Name: "late", Replication: 1}}) // drops "long"
		env.UpdateWorkflow(ExtendUpdate, "good", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { accepted = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { queued, accepted = v, err },
		}, []v1alpha1.SchedulingJob{{Name: "long", Replication: 4}, {Name: "late", Replication: 1}})
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.ErrorContains(t, refused, "job long is queued already and cannot be removed")
	require.NoError(t, accepted)
	require.Equal(t, 2, queued)
	require.Equal(t, []string{"long", "late", "late", "late"}, f.requested,
		"late is asked for when the extension adds it, and again every reaskEvery while it waits (at 5 and 10 minutes)")
	require.Equal(t, []string{"long", "late"}, f.created)
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Equal(t, 10*time.Minute, jobStatus(*completed, "late").WaitTime.Duration, "late waits for long's four slots")
}

// The extend validator judges the new list by the Scheduling's own rules (crds/v1alpha1),
// the ones the API and the CRD apply: a list they would refuse is refused, names the field at
// fault, and changes nothing; a good one after them is taken.
func TestSchedulingWorkflow_ExtendRefusesWhatTheSchemaRefuses(t *testing.T) {
	long := v1alpha1.SchedulingJob{Name: "long", Replication: 4}
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{long}}
	env, f, _ := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"long": 10 * time.Minute, "late": time.Minute}
	many := func(n int, replication int32) []v1alpha1.SchedulingJob {
		jobs := []v1alpha1.SchedulingJob{long}
		for i := range n {
			jobs = append(jobs, v1alpha1.SchedulingJob{Name: fmt.Sprintf("job-%d", i), Replication: replication})
		}
		return jobs
	}
	bad := []struct {
		jobs []v1alpha1.SchedulingJob
		want string
	}{
		{[]v1alpha1.SchedulingJob{long, {Name: "late", Replication: 1}, {Name: "late", Replication: 2}}, `spec.jobs[2].name: Duplicate value: "late"`},
		{[]v1alpha1.SchedulingJob{long, {Name: "late", Replication: v1alpha1.MaxReplication + 1}}, "spec.jobs[1].replication: Invalid value: 1025"},
		{[]v1alpha1.SchedulingJob{long, {Name: "late", Replication: 1, SlotIDs: []int32{0}}}, "spec.jobs[1].slotIDs: Forbidden"},
		{[]v1alpha1.SchedulingJob{long, {Name: "", Replication: 1}}, "spec.jobs[1].name: Required value"},
		{many(v1alpha1.MaxSchedulingJobs, 1), "spec.jobs: Too many: 1001"},
		{many(16, v1alpha1.MaxReplication), "spec.jobs: Invalid value: 16388"},
	}
	refused := make([]error, len(bad))
	var accepted error
	var queued any
	env.RegisterDelayedCallback(func() {
		for i, b := range bad {
			env.UpdateWorkflow(ExtendUpdate, fmt.Sprintf("bad-%d", i), &testsuite.TestUpdateCallback{
				OnReject:   func(err error) { refused[i] = err },
				OnAccept:   func() {},
				OnComplete: func(any, error) {},
			}, b.jobs)
		}
		env.UpdateWorkflow(ExtendUpdate, "good", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { accepted = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { queued, accepted = v, err },
		}, []v1alpha1.SchedulingJob{long, {Name: "late", Replication: 1}})
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	for i, b := range bad {
		require.ErrorContains(t, refused[i], b.want, "list %d", i)
	}
	require.NoError(t, accepted)
	require.Equal(t, 2, queued)
	require.Equal(t, []string{"long", "late", "late", "late"}, f.requested, "no refused list reached Admission (late waits 10 minutes: asked again twice)")
}

// The API and the bridge may pass on the same edit at once: two extends in flight with the
// same list append each new job once, send it to Admission once, and the Scheduling ends.
func TestSchedulingWorkflow_ConcurrentExtendsAppendOnce(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "first", Replication: 2}}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
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
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []error{nil, nil}, errs)
	require.Equal(t, []any{2, 2}, results)
	require.Equal(t, []string{"first", "late"}, f.requested)
	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Len(t, completed.Jobs, 2)
}

// Past StepsPerRun the workflow continues as new with its queue; the next run asks again
// only for what still waits (Admission takes the repeat as the same request), and never
// claims again.
func TestSchedulingWorkflow_ContinueAsNewCarriesTheQueue(t *testing.T) {
	spec, f, in := firstRunOfOneStep(t)
	require.NotNil(t, in.Carried)
	require.Equal(t, "uid-nightly", in.Carried.UID)
	require.Len(t, in.Carried.Entries, 2)
	require.Equal(t, int32(1), in.Carried.Entries[0].Run, "a was granted and started in the first run")
	require.Equal(t, []int32{0, 1, 2, 3}, in.Carried.Entries[0].Slots)
	require.Equal(t, int32(0), in.Carried.Entries[1].Run, "b still waits")

	// The next run: Admission still holds a's slots and b's request.
	env2, f2, statuses := nextRunEnv(t, spec, f, func(activities.ClaimInput) activities.ClaimResult {
		t.Error("the next run claimed again")
		return activities.ClaimResult{}
	})
	require.False(t, in.Carried.AskedAt.IsZero())
	env2.SetStartTime(in.Carried.AskedAt.Add(reaskEvery)) // a run that asks again
	env2.RegisterDelayedCallback(func() {
		env2.SignalWorkflow(JobProgressSignal, JobProgress{Job: "a", Run: 1, State: v1alpha1.JobCompleted})
	}, 5*time.Second)
	runNext(t, env2, in)
	require.Equal(t, []string{"b"}, f2.requested, "only the waiting job is asked for again")
	require.Equal(t, []string{"b"}, f2.created)
	require.NotNil(t, lastWithState(*statuses, v1alpha1.SchedulingCompleted))
}

// firstRunOfOneStep runs a Scheduling of jobs a and b (4 slots each, 10 s) on 4 free slots
// until it continues as new after one step (a granted, b waiting), and returns its spec,
// its Admission and the input of the next run.
func firstRunOfOneStep(t *testing.T) (v1alpha1.SchedulingSpec, *fakeAdmission, SchedulingInput) {
	t.Helper()
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 4}, {Name: "b", Replication: 4},
	}}
	env, f, _ := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 10 * time.Second}
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 1})
	return spec, f, continuedWith[SchedulingInput](t, env)
}

// nextRunEnv is the environment of the next run of firstRunOfOneStep: its Admission holds
// what the first run's held (a's slots, b's request).
func nextRunEnv(t *testing.T, spec v1alpha1.SchedulingSpec, first *fakeAdmission, claim func(activities.ClaimInput) activities.ClaimResult) (*testsuite.TestWorkflowEnvironment, *fakeAdmission, *[]v1alpha1.SchedulingStatus) {
	t.Helper()
	env, f, statuses := newSchedulingEnv(t, spec, claim)
	f.runFor, f.held, f.free, f.waiting = first.runFor, first.held, first.free, first.waiting
	return env, f, statuses
}

// runNext runs in, the continue-as-new input of firstRunOfOneStep, in env (nextRunEnv) with
// its own steps per run, until it is cancelled an hour in.
func runNext(t *testing.T, env *testsuite.TestWorkflowEnvironment, in SchedulingInput) {
	t.Helper()
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	in.StepsPerRun = 500
	env.ExecuteWorkflow(SchedulingWorkflow, in)
	require.NoError(t, env.GetWorkflowError())
}

// A long Scheduling claims, reads and sends its jobs a batch of 100 at a time, so that no
// activity outlives its minute; a job held elsewhere in the second batch stops the claims
// there, and every job claimed so far is given back.
func TestSchedulingWorkflow_LongQueuesGoInBatches(t *testing.T) {
	var jobs []v1alpha1.SchedulingJob
	for i := range 250 {
		jobs = append(jobs, v1alpha1.SchedulingJob{Name: fmt.Sprintf("j%03d", i), Replication: 1})
	}
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: jobs}

	var batches []int
	env, f, _ := newSchedulingEnv(t, spec, func(in activities.ClaimInput) activities.ClaimResult {
		batches = append(batches, len(in.Names))
		return claimAll(in)
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 100000})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{100, 100, 50}, batches)
	require.Len(t, f.requested, 250, "every job reached Admission, in order")
	require.Equal(t, "j249", f.requested[249])

	batches = nil
	env, f, statuses := newSchedulingEnv(t, spec, func(in activities.ClaimInput) activities.ClaimResult {
		batches = append(batches, len(in.Names))
		if slices.Contains(in.Names, "j150") {
			r := claimAll(in)
			r.Claimed = slices.DeleteFunc(r.Claimed, func(n string) bool { return n == "j150" })
			r.Lost = []activities.LostClaim{{Name: "j150", Holder: "other"}}
			return r
		}
		return claimAll(in)
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int{100, 100}, batches, "the third batch is never claimed")
	require.Greater(t, len(f.released), 199)
	require.Equal(t, "j199", f.released[198], "the 199 jobs claimed are given back at once")
	require.NotContains(t, f.released[:199], "j150")
	require.Empty(t, f.requested)
	require.Contains(t, lastWithState(*statuses, v1alpha1.SchedulingFailed).Message, "job j150 is held by scheduling other")
}

// A job's progress that comes in the same turn as its grant (a worker carried the grant out,
// and was lost before its task was recorded) is applied after the grant: the job completes,
// and so does the Scheduling.
func TestSchedulingWorkflow_ProgressThatComesWithItsGrantCounts(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 2},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.reportsWithGrant = true
	f.runFor = map[string]time.Duration{"a": 10 * time.Hour, "b": 10 * time.Hour} // reported with the grant only
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})
	require.NoError(t, env.GetWorkflowError())

	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed, "the Scheduling completed")
	require.Equal(t, int32(2), completed.FinishedJobs)
	require.Equal(t, []string{"a", "b"}, f.admissionReleases, "each job's end reached Admission")
}

// While only the jobs' progress changes, status writes come at most one per schedplan.Pace, and
// a change nothing follows is still written; a change of the state is written at once.
func TestSchedulingWorkflow_StatusWritesArePaced(t *testing.T) {
	var jobs []v1alpha1.SchedulingJob
	for i := range 40 {
		jobs = append(jobs, v1alpha1.SchedulingJob{Name: fmt.Sprintf("j%02d", i), Replication: 1})
	}
	jobs = append(jobs, v1alpha1.SchedulingJob{Name: "last", Replication: 1})
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: jobs}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	for _, j := range jobs {
		f.runFor[j.Name] = 200 * time.Millisecond // 40 jobs on 4 slots: about 2 s
	}
	f.runFor["last"] = 10 * time.Hour // it says Running at 1 s, and nothing follows
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 100000})
	require.NoError(t, env.GetWorkflowError())

	require.Positive(t, requireProgressPaced(t, f, schedplan.Pace))
	require.Less(t, len(f.writes), 15, "41 jobs' starts and ends took %d writes", len(f.writes))

	last := (*statuses)[len(*statuses)-1]
	require.Equal(t, v1alpha1.SchedulingCancelled, last.State)
	before := lastWithState(*statuses, v1alpha1.SchedulingScheduling)
	require.NotNil(t, before)
	require.Equal(t, int32(40), before.FinishedJobs, "the last write before the cancellation has every end")
	require.Equal(t, v1alpha1.JobRunning, jobStatus(*before, "last").State, "and the start that nothing followed")
	for i, at := range f.wroteAt {
		if f.writes[i].Status.State == v1alpha1.SchedulingCancelled {
			require.Equal(t, time.Hour, at.Sub(f.wroteAt[0]).Round(time.Second), "the cancellation is written at once")
			break
		}
	}
}

// A Scheduling of more than schedplan.EntriesPerSecond jobs writes its progress less often, in proportion
// to its size: 600 jobs, a write at most every 6 s.
func TestSchedulingWorkflow_ABigSchedulingsStatusIsPacedByItsSize(t *testing.T) {
	var jobs []v1alpha1.SchedulingJob
	for i := range 600 {
		jobs = append(jobs, v1alpha1.SchedulingJob{Name: fmt.Sprintf("j%03d", i), Replication: 1})
	}
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: jobs}
	env, f, _ := newSchedulingEnv(t, spec, claimAll)
	for _, j := range jobs {
		f.runFor[j.Name] = 400 * time.Millisecond // 600 jobs on 4 slots: about 60 s
	}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 100000})
	require.NoError(t, env.GetWorkflowError())

	progressOnly := requireProgressPaced(t, f, 600*time.Second/schedplan.EntriesPerSecond)
	require.Greater(t, progressOnly, 5)
	require.Less(t, progressOnly, 15, "60 s of progress at one write per 6 s")
}

// requireProgressPaced checks that each status write that carries only progress (the state
// and message of the write before) came at least pace after the one before, and says how
// many such writes there were.
func requireProgressPaced(t *testing.T, f *fakeAdmission, pace time.Duration) int {
	t.Helper()
	var progressOnly int
	for i := 1; i < len(f.writes); i++ {
		prev, cur := f.writes[i-1].Status, f.writes[i].Status
		if prev.State != cur.State || prev.Message != cur.Message {
			continue
		}
		progressOnly++
		require.GreaterOrEqual(t, f.wroteAt[i].Sub(f.wroteAt[i-1]), pace, "write %d carries only progress and came %s after the one before", i, f.wroteAt[i].Sub(f.wroteAt[i-1]))
	}
	return progressOnly
}

// After its first write, a run sends only the jobs whose status changed, so a long queue's
// history does not grow with its length at every step; a delta the object cannot take
// (someone else wrote the status) is followed by a whole write.
func TestSchedulingWorkflow_StatusWritesSendOnlyWhatChanged(t *testing.T) {
	var jobs []v1alpha1.SchedulingJob
	for i := range 60 {
		jobs = append(jobs, v1alpha1.SchedulingJob{Name: fmt.Sprintf("j%02d", i), Replication: 1})
	}
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: jobs}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	for _, j := range jobs {
		f.runFor[j.Name] = 5 * time.Second
	}
	f.outOfStep = 1
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 100000})
	require.NoError(t, env.GetWorkflowError())

	require.False(t, f.writes[0].Delta, "a run's first write is whole")
	require.Len(t, f.writes[0].Status.Jobs, 60)
	sent, deltas, refusedAt := 0, 0, -1
	for i, w := range f.writes {
		sent += len(w.Status.Jobs)
		if w.Delta {
			deltas++
			if refusedAt < 0 {
				refusedAt = i // the fake refuses the first delta
			}
		}
	}
	require.Positive(t, refusedAt)
	require.False(t, f.writes[refusedAt+1].Delta, "a refused delta is followed by a whole write")
	require.Len(t, f.writes[refusedAt+1].Status.Jobs, 60)
	require.Greater(t, deltas, 20)
	whole := 60 * len(f.writes)
	require.Less(t, sent*5, whole, "the writes sent %d job statuses; whole ones would have sent %d", sent, whole)
	t.Logf("%d writes sent %d job statuses (whole writes: %d)", len(f.writes), sent, whole)

	completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
	require.NotNil(t, completed)
	require.Len(t, completed.Jobs, 60)
	for _, j := range completed.Jobs {
		require.Equal(t, v1alpha1.JobCompleted, j.State, j.Name)
	}
}

// A run that starts less than reaskEvery after the last asked Admission for every waiting
// job does not ask again: Admission holds the requests. The jobs it asked for still start.
func TestSchedulingWorkflow_ARunSoonAfterTheLastAsksNothingAgain(t *testing.T) {
	spec, f, in := firstRunOfOneStep(t)
	env2, f2, statuses := nextRunEnv(t, spec, f, claimAll)
	env2.SetStartTime(in.Carried.AskedAt.Add(reaskEvery - time.Minute))
	env2.RegisterDelayedCallback(func() {
		env2.SignalWorkflow(JobProgressSignal, JobProgress{Job: "a", Run: 1, State: v1alpha1.JobCompleted})
	}, 5*time.Second)
	runNext(t, env2, in)
	require.Empty(t, f2.requested, "the run asked again")
	require.Equal(t, []string{"b"}, f2.created, "b, asked for by the first run, still started")
	require.NotNil(t, lastWithState(*statuses, v1alpha1.SchedulingCompleted))
}

// A run continued as new by the code before AskedAt, WrittenTop and WroteAt were carried
// (its input has none of them) asks Admission again for every waiting job and writes its
// whole status at once, as runs did then.
func TestSchedulingWorkflow_ARunCarriedFromBeforeAsksAndWritesAtOnce(t *testing.T) {
	spec, f, in := firstRunOfOneStep(t)
	in.Carried.AskedAt, in.Carried.WrittenTop, in.Carried.WroteAt = time.Time{}, nil, time.Time{}
	env2, f2, _ := nextRunEnv(t, spec, f, claimAll)
	env2.SetStartTime(f.wroteAt[len(f.wroteAt)-1].Add(100 * time.Millisecond))
	runNext(t, env2, in)
	require.NotEmpty(t, f2.requested)
	require.Equal(t, slices.Repeat([]string{"b"}, int(time.Hour/reaskEvery)), f2.requested,
		"the waiting job is asked for again at the start, then every reaskEvery while it waits the hour")
	require.NotEmpty(t, f2.writes)
	require.Less(t, f2.wroteAt[0].Sub(f.wroteAt[len(f.wroteAt)-1]), schedplan.Pace, "the first write waited for a pace it knew nothing of")
	require.False(t, f2.writes[0].Delta)
}

// The next run of a Scheduling paces its first write from the last run's last write: a
// Scheduling that continues as new more often than its pace does not write its whole status
// at every start, and what the last run put off is still written, whole, when it is due.
func TestSchedulingWorkflow_TheNextRunPacesItsFirstWrite(t *testing.T) {
	spec, f, in := firstRunOfOneStep(t)
	require.NotNil(t, in.Carried.WrittenTop, "the run carries what it wrote last")
	require.False(t, in.Carried.WroteAt.IsZero())
	require.Nil(t, in.Carried.WrittenTop.Jobs, "without the jobs")
	require.NotEmpty(t, in.Carried.Entries[0].Slots, "a was granted in the first run")
	for _, w := range f.writes {
		require.Empty(t, jobStatus(w.Status, "a").Slots, "the first run put off writing a's grant")
	}

	env2, f2, _ := nextRunEnv(t, spec, f, claimAll)
	env2.SetStartTime(in.Carried.WroteAt.Add(100 * time.Millisecond))
	runNext(t, env2, in)
	require.NotEmpty(t, f2.writes)
	require.GreaterOrEqual(t, f2.wroteAt[0].Sub(in.Carried.WroteAt), schedplan.Pace, "the next run wrote at its start")
	require.False(t, f2.writes[0].Delta, "the next run's first write is whole")
	require.Len(t, f2.writes[0].Status.Jobs, 2)
	require.Equal(t, in.Carried.Entries[0].Slots, jobStatus(f2.writes[0].Status, "a").Slots, "and has the grant the last run put off writing")
}

// A Scheduling cancelled while nothing happens (its jobs wait or run, no status to write)
// cleans up at once: it does not loop on the cancelled context until it continues as new,
// which would lose the cancellation.
func TestSchedulingWorkflow_CancelledWhileIdleCleansUp(t *testing.T) {
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 4}, {Name: "b", Replication: 4},
	}}
	env, f, statuses := newSchedulingEnv(t, spec, claimAll)
	f.runFor = map[string]time.Duration{"a": 10 * time.Hour}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly", StepsPerRun: 5})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the run ended, not continued as new")
	require.True(t, f.finalized)
	require.ElementsMatch(t, []string{"a", "b"}, f.released)
	require.NotNil(t, lastWithState(*statuses, v1alpha1.SchedulingCancelled))
}

// An ended Scheduling with ttlSecondsAfterFinished deletes its object that long after it
// ended, by its UID, and releases its jobs; cancelled before then (its object deleted by
// someone), it releases them without deleting anything.
func TestSchedulingWorkflow_TimeToLiveAfterItEnded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancelAt time.Duration // 0: never
		deleted  bool
	}{
		{name: "the time to live passes", deleted: true},
		{name: "deleted before", cancelAt: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, TTLSecondsAfterFinished: ptr.To[int32](600),
				Jobs: []v1alpha1.SchedulingJob{{Name: "a", Replication: 2}, {Name: "b", Replication: 2}}}
			env, f, statuses := newSchedulingEnv(t, spec, claimAll)
			f.runFor = map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second}
			var deletes []activities.DeleteSchedulingInput
			var deletedAt time.Time
			env.OnActivity(acts.DeleteScheduling, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.DeleteSchedulingInput) error {
				deletes, deletedAt = append(deletes, in), env.Now()
				return nil
			})
			if tc.cancelAt > 0 {
				env.RegisterDelayedCallback(env.CancelWorkflow, tc.cancelAt)
			}
			env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			require.ElementsMatch(t, []string{"a", "b"}, f.released)
			require.True(t, f.finalized)
			completed := lastWithState(*statuses, v1alpha1.SchedulingCompleted)
			require.NotNil(t, completed)
			if !tc.deleted {
				require.Empty(t, deletes)
				return
			}
			require.Equal(t, []activities.DeleteSchedulingInput{{Key: activities.SchedulingKey{Namespace: "ns", Name: "nightly"}, UID: "uid-nightly"}}, deletes)
			require.Equal(t, 10*time.Minute, deletedAt.Sub(completed.FinishedAt.Time).Round(time.Second), "deleted 600 s after it ended")
			last := (*statuses)[len(*statuses)-1]
			require.Contains(t, last.Message, "ttlSecondsAfterFinished")
		})
	}
}
