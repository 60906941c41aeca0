package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/schedplan"
)

// ExtendUpdate is the Temporal Update that appends jobs to a running Scheduling's queue. Its
// argument is the Scheduling's whole job list (the spec after an edit): jobs already queued
// are kept as they are, new ones are validated, claimed and appended in order.
const ExtendUpdate = "extend"

// SchedulingUIDMemo is the memo field that holds the UID of the Scheduling a workflow runs
// for: a front door tells by it a run of an earlier object of the name.
const SchedulingUIDMemo = "scheduling-uid"

// SchedulingInput names the Scheduling; the rest is optional (zero takes the default).
type SchedulingInput struct {
	Namespace string
	Name      string
	// UID is the object's the workflow runs for (empty: whichever has the name when the
	// run starts). A run that finds another object under the name ends at once, touching
	// nothing.
	UID string `json:",omitempty"`
	// StepsPerRun: after this many decisions (each a few history events) the workflow
	// continues as new, carrying its queue over (default 500). It also does when Temporal
	// suggests it (a large history).
	StepsPerRun int
	// AdmissionStepsPerRun is the StepsPerRun of the Admission workflow this Scheduling
	// starts when none runs (0: its default). Tests make it small.
	AdmissionStepsPerRun int
	// Carried is what the previous run handed over; nil on a fresh start.
	Carried *SchedulingState
}

// SchedulingState is a Scheduling's queue and status, handed from one run to the next. Spec
// and Status come without their job lists: Entries hold the jobs.
type SchedulingState struct {
	Spec    v1alpha1.SchedulingSpec
	Entries []schedplan.Job
	Status  v1alpha1.SchedulingStatus
	// UID is the Scheduling object's: it is part of every admission key.
	UID string
	// WrittenTop and WroteAt are the status as the last run last wrote it (without its jobs)
	// and when: the next run paces its first write from them (schedplan) instead of writing
	// the whole status, some 300 KB at 1,000 jobs, at its start. Absent, the first write goes
	// at once.
	WrittenTop *v1alpha1.SchedulingStatus `json:",omitempty"`
	WroteAt    time.Time                  `json:",omitzero"`
	// AskedAt is when a run last asked Admission again for every waiting job. A run asks at
	// its start only when reaskEvery has passed since; absent, it asks.
	AskedAt time.Time `json:",omitzero"`
}

// reaskEvery is how often a Scheduling asks Admission again for every job that still waits:
// a timer while jobs wait, and at the start of a run that comes this long after the last
// asking. Admission keeps the requests it has across its own runs and takes a repeat as the
// same request, answering with a grant it holds already; the repeat is for an Admission that
// lost them (its workflow ended and started anew), which jobs then wait for up to this long.
// Each such round reads every waiting job (a List) and sends them all: at 8,000 slots, ten
// Schedulings asking every 15 s sent Admission some 600 requests a second it held already,
// three quarters of its history.
const reaskEvery = 5 * time.Minute

// SchedulingOutput is the final status.
type SchedulingOutput struct {
	Status v1alpha1.SchedulingStatus
}

