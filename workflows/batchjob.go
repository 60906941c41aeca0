package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/jobplan"
	"slotplane/operatorapp"
	"slotplane/queue"
)

// BatchJobChangedSignal tells a BatchJobWorkflow to look at its job again: a Scheduling sends
// it after a claim, release or request, and the bridge on the changes only it sees.
const BatchJobChangedSignal = "batchjob-changed"

// JobProgressSignal carries a JobProgress from a job's workflow to its Scheduling's.
const JobProgressSignal = "job-progress"

// BatchJobInput names the job.
type BatchJobInput struct {
	Namespace string
	Name      string
	// StepsPerRun bounds the history: after this many observations the workflow continues
	// as new (default 200).
	StepsPerRun int
	// Last is the job's status as the previous run last saw it: if the job is gone when the
	// next run looks, its Scheduling still hears of it.
	Last *v1alpha1.BatchJobStatus
}

// JobProgress is what a Scheduling hears of one of its jobs.
type JobProgress struct {
	Job   string
	Run   int32
	State v1alpha1.BatchJobState
	// Message says why, for Failed.
	Message                            string
	SubmittedAt, RunningAt, FinishedAt time.Time
	// Started: the application left StateAware's Starting state: its first executor or
	// TaskManager holds its slot, or queue.StartingTimeout passed without one (the seeds'
	// fallback, a timer of this workflow). Sent once per run, before Running.
	Started bool
	// AdmissionTold: what Admission must hear of this report (the run left Starting, the
	// run ended) went to Admission from the job's own workflow, in the same activity as this
	// report: the Scheduling passes none of it on. False leaves the telling to the
	// Scheduling.
	AdmissionTold bool `json:",omitempty"`
}

