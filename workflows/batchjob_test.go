package workflows

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/metrics"
	"slotplane/operatorapp"
	"slotplane/queue"
)

// jobWorld is the cluster as a BatchJobWorkflow's activities see it.
type jobWorld struct {
	mu       sync.Mutex
	obs      activities.JobObservation
	written  []v1alpha1.BatchJobStatus
	reported []JobProgress
	deleted  []string
	// admissionReleases are the job's own releases to Admission: "<workflow id> <key>".
	admissionReleases []string
	// admissionStarts are the starts the job told Admission itself, in the same form.
	admissionStarts []string
	// firstExecutor is how long the first executor takes to hold its slot (0: a second).
	firstExecutor time.Duration
	// driverSeen is when a first wait that ends before any executor is placed saw the
	// driver running (zero: not seen).
	driverSeen time.Time
	// createdAt is the moment CreateApplication says the application was asked for (zero:
	// it does not say).
	createdAt time.Time
}

func (w *jobWorld) firstAfter(d time.Duration) time.Duration {
	if w.firstExecutor > 0 {
		return w.firstExecutor
	}
	return d
}

func (w *jobWorld) set(f func(*activities.JobObservation)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.obs)
}

// answerLooksAndWrites has the job's observations read w and its status writes go to w.
func (w *jobWorld) answerLooksAndWrites(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(acts.ObserveJob, mock.Anything, mock.Anything).Return(func(context.Context, activities.JobKey) (activities.JobObservation, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.obs, nil
	})
	env.OnActivity(acts.WriteJobStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.WriteJobStatusInput) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.written = append(w.written, in.Status)
		w.obs.Status = in.Status
		return nil
	})
}

// workflowEnv is a test environment of the workflow wf with slotplane's activities (to be
// mocked); the workflow's metrics go to m when given.
func workflowEnv(wf any, m ...*metrics.Temporal) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	if len(m) > 0 {
		suite.SetMetricsHandler(m[0].Handler())
	}
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(wf)
	env.RegisterActivity(&activities.Activities{})
	return env
}

func newJobEnv(t *testing.T, w *jobWorld, placed, finished activities.AppProgress, createErr error, m ...*metrics.Temporal) *testsuite.TestWorkflowEnvironment {
	env := workflowEnv(BatchJobWorkflow, m...)
	w.answerLooksAndWrites(env)
	env.OnActivity(acts.CreateApplication, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CreateApplicationInput) (activities.CreatedApplication, error) {
		return activities.CreatedApplication{ApplicationRef: v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: operatorapp.Name(in.Job.Name, in.Request.Scheduling, in.Request.Run)},
			CreatedAt: w.createdAt}, createErr
	})
	firstPlaced := placed
	if !placed.Outcome.Terminal && placed.Placed > 0 {
		firstPlaced.Placed = 1
	}
	// The first wait for an executor, bounded by Within as the activity bounds it: one that
	// comes later answers with nothing placed, and the wait after it has the rest.
	firstIn := w.firstAfter(time.Second)
	// Every wait names the run and its application's creation, whose placements the worker's
	// watch remembers (AppKey.Scheduling, Since).
	named := func(k activities.AppKey) bool { return k.Scheduling != "" && !k.Since.IsZero() }
	bounded := mock.MatchedBy(func(k activities.AppKey) bool { return named(k) && k.Enough == 1 && k.Within > 0 })
	first := mock.MatchedBy(func(k activities.AppKey) bool { return named(k) && k.Enough == 1 && k.Within == 0 })
	all := mock.MatchedBy(func(k activities.AppKey) bool { return named(k) && k.Enough == 0 })
	if firstIn <= submitQuiet {
		env.OnActivity(acts.WaitPlaced, mock.Anything, bounded).After(firstIn).Return(firstPlaced, nil)
		env.OnActivity(acts.WaitPlaced, mock.Anything, first).After(firstIn).Return(firstPlaced, nil)
	} else {
		env.OnActivity(acts.WaitPlaced, mock.Anything, bounded).After(submitQuiet).Return(activities.AppProgress{DriverRunningAt: w.driverSeen}, nil)
		env.OnActivity(acts.WaitPlaced, mock.Anything, first).After(firstIn-submitQuiet).Return(firstPlaced, nil)
	}
	env.OnActivity(acts.WaitPlaced, mock.Anything, all).After(2*time.Second).Return(placed, nil)
	env.OnActivity(acts.WaitFinished, mock.Anything, mock.Anything).After(30*time.Second).Return(finished, nil)
	env.OnActivity(acts.DeleteApplication, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.AppKey) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.deleted = append(w.deleted, in.App.Name)
		return nil
	})
	onSignals(env, map[string]func(string, any) error{
		JobProgressSignal: func(id string, arg any) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			if id == installation.Default.SchedulingID("ns", "nightly") {
				w.reported = append(w.reported, arg.(JobProgress))
			}
			return nil
		},
		AdmissionEndedUpdate: func(id string, arg any) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			heard := id + " " + arg.(AdmissionKey).String()
			if last := w.written[len(w.written)-1]; !last.State.Ended() {
				heard = fmt.Sprintf("%s, before the status said it ended (%s)", heard, last.State)
			}
			w.admissionReleases = append(w.admissionReleases, heard)
			return nil
		},
		AdmissionStartedUpdate: func(id string, arg any) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.admissionStarts = append(w.admissionStarts, id+" "+arg.(AdmissionKey).String())
			return nil
		},
	})
	return env
}