// SchedulingWorkflow runs a Scheduling: it claims every job (releasing all of them when
// another Scheduling holds any: the seed's rule against deadlocks), sends them in order to
// the test bed's Admission workflow, starts each job in the slots its grant names, accepts
// more jobs through the extend Update, and ends Completed when every job ended. It then
// stays, holding its jobs, until it is cancelled (the Scheduling is deleted): then it tells
// Admission and releases the jobs (their applications are deleted).
func SchedulingWorkflow(ctx workflow.Context, in SchedulingInput) (SchedulingOutput, error) {
	ctx = withActivityDefaults(ctx)
	s := &scheduler{key: activities.SchedulingKey{Namespace: in.Namespace, Name: in.Name}, progress: workflow.GetSignalChannel(ctx, JobProgressSignal), in: in,
		ids: installationOf(ctx, installation.Default.SchedulingID(in.Namespace, in.Name), false)}
	if in.StepsPerRun <= 0 {
		s.in.StepsPerRun = 500
	}
	if c := in.Carried; c != nil {
		s.spec, s.status, s.uid = c.Spec, c.Status, c.UID
		s.out.Top, s.out.At, s.askedAt = c.WrittenTop, c.WroteAt, c.AskedAt
		for i := range c.Entries {
			s.entries = append(s.entries, &c.Entries[i])
		}
		s.in.Carried = nil
	} else {
		s.status.StartedAt = now(ctx)
	}

	err := s.run(ctx)
	var next *workflow.ContinueAsNewError
	if errors.As(err, &next) {
		return SchedulingOutput{Status: s.status}, err
	}
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		if len(s.entries) > 0 && s.entries.AllDone() {
			// Cancelled while writing the end: the queue did complete.
			return s.cleanUp(ctx, v1alpha1.SchedulingCompleted, fmt.Sprintf("all %d jobs ended; the jobs are released", len(s.entries)))
		}
		return s.cleanUp(ctx, v1alpha1.SchedulingCancelled, "cancelled: the jobs are released")
	}
	if err != nil {
		return SchedulingOutput{Status: s.status}, err
	}
	// Ended (completed or failed): hold the jobs until the Scheduling is deleted, or its
	// time to live after it ended passes.
	msg := s.status.Message + "; the jobs are released"
	if ttl, expired := s.holdEnded(ctx); expired {
		msg = fmt.Sprintf("%s; deleted %s after it ended (ttlSecondsAfterFinished): the jobs are released", s.status.Message, ttl)
	}
	return s.cleanUp(ctx, s.status.State, msg)
}

// holdEnded holds an ended Scheduling until it is cancelled (its object was deleted), or,
// when its spec has ttlSecondsAfterFinished (immutable), until that long after it
// finished: then it deletes the object, whose finalizer keeps it until the jobs are
// released, and says expired.
func (s *scheduler) holdEnded(ctx workflow.Context) (ttl time.Duration, expired bool) {
	if s.spec.TTLSecondsAfterFinished == nil {
		_ = workflow.Await(ctx, func() bool { return false })
		return 0, false
	}
	ttl = time.Duration(*s.spec.TTLSecondsAfterFinished) * time.Second
	ended := workflow.Now(ctx)
	if s.status.FinishedAt != nil {
		ended = s.status.FinishedAt.Time
	}
	if left := ended.Add(ttl).Sub(workflow.Now(ctx)); left > 0 {
		if err := workflow.Sleep(ctx, left); err != nil {
			return ttl, false // cancelled
		}
	}
	del := activities.DeleteSchedulingInput{Key: s.key, UID: s.uid}
	if err := workflow.ExecuteActivity(ctx, acts.DeleteScheduling, del).Get(ctx, nil); err != nil {
		return ttl, false // cancelled while deleting
	}
	return ttl, true
}

// withActivityDefaults gives short cluster activities their timeout and retries. Update
// handlers get a context without them, so they call it too.
func withActivityDefaults(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
}

type scheduler struct {
	key      activities.SchedulingKey
	ids      installation.Names
	spec     v1alpha1.SchedulingSpec
	entries  schedplan.Jobs
	status   v1alpha1.SchedulingStatus
	progress workflow.ReceiveChannel
	// changed: an Update appended jobs.
	changed bool
	// batches receives Admission's answers, those of one Admission step each
	// (AdmittedBatchSignal).
	batches workflow.ReceiveChannel
	in      SchedulingInput
	// uid is the Scheduling object's UID.
	uid string
	// extending lets one extend at a time claim and append: both front doors pass an edit on
	// through lifecycle.ExtendScheduling, and may do so at once.
	extending workflow.Mutex
	// out is what this run last wrote of the status (schedplan), and owed, while not nil,
	// fires when a write the pace put off is due.
	out  schedplan.Written
	owed workflow.Future
	// askedAt is when a run last asked Admission for every waiting job (reaskEvery); reask,
	// while not nil, fires when it asks again.
	askedAt time.Time
	reask   workflow.Future
}

// markUID puts the Scheduling's UID in the run's memo (a continue-as-new does not carry
// memos over), where front doors read it.
func (s *scheduler) markUID(ctx workflow.Context) error {
	return workflow.UpsertMemo(ctx, map[string]any{SchedulingUIDMemo: s.uid})
}

