package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/threadcpu"
	"slotplane/queue"
)

// Messages of the Admission workflow. What other parts send it goes as Temporal updates,
// each taken in at once (its handler only notes it) and acted on by the loop: a signal that
// came in while a workflow task continued the run as new would make the server refuse the
// continue-as-new, and the worker replay the whole run to take it in, a task of seconds on a
// busy bed; an update that comes in then is aborted, and its client sends it again to the
// new run. Every message is keyed, so one that comes twice changes nothing.
const (
	// AdmissionRequestUpdate carries an AdmissionRequest from a Scheduling.
	AdmissionRequestUpdate = "admission-request"
	// AdmissionRequestsUpdate carries a batch of AdmissionRequests from one Scheduling, in
	// its queue order.
	AdmissionRequestsUpdate = "admission-requests"
	// AdmissionReleaseUpdate carries an AdmissionKey: the job's run ended or was
	// withdrawn, or its grant was not wanted.
	AdmissionReleaseUpdate = "admission-release"
	// AdmissionEndedUpdate carries an AdmissionKey: the job's run is over and its status
	// says so. Its slots may go to the next job at once (queue.Admitter.Ended).
	AdmissionEndedUpdate = "admission-ended"
	// AdmissionStartedUpdate carries an AdmissionKey naming a granted job that left
	// StateAware's Starting state (its first executor holds its slot, or the fallback timer
	// of its job's workflow fired).
	AdmissionStartedUpdate = "admission-started"
	// AdmissionNoExecutorsUpdate carries an AdmissionKey naming a granted job, still
	// Starting, whose driver runs and has asked for no executor yet
	// (queue.Admitter.NoExecutors).
	AdmissionNoExecutorsUpdate = "admission-no-executors"
	// AdmissionSlotsUpdate tells the workflow the test bed's slots changed: decide again.
	AdmissionSlotsUpdate = "admission-slots"
	// AdmissionConfigUpdate tells the workflow its allocation file may have changed.
	AdmissionConfigUpdate = "admission-config"
	// AdmittedBatchSignal carries the answers of one step to one Scheduling, in the order
	// Admission made them ([]AdmissionGrant): the signals to one workflow go one after
	// another, so one per grant would start the jobs of one step a workflow task apart.
	AdmittedBatchSignal = "admitted-batch"
	// QueuesQuery answers an AdmissionReport; its argument, ReportOptions, says how many
	// jobs it lists (none given: queue.DefaultReportJobs of each list).
	QueuesQuery = "queues"
	// AdmissionMoveUpdate moves a job to another queue (AdmissionMove), answering an
	// AdmissionMoved; a move that breaks a rule is rejected with the reason and changes
	// nothing.
	AdmissionMoveUpdate = "move"
	// DefaultQueuesConfigMap holds a test bed's allocation file (key fair-scheduler.xml).
	DefaultQueuesConfigMap = v1alpha1.QueuesConfigMap
)

// The messages and the report are the admission core's own types.
type (
	// AdmissionRequest asks for a run of a job to be started in the test bed's slots.
	AdmissionRequest = queue.Request
	// AdmissionGrant answers a request: the slots to start in, or why it is refused.
	AdmissionGrant = queue.Grant
	// AdmissionKey names a job's run (its key).
	AdmissionKey = queue.JobKey
	// AdmissionMove asks to move a job to another queue.
	AdmissionMove = queue.Move
	// AdmissionMoved says where a moved job was and is now.
	AdmissionMoved = queue.Moved
	// AdmissionEntry is a request with where it stands.
	AdmissionEntry = queue.Entry
	// AdmissionReport is the queue picture the API and people read.
	AdmissionReport = queue.Report
	// QueueReport is one queue's shares and use.
	QueueReport = queue.QueueReport
	// ReportOptions say how many jobs an AdmissionReport lists.
	ReportOptions = queue.ReportOptions
)

// The error types (temporal.ApplicationError.Type) of a rejected move, for callers that
// answer people: not ready, no such job, not allowed, or against the target's rules.
const (
	MoveNotReady  = queue.MoveNotReady
	MoveNotFound  = queue.MoveNotFound
	MoveForbidden = queue.MoveForbidden
	MoveInvalid   = queue.MoveInvalid
)

