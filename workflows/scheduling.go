package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
	"slotplane/schedplan"
)

// ExtendUpdate is the Temporal Update that appends jobs to a running Scheduling's queue. Its
// argument is the Scheduling's whole job list (the spec after an edit): jobs already queued
// are kept as they are, new ones are validated, claimed and appended in order.
const ExtendUpdate = "extend"

// SchedulingWorkflowID is the id of a Scheduling's workflow; the API and the bridge both
// start it under this id, so a second start is a no-op.
func SchedulingWorkflowID(namespace, name string) string {
	return fmt.Sprintf("scheduling/%s/%s", namespace, name)
}

// SchedulingOfWorkflowID is the Scheduling a SchedulingWorkflowID names (false: it names
// none).
func SchedulingOfWorkflowID(id string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(id, "scheduling/")
	ns, name, found := strings.Cut(rest, "/")
	if !ok || !found || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// SchedulingUIDMemo is the memo field that holds the UID of the Scheduling a workflow runs
// for: a front door tells by it a run of an earlier object of the name.
const SchedulingUIDMemo = "scheduling-uid"

// SchedulingUIDOf reads SchedulingUIDMemo from a workflow's memo ("": none).
func SchedulingUIDOf(memo *commonpb.Memo) string {
	p, ok := memo.GetFields()[SchedulingUIDMemo]
	if !ok {
		return ""
	}
	var uid string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &uid); err != nil {
		return ""
	}
	return uid
}

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
	s := &scheduler{key: activities.SchedulingKey{Namespace: in.Namespace, Name: in.Name}, progress: workflow.GetSignalChannel(ctx, JobProgressSignal), in: in}
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
// for again. An ended Scheduling only holds its jobs, as it did.
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
			e.Run, e.Slots = 1, g.Slots
			if at := g.Request.GrantedAt; at != nil {
				e.RequestedAt = at.Time
			}
			if g.State == "" {
				idle = append(idle, e.Job.Name)
				continue
			}
			e.State, e.Message = g.State, v1alpha1.ClipMessage(g.Message)
			e.SubmittedAt, e.RunningAt, e.FinishedAt = g.SubmittedAt, g.RunningAt, g.FinishedAt
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
		s.setCondition(ctx, metav1.ConditionTrue, "TestBedExists", fmt.Sprintf("test bed %s exists", s.spec.TestBed))
	} else {
		s.setCondition(ctx, metav1.ConditionFalse, "TestBedMissing", fmt.Sprintf("test bed %s does not exist; the jobs wait for it", s.spec.TestBed))
	}
	return nil
}

// setCondition sets the TestBedFound condition (its transition time from the workflow's
// clock, so replays agree).
func (s *scheduler) setCondition(ctx workflow.Context, status metav1.ConditionStatus, reason, msg string) {
	c := metav1.Condition{Type: v1alpha1.ConditionTestBedFound, Status: status, Reason: reason, Message: msg, LastTransitionTime: *now(ctx)}
	for i, old := range s.status.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.status.Conditions[i] = c
			return
		}
	}
	s.status.Conditions = append(s.status.Conditions, c)
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
func (s *scheduler) onProgress(ctx workflow.Context, p JobProgress) []tell {
	s.apply(p)
	var out []tell
	// Admission hears once when a job left Starting (StateAware), from the job itself when
	// the report says so (AdmissionTold).
	if p.Started || p.State == v1alpha1.JobRunning {
		for _, e := range s.entries {
			if e.Job.Name == p.Job && e.Run == p.Run && !e.Started {
				e.Started = true
				if !p.AdmissionTold {
					out = append(out, tell{AdmissionStartedUpdate, s.admissionKey(e)})
				}
			}
		}
	}
	if p.State.Ended() && !p.AdmissionTold {
		// The job's status says it ended before its workflow reports it: Admission may hand
		// its slots on at once.
		for _, e := range s.entries {
			if e.Job.Name == p.Job && e.Run == p.Run {
				out = append(out, tell{AdmissionEndedUpdate, s.admissionKey(e)})
			}
		}
	}
	return out
}

func (s *scheduler) apply(p JobProgress) {
	for _, e := range s.entries {
		if e.Job.Name == p.Job && e.Run == p.Run {
			e.Apply(schedplan.Report{State: p.State, Message: p.Message, SubmittedAt: p.SubmittedAt, RunningAt: p.RunningAt, FinishedAt: p.FinishedAt})
		}
	}
}