// deleteJobAfter deletes the job after d and nudges its workflow, which then ends.
func deleteJobAfter(env *testsuite.TestWorkflowEnvironment, w *jobWorld, d time.Duration) {
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Exists = false })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, d)
}

// releaseJobAfter takes the job's claim and request away after d (its Scheduling released
// it) and nudges its workflow.
func releaseJobAfter(env *testsuite.TestWorkflowEnvironment, w *jobWorld, d time.Duration) {
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Holder, o.Request = "", nil })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, d)
}

func states(w *jobWorld) []v1alpha1.BatchJobState {
	var out []v1alpha1.BatchJobState
	for _, s := range w.written {
		out = append(out, s.State)
	}
	return out
}

var request = &v1alpha1.CreationRequest{Scheduling: "nightly", TestBed: "bed", Slots: []int32{1, 2}, Run: 1}

// Claimed with a request: the job goes through Submitted and Running to Completed and tells
// its Scheduling each step; the job's deletion then removes the application and ends it.
func TestBatchJobWorkflow_RunsTheRequestToCompletion(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	// The first executor held its slot within submitQuiet: the held-back Submitted report of
	// the new application is not made, the first executor's is.
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w))
	final := w.written[len(w.written)-1]
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 1), final.Application.Name)
	require.Equal(t, []int32{1, 2}, final.Slots)
	require.Equal(t, 3*time.Second, final.RunningAt.Sub(final.SubmittedAt.Time))
	require.Equal(t, 30*time.Second, final.FinishedAt.Sub(final.RunningAt.Time))
	require.Len(t, w.reported, 3)
	require.True(t, w.reported[0].Started, "the first executor in its slot: the job left Starting")
	require.Equal(t, "the first executor holds its slot", w.reported[0].Message)
	require.Equal(t, v1alpha1.JobCompleted, w.reported[2].State)
	require.Equal(t, []string{operatorapp.Name("wordcount", "nightly", 1)}, w.deleted, "the job's deletion takes the application along")
}

// A one-slot job whose executor is placed by the first wait: the start goes with Running, in
// one status write and one message to the Scheduling, and the second wait is not run.
func TestBatchJobWorkflow_AStartWithEveryExecutorPlacedIsOneReport(t *testing.T) {
	oneSlot := *request
	oneSlot.Slots = []int32{4}
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &oneSlot}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 1}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w), "no Submitted between: held back, then moot")
	final := w.written[len(w.written)-1]
	require.Equal(t, time.Second, final.RunningAt.Sub(final.SubmittedAt.Time), "running when the first wait ended: the wait for all was not run")
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 1), w.written[0].Application.Name)
	require.NotNil(t, w.written[0].Phases.ApplicationCreatedAt, "the application's creation is in the phases all the same")
	require.Len(t, w.reported, 2)
	require.Equal(t, v1alpha1.JobRunning, w.reported[0].State)
	require.True(t, w.reported[0].Started, "Running carries the start, for StateAware")
}