// AdmissionBatched are the messages to Admission a worker may send in one
// activities.BatchUpdate, a map from the message's name to its keys: the keys of jobs
// released, ended and started. A batch is taken in as each of them would be.
var AdmissionBatched = map[string]bool{AdmissionReleaseUpdate: true, AdmissionEndedUpdate: true, AdmissionStartedUpdate: true,
	AdmissionNoExecutorsUpdate: true}

// AdmissionUpdates are the messages Admission takes as updates (activities.Activities.Updates).
var AdmissionUpdates = map[string]bool{AdmissionRequestUpdate: true, AdmissionRequestsUpdate: true, AdmissionReleaseUpdate: true,
	AdmissionEndedUpdate: true, AdmissionStartedUpdate: true, AdmissionNoExecutorsUpdate: true, AdmissionSlotsUpdate: true, AdmissionConfigUpdate: true,
	activities.BatchUpdate: true}

// historyBytesPerRun bounds the history of one run. A worker that replays a run fetches it
// whole; on the 8,000-slot probe a run of 3 MB, mostly Schedulings' batches of requests,
// took a second to fetch and replay on a busy machine.
const historyBytesPerRun = 1 << 20

// historyFull says the run's history is as long as a run's may be: past historyBytesPerRun,
// or long enough that Temporal suggests continuing as new.
func (a *admission) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetCurrentHistorySize() >= historyBytesPerRun || info.GetContinueAsNewSuggested()
}

// windDownSteps bounds the steps a run takes past its bounds while the queues' writer
// finishes its batch, which takes a few seconds: a writer that cannot write (its activity
// retries until it is cancelled) must not keep the run from handing over.
const windDownSteps = 20

// updatesPerRun bounds the updates one run takes before it continues as new: half of the
// Temporal server's default limit on the updates of one run (history.maxTotalUpdates, 2,000),
// past which it refuses more.
const updatesPerRun = 1000

// AdmissionInput names the test bed. ConfigMap defaults to DefaultQueuesConfigMap, Resync
// (how often the file, the slots and the holds are checked again) to 15s, StepsPerRun (the
// decisions of one run before it continues as new) to 300, WorkPerRun to
// DefaultAdmissionWorkPerRun.
type AdmissionInput struct {
	Namespace   string
	TestBed     string
	ConfigMap   string
	Resync      time.Duration
	StepsPerRun int
	// WorkPerRun bounds what a replay of one run costs (admissionWork): the run continues as
	// new once its work adds up to it.
	WorkPerRun int `json:",omitempty"`
	// Carried is the admission state handed over by the previous run (queues, grants,
	// starvation clocks and the configuration in force), packed (queue.PackState): some
	// seven bytes a job, so that a bed of 80,000 slots and 100,000 waiting jobs still fits
	// one payload.
	Carried []byte `json:",omitempty"`
	// Unrecorded are the jobs' queues the previous run had not yet written to their statuses.
	Unrecorded activities.QueuePlacements `json:",omitempty"`
}

// DefaultAdmissionWorkPerRun is the work of one run (admissionWork), about 100 ms of a
// replay here. A worker that takes a run's task without its cached state (a new worker, a
// task that waited out the sticky timeout, a continue-as-new the server refused because a
// signal came in meanwhile) replays the run inside one workflow task: the bound keeps that
// task short at any size of the queues.
const DefaultAdmissionWorkPerRun = 100_000

// admissionWork counts what a replay of Admission's run costs, in units of about a
// microsecond here: the carried state unpacked and indexed at its start, each request and
// each key taken in, the keys of each check of the holds, and each decision, applied from
// its recorded outcome (decideOnce): its grants and assignments, its read of the slots, and
// a fixed part for its events.
const (
	workPerCarriedEntry = 2
	workPerRequest      = 4
	workPerKey          = 1
	workPerDecision     = 64
	// keysPerWork: the keys a check of the holds packs (queue.PackKeys) in a unit.
	keysPerWork = 3
)