// BatchJobWorkflow follows one BatchJob through its lifecycle, driven by the claim and the
// creation request a Scheduling writes on it (the seed's label protocol):
//
//	no claim                 -> Ready (an application of an earlier claim is deleted)
//	claim, no request        -> InQueue
//	claim + request, run r   -> create application r -> Submitted -> all pods placed ->
//	                            Running -> application ended -> Completed | Failed
//
// Each step reports to the Scheduling. Observed states may jump: an application found ended
// after a restart completes the job without the states in between. It runs until the
// BatchJob is deleted, continuing as new to keep its history short.
func BatchJobWorkflow(ctx workflow.Context, in BatchJobInput) error {
	perRun := in.StepsPerRun
	if perRun <= 0 {
		perRun = 200
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	j := &jobRunner{key: activities.JobKey{Namespace: in.Namespace, Name: in.Name}, changed: workflow.GetSignalChannel(ctx, BatchJobChangedSignal),
		ids: installationOf(ctx, installation.Default.BatchJobID(in.Namespace, in.Name), false)}
	if in.Last != nil {
		j.status = *in.Last
	}
	// The nudges the run started with (a signal-with-start: the bridge's at the job's
	// creation, a Scheduling's at a claim or grant) are answered by its first look.
	j.dropNudges()
	// A run ends after perRun observations, or earlier once Temporal suggests it (its history
	// grew large: each observation records the job's whole status), after one at least.
	for step := 0; step < perRun && (step == 0 || !workflow.GetInfo(ctx).GetContinueAsNewSuggested()); step++ {
		obs, err := j.observe(ctx)
		if err != nil {
			return err
		}
		if !obs.Exists {
			// Deleted: the Scheduling that held it hears that the job failed, so it can
			// complete and Admission frees the job's slots.
			j.tellLost(ctx, j.status, fmt.Sprintf("the BatchJob %s was deleted", j.key.Name))
			if app := j.status.Application; app != nil {
				return j.deleteApp(ctx, *app)
			}
			return nil
		}
		if st := obs.Status; st.Scheduling != "" && st.Scheduling != obs.Holder {
			// Released or taken over mid-run by someone else than its Scheduling (which
			// knows already when it released the job itself).
			j.tellLost(ctx, st, fmt.Sprintf("the BatchJob %s is no longer held by scheduling %s", j.key.Name, st.Scheduling))
		}
		// The history is the workflow's own once it has written one: the observed copy may
		// lag behind the record it wrote last.
		hist, known := j.status.History, in.Last != nil || step > 0
		j.status = obs.Status
		if known {
			j.status.History = hist
		}
		specChanged := j.specCondition(ctx, obs.Refused)
		switch {
		case obs.Holder == "":
			err = j.toReady(ctx, specChanged)
		case j.kills(obs):
			err = j.kill(ctx, obs)
		case obs.Request == nil || obs.Request.Scheduling != obs.Holder:
			err = j.toInQueue(ctx, obs.Holder, obs.BadRequest, specChanged)
		default:
			err = j.run(ctx, obs.Holder, *obs.Request)
		}
		if err != nil {
			return err
		}
	}
	// Drain what came in, so no nudge is lost across the continue-as-new: the next run
	// observes the job first anyway.
	j.dropNudges()
	next := in
	next.Last = &j.status
	return workflow.NewContinueAsNewError(ctx, BatchJobWorkflow, next)
}

// tellLost tells the Scheduling of st that the job's run will not go on, unless it ended.
func (j *jobRunner) tellLost(ctx workflow.Context, st v1alpha1.BatchJobStatus, why string) {
	if st.Scheduling == "" || st.State.Ended() || st.State == v1alpha1.JobReady {
		return
	}
	p := JobProgress{Job: j.key.Name, Run: st.Run, State: v1alpha1.JobFailed, Message: why, FinishedAt: workflow.Now(ctx)}
	// The Scheduling may be gone (cancelled): then nobody needs to hear it.
	to := j.ids.SchedulingID(j.key.Namespace, st.Scheduling)
	_ = sendSignals(ctx, []activities.Signal{{WorkflowID: to, Name: JobProgressSignal, Arg: p}}).Get(ctx, nil)
}

type jobRunner struct {
	key     activities.JobKey
	ids     installation.Names
	changed workflow.ReceiveChannel
	status  v1alpha1.BatchJobStatus
}

// released records the current run as released, if it had begun, and counts its end.
func (j *jobRunner) released(ctx workflow.Context, why string) {
	if jobplan.ReleasedRun(&j.status, workflow.Now(ctx), why) {
		j.countEnd(ctx, v1alpha1.RunReleased)
	}
}

// countEnd counts the end of the status's run (slotplane_finished_jobs_total).
func (j *jobRunner) countEnd(ctx workflow.Context, outcome v1alpha1.RunOutcome) {
	metricsFor(ctx, j.key.Namespace, j.status.TestBed, "").WithTags(map[string]string{"outcome": string(outcome)}).Counter(metricFinished).Inc(1)
}

// acts is how workflows name activities: methods of a nil *Activities.
var acts *activities.Activities

func (j *jobRunner) observe(ctx workflow.Context) (activities.JobObservation, error) {
	var obs activities.JobObservation
	err := quick(ctx, acts.ObserveJob, j.key).Get(ctx, &obs)
	return obs, err
}

// waitChange blocks until the job is nudged.
func (j *jobRunner) waitChange(ctx workflow.Context) {
	j.changed.Receive(ctx, nil)
	j.dropNudges() // a burst of nudges is one look
}

// dropNudges takes every nudge waiting: the look that follows answers them all.
func (j *jobRunner) dropNudges() {
	for j.changed.ReceiveAsync(nil) {
	}
}

func (j *jobRunner) write(ctx workflow.Context) error {
	return quick(ctx, acts.WriteJobStatus, activities.WriteJobStatusInput{Job: j.key, Status: j.status}).Get(ctx, nil)
}

func (j *jobRunner) deleteApp(ctx workflow.Context, app v1alpha1.ApplicationRef) error {
	return quick(ctx, acts.DeleteApplication, activities.AppKey{Namespace: j.key.Namespace, Job: j.key.Name, App: app}).Get(ctx, nil)
}

// specCondition sets the SpecAllowed condition from the job's refused fields
// (jobplan.SpecCondition), and says whether it changed.
func (j *jobRunner) specCondition(ctx workflow.Context, refused []string) bool {
	return jobplan.SpecCondition(&j.status, refused, workflow.Now(ctx))
}

func (j *jobRunner) toReady(ctx workflow.Context, specChanged bool) error {
	if j.status.State != v1alpha1.JobReady || j.status.Scheduling != "" || j.status.Application != nil || specChanged {
		if app := j.status.Application; app != nil {
			if err := j.deleteApp(ctx, *app); err != nil {
				return err
			}
		}
		j.released(ctx, "the Scheduling released the job before its run ended")
		j.status = v1alpha1.BatchJobStatus{State: v1alpha1.JobReady, Message: "no Scheduling holds the job", Conditions: j.status.Conditions, History: j.status.History}
		if err := j.write(ctx); err != nil {
			return err
		}
	}
	j.waitChange(ctx)
	return nil
}

func (j *jobRunner) toInQueue(ctx workflow.Context, holder, badRequest string, specChanged bool) error {
	if j.status.Scheduling != holder || j.status.State != v1alpha1.JobInQueue || j.status.Message != badRequest || specChanged {
		if app := j.status.Application; app != nil {
			// An application of an earlier claim: the new holder starts clean.
			if err := j.deleteApp(ctx, *app); err != nil {
				return err
			}
		}
		j.released(ctx, fmt.Sprintf("the job went back to the queue of scheduling %s before the run ended", holder))
		j.status = v1alpha1.BatchJobStatus{State: v1alpha1.JobInQueue, Scheduling: holder, QueuedAt: now(ctx), Message: badRequest, Conditions: j.status.Conditions, History: j.status.History}
		if err := j.write(ctx); err != nil {
			return err
		}
	}
	j.waitChange(ctx)
	return nil
}

// run carries out a creation request, or, if this run already ended, waits for a change.
func (j *jobRunner) run(ctx workflow.Context, holder string, req v1alpha1.CreationRequest) error {
	ended := j.status.State.Ended()
	if ended && j.status.Scheduling == holder && j.status.Run == req.Run {
		j.waitChange(ctx)
		return nil
	}
	if err := j.beginRun(ctx, holder, req); err != nil {
		return err
	}
	r := &runReport{j: j, holder: holder, req: &req, progress: JobProgress{Job: j.key.Name, Run: req.Run}}
	made, created, err := j.createApp(ctx, req, r)
	if err != nil || !created {
		return err
	}
	app := made.ApplicationRef
	j.status.Application = &app
	if j.status.SubmittedAt == nil {
		j.status.SubmittedAt = now(ctx)
	}
	if ph := j.phases(); ph.ApplicationCreatedAt == nil {
		ph.ApplicationCreatedAt = nowMicro(ctx)
		// The moment the application was asked for, when an earlier attempt asked (a worker
		// killed before this task completed): the workflow's clock is this attempt's, late
		// by the worker's absence, and the waits take it as the run's start (AppKey.Since).
		if at := made.CreatedAt; !at.IsZero() && at.Before(ph.ApplicationCreatedAt.Time) {
			ph.ApplicationCreatedAt = &metav1.MicroTime{Time: at.UTC()}
		}
	}
	r.submitHeld = true // said by waitStarted if the pods take a while, else with Running
	// The waits also learn what the worker's watch saw of the run's slot pods since the
	// application was made: a wait taken up late still finds the placements of a short run.
	key := activities.AppKey{Namespace: j.key.Namespace, Job: j.key.Name, App: app, Replicas: len(req.Slots),
		Scheduling: req.Scheduling, Since: j.phases().ApplicationCreatedAt.Time, Known: len(j.phases().ExecutorsPlacedAt)}
	placed, allPlaced, still, err := j.waitStarted(ctx, key, holder, req, r)
	if err != nil || !still {
		return r.sayHeldSubmit(ctx, err)
	}
	if !allPlaced {
		if placed, still, err = j.waitApp(ctx, acts.WaitPlaced, WaitHeartbeatTimeout, key, holder, req); err != nil || !still {
			return r.sayHeldSubmit(ctx, err)
		}
	}
	j.notePlaced(placed, key.Replicas)
	if !placed.Outcome.Terminal && !placed.Gone {
		j.status.RunningAt = now(ctx)
		ph := j.phases()
		if ph.RunningAt == nil {
			ph.RunningAt = nowMicro(ctx)
		}
		// Once per run: a run taken up again (a new workflow run) is Running already.
		if j.status.State != v1alpha1.JobRunning && ph.AdmittedAt != nil {
			if d, ok := since(&ph.AdmittedAt.Time, ph.RunningAt.Time); ok {
				metricsFor(ctx, j.key.Namespace, req.TestBed, req.Queue).Timer(metricStartup).Record(d)
			}
		}
		if err := r.report(ctx, v1alpha1.JobRunning, "every pod runs in its slot"); err != nil {
			return err
		}
	}
	key.Known = len(j.phases().ExecutorsPlacedAt) // an activity's input: no new command
	finished, still, err := j.waitApp(ctx, acts.WaitFinished, FinishedHeartbeatTimeout, key, holder, req)
	if err != nil || !still {
		return r.sayHeldSubmit(ctx, err)
	}
	if err := j.finish(ctx, app, finished, r, req); err != nil {
		return err
	}
	// Once the end is reported, the next look waits for a nudge: what could change the job
	// meanwhile (a release, a new request, an edit of its spec, its deletion) comes with one,
	// from its Scheduling or the bridge.
	j.waitChange(ctx)
	return nil
}

// submittedMessage is the message of a run whose application is made and whose pods are
// being placed.
const submittedMessage = "the application is created; its pods are being placed"

// driverAloneMessage is the message of a run whose driver runs and has asked for no
// executor yet.
const driverAloneMessage = "the driver runs and has asked for no executor yet"

// submitQuiet is how long a new application's Submitted report (submittedMessage) is held
// back: a run whose pods are all placed by then goes from InQueue to Running in one report
// (a status write, a signal and a turn of its Scheduling less per job). The status's phases
// keep the application's creation time either way. A run that leaves its wait for any other
// reason says Submitted first, so the status names the application before the job is
// looked at again.
const submitQuiet = time.Second

// sayHeldSubmit makes the Submitted report that was held back, if it was not made yet, and
// passes err on: a run that leaves its waits early must leave its application named in the
// status, which the job's next look takes as its own.
func (r *runReport) sayHeldSubmit(ctx workflow.Context, err error) error {
	if !r.submitHeld {
		return err
	}
	if rerr := r.report(ctx, v1alpha1.JobSubmitted, submittedMessage); err == nil {
		err = rerr
	}
	return err
}

// beginRun readies the status for the request's run: an application of another run is
// deleted, the times of another run or holder are cleared, and the status names the holder,
// the test bed, the slots and the run.
func (j *jobRunner) beginRun(ctx workflow.Context, holder string, req v1alpha1.CreationRequest) error {
	if j.status.Application != nil && !sameRun(j.key.Name, j.status, req) {
		if err := j.deleteApp(ctx, *j.status.Application); err != nil {
			return err
		}
		j.status.Application = nil
	}
	if j.status.Run != req.Run || j.status.Scheduling != holder {
		j.released(ctx, fmt.Sprintf("run %d of scheduling %s replaced it before it ended", req.Run, holder))
		j.status.SubmittedAt, j.status.RunningAt, j.status.FinishedAt = nil, nil, nil
		j.status.Phases = nil
	}
	if ph := j.phases(); ph.AdmittedAt == nil && req.GrantedAt != nil {
		at := *req.GrantedAt
		ph.AdmittedAt = &at
		m := metricsFor(ctx, j.key.Namespace, req.TestBed, req.Queue)
		m.Counter(metricAdmitted).Inc(1)
		if q := j.status.QueuedAt; q != nil {
			if d, ok := since(&q.Time, at.Time); ok {
				m.Timer(metricAdmissionWait).Record(d)
			}
		}
	}
	j.status.Scheduling, j.status.TestBed, j.status.Slots, j.status.Run = holder, req.TestBed, req.Slots, req.Run
	j.status.Reason = ""
	if j.status.QueuedAt == nil {
		j.status.QueuedAt = now(ctx)
	}
	return nil
}

// runReport tells of one run's progress: the BatchJob's status and its Scheduling.
type runReport struct {
	j      *jobRunner
	holder string
	// req is the run's creation request (nil: a kill of a job that had none).
	req *v1alpha1.CreationRequest
	// also are signals to send with the next report (Admission's release at the end).
	also []activities.Signal
	// startTold: Admission was sent the run's start (AdmissionStartedUpdate).
	startTold bool
	// progress is what the Scheduling last heard (Started stays once set).
	progress JobProgress
	// submitHeld: the Submitted report of the run's new application is held back
	// (submitQuiet); any report makes it moot.
	submitHeld bool
}

// report writes the state and message to the job's status and signals them, with the
// status's times, to the holder's Scheduling.
func (r *runReport) report(ctx workflow.Context, st v1alpha1.BatchJobState, msg string) error {
	j := r.j
	r.submitHeld = false
	j.status.State, j.status.Message = st, msg
	r.setProgress(st, msg)
	// The status first: Admission may give the slots of an ended run to the next job the
	// moment it hears, and no reader may then see this one still running there.
	if err := j.write(ctx); err != nil {
		return err
	}
	r.tellAdmission(st)
	signals := append(r.also, activities.Signal{WorkflowID: j.ids.SchedulingID(j.key.Namespace, r.holder), Name: JobProgressSignal, Arg: r.progress})
	r.also = nil
	_ = sendSignals(ctx, signals).Get(ctx, nil) // the Scheduling may be gone (cancelled): then nobody needs to hear it
	return nil
}

// tellAdmission adds to the signals sent with a report what Admission must hear of it that
// the job can tell itself: the run's start, once (its end is added by finish and kill). The
// report says AdmissionTold when all of it goes: the Scheduling then sends Admission nothing
// for it (a signal and a turn of Admission less per job). A report whose news does not all
// go (no creation request, an end without the job's own release) leaves the telling to the
// Scheduling. A start the grant said Admission needs no word of (CreationRequest.QuietStart)
// counts as told.
func (r *runReport) tellAdmission(st v1alpha1.BatchJobState) {
	startNews := r.progress.Started || st == v1alpha1.JobRunning
	if req := r.req; startNews && !r.startTold && req != nil && req.SchedulingUID != "" {
		if !req.QuietStart {
			r.also = append(r.also, r.j.toAdmission(*req, AdmissionStartedUpdate))
		}
		r.startTold = true
	}
	endTold := slices.ContainsFunc(r.also, func(s activities.Signal) bool { return s.Name == AdmissionEndedUpdate })
	r.progress.AdmissionTold = (!startNews || r.startTold) && (!st.Ended() || endTold)
}

func (r *runReport) setProgress(st v1alpha1.BatchJobState, msg string) {
	j := r.j
	r.progress.State, r.progress.Message = st, msg
	r.progress.SubmittedAt, r.progress.RunningAt, r.progress.FinishedAt = timeOf(j.status.SubmittedAt), timeOf(j.status.RunningAt), timeOf(j.status.FinishedAt)
}

// toAdmission is the message name about the run of req to its test bed's Admission,
// keyed as the run's Scheduling keys it.
func (j *jobRunner) toAdmission(req v1alpha1.CreationRequest, name string) activities.Signal {
	key := queue.JobKey{Scheduling: req.Scheduling, SchedulingUID: req.SchedulingUID, Job: j.key.Name, Run: req.Run}
	return activities.Signal{WorkflowID: j.ids.AdmissionID(j.key.Namespace, req.TestBed), Name: name, Arg: key}
}

// createApp creates the request's application; created is false when there is none to
// follow: the job is invalid (the run fails and is reported) or no longer held (it is
// observed again at the top).
func (j *jobRunner) createApp(ctx workflow.Context, req v1alpha1.CreationRequest, r *runReport) (app activities.CreatedApplication, created bool, err error) {
	if err := quick(ctx, acts.CreateApplication, activities.CreateApplicationInput{Job: j.key, Request: req}).Get(ctx, &app); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == activities.ErrInvalidJob {
			j.status.FinishedAt = now(ctx)
			if ph := j.phases(); ph.EndedAt == nil {
				ph.EndedAt = nowMicro(ctx)
			}
			jobplan.RecordRun(&j.status, v1alpha1.RunFailed, appErr.Error(), jobplan.Where{})
			j.countEnd(ctx, v1alpha1.RunFailed)
			return app, false, r.report(ctx, v1alpha1.JobFailed, appErr.Error())
		}
		if activities.IsNotHeld(err) {
			return app, false, nil // observed again at the top
		}
		return app, false, err
	}
	return app, true, nil
}