func (s *scheduler) run(ctx workflow.Context) error {
	if s.entries != nil {
		// Carried over: acquired already.
		if err := s.markUID(ctx); err != nil {
			return err
		}
		return s.schedule(ctx)
	}
	var obs activities.SchedulingObservation
	if err := quick(ctx, acts.ReadScheduling, s.key).Get(ctx, &obs); err != nil {
		return err
	}
	if !obs.Exists {
		s.status.State, s.status.Message = v1alpha1.SchedulingFailed, "the Scheduling does not exist"
		return nil
	}
	if s.in.UID != "" && obs.UID != s.in.UID {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("scheduling %s/%s is another object now (uid %s, not %s): this run is not its",
			s.key.Namespace, s.key.Name, obs.UID, s.in.UID), "SchedulingRemade", nil)
	}
	s.spec, s.uid = obs.Spec, obs.UID
	s.in.UID = obs.UID
	if err := s.markUID(ctx); err != nil {
		return err
	}
	for _, j := range obs.Spec.Jobs {
		s.entries = append(s.entries, &schedplan.Job{Job: j})
	}
	if obs.Status.State != "" {
		// The Scheduling ran before, in a run that ended without handing over (terminated):
		// this run takes up its status and its jobs' runs.
		return s.resume(ctx, obs.Status)
	}
	if err := s.setState(ctx, v1alpha1.SchedulingAcquiring, "claiming the jobs"); err != nil {
		return err
	}
	if ok, err := s.acquireJobs(ctx); err != nil || !ok {
		return err
	}
	if err := s.checkTestBed(ctx); err != nil {
		return err
	}
	if err := s.setState(ctx, v1alpha1.SchedulingScheduling, "starting jobs as their slots come free"); err != nil {
		return err
	}
	return s.schedule(ctx)
}

// resume takes up a Scheduling whose last run ended without handing over: its status as
// written, and its jobs' runs as the jobs show them. A job whose creation request is this
// Scheduling's (by its UID) was granted: it is started, or ended, as its status says, and
// Admission holds its grant (or takes it in from the job). The others wait, and are asked
// for again. An ended Scheduling only holds its jobs.
func (s *scheduler) resume(ctx workflow.Context, was v1alpha1.SchedulingStatus) error {
	s.status = was
	if s.status.StartedAt == nil {
		s.status.StartedAt = now(ctx)
	}
	ended := was.State == v1alpha1.SchedulingCompleted || was.State == v1alpha1.SchedulingFailed || was.State == v1alpha1.SchedulingCancelled
	if !ended {
		if ok, err := s.acquireJobs(ctx); err != nil || !ok {
			return err
		}
	}
	idle, err := s.takeUpRuns(ctx)
	if err != nil {
		return err
	}
	if ended {
		return nil
	}
	if was.State == v1alpha1.SchedulingAcquiring {
		if err := s.checkTestBed(ctx); err != nil {
			return err
		}
		if err := s.setState(ctx, v1alpha1.SchedulingScheduling, "starting jobs as their slots come free"); err != nil {
			return err
		}
	}
	// A request written whose nudge was lost with the last run: the job's workflow looks.
	if err := s.nudge(ctx, idle); err != nil {
		return err
	}
	return s.schedule(ctx)
}

// takeUpRuns sets each entry from its job's run of this Scheduling, read from etcd: a run
// that ended while no run of this workflow was there to hear it is seen ended here. idle are
// the granted jobs whose status shows no start of their run yet.
func (s *scheduler) takeUpRuns(ctx workflow.Context) (idle []string, err error) {
	for part := range slices.Chunk(s.entries, batch) {
		names := make([]string, len(part))
		for i, e := range part {
			names[i] = e.Job.Name
		}
		var infos []activities.JobInfo
		if err := quick(ctx, acts.ReadJobs, activities.ReadJobsInput{Namespace: s.key.Namespace, Names: names}).Get(ctx, &infos); err != nil {
			return nil, err
		}
		for i, e := range part {
			g := infos[i].Granted
			if g == nil || g.Request.SchedulingUID != s.uid || g.Request.Run != 1 || g.Request.Scheduling != s.key.Name {
				continue
			}
			if !e.Resume(g.Slots, g.Request.GrantedAt, schedplan.Report{State: g.State, Message: g.Message,
				SubmittedAt: g.SubmittedAt, RunningAt: g.RunningAt, FinishedAt: g.FinishedAt}) {
				idle = append(idle, e.Job.Name)
			}
		}
	}
	s.askedAt = time.Time{} // every job that waits is asked for again
	return idle, nil
}