// AdmissionWorkflow holds the queues of one test bed. Schedulings send it their jobs; it
// places each in a queue (placement rules, submit ACL), and, whenever slots free up or
// requests arrive, lets the queue policies choose which waiting jobs start and in which
// slots, and tells their Schedulings. The decisions are the Admitter's (package queue): this
// workflow only takes messages in, runs the Admitter and carries out what it decides.
//
// Every message is keyed by the job's run in its Scheduling (queue.JobKey), so a repeat is
// harmless. A grant that cannot be delivered, or an assignment for a job nobody holds, is
// released at once; every Resync the keys are checked against the claims on the BatchJobs,
// and what no Scheduling holds is released. The allocation file is read (and parsed) by an
// activity that answers only when it changed; a bad file leaves the last good one in force.
// The workflow ends when its test bed is deleted, refusing what still waits.
func AdmissionWorkflow(ctx workflow.Context, in AdmissionInput) error {
	ctx = withActivityDefaults(ctx)
	if in.ConfigMap == "" {
		in.ConfigMap = DefaultQueuesConfigMap
	}
	if in.Resync <= 0 {
		in.Resync = 15 * time.Second
	}
	if in.StepsPerRun <= 0 {
		in.StepsPerRun = 300
	}
	if in.WorkPerRun <= 0 {
		in.WorkPerRun = DefaultAdmissionWorkPerRun
	}
	var st queue.AdmitterState
	if len(in.Carried) > 0 {
		var err error
		if st, err = queue.UnpackState(in.Carried); err != nil {
			// Only a bug writes a state this build cannot read: the workflow task fails and
			// is retried, visibly, until a build that reads it runs; the jobs stay queued.
			panic(err)
		}
	}
	a := &admission{in: in, core: queue.NewAdmitter(st), unrecorded: in.Unrecorded,
		ids: installationOf(ctx, installation.Default.AdmissionID(in.Namespace, in.TestBed), true)}
	a.in.Unrecorded = nil
	if err := a.listen(ctx); err != nil {
		return err
	}
	if err := a.loadConfig(ctx, false); err != nil {
		return err
	}
	if len(in.Carried) == 0 {
		// A fresh run: the grants in use are the cluster's to tell, before any decision
		// could grant their slots again.
		if err := a.checkHolds(ctx); err != nil {
			return err
		}
	}
	a.work = workPerCarriedEntry * a.core.Entries()
	// Every run takes at least one step: a state whose unpacking alone passes the bound
	// still makes progress.
	//
	// The server refuses a continue-as-new when an event came in during its task, and the
	// next task replays the whole run. So once the run is over its bounds it winds down: the
	// queues' writer starts no new batch, and the steps go on until its batch is written
	// (windDownSteps at most, then it is cancelled). The rest goes to the next run.
	for step, windDown := 0, 0; step < in.StepsPerRun; step++ {
		if step > 0 && (a.work >= in.WorkPerRun || a.updates >= updatesPerRun || a.historyFull(ctx)) {
			a.handingOver = true
			if !a.recordingBusy {
				break
			}
			if windDown++; windDown > windDownSteps {
				break // the hand-over cancels the writer's batch
			}
		}
		gone, err := a.step(ctx)
		if err != nil || gone {
			return err
		}
	}
	// Hand over: every message taken in is acted on first (the inbox is lost with this run),
	// and no handler may be half done. What comes after this task is sent again to the next
	// run by its client. The resync timer is cancelled in the very task that continues as
	// new: the cancel drops the timer's firing if it came during the task.
	a.handingOver = true
	if a.recordingBusy {
		a.stopRecording()
	}
	for len(a.inbox) > 0 || !workflow.AllHandlersFinished(ctx) || a.recordingBusy {
		if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) && !a.recordingBusy }); err != nil {
			return err
		}
		if _, err := a.drain(ctx); err != nil {
			return err
		}
	}
	if a.stopResync != nil {
		a.stopResync()
	}
	next := a.in
	packed, err := a.core.Pack()
	if err != nil {
		panic(err) // an encoding to memory: it does not fail
	}
	next.Carried = packed
	next.Unrecorded = a.pendingQueues()
	return workflow.NewContinueAsNewError(ctx, AdmissionWorkflow, next)
}

