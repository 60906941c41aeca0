package workflows

// A Scheduling and its test bed's Admission: the requests it sends, the grants it takes,
// and what it tells Admission of its jobs' runs.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
	"slotplane/schedplan"
)

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
			Driver: info.DriverSize(), Expected: info.Expected, Priority: info.Priority, GaveBack: e.GaveBack, Shown: info.Shown})
	}
	nudge := func(signal string, arg any) activities.SignalWithStart {
		return activities.SignalWithStart{
			WorkflowID: s.ids.AdmissionID(s.key.Namespace, s.spec.TestBed), WorkflowType: "AdmissionWorkflow",
			Input:  AdmissionInput{Namespace: s.key.Namespace, TestBed: s.spec.TestBed, StepsPerRun: s.in.AdmissionStepsPerRun},
			Signal: signal, SignalArg: arg, TaskQueue: s.ids.AdmissionQueue(),
		}
	}
	// A batch to a message: the server delivers the messages to one workflow one at a time.
	var nudges []activities.SignalWithStart
	for part := range slices.Chunk(reqs, batch) {
		nudges = append(nudges, nudge(AdmissionRequestsUpdate, part))
	}
	return s.sendNudges(ctx, nudges)
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
	id := s.ids.AdmissionID(s.key.Namespace, s.spec.TestBed)
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
		tells = append(tells, s.onProgress(p)...)
	}
	s.tellAdmissionAll(ctx, tells)
	err := s.handleGrants(ctx, grants)
	tells = nil
	for _, p := range later {
		tells = append(tells, s.onProgress(p)...)
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
		in := activities.RequestCreationInput{Namespace: s.key.Namespace, Job: e.Job.Name, Request: req, Nudge: &n, TaskQueue: s.ids.Queue()}
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
		schedplan.TestBedFound(&s.status, s.spec.TestBed, true, workflow.Now(ctx))
	}
	granted := metav1.NewMicroTime(e.RequestedAt)
	req := v1alpha1.CreationRequest{Scheduling: s.key.Name, TestBed: s.spec.TestBed, Slots: g.Slots, Run: e.Run, GrantedAt: &granted, Queue: g.Queue,
		QuietStart: g.QuietStart}
	if k := s.admissionKey(e); k.Run == e.Run {
		req.SchedulingUID = k.SchedulingUID
	}
	return e, req, true
}