// waitStarted waits until the application leaves Starting (StateAware), for the queues to
// hear: its first executor holds its slot, or the starting timeout passed. still is false
// when the claim or the request changed meanwhile. allPlaced says the wait saw every
// executor placed already: then the start is not reported on its own but with Running,
// which follows at once (a status write, a signal and a turn of the Scheduling less per
// job), and placed is what the wait saw.
func (j *jobRunner) waitStarted(ctx workflow.Context, key activities.AppKey, holder string, req v1alpha1.CreationRequest, r *runReport) (placed activities.AppProgress, allPlaced, still bool, err error) {
	first := key
	first.Enough = 1
	began := workflow.Now(ctx)
	if r.submitHeld {
		first.Within = submitQuiet
	}
	var started activities.AppProgress
	var timedOut, inTask bool
	if r.submitHeld {
		started, inTask = j.firstWaitInTask(ctx, first)
	}
	if !inTask {
		if started, timedOut, still, err = j.waitAppFor(ctx, acts.WaitPlaced, WaitHeartbeatTimeout, first, holder, req, queue.StartingTimeout); err != nil || !still {
			return started, false, still, err
		}
	}
	if r.submitHeld && !timedOut && !started.Outcome.Terminal && !started.Gone && started.Placed == 0 {
		// Nothing placed within submitQuiet: the application is said Submitted (with its
		// driver's start, if the wait saw it), and the wait goes on for what is left of the
		// starting timeout. A queue that waits to hear of the start also hears, once, that
		// the driver runs without having asked for an executor.
		j.notePlaced(started, key.Replicas)
		first.UntilDriverAlone = !req.QuietStart && req.SchedulingUID != ""
		msg := submittedMessage
		for {
			if first.UntilDriverAlone && started.DriverAlone() {
				r.also = append(r.also, j.toAdmission(req, AdmissionNoExecutorsUpdate))
				first.UntilDriverAlone, msg = false, driverAloneMessage
			}
			if err := r.report(ctx, v1alpha1.JobSubmitted, msg); err != nil {
				return started, false, true, err
			}
			first.Within = 0
			left := queue.StartingTimeout - workflow.Now(ctx).Sub(began)
			if left <= 0 {
				timedOut = true
				break
			}
			if started, timedOut, still, err = j.waitAppFor(ctx, acts.WaitPlaced, WaitHeartbeatTimeout, first, holder, req, left); err != nil || !still {
				return started, false, still, err
			}
			if timedOut || !first.UntilDriverAlone || !started.DriverAlone() {
				break
			}
			j.notePlaced(started, key.Replicas)
		}
	}
	if !timedOut && !started.Outcome.Terminal && !started.Gone && started.Placed >= key.Replicas {
		r.progress.Started = true
		return started, true, true, nil
	}
	j.notePlaced(started, key.Replicas)
	msg := "the first executor holds its slot"
	if timedOut {
		msg = fmt.Sprintf("no executor holds its slot after %s: it counts as started", queue.StartingTimeout)
	}
	if !started.Outcome.Terminal && !started.Gone {
		r.progress.Started = true
		if err := r.report(ctx, v1alpha1.JobSubmitted, msg); err != nil {
			return started, false, true, err
		}
	}
	return started, false, true, nil
}