func (s *scheduler) nudge(ctx workflow.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	var nudges []activities.SignalWithStart
	for _, name := range jobs {
		nudges = append(nudges, s.jobNudge(name))
	}
	return sendNudges(ctx, nudges)
}

// jobNudge tells a job's workflow to look at its job again, starting it if needed.
func (s *scheduler) jobNudge(name string) activities.SignalWithStart {
	return jobNudge(s.key.Namespace, name)
}

// batch is how many jobs one cluster activity handles. Each job costs the activity one or
// two requests to the API server: at the worker's default of 100 a second, a batch takes a
// second or two, well inside the activity's timeout, however long the Scheduling.
const batch = 100

// sendNudges signals (or starts) the workflows, a batch per activity, in order.
func sendNudges(ctx workflow.Context, nudges []activities.SignalWithStart) error {
	for part := range slices.Chunk(nudges, batch) {
		if err := quick(ctx, acts.NudgeWorkflows, activities.SignalWithStartInput{TaskQueue: TaskQueue, Signals: part}).Get(ctx, nil); err != nil {
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

// requestAdmission sends the jobs to the test bed's Admission workflow (starting it if it
// does not run), in queue order: the order is their submission order there.
func (s *scheduler) requestAdmission(ctx workflow.Context, entries schedplan.Jobs) error {
	if len(entries) == 0 {
		return nil
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Job.Name
	}
	var infos []activities.JobInfo
	for part := range slices.Chunk(names, batch) {
		var got []activities.JobInfo
		if err := quick(ctx, acts.ReadJobs, activities.ReadJobsInput{Namespace: s.key.Namespace, Names: part, Scheduling: s.key.Name}).Get(ctx, &got); err != nil {
			return err
		}
		infos = append(infos, got...)
	}
	var reqs []AdmissionRequest
	for i, e := range entries {
		info := infos[i]
		if !info.Exists {
			e.State, e.Message, e.FinishedAt = v1alpha1.JobFailed, fmt.Sprintf("the BatchJob %s does not exist", e.Job.Name), workflow.Now(ctx)
			continue
		}
		q := info.Queue
		if q == "" {
			q = s.spec.Queue
		}
		reqs = append(reqs, AdmissionRequest{JobKey: s.admissionKey(e), Queue: q, User: info.User, Groups: info.Groups, Slots: e.Job.Replication, SlotIDs: e.Job.SlotIDs,
			Driver: info.DriverSize(), Expected: info.Expected, GaveBack: e.GaveBack, Shown: info.Shown})
	}
	nudge := func(signal string, arg any) activities.SignalWithStart {
		return activities.SignalWithStart{
			WorkflowID: AdmissionWorkflowID(s.key.Namespace, s.spec.TestBed), WorkflowType: "AdmissionWorkflow",
			Input:  AdmissionInput{Namespace: s.key.Namespace, TestBed: s.spec.TestBed, StepsPerRun: s.in.AdmissionStepsPerRun},
			Signal: signal, SignalArg: arg, TaskQueue: AdmissionTaskQueue,
		}
	}
	// A batch to a message: the server delivers the messages to one workflow one at a time.
	var nudges []activities.SignalWithStart
	for part := range slices.Chunk(reqs, batch) {
		nudges = append(nudges, nudge(AdmissionRequestsUpdate, part))
	}
	return sendNudges(ctx, nudges)
}

// admissionKey is the key of an entry's run in Admission: a job runs once per Scheduling.
func (s *scheduler) admissionKey(e *schedplan.Job) queue.JobKey {
	return queue.JobKey{Scheduling: s.key.Name, SchedulingUID: s.uid, Job: e.Job.Name, Run: 1}
}

// releaseAdmission tells Admission a job no longer needs its slots, or withdraws it.
func (s *scheduler) releaseAdmission(ctx workflow.Context, e *schedplan.Job) {
	s.tellAdmission(ctx, AdmissionReleaseUpdate, e)
}

// tellAdmission sends Admission a signal about one job. Admission may be gone (its test bed
// was deleted); then nobody needs to hear it.
func (s *scheduler) tellAdmission(ctx workflow.Context, signal string, e *schedplan.Job) {
	s.tellAdmissionKey(ctx, signal, s.admissionKey(e))
}

func (s *scheduler) tellAdmissionKey(ctx workflow.Context, signal string, k queue.JobKey) {
	s.tellAdmissionAll(ctx, []tell{{signal, k}})
}

// tell is a message for Admission about one job's run.
type tell struct {
	signal string
	key    queue.JobKey
}

// tellAdmissionAll sends Admission the messages and waits for them to be delivered, in one
// local activity. Admission may be gone (its test bed was deleted); then nobody needs to
// hear them.
func (s *scheduler) tellAdmissionAll(ctx workflow.Context, ts []tell) {
	if len(ts) == 0 {
		return
	}
	id := AdmissionWorkflowID(s.key.Namespace, s.spec.TestBed)
	signals := make([]activities.Signal, len(ts))
	for i, t := range ts {
		signals[i] = activities.Signal{WorkflowID: id, Name: t.signal, Arg: t.key}
	}
	if err := sendSignals(ctx, signals).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("tell admission of jobs", "messages", len(ts), "err", err)
	}
}

// waitForAdmission waits for a grant, a job's progress or an extension, and acts on it;
// statusDue: nothing came but the time of a put-off status write (schedplan).
func (s *scheduler) waitForAdmission(ctx workflow.Context) (statusDue bool, err error) {
	var grants []AdmissionGrant
	var progress *JobProgress
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(s.batches, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &grants)
	})
	sel.AddReceive(s.progress, func(c workflow.ReceiveChannel, _ bool) {
		var p JobProgress
		c.Receive(ctx, &p)
		progress = &p
	})
	sel.AddFuture(awaitFuture(timerCtx, func() bool { return s.changed }), func(workflow.Future) { s.changed = false })
	if s.owed != nil {
		// A put-off status write is due: the loop turns and writes it.
		sel.AddFuture(s.owed, func(workflow.Future) { s.owed, statusDue = nil, true })
	}
	if s.reask == nil && s.entries.AnyWaiting() {
		// One timer across the steps, made again only once it fired.
		s.reask = workflow.NewTimer(ctx, max(time.Second, s.askedAt.Add(reaskEvery).Sub(workflow.Now(ctx))))
	}
	reasked := false
	if s.reask != nil {
		sel.AddFuture(s.reask, func(workflow.Future) { s.reask, reasked = nil, true })
	}
	sel.Select(ctx)
	if statusDue {
		return true, nil
	}
	if reasked {
		// Jobs waited reaskEvery: ask again, for an Admission that lost them.
		s.askedAt = workflow.Now(ctx)
		return false, s.requestAdmission(ctx, s.entries.Waiting())
	}
	return false, s.takeWaiting(ctx, grants, progress)
}