// callsCounted counts a job's calls by name and by how they ran: in the workflow task (a
// local activity) or in an activity of their own.
type callsCounted struct {
	mu                 sync.Mutex
	inTask, asActivity map[string]int
}

func countCalls(env *testsuite.TestWorkflowEnvironment) *callsCounted {
	c := &callsCounted{inTask: map[string]int{}, asActivity: map[string]int{}}
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.inTask[info.ActivityType.Name]++
	})
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.asActivity[info.ActivityType.Name]++
	})
	return c
}

// looks is how many times the job looked at itself so far (ObserveJob).
func (c *callsCounted) looks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inTask["ObserveJob"] + c.asActivity["ObserveJob"]
}

// A run whose pods are all placed within the quiet second waits for them in the task that
// made its application (firstWaitInTask): no activity waits for its placement.
func TestBatchJobWorkflow_AStartPlacedWithinTheQuietSecondIsWaitedInTheTask(t *testing.T) {
	oneSlot := *request
	oneSlot.Slots = []int32{4}
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &oneSlot}, firstExecutor: 300 * time.Millisecond}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 1}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	calls := countCalls(env)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w))
	require.Equal(t, 1, calls.inTask["WaitPlaced"])
	require.Zero(t, calls.asActivity["WaitPlaced"], "placed within the second: no activity waited")
	require.True(t, w.reported[0].Started)
}

// A run whose pods take longer than the quiet second waits the second in the task, says
// Submitted, and waits on in activities as before.
func TestBatchJobWorkflow_ASlowStartWaitsOnInAnActivity(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}, firstExecutor: 10 * time.Second}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	calls := countCalls(env)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w))
	require.Equal(t, 1, calls.inTask["WaitPlaced"], "the quiet second, in the task")
	require.Equal(t, 2, calls.asActivity["WaitPlaced"], "the first executor, then the rest")
}

// A first wait that fails in the task is not retried there: an activity waits instead, and
// the run goes on.
func TestBatchJobWorkflow_AFirstWaitThatFailsInTheTaskIsWaitedInAnActivity(t *testing.T) {
	oneSlot := *request
	oneSlot.Slots = []int32{4}
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &oneSlot}}
	env := workflowEnv(BatchJobWorkflow)
	w.answerLooksAndWrites(env)
	env.OnActivity(acts.CreateApplication, mock.Anything, mock.Anything).Return(activities.CreatedApplication{ApplicationRef: v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: operatorapp.Name("wordcount", "nightly", 1)}}, nil)
	env.OnActivity(acts.WaitPlaced, mock.Anything, mock.Anything).Return(func(ctx context.Context, _ activities.AppKey) (activities.AppProgress, error) {
		if activity.GetInfo(ctx).IsLocalActivity {
			return activities.AppProgress{}, fmt.Errorf("the watch is not ready")
		}
		return activities.AppProgress{Placed: 1}, nil
	})
	env.OnActivity(acts.WaitFinished, mock.Anything, mock.Anything).After(30*time.Second).Return(activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	env.OnActivity(acts.DeleteApplication, mock.Anything, mock.Anything).Return(nil)
	onSignals(env, map[string]func(string, any) error{})
	calls := countCalls(env)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w))
	require.Equal(t, 1, calls.inTask["WaitPlaced"], "tried once in the task")
	require.Equal(t, 1, calls.asActivity["WaitPlaced"])
}

// An application found ended when the job looks (a restart) completes the job without
// Running in between.
func TestBatchJobWorkflow_AnEndedApplicationIsAJump(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	ended := activities.AppProgress{Outcome: operatorapp.Outcome{State: "FAILED", Terminal: true, Message: "driver OOM"}}
	env := newJobEnv(t, w, ended, ended, nil)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobFailed}, states(w))
	require.Contains(t, w.written[0].Message, "driver OOM")
}