// firstWaitInTask runs the first wait (key.Within bounds it: submitQuiet) as a local
// activity in the workflow task that made the application; ok is false when it failed, and
// the caller waits in an activity instead. It is tried once: a wait only reads, and the
// activity is the retry. Most runs have every pod placed within that second: the task then
// goes on to report Running and schedules the wait for the end, a workflow task and an
// activity less per run. A run whose pods take longer says Submitted and waits on in an
// activity.
//
// A nudge that comes during that second waits for the task to end, as any message that
// comes during a task does: the job then looks at itself again, and a claim or request
// that changed meanwhile ends the run's waits. A worker lost during the second loses the
// task; the next worker makes the task again after TaskTimeout, and finds the application
// made (CreateApplication is idempotent).
func (j *jobRunner) firstWaitInTask(ctx workflow.Context, key activities.AppKey) (_ activities.AppProgress, ok bool) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: key.Within + firstWaitMargin,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var p activities.AppProgress
	if err := workflow.ExecuteLocalActivity(lctx, acts.WaitPlaced, key).Get(ctx, &p); err != nil {
		workflow.GetLogger(ctx).Warn("the first wait in the task failed; waiting in an activity", "job", j.key.Name, "err", err)
		return activities.AppProgress{}, false
	}
	return p, true
}