// schedule runs the queue until every job ended, then writes the final status.
func (s *scheduler) schedule(ctx workflow.Context) error {
	if s.status.State == v1alpha1.SchedulingCompleted || s.status.State == v1alpha1.SchedulingFailed {
		return nil // ended in an earlier run: only the cancellation is left
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, ExtendUpdate, s.extend, workflow.UpdateHandlerOptions{Validator: s.validateExtend}); err != nil {
		return err
	}
	steps := 0
	s.batches = workflow.GetSignalChannel(ctx, AdmittedBatchSignal)
	if s.askedAt.IsZero() || workflow.Now(ctx).Sub(s.askedAt) >= reaskEvery {
		if err := s.requestAdmission(ctx, s.entries.Waiting()); err != nil {
			return err
		}
		s.askedAt = workflow.Now(ctx)
	}
	for {
		for {
			if err := ctx.Err(); err != nil {
				// Cancelled: a status write that is skipped (nothing changed) would not say
				// so, and the loop would run on to a continue-as-new that loses the request.
				return err
			}
			if err := s.writeStatus(ctx); err != nil {
				return err
			}
			if s.entries.AllDone() {
				break
			}
			due, err := s.waitForAdmission(ctx)
			if err != nil {
				return err
			}
			if due {
				continue // only a put-off status write: not a decision
			}
			steps++
			long := steps >= s.in.StepsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
			if long && workflow.AllHandlersFinished(ctx) {
				return s.continueAsNew(ctx)
			}
		}
		// An extend in flight may still append jobs: let it finish, then look again.
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
			return err
		}
		if s.entries.AllDone() {
			break
		}
	}
	s.status.FinishedAt = now(ctx)
	return s.setState(ctx, v1alpha1.SchedulingCompleted, fmt.Sprintf("all %d jobs ended, %d failed", len(s.entries), s.entries.Failed()))
}

// checkTestBed sets the TestBedFound condition: a Scheduling naming a test bed that does not
// exist says so (its jobs wait for it). A grant clears it.
func (s *scheduler) checkTestBed(ctx workflow.Context) error {
	var slots activities.TestBedSlots
	if err := quick(ctx, acts.ReadSlots, activities.TestBedRef{Namespace: s.key.Namespace, Name: s.spec.TestBed}).Get(ctx, &slots); err != nil {
		return err
	}
	if slots.Exists {
		schedplan.TestBedFound(&s.status, s.spec.TestBed, true, workflow.Now(ctx))
	} else {
		schedplan.TestBedFound(&s.status, s.spec.TestBed, false, workflow.Now(ctx))
	}
	return nil
}

// acquireJobs claims every job, or none (the deadlock rule).
func (s *scheduler) acquireJobs(ctx workflow.Context) (bool, error) {
	names := s.entries.Names()
	jobs, err := s.claim(ctx, names)
	if err != nil {
		return false, err
	}
	if !jobs.Complete() {
		// Holding some jobs while another Scheduling holds others could leave both waiting
		// for each other: give everything back.
		if err := s.release(ctx, jobs.Claimed); err != nil {
			return false, err
		}
		return false, s.setState(ctx, v1alpha1.SchedulingFailed, jobs.Loss())
	}
	for _, e := range s.entries {
		e.State = v1alpha1.JobInQueue
	}
	return true, s.nudge(ctx, jobs.Unqueued(names))
}

// awaitFuture is a future that becomes ready when cond holds, or when ctx is cancelled.
func awaitFuture(ctx workflow.Context, cond func() bool) workflow.Future {
	f, set := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		err := workflow.Await(ctx, cond)
		set.Set(nil, err)
	})
	return f
}

// continueAsNew hands the queue to a fresh run. Every message that arrived is handled first,
// as it would have been in this run (a job's end is told to Admission, a grant starts its
// job or is given back): a signal left in a channel would be lost with this run.
func (s *scheduler) continueAsNew(ctx workflow.Context) error {
	for s.progress.Len() > 0 || s.batches.Len() > 0 {
		if err := s.takeWaiting(ctx, nil, nil); err != nil {
			return err
		}
	}
	next := s.in
	next.Carried = s.carry()
	return workflow.NewContinueAsNewError(ctx, SchedulingWorkflow, next)
}