type admission struct {
	in   AdmissionInput
	ids  installation.Names
	core *queue.Admitter
	// seenBed: the test bed existed at some decision of this workflow's life; its absence
	// afterwards means it was deleted.
	seenBed bool
	// inbox holds the messages the update handlers took in that the loop has not acted on
	// yet, in the order they came; arrived wakes the loop. updates counts the updates this
	// run took (updatesPerRun).
	inbox   []message
	arrived workflow.Channel
	updates int
	// work adds up what a replay of this run costs (admissionWork, WorkPerRun).
	work int
	// moved wakes the loop after a move, so the next decision sees the job in its new queue.
	moved workflow.Channel
	// unrecorded are placements (and moves) whose queue is not yet written to the job's
	// status; recording is the batch being written, recordingBusy says a writer runs.
	unrecorded, recording []activities.QueuePlacement
	recordingBusy         bool
	// resync is the running resync timer (nil: none yet, or it fired), and stopResync
	// cancels it.
	resync     workflow.Future
	stopResync workflow.CancelFunc
	// handingOver: the run is about to continue as new; the queues' writer starts no new
	// batch (recordQueues), and stopRecording cancels the batch it writes.
	handingOver   bool
	stopRecording workflow.CancelFunc
}

// listen registers the workflow's message handlers, its queues query and its move update.
func (a *admission) listen(ctx workflow.Context) error {
	if err := a.takeMessages(ctx); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueuesQuery, func(opts ReportOptions) (AdmissionReport, error) { return a.core.Report(opts), nil }); err != nil {
		return err
	}
	a.moved = workflow.NewBufferedChannel(ctx, 1)
	if err := a.listenForKills(ctx); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, AdmissionMoveUpdate,
		func(ctx workflow.Context, m AdmissionMove) (res AdmissionMoved, err error) {
			err = guard("move", func() error {
				res, err = a.core.Move(m)
				return err
			})
			if err == nil {
				a.unrecorded = append(a.unrecorded, activities.QueuePlacement{Scheduling: m.Scheduling, Job: m.Job, Queue: res.To})
				a.moved.SendAsync(true)
			}
			return res, moveError(err)
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, m AdmissionMove) error {
			return moveError(guard("move", func() error {
				_, _, err := a.core.CheckMove(m)
				return err
			}))
		}})
}

// message is one message taken in: requests (one, or a Scheduling's batch), a job key with
// the name of the message that carried it (keyed: a release, an end or a start), or a word
// that the allocation file may have changed (config). A message of none of these (the slots
// changed) only wakes the loop.
type message struct {
	requests []AdmissionRequest
	keyed    string
	key      AdmissionKey
	config   bool
}

// takeMessages registers the handlers of the messages others send: each notes its message in
// the inbox and wakes the loop, which acts on it (drain).
func (a *admission) takeMessages(ctx workflow.Context) error {
	a.arrived = workflow.NewBufferedChannel(ctx, 1)
	take := func(ms ...message) error {
		a.inbox = append(a.inbox, ms...)
		a.updates++
		a.arrived.SendAsync(true)
		return nil
	}
	keyed := func(name string) func(workflow.Context, AdmissionKey) error {
		return func(_ workflow.Context, k AdmissionKey) error { return take(message{keyed: name, key: k}) }
	}
	handlers := []struct {
		name string
		fn   any
	}{
		{AdmissionRequestUpdate, func(_ workflow.Context, r AdmissionRequest) error {
			return take(message{requests: []AdmissionRequest{r}})
		}},
		{AdmissionRequestsUpdate, func(_ workflow.Context, rs []AdmissionRequest) error { return take(message{requests: rs}) }},
		{AdmissionReleaseUpdate, keyed(AdmissionReleaseUpdate)},
		{AdmissionEndedUpdate, keyed(AdmissionEndedUpdate)},
		{AdmissionStartedUpdate, keyed(AdmissionStartedUpdate)},
		{AdmissionNoExecutorsUpdate, keyed(AdmissionNoExecutorsUpdate)},
		{activities.BatchUpdate, func(_ workflow.Context, b map[string][]AdmissionKey) error {
			var ms []message
			for _, name := range []string{AdmissionReleaseUpdate, AdmissionEndedUpdate, AdmissionStartedUpdate, AdmissionNoExecutorsUpdate} {
				for _, k := range b[name] {
					ms = append(ms, message{keyed: name, key: k})
				}
			}
			return take(ms...)
		}},
		{AdmissionConfigUpdate, func(workflow.Context) error { return take(message{config: true}) }},
		{AdmissionSlotsUpdate, func(workflow.Context) error { return take(message{}) }},
	}
	for _, h := range handlers {
		if err := workflow.SetUpdateHandler(ctx, h.name, h.fn); err != nil {
			return err
		}
	}
	return nil
}