// firstWaitMargin is what a first wait in the task may take beyond its bound: its last look
// at the application. With the task's other calls, the bound and the margin leave the task
// within TaskTimeout in the usual case; a task that takes longer is held open by the SDK's
// heartbeats, as any long local activity is, at the cost of a workflow task each.
const firstWaitMargin = 500 * time.Millisecond

// finish ends the run as the application ended: Completed if it succeeded, Failed if it
// failed or was deleted.
func (j *jobRunner) finish(ctx workflow.Context, app v1alpha1.ApplicationRef, finished activities.AppProgress, r *runReport, req v1alpha1.CreationRequest) error {
	if req.SchedulingUID != "" {
		// The job tells Admission of its end itself, ahead of the Scheduling's own message (a
		// repeat Admission ignores), with the final report, once the status says the run ended.
		r.also = append(r.also, j.toAdmission(req, AdmissionEndedUpdate))
	}
	j.status.FinishedAt = now(ctx)
	if ph := j.phases(); ph.EndedAt == nil {
		ph.EndedAt = nowMicro(ctx)
		if !finished.EndedAt.IsZero() {
			ph.EndedAt = &metav1.MicroTime{Time: finished.EndedAt.UTC()}
		}
	}
	state, outcome, msg := jobplan.End(app, finished.Gone, finished.Outcome)
	jobplan.RecordRun(&j.status, outcome, msg, whereOf(finished))
	j.countEnd(ctx, outcome)
	return r.report(ctx, state, msg)
}