// The Scheduling releases the job while it runs: the wait is cancelled, the application
// deleted, and the job is Ready again.
func TestBatchJobWorkflow_ReleaseSendsTheJobBackToReady(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	releaseJobAfter(env, w, 10*time.Second)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobReady}, states(w))
	require.Equal(t, []string{operatorapp.Name("wordcount", "nightly", 1)}, w.deleted)
	require.Nil(t, w.written[2].Application)
}

// A run released while its new application's Submitted report is held back (before its pods
// are placed) says Submitted first: the status names the application, so the job's next look
// finds it and deletes it. Without that, the application would be left running, its run
// forgotten.
func TestBatchJobWorkflow_ARunLeftWhileItsSubmitIsHeldBackNamesItsApplication(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	releaseJobAfter(env, w, submitQuiet/2)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobReady}, states(w))
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 1), w.written[0].Application.Name)
	require.Equal(t, []string{operatorapp.Name("wordcount", "nightly", 1)}, w.deleted, "the released run's application is deleted")
}

// A run whose pods are not placed within submitQuiet says Submitted then, with its driver's
// start as the wait saw it, and waits on: the first executor's report and Running follow.
func TestBatchJobWorkflow_ASlowStartSaysSubmittedAfterTheQuietSecond(t *testing.T) {
	driver := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}, firstExecutor: 10 * time.Second, driverSeen: driver}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted}, states(w))
	require.Equal(t, submittedMessage, w.written[0].Message)
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 1), w.written[0].Application.Name)
	require.True(t, w.written[0].Phases.DriverRunningAt.Time.Equal(driver), "the driver's start as the first wait saw it")
	require.Equal(t, "the first executor holds its slot", w.written[1].Message)
	require.True(t, w.written[3].Phases.DriverRunningAt.Time.Equal(driver))
	require.False(t, w.reported[0].Started)
	require.True(t, w.reported[1].Started)
}

// A job that cannot make an application fails with the reason, and the Scheduling hears it.
func TestBatchJobWorkflow_InvalidJobFails(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	bad := temporal.NewNonRetryableApplicationError("test bed bed has no slot 9", activities.ErrInvalidJob, nil)
	env := newJobEnv(t, w, activities.AppProgress{}, activities.AppProgress{}, bad)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobFailed}, states(w))
	require.Contains(t, w.written[0].Message, "has no slot 9")
	require.Len(t, w.reported, 1)
	require.False(t, w.reported[0].AdmissionTold, "the job sent Admission no release of its own: the Scheduling tells")
	require.Empty(t, w.admissionReleases)
}

// No executor holds its slot within queue.StartingTimeout: the workflow's timer says the job
// started anyway (the seeds' fallback), and the wait for every executor goes on.
func TestBatchJobWorkflow_StartingTimesOut(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}, firstExecutor: time.Hour}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	deleteJobAfter(env, w, 2*time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Len(t, w.reported, 4)
	require.True(t, w.reported[1].Started)
	require.Contains(t, w.reported[1].Message, "no executor holds its slot after 5m0s")
	final := w.written[len(w.written)-1]
	require.Equal(t, queue.StartingTimeout+2*time.Second, final.RunningAt.Sub(final.SubmittedAt.Time))
}

// A run's end goes to its test bed's Admission from the job's own workflow, keyed as the
// Scheduling keys it, before the status write, and so does its start unless the grant said
// Admission needs no word of it (QuietStart); the status records the run's phases, each
// once, the executors' placements in the order they were seen.
func TestBatchJobWorkflow_TellsAdmissionOfItsEndAndRecordsThePhases(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet start %t", quiet), func(t *testing.T) { tellsAdmissionOfItsEnd(t, quiet) })
	}
}