// takeWaiting handles, after the message or messages that woke the loop (grants, progress),
// every message waiting: progress is applied (Admission's signals sent side by side), the
// grants start their jobs together, and the status is written once for all of it. The
// progress of a run that a grant among them starts is applied after the grants: both wait
// at once when a worker was lost after it carried out a grant (the job's request written,
// its workflow nudged) but before its task was recorded, and progress taken first would
// name a run the entry does not have yet, and be dropped.
func (s *scheduler) takeWaiting(ctx workflow.Context, grants []AdmissionGrant, progress *JobProgress) error {
	var ps []JobProgress
	if progress != nil {
		ps = append(ps, *progress)
	}
	for {
		var p JobProgress
		if !s.progress.ReceiveAsync(&p) {
			break
		}
		ps = append(ps, p)
	}
	for {
		var gs []AdmissionGrant // fresh each time: a reused value would share its slices
		if !s.batches.ReceiveAsync(&gs) {
			break
		}
		grants = append(grants, gs...)
	}
	var tells []tell
	var later []JobProgress
	for _, p := range ps {
		if slices.ContainsFunc(grants, func(g AdmissionGrant) bool { return g.Job == p.Job && g.Run == p.Run }) {
			later = append(later, p)
			continue
		}
		tells = append(tells, s.onProgress(ctx, p)...)
	}
	s.tellAdmissionAll(ctx, tells)
	err := s.handleGrants(ctx, grants)
	tells = nil
	for _, p := range later {
		tells = append(tells, s.onProgress(ctx, p)...)
	}
	s.tellAdmissionAll(ctx, tells)
	return err
}