// whereOf is where the run ran, as its last wait saw it.
func whereOf(p activities.AppProgress) jobplan.Where {
	return jobplan.Where{Nodes: p.Nodes, SharedWith: p.SharedWith, SharedWithMore: p.SharedWithMore}
}

// waitApp runs a waiting activity with its heartbeat timeout; a nudge in between re-observes
// the job, and if the claim or the request changed, the wait is cancelled (still = false)
// so the caller starts over.
func (j *jobRunner) waitApp(ctx workflow.Context, activity any, heartbeatTimeout time.Duration, key activities.AppKey, holder string, req v1alpha1.CreationRequest) (activities.AppProgress, bool, error) {
	p, _, still, err := j.waitAppFor(ctx, activity, heartbeatTimeout, key, holder, req, 0)
	return p, still, err
}

// WaitHeartbeatTimeout is the heartbeat timeout of a job's waits: a wait whose worker's host
// is lost is retried on another worker after this long, at once (firstRetry; a wait only
// reads). A worker that restarts on its host retries its predecessor's waits itself, at
// once (worker.RetryOrphans). The waits heartbeat every activities.HeartbeatEvery, and the
// worker sends each within that long (worker.HeartbeatThrottle): three heartbeats fit in it.
const WaitHeartbeatTimeout = 3 * activities.HeartbeatEvery