// step is one turn of the loop: it decides, waits for a message or the resync timer, takes
// in what arrived, reloads the allocation file when it may have changed or at a resync, and
// at a resync checks the keys against the claims. gone: the test bed was deleted.
func (a *admission) step(ctx workflow.Context) (gone bool, err error) {
	if gone, err := a.decide(ctx); err != nil || gone {
		return gone, err
	}
	a.recordQueues(ctx)
	resync := a.wait(ctx)
	reload, err := a.drain(ctx)
	if err != nil {
		return false, err
	}
	if reload || resync {
		if err := a.loadConfig(ctx, reload); err != nil {
			return false, err
		}
	}
	if resync {
		if err := a.checkHolds(ctx); err != nil {
			return false, err
		}
	}
	return false, nil
}

// wait blocks until a message or a move arrives, a starving queue's preemption timeout runs
// out (queue.Admitter.NextCheck), or the resync timer fires (resync), then cancels the
// step's timers and empties moved. The resync timer runs on across steps, made again only
// once it fired: a resync comes every Resync however busy the queues are, and a step costs
// no timer of its own.
func (a *admission) wait(ctx workflow.Context) (resync bool) {
	if len(a.inbox) > 0 {
		return false
	}
	timerCtx, cancel := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	for _, ch := range []workflow.ReceiveChannel{a.arrived, a.moved} {
		sel.AddReceive(ch, func(workflow.ReceiveChannel, bool) {})
	}
	if a.resync == nil {
		var resyncCtx workflow.Context
		resyncCtx, a.stopResync = workflow.WithCancel(ctx)
		a.resync = workflow.NewTimer(resyncCtx, a.in.Resync)
	}
	sel.AddFuture(a.resync, func(workflow.Future) { resync, a.resync = true, nil })
	if d, ok := a.core.NextCheck(workflow.Now(ctx)); ok && d < a.in.Resync {
		// A starving queue's timeout runs out before the resync: decide again then, at most
		// once per update interval (yarn.scheduler.fair.update-interval-ms).
		sel.AddFuture(workflow.NewTimer(timerCtx, d), func(workflow.Future) {})
	}
	sel.Select(ctx)
	cancel()
	for a.moved.ReceiveAsync(nil) {
	}
	return resync
}

// drain acts on every message in the inbox, in the order they came, until none is left
// (taking some in may wait on an activity, meanwhile more may come); reload says the
// allocation file may have changed.
func (a *admission) drain(ctx workflow.Context) (reload bool, err error) {
	for len(a.inbox) > 0 {
		in := a.inbox
		a.inbox = nil
		for _, m := range in {
			switch {
			case len(m.requests) > 0:
				a.takeRequests(ctx, m.requests)
			case m.keyed != "":
				a.takeKey(m.keyed, m.key)
			case m.config:
				reload = true
			}
		}
	}
	for a.arrived.ReceiveAsync(nil) {
	}
	return reload, nil
}

// takeRequests takes in requests that came together, and answers those that get an answer at
// once (a grant held already, or a refusal).
func (a *admission) takeRequests(ctx workflow.Context, rs []AdmissionRequest) {
	a.work += workPerRequest * len(rs)
	keys := make([]queue.JobKey, len(rs))
	for i, r := range rs {
		keys[i] = r.JobKey
	}
	before := a.queuesBefore(keys)
	var answers []AdmissionGrant
	for _, r := range rs {
		if g := a.request(r); g != nil {
			answers = append(answers, *g)
		}
	}
	a.tellAll(ctx, answers)
	a.placed(rs, before)
}

// takeKey takes in a job key that came with the message of a name: a release, an end, a
// start, or a driver without executors.
func (a *admission) takeKey(name string, k AdmissionKey) {
	a.work += workPerKey
	switch name {
	case AdmissionReleaseUpdate:
		a.core.Release(k)
	case AdmissionEndedUpdate:
		a.core.Ended(k)
	case AdmissionStartedUpdate:
		a.core.Started(k)
	case AdmissionNoExecutorsUpdate:
		a.core.NoExecutors(k)
	}
}