// carry is what the next run gets. The entries hold the jobs, and the status's job list is
// rendered from them at every write: carrying them three times would cost a Scheduling at
// its limits 2 MB, one Temporal payload's whole allowance (TestSchedulingSizesFit).
func (s *scheduler) carry() *SchedulingState {
	c := &SchedulingState{Spec: s.spec, Status: s.status, UID: s.uid, WrittenTop: s.out.Top, WroteAt: s.out.At, AskedAt: s.askedAt}
	c.Spec.Jobs, c.Status.Jobs = nil, nil
	for _, e := range s.entries {
		c.Entries = append(c.Entries, *e)
	}
	return c
}

// onProgress applies one job's progress and returns what Admission must hear of it.
func (s *scheduler) onProgress(p JobProgress) []tell {
	started, ended := s.entries.Heard(p.Job, p.Run, schedplan.Report{State: p.State, Message: p.Message,
		SubmittedAt: p.SubmittedAt, RunningAt: p.RunningAt, FinishedAt: p.FinishedAt, Started: p.Started}, p.AdmissionTold)
	var out []tell
	for _, e := range started {
		out = append(out, tell{AdmissionStartedUpdate, s.admissionKey(e)})
	}
	for _, e := range ended {
		out = append(out, tell{AdmissionEndedUpdate, s.admissionKey(e)})
	}
	return out
}

func (s *scheduler) nudge(ctx workflow.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	var nudges []activities.SignalWithStart
	for _, name := range jobs {
		nudges = append(nudges, s.jobNudge(name))
	}
	return s.sendNudges(ctx, nudges)
}

// jobNudge tells a job's workflow to look at its job again, starting it if needed.
func (s *scheduler) jobNudge(name string) activities.SignalWithStart {
	return jobNudge(s.ids, s.key.Namespace, name)
}

// batch is how many jobs one cluster activity handles. Each job costs the activity one or
// two requests to the API server: at the worker's default of 100 a second, a batch takes a
// second or two, well inside the activity's timeout, however long the Scheduling.
const batch = 100