// FinishedHeartbeatTimeout is the heartbeat timeout of the wait for a running job's end,
// which heartbeats every activities.FinishedHeartbeatEvery (it says why).
const FinishedHeartbeatTimeout = 3 * activities.FinishedHeartbeatEvery

// waitAppFor is waitApp bounded by a timer (0: none); timedOut says the timer ended it.
func (j *jobRunner) waitAppFor(ctx workflow.Context, activity any, heartbeatTimeout time.Duration, key activities.AppKey, holder string, req v1alpha1.CreationRequest, limit time.Duration) (_ activities.AppProgress, timedOut, still bool, _ error) {
	waitCtx, cancel := workflow.WithCancel(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 365 * 24 * time.Hour,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: firstRetry, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	}))
	defer cancel()
	future := workflow.ExecuteActivity(waitCtx, activity, key)
	var timer workflow.Future
	if limit > 0 {
		timer = workflow.NewTimer(waitCtx, limit)
	}
	for {
		var progress activities.AppProgress
		var done, nudged, rang bool
		var err error
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(future, func(f workflow.Future) { done, err = true, f.Get(ctx, &progress) })
		sel.AddReceive(j.changed, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			nudged = true
		})
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) { rang = true })
		}
		sel.Select(ctx)
		if done {
			return progress, false, true, err
		}
		if rang {
			return activities.AppProgress{}, true, true, nil
		}
		if nudged {
			obs, err := j.observe(ctx)
			if err != nil {
				return activities.AppProgress{}, false, false, err
			}
			if !obs.Exists || obs.Holder != holder || obs.Request == nil || obs.Request.Scheduling != holder || obs.Request.Run != req.Run ||
				killsHolders(obs, holder) {
				return activities.AppProgress{}, false, false, nil
			}
		}
	}
}

// sameRun: the status describes the application of this request.
func sameRun(job string, st v1alpha1.BatchJobStatus, req v1alpha1.CreationRequest) bool {
	return st.Application != nil && st.Application.Name == operatorapp.Name(job, req.Scheduling, req.Run)
}

// phases are the current run's phase times, made when first needed.
func (j *jobRunner) phases() *v1alpha1.RunPhases {
	if j.status.Phases == nil {
		j.status.Phases = &v1alpha1.RunPhases{}
	}
	return j.status.Phases
}

// notePlaced takes the driver's and the executors' times from a wait (jobplan.NotePlaced).
func (j *jobRunner) notePlaced(p activities.AppProgress, replicas int) {
	jobplan.NotePlaced(j.phases(), p.DriverRunningAt, p.PlacedAt, replicas)
}

func nowMicro(ctx workflow.Context) *metav1.MicroTime {
	t := metav1.NewMicroTime(workflow.Now(ctx).UTC())
	return &t
}

func now(ctx workflow.Context) *metav1.Time {
	t := metav1.NewTime(workflow.Now(ctx).UTC().Truncate(time.Second))
	return &t
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