// request takes one request into the core; the answer, if any, is a grant held already or a
// refusal.
func (a *admission) request(r AdmissionRequest) *AdmissionGrant {
	var g *AdmissionGrant
	if err := guard("request", func() error { g = a.core.Request(r); return nil }); err != nil {
		g = &AdmissionGrant{JobKey: r.JobKey, Refused: err.Error()}
	}
	return g
}

// loadConfig asks for the allocation file if it changed since the version held; fresh: the
// workflow was told it changed, so the API server is read rather than the worker's copy.
//
// A change is read by an activity, not a local one, so the task that asks ends at once: a
// local activity would hold the task open while it waits for the API server and for a
// free local-activity slot of a busy worker (every bed's first run reads its file, and
// beds start together). Changes are rare, so the extra task costs little.
func (a *admission) loadConfig(ctx workflow.Context, fresh bool) error {
	held := a.core.Config()
	ref := activities.AllocationFileRef{Namespace: a.in.Namespace, ConfigMap: a.in.ConfigMap, Version: held.Version, RejectedVersion: held.RejectedVersion,
		Fresh: fresh}
	if !fresh {
		if unchanged, err := allocationFileUnchanged(ctx, ref); err != nil || unchanged {
			return err
		}
	}
	var u *queue.ConfigUpdate
	if err := workflow.ExecuteActivity(ctx, acts.LoadAllocationFile, ref).Get(ctx, &u); err != nil {
		return err
	}
	if u == nil {
		return nil
	}
	if u.Rejected != "" {
		workflow.GetLogger(ctx).Warn("the allocation file is rejected; the last good one stays in force", "version", u.Version, "why", u.Rejected)
	}
	err := guard("configure", func() error {
		a.core.Configure(held.Apply(*u))
		return nil
	})
	if err != nil {
		// The core could not take it: it counts as a rejected file, so the last good one
		// stays in force, the report says why, and this version is not offered again.
		workflow.GetLogger(ctx).Error("the allocation file broke the queue core; the last good one stays in force", "version", u.Version, "err", err)
		a.core.Configure(held.Apply(queue.ConfigUpdate{Version: u.Version, Rejected: err.Error()}))
	}
	return nil
}

// checkHolds compares the keys with the cluster: it releases the keys no Scheduling holds any
// more, and takes in the runs granted in the bed that no key names (a fresh run's grants,
// which its predecessor's end lost, or a grant of this run that went out before a lost task
// recorded it), so that no granted slot is granted again.
func (a *admission) checkHolds(ctx workflow.Context) error {
	keys := a.core.Keys()
	a.work += len(keys) / keysPerWork
	var check activities.HoldsCheck
	in := activities.CheckHoldsInput{Namespace: a.in.Namespace, TestBed: a.in.TestBed, Keys: keys}
	if err := workflow.ExecuteActivity(ctx, acts.CheckHolds, in).Get(ctx, &check); err != nil {
		return err
	}
	for _, u := range check.Unheld {
		if a.core.Release(u.Key) {
			workflow.GetLogger(ctx).Warn("released a job nobody holds", "key", u.Key.String(), "why", u.Why())
		}
	}
	for _, f := range check.Found {
		r := AdmissionRequest{JobKey: f.Key, Queue: f.Job.Queue, User: f.Job.User, Groups: f.Job.Groups, Slots: int32(len(f.Granted.Slots)),
			Driver: f.Job.DriverSize(), Expected: f.Job.Expected, Priority: f.Job.Priority}
		// A quiet start is never told: its grant starts Running, as Admission made it.
		started := f.Granted.State == v1alpha1.JobRunning || f.Granted.Request.QuietStart
		if a.core.Restore(r, f.Granted.Request.Queue, f.Granted.Slots, f.Granted.Request.GrantedAt.Time, started) {
			a.work += workPerRequest
			workflow.GetLogger(ctx).Warn("took in a grant held in the cluster", "key", f.Key.String(), "slots", f.Granted.Slots)
		}
	}
	return nil
}