func tellsAdmissionOfItsEnd(t *testing.T, quiet bool) {
	granted := metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	req := *request
	req.SchedulingUID, req.GrantedAt, req.QuietStart = "uid-nightly", &granted, quiet
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}}
	driver := time.Date(2026, 11, 25, 12, 0, 1, 0, time.UTC)
	placedAt := []time.Time{driver.Add(100 * time.Millisecond), driver.Add(250 * time.Millisecond)}
	placed := activities.AppProgress{Placed: 2, DriverRunningAt: driver, PlacedAt: placedAt}
	ended := time.Date(2026, 11, 25, 12, 0, 40, 0, time.UTC)
	env := newJobEnv(t, w, placed, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}, EndedAt: ended}, nil)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	key := queue.JobKey{Scheduling: "nightly", SchedulingUID: "uid-nightly", Job: "wordcount", Run: 1}
	require.Equal(t, []string{installation.Default.AdmissionID("ns", "bed") + " " + key.String()}, w.admissionReleases)
	if quiet {
		require.Empty(t, w.admissionStarts, "Admission needs no word of the start")
	} else {
		require.Equal(t, []string{installation.Default.AdmissionID("ns", "bed") + " " + key.String()}, w.admissionStarts, "the start too, once")
	}
	require.True(t, slices.ContainsFunc(w.reported, func(p JobProgress) bool { return p.State == v1alpha1.JobRunning }), "%+v", w.reported)
	for _, p := range w.reported {
		require.True(t, p.AdmissionTold, "Admission heard every report's news from the job, or needs none: %+v", p)
	}
	ph := w.written[len(w.written)-1].Phases
	require.NotNil(t, ph)
	require.True(t, ph.AdmittedAt.Equal(&granted), "admitted at the grant")
	require.NotNil(t, ph.ApplicationCreatedAt)
	require.True(t, ph.DriverRunningAt.Time.Equal(driver))
	require.Len(t, ph.ExecutorsPlacedAt, 2, "each executor once, though two waits saw the first")
	require.True(t, ph.ExecutorsPlacedAt[1].Time.Equal(placedAt[1]))
	require.True(t, ph.RunningAt.Time.Equal(placedAt[1]), "running from the last executor's placement")
	require.True(t, ph.EndedAt.Time.Equal(ended))
}

// A run that waits for Admission to hear of its start tells Admission, once, that its
// driver runs and has asked for no executor, then its start: as soon as the first wait
// sees the driver alone (with the Submitted report), or when a later wait does. A quiet
// start tells Admission neither.
func TestBatchJobWorkflow_TellsAdmissionOfADriverWithoutExecutors(t *testing.T) {
	for _, tc := range []struct {
		name string
		// inFirst: the first wait (submitQuiet) sees the driver alone.
		inFirst, quiet bool
	}{{"seen by a later wait", false, false}, {"seen by the first wait", true, false}, {"quiet start", false, true}} {
		t.Run(tc.name, func(t *testing.T) { tellsAdmissionOfADriverAlone(t, tc.inFirst, tc.quiet) })
	}
}