// handleGrants starts the jobs the grants name, or fails those refused; a grant nobody
// wants (a stale key, a job that ended or left) is given back, and a repeat of a grant
// taken already changes nothing. The creation requests are written side by side.
func (s *scheduler) handleGrants(ctx workflow.Context, grants []AdmissionGrant) error {
	type pending struct {
		e *schedplan.Job
		g AdmissionGrant
		f workflow.Future
	}
	var started []pending
	for _, g := range grants {
		e, req, ok := s.takeGrant(ctx, g)
		if !ok {
			continue
		}
		// The request nudges the job's workflow itself, once it is written and the slots'
		// ghosts are gone (RequestCreation).
		n := s.jobNudge(e.Job.Name)
		in := activities.RequestCreationInput{Namespace: s.key.Namespace, Job: e.Job.Name, Request: req, Nudge: &n, TaskQueue: TaskQueue}
		f := quick(ctx, acts.RequestCreation, in)
		started = append(started, pending{e: e, g: g, f: f})
	}
	var gone schedplan.Jobs
	var firstErr error
	for _, p := range started {
		err := p.f.Get(ctx, nil)
		switch {
		case activities.IsNotHeld(err):
			p.e.State, p.e.Message = v1alpha1.JobFailed, "the job was released or taken by another Scheduling"
			s.releaseAdmission(ctx, p.e)
		case activities.IsSlotsGone(err):
			giveBack(p.e, err)
			gone = append(gone, p.e)
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		default:
			p.e.Message = v1alpha1.ClipMessage("admitted to queue " + p.g.Queue)
		}
	}
	if err := s.askAgain(ctx, gone); err != nil {
		return err
	}
	return firstErr
}

// giveBack undoes the taking of a grant whose slots left the test bed: the job waits again,
// and askAgain tells Admission.
func giveBack(e *schedplan.Job, why error) {
	msg := why.Error()
	var app *temporal.ApplicationError
	if errors.As(why, &app) {
		msg = app.Message()
	}
	e.GiveBack(msg)
}

// askAgain asks for the jobs again (they join the end of their queues); each request names
// the grant its job gave back (AdmissionRequest.GaveBack), which Admission releases: one
// message does both, so no order of a release and a request can lose the job.
func (s *scheduler) askAgain(ctx workflow.Context, jobs schedplan.Jobs) error {
	return s.requestAdmission(ctx, jobs)
}

// takeGrant applies a grant to the job it names and returns the creation request to write
// (ok), or, for a refusal, fails the job; a grant nobody wants is given back.
func (s *scheduler) takeGrant(ctx workflow.Context, g AdmissionGrant) (*schedplan.Job, v1alpha1.CreationRequest, bool) {
	e := s.entries.Find(g.Job)
	switch schedplan.Judge(e, schedplan.Grant{Current: e != nil && g.JobKey == s.admissionKey(e), Seq: g.Seq, Refused: g.Refused != ""}) {
	case schedplan.Ignore:
		return nil, v1alpha1.CreationRequest{}, false
	case schedplan.Release:
		s.tellAdmissionKey(ctx, AdmissionReleaseUpdate, g.JobKey)
		return nil, v1alpha1.CreationRequest{}, false
	case schedplan.Refuse:
		e.Fail("not admitted: "+g.Refused, workflow.Now(ctx))
		return nil, v1alpha1.CreationRequest{}, false
	}
	e.Take(g.Slots, g.Seq, workflow.Now(ctx))
	if len(s.status.Conditions) > 0 {
		s.setCondition(ctx, metav1.ConditionTrue, "TestBedExists", fmt.Sprintf("test bed %s exists", s.spec.TestBed))
	}
	granted := metav1.NewMicroTime(e.RequestedAt)
	req := v1alpha1.CreationRequest{Scheduling: s.key.Name, TestBed: s.spec.TestBed, Slots: g.Slots, Run: e.Run, GrantedAt: &granted, Queue: g.Queue,
		QuietStart: g.QuietStart}
	if k := s.admissionKey(e); k.Run == e.Run {
		req.SchedulingUID = k.SchedulingUID
	}
	return e, req, true
}