// decide reads the slots, runs the Admitter and carries out its decision. gone: the test bed
// was deleted; what waited is refused and the workflow ends.
func (a *admission) decide(ctx workflow.Context) (gone bool, err error) {
	slots, err := readSlots(ctx, activities.TestBedRef{Namespace: a.in.Namespace, Name: a.in.TestBed})
	if err != nil {
		return false, err
	}
	if !slots.Exists && (a.seenBed || !a.core.Total().IsZero()) {
		a.tellAll(ctx, a.core.Close(fmt.Sprintf("test bed %s was deleted", a.in.TestBed)))
		return true, nil
	}
	a.seenBed = a.seenBed || slots.Exists
	bed := queue.Bed{Exists: slots.Exists, Positions: slots.Positions, Free: slots.Free, Unavailable: slots.Unavailable, SlotSize: activities.QueueResources(slots.SlotSize)}
	d, failed := a.decideOnce(ctx, bed)
	a.work += workPerDecision + len(d.Grants) + len(d.Assignments) + (len(slots.Positions)+len(slots.Free)+len(slots.Unavailable))/16
	if failed != nil {
		workflow.GetLogger(ctx).Error("a decision failed; nothing was granted", "err", failed)
		return false, nil
	}
	// The decision's inputs are recorded before anyone hears of it. A local activity's result
	// is recorded only when its workflow task completes; a worker lost after the grants went
	// out but before that would decide again on a new read of the slots, perhaps
	// differently, while the Schedulings keep the first grants: a slot granted twice. So the
	// first message that carries a decision out goes through an activity, which the server
	// schedules only once the task has completed, with the read in the history.
	viaServer := len(d.Grants) > 0 || len(d.Assignments) > 0
	a.tellAllVia(ctx, d.Grants, viaServer)
	if len(d.Grants) > 0 {
		viaServer = false
	}
	for _, as := range d.Assignments {
		in := activities.AssignSlotsInput{Namespace: a.in.Namespace, Scheduling: as.Scheduling, Job: as.Job, TestBed: a.in.TestBed, Keep: as.Keep, Revoke: as.Revoke, Why: as.Why}
		f := quick
		if viaServer {
			f, viaServer = commitActivity, false
		}
		err := f(ctx, acts.AssignSlots, in).Get(ctx, nil)
		if activities.IsNotHeld(err) {
			workflow.GetLogger(ctx).Warn("a granted job is no longer held by its scheduling", "key", as.JobKey.String(), "err", err)
			a.core.Release(as.JobKey)
			continue
		}
		if err != nil {
			return false, err
		}
		if len(as.Revoke) > 0 {
			workflow.GetLogger(ctx).Info("preempted", "key", as.JobKey.String(), "slots", as.Revoke, "why", as.Why)
			victim := ""
			for _, e := range a.core.Running() {
				if e.Request.JobKey == as.JobKey {
					victim = e.Queue
				}
			}
			metricsFor(ctx, a.in.Namespace, a.in.TestBed, victim).WithTags(map[string]string{"preempting_queue": as.For}).Counter(metricPreempted).Inc(1)
		}
	}
	return false, nil
}

// decideOnce runs the Admitter's decision and records its outcome (queue.Outcome) in a side
// effect: a replay of the run applies the recorded outcome instead of deciding again, so a
// worker that replays a run (a new worker, a task the server refused) spends on each
// decision the work of what it granted, not of every waiting job. failed: the decision
// broke part way; the state it left is kept, and nothing is carried out.
func (a *admission) decideOnce(ctx workflow.Context, bed queue.Bed) (d queue.Decision, failed error) {
	at := workflow.Now(ctx)
	decided := false
	var rec queue.Outcome
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		decided = true
		// The decision's own time, on the worker's clock, is a metric only: it decides
		// nothing. Its CPU time tells the decision's own cost from the time its worker waited
		// for a core.
		began := time.Now() //workflowcheck:ignore
		cpu, cpuKnown := threadcpu.Of(func() {
			failed = guard("decide", func() error { d = a.core.Decide(at, bed); return nil })
		})
		took := time.Since(began) //workflowcheck:ignore
		m := metricsFor(ctx, a.in.Namespace, a.in.TestBed, "")
		m.Timer(metricDecision).Record(took)
		if cpuKnown {
			m.Timer(metricDecisionCPU).Record(cpu)
		}
		var o queue.Outcome
		var err error
		if failed != nil {
			o, err = a.core.FailedOutcome()
		} else {
			o, err = a.core.OutcomeOf(d)
		}
		if err != nil {
			panic(err) // an encoding to memory: it does not fail
		}
		return o
	}).Get(&rec)
	if err != nil {
		panic(err) // the value just recorded, or read from the history: only a bug fails
	}
	if decided {
		return d, failed
	}
	if d, err = a.core.Apply(at, rec); err != nil {
		// Only a bug records an outcome that does not fit the state it was decided on: the
		// task fails and is retried, visibly, as for a carried state this build cannot read.
		panic(err)
	}
	if len(rec.State) > 0 {
		return queue.Decision{}, errors.New("the recorded decision failed part way")
	}
	return d, nil
}