func tellsAdmissionOfADriverAlone(t *testing.T, inFirst, quiet bool) {
	granted := metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	req := *request
	req.SchedulingUID, req.GrantedAt, req.QuietStart = "uid-nightly", &granted, quiet
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}}
	env := workflowEnv(BatchJobWorkflow)
	w.answerLooksAndWrites(env)
	env.OnActivity(acts.CreateApplication, mock.Anything, mock.Anything).Return(activities.CreatedApplication{
		ApplicationRef: v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: "wordcount-app"}}, nil)
	driver := time.Date(2026, 11, 25, 12, 0, 1, 0, time.UTC)
	alone := activities.AppProgress{DriverRunningAt: driver}
	firstSeen := activities.AppProgress{}
	if inFirst {
		firstSeen = alone
	}
	var untilAlone []bool // what each wait for the first executor after the first was asked
	var mu sync.Mutex
	env.OnActivity(acts.WaitPlaced, mock.Anything, mock.MatchedBy(func(k activities.AppKey) bool { return k.Enough == 1 && k.Within > 0 })).
		After(submitQuiet).Return(firstSeen, nil)
	env.OnActivity(acts.WaitPlaced, mock.Anything, mock.MatchedBy(func(k activities.AppKey) bool { return k.Enough == 1 && k.Within == 0 })).Return(
		func(_ context.Context, k activities.AppKey) (activities.AppProgress, error) {
			mu.Lock()
			untilAlone = append(untilAlone, k.UntilDriverAlone)
			mu.Unlock()
			if k.UntilDriverAlone {
				return alone, nil // at once: the mock's clock does not move here
			}
			return activities.AppProgress{DriverRunningAt: driver, Asked: 2, Placed: 1, PlacedAt: []time.Time{driver.Add(20 * time.Second)}}, nil
		})
	placed := activities.AppProgress{DriverRunningAt: driver, Asked: 2, Placed: 2, PlacedAt: []time.Time{driver.Add(20 * time.Second), driver.Add(21 * time.Second)}}
	env.OnActivity(acts.WaitPlaced, mock.Anything, mock.MatchedBy(func(k activities.AppKey) bool { return k.Enough == 0 })).Return(placed, nil)
	env.OnActivity(acts.WaitFinished, mock.Anything, mock.Anything).After(30*time.Second).Return(
		activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	env.OnActivity(acts.DeleteApplication, mock.Anything, mock.Anything).Return(nil)
	var told []string
	keyOf := func(name string) func(string, any) error {
		return func(_ string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, name+" "+arg.(AdmissionKey).Job)
			return nil
		}
	}
	onSignals(env, map[string]func(string, any) error{
		AdmissionNoExecutorsUpdate: keyOf("no-executors"),
		AdmissionStartedUpdate:     keyOf("started"),
		AdmissionEndedUpdate:       keyOf("ended"),
	})
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})
	require.NoError(t, env.GetWorkflowError())

	var messages []string
	for _, s := range w.written {
		messages = append(messages, s.Message)
	}
	if quiet {
		require.Equal(t, []string{"ended wordcount"}, told)
		require.Equal(t, []bool{false}, untilAlone, "a quiet start waits for its first executor only")
		require.NotContains(t, messages, driverAloneMessage)
		return
	}
	require.Equal(t, []string{"no-executors wordcount", "started wordcount", "ended wordcount"}, told)
	if inFirst {
		require.Equal(t, []bool{false}, untilAlone, "told with the Submitted report: the wait after it is for the first executor")
		require.Equal(t, driverAloneMessage, messages[0])
	} else {
		require.Equal(t, []bool{true, false}, untilAlone)
		require.Equal(t, []string{submittedMessage, driverAloneMessage}, messages[:2])
	}
	require.Equal(t, v1alpha1.JobCompleted, w.written[len(w.written)-1].State)
}