// sendNudges signals (or starts) the workflows, a batch per activity, in order.
func (s *scheduler) sendNudges(ctx workflow.Context, nudges []activities.SignalWithStart) error {
	for part := range slices.Chunk(nudges, batch) {
		if err := quick(ctx, acts.NudgeWorkflows, activities.SignalWithStartInput{TaskQueue: s.ids.Queue(), Signals: part}).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// claim claims the named jobs for this Scheduling, a batch per activity. It stops at the
// first batch where a job is held elsewhere or missing: the caller gives back what it took.
func (s *scheduler) claim(ctx workflow.Context, names []string) (activities.ClaimResult, error) {
	var all activities.ClaimResult
	for part := range slices.Chunk(names, batch) {
		var r activities.ClaimResult
		in := activities.ClaimInput{Namespace: s.key.Namespace, Scheduling: s.key.Name, Names: part, User: s.spec.User, Groups: s.spec.Groups, Queue: s.spec.Queue}
		if err := workflow.ExecuteActivity(ctx, acts.ClaimJobs, in).Get(ctx, &r); err != nil {
			return all, err
		}
		all.Claimed = append(all.Claimed, r.Claimed...)
		all.Queued = append(all.Queued, r.Queued...)
		all.Lost = append(all.Lost, r.Lost...)
		all.Missing = append(all.Missing, r.Missing...)
		if !r.Complete() {
			break
		}
	}
	return all, nil
}

// releaseClaims gives the jobs' claims back, a batch per activity.
func (s *scheduler) releaseClaims(ctx workflow.Context, names []string) error {
	for part := range slices.Chunk(names, batch) {
		in := activities.ClaimInput{Namespace: s.key.Namespace, Scheduling: s.key.Name, Names: part}
		if err := workflow.ExecuteActivity(ctx, acts.ReleaseJobs, in).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// release gives the jobs' claims back and wakes their workflows.
func (s *scheduler) release(ctx workflow.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	if err := s.releaseClaims(ctx, jobs); err != nil {
		return err
	}
	return s.nudge(ctx, jobs)
}

// cleanUp runs after cancellation, on a context that is not cancelled: it withdraws what
// still waits in Admission, releases the jobs (their workflows delete the applications),
// writes the final status and lets the Scheduling object go.
func (s *scheduler) cleanUp(ctx workflow.Context, state v1alpha1.SchedulingState, msg string) (SchedulingOutput, error) {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	for _, e := range s.entries {
		if !e.Done() {
			s.releaseAdmission(ctx, e)
		}
	}
	if err := s.release(ctx, s.entries.Names()); err != nil {
		return SchedulingOutput{Status: s.status}, err
	}
	if s.status.FinishedAt == nil {
		s.status.FinishedAt = now(ctx)
	}
	if err := s.setState(ctx, state, msg); err != nil {
		return SchedulingOutput{Status: s.status}, err
	}
	err := workflow.ExecuteActivity(ctx, acts.RemoveSchedulingFinalizer, s.key).Get(ctx, nil)
	return SchedulingOutput{Status: s.status}, err
}

func (s *scheduler) setState(ctx workflow.Context, state v1alpha1.SchedulingState, msg string) error {
	s.status.State, s.status.Message = state, msg
	return s.writeStatus(ctx)
}

// writeStatus renders the entries into the status and writes it.
func (s *scheduler) writeStatus(ctx workflow.Context) error {
	schedplan.Render(&s.status, s.entries)
	plan := s.out.Plan(s.status, workflow.Now(ctx))
	switch {
	case plan.Skip:
		return nil
	case plan.Due > 0:
		if s.owed == nil {
			s.owed = workflow.NewTimer(ctx, plan.Due)
		}
		return nil
	}
	// Only the jobs whose entries changed go, so that a 1,000-job Scheduling does not put
	// its whole status into its history at every step.
	full := activities.WriteSchedulingStatusInput{Scheduling: s.key, Status: s.status}
	in := full
	in.Delta, in.Status.Jobs = plan.Delta, plan.Jobs
	err := quick(ctx, acts.WriteSchedulingStatus, in).Get(ctx, nil)
	var app *temporal.ApplicationError
	if in.Delta && errors.As(err, &app) && app.Type() == activities.ErrStatusOutOfStep {
		in = full // the object's status is not what this run wrote: write it whole
		err = quick(ctx, acts.WriteSchedulingStatus, in).Get(ctx, nil)
	}
	if err != nil {
		return err
	}
	s.out.Wrote(s.status, in.Status.Jobs, workflow.Now(ctx))
	return nil
}

// validateExtend refuses an extension that could not run: it changes nothing.
func (s *scheduler) validateExtend(jobs []v1alpha1.SchedulingJob) error {
	return s.entries.ValidateExtend(s.spec.Mode, s.status.State, jobs)
}

// extend claims the new jobs of the list and appends them; it returns the queue length.
func (s *scheduler) extend(ctx workflow.Context, jobs []v1alpha1.SchedulingJob) (int, error) {
	ctx = withActivityDefaults(ctx)
	if s.extending == nil {
		s.extending = workflow.NewMutex(ctx)
	}
	if err := s.extending.Lock(ctx); err != nil {
		return len(s.entries), err
	}
	defer s.extending.Unlock()
	added := s.entries.Added(jobs)
	if len(added) == 0 {
		return len(s.entries), nil
	}
	names := make([]string, len(added))
	for i, j := range added {
		names[i] = j.Name
	}
	claim, err := s.claim(ctx, names)
	if err != nil {
		return len(s.entries), err
	}
	if !claim.Complete() {
		if err := s.releaseClaims(ctx, claim.Claimed); err != nil {
			return len(s.entries), err
		}
		return len(s.entries), temporal.NewApplicationError(claim.Loss(), "ExtendRefused")
	}
	var fresh schedplan.Jobs
	for _, j := range added {
		e := &schedplan.Job{Job: j, State: v1alpha1.JobInQueue}
		s.entries = append(s.entries, e)
		fresh = append(fresh, e)
	}
	if err := s.nudge(ctx, claim.Unqueued(names)); err != nil {
		return len(s.entries), err
	}
	if err := s.requestAdmission(ctx, fresh); err != nil {
		return len(s.entries), err
	}
	s.changed = true
	return len(s.entries), nil
}