// grantsPerSignal bounds a batch of grants (AdmittedBatchSignal): a step that grants a
// thousand jobs of one Scheduling sends it a few signals of tens of kilobytes each, well
// within what one Temporal payload may carry.
const grantsPerSignal = 200

// tellAll sends grants or refusals to their Schedulings, in one local activity. A
// Scheduling that does not run cannot take its grant: the key is released, so its slots are
// not held for nobody.
func (a *admission) tellAll(ctx workflow.Context, gs []AdmissionGrant) {
	a.tellAllVia(ctx, gs, false)
}

// tellAllVia is tellAll; viaServer sends the first signals from an activity instead of a
// local activity, which commits the decision first (see decide).
func (a *admission) tellAllVia(ctx workflow.Context, gs []AdmissionGrant, viaServer bool) {
	if len(gs) == 0 {
		return
	}
	for _, g := range gs {
		if g.Refused != "" {
			metricsFor(ctx, a.in.Namespace, a.in.TestBed, "").Counter(metricRejected).Inc(1)
		}
	}
	// groups[i] are the grants that signals[i] carries.
	var signals []activities.Signal
	var groups [][]AdmissionGrant
	at := map[string]int{} // each Scheduling's open group
	for _, g := range gs {
		i, ok := at[g.Scheduling]
		if !ok || len(groups[i]) == grantsPerSignal {
			i = len(groups)
			at[g.Scheduling] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], g)
	}
	for _, group := range groups {
		signals = append(signals, activities.Signal{WorkflowID: a.ids.SchedulingID(a.in.Namespace, group[0].Scheduling), Name: AdmittedBatchSignal, Arg: group})
	}
	// The signals go in calls of at most grantsPerCall grants, side by side: a decision that
	// fills a bed of thousands of slots would not fit one payload.
	type call struct {
		from, to int // signals[from:to]
		sent     workflow.Future
	}
	var calls []call
	for from := 0; from < len(signals); {
		to, n := from, 0
		for to < len(signals) && (to == from || n+len(groups[to]) <= grantsPerCall) {
			n += len(groups[to])
			to++
		}
		c := call{from: from, to: to}
		if viaServer {
			c.sent = commitActivity(ctx, acts.SignalWorkflows, activities.SignalWorkflowsInput{Signals: signals[from:to]})
		} else {
			c.sent = sendSignals(ctx, signals[from:to])
		}
		calls = append(calls, c)
		from = to
	}
	for _, c := range calls {
		var res activities.SignalWorkflowsResult
		if err := c.sent.Get(ctx, &res); err != nil {
			workflow.GetLogger(ctx).Warn("tell schedulings of their jobs", "signals", c.to-c.from, "err", err)
			for _, group := range groups[c.from:c.to] {
				for _, g := range group {
					a.core.Release(g.JobKey)
				}
			}
			continue
		}
		for _, i := range res.NotRunning {
			for _, g := range groups[c.from+i] {
				workflow.GetLogger(ctx).Warn("a scheduling that does not run was granted its job", "key", g.JobKey.String())
				a.core.Release(g.JobKey)
			}
		}
	}
}

// grantsPerCall bounds the grants one SignalWorkflows call carries: about 170 bytes each,
// a call stays near 200 KB, a tenth of Temporal's payload limit.
const grantsPerCall = 1200

// guard runs one step of the admission core and turns a panic into an error, so that one bad
// message cannot fail the workflow task again and again and stop a test bed's admission.
func guard(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s failed: %v", what, r)
		}
	}()
	return f()
}

// moveError turns the core's refusal into an application error of its kind.
func moveError(err error) error {
	var me *queue.MoveError
	if errors.As(err, &me) {
		return temporal.NewApplicationError(me.Msg, me.Kind)
	}
	return err
}