// A job's workflow continues as new after its run ended, with nudges in flight: the next run
// takes the ended status along and ends the run no second time (no new application, no
// second report to the Scheduling or to Admission, no status write), and still sees the
// job's deletion and takes the application with it.
func TestBatchJobWorkflow_ContinueAsNewAfterTheEndEndsNothingTwice(t *testing.T) {
	granted := metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	req := *request
	req.SchedulingUID, req.GrantedAt = "uid-nightly", &granted
	completed := activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, completed, nil)
	env.RegisterDelayedCallback(func() {
		// Two nudges at once: the first ends the second step, the other is in flight when
		// the run continues as new.
		env.SignalWorkflow(BatchJobChangedSignal, nil)
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount", StepsPerRun: 2})
	in := continuedWith[BatchJobInput](t, env)
	require.NotNil(t, in.Last)
	require.Equal(t, v1alpha1.JobCompleted, in.Last.State)
	require.Equal(t, operatorapp.Name("wordcount", "nightly", 1), in.Last.Application.Name)
	require.Len(t, in.Last.History, 1, "the run's record goes across")
	require.Len(t, w.admissionReleases, 1)
	require.Equal(t, v1alpha1.JobCompleted, w.reported[len(w.reported)-1].State)

	w2 := &jobWorld{obs: w.obs}
	env2 := newJobEnv(t, w2, activities.AppProgress{Placed: 2}, completed, nil)
	deleteJobAfter(env2, w2, time.Hour)
	env2.ExecuteWorkflow(BatchJobWorkflow, in)
	require.NoError(t, env2.GetWorkflowError())
	require.Empty(t, w2.written, "the ended run is not written again, and no application is made")
	require.Empty(t, w2.reported, "the Scheduling hears of the end once")
	require.Empty(t, w2.admissionReleases, "Admission hears of the end once")
	require.Equal(t, []string{operatorapp.Name("wordcount", "nightly", 1)}, w2.deleted, "the deletion takes the application along")
}

// A run's application counts as created when CreateApplication says it was asked for: a
// worker killed before the task that made it completed leaves the retry to another, seconds
// later, whose clock would count the worker's absence in the run's start (and hide the
// placements made meanwhile from the waits, which take what came after it). A moment the
// activity does not give, or one after the workflow's clock, leaves the workflow's clock.
func TestBatchJobWorkflow_TheApplicationIsCreatedWhenItWasAskedFor(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		createdAt time.Time
		want      func(got time.Time) bool
	}{
		{"asked by an earlier attempt", start.Add(-3 * time.Second), func(got time.Time) bool { return got.Equal(start.Add(-3 * time.Second)) }},
		{"not said", time.Time{}, func(got time.Time) bool { return !got.Before(start) }},
		{"after the workflow's clock", start.Add(time.Hour), func(got time.Time) bool { return !got.Before(start) && got.Before(start.Add(time.Hour)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			granted := metav1.NewMicroTime(start.Add(-5 * time.Second))
			req := *request
			req.SchedulingUID, req.GrantedAt = "uid-nightly", &granted
			w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}, createdAt: tc.createdAt}
			completed := activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}
			env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, completed, nil)
			env.SetStartTime(start)
			deleteJobAfter(env, w, time.Hour)
			env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})
			require.NoError(t, env.GetWorkflowError())
			ph := w.written[len(w.written)-1].Phases
			require.NotNil(t, ph.ApplicationCreatedAt)
			require.True(t, tc.want(ph.ApplicationCreatedAt.Time), "created at %s", ph.ApplicationCreatedAt.Time)
		})
	}
}

// A job's workflow started with a nudge (a signal-with-start) looks at its job once: the
// look comes after the nudge, and a second one would find nothing new.
func TestBatchJobWorkflow_TheNudgeItStartedWithIsAnsweredByItsFirstLook(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true}}
	env := newJobEnv(t, w, activities.AppProgress{}, activities.AppProgress{}, nil)
	calls := countCalls(env)
	env.RegisterDelayedCallback(func() {
		require.Equal(t, 1, calls.looks(), "one look for the start and its nudge")
		w.set(func(o *activities.JobObservation) { o.Exists = false })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(BatchJobChangedSignal, nil) }, 0) // with the start
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobReady}, states(w))
	require.Equal(t, 2, calls.looks(), "then one for the deletion")
}

// A job whose run ended is looked at again only when nudged: the task that reports the end
// does not read the job back. A release that comes then is seen.
func TestBatchJobWorkflow_AfterItsEndTheJobIsLookedAtWhenNudged(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	calls := countCalls(env)
	env.RegisterDelayedCallback(func() {
		require.Equal(t, 1, calls.looks(), "the first look only: the end is not read back")
	}, 10*time.Minute)
	releaseJobAfter(env, w, 20*time.Minute)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobCompleted, v1alpha1.JobReady}, states(w))
	require.Equal(t, 3, calls.looks(), "then one for the release and one for the deletion")
}

// A job's workflow continues as new when Temporal suggests it (its history grew large),
// after one look at the job, long before its steps per run: each look records the job's
// whole status.
func TestBatchJobWorkflow_ContinuesAsNewWhenSuggested(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true}}
	env := newJobEnv(t, w, activities.AppProgress{}, activities.AppProgress{}, nil)
	calls := countCalls(env)
	env.SetContinueAsNewSuggested(true)
	for i := range 3 { // nudges: each ends a step
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(BatchJobChangedSignal, nil) }, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount", StepsPerRun: 200})
	in := continuedWith[BatchJobInput](t, env)
	require.NotNil(t, in.Last, "the status goes across")
	require.Equal(t, 1, calls.looks(), "one look, then the hand-over")
}
