package workflows

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// Messages of the Admission workflow.
const (
	// AdmissionRequestSignal carries an AdmissionRequest from a Scheduling.
	AdmissionRequestSignal = "admission-request"
	// AdmissionReleaseSignal carries an AdmissionRelease: the job ended or was withdrawn.
	AdmissionReleaseSignal = "admission-release"
	// AdmissionStartedSignal carries an AdmissionRelease naming a granted job that left
	// StateAware's Starting state (its first executor holds its slot, or the fallback timer
	// of its job's workflow fired).
	AdmissionStartedSignal = "admission-started"
	// AdmissionSlotsSignal tells the workflow the test bed's slots changed: decide again.
	AdmissionSlotsSignal = "admission-slots"
	// AdmissionConfigSignal tells the workflow its allocation file may have changed.
	AdmissionConfigSignal = "admission-config"
	// AdmittedSignal carries an AdmissionGrant back to the Scheduling.
	AdmittedSignal = "admitted"
	// QueuesQuery answers an AdmissionReport.
	QueuesQuery = "queues"
	// AdmissionMoveUpdate moves a job to another queue (AdmissionMove), answering an
	// AdmissionMoved; a move that breaks a rule is rejected with the reason and changes
	// nothing.
	AdmissionMoveUpdate = "move"
	// DefaultQueuesConfigMap holds a test bed's allocation file (key fair-scheduler.xml).
	DefaultQueuesConfigMap = v1alpha1.QueuesConfigMap
)

// AdmissionWorkflowID is the id of a test bed's Admission workflow.
func AdmissionWorkflowID(namespace, testBed string) string {
	return fmt.Sprintf("admission/%s/%s", namespace, testBed)
}

// AdmissionInput names the test bed. ConfigMap defaults to DefaultQueuesConfigMap, Resync
// (how often the file and the slots are read again) to 15s.
type AdmissionInput struct {
	Namespace   string
	TestBed     string
	ConfigMap   string
	Resync      time.Duration
	StepsPerRun int
	Carried     *AdmissionState
}

// AdmissionRequest asks for a job to be started in the test bed's slots.
type AdmissionRequest struct {
	Scheduling string
	Job        string
	// Queue is the queue asked for (the job's, else its Scheduling's); placement decides.
	Queue  string
	User   string
	Groups []string
	// Slots is how many slots the job needs (QueueBased), SlotIDs the exact ones (SlotBased).
	Slots   int32
	SlotIDs []int32
	// Driver is the driver's or JobManager's size: the job's AM.
	Driver queue.Resources
}

// AdmissionGrant answers a request: the slots to start in, or why it is refused for good.
type AdmissionGrant struct {
	Job     string
	Queue   string
	Slots   []int32
	Refused string
}

// AdmissionRelease names a job: on AdmissionReleaseSignal it withdraws the request or frees
// the job's slots; on AdmissionStartedSignal the job left Starting.
type AdmissionRelease struct {
	Scheduling string
	Job        string
}

// AdmissionMove asks to move a job to another queue, on behalf of By (with ByGroups). By
// must be the job's user or may administer the job's queue (aclAdministerApps); the job's
// user must be allowed to submit to the target, a leaf; a running job must fit the target's
// and its new ancestors' maxRunningApps and maxResources. A waiting job keeps its place in
// submission order.
type AdmissionMove struct {
	Scheduling string
	Job        string
	Queue      string
	By         string
	ByGroups   []string
}

// The error types (temporal.ApplicationError.Type) of a rejected move, for callers that
// answer people: not ready, no such job, not allowed, or against the target's rules.
const (
	MoveNotReady  = "MoveNotReady"
	MoveNotFound  = "MoveNotFound"
	MoveForbidden = "MoveForbidden"
	MoveInvalid   = "MoveInvalid"
)

// AdmissionMoved says where a moved job was and is now (the full queue paths).
type AdmissionMoved struct {
	Job  string
	From string
	To   string
}

// AdmissionState is the queue state, handed from one run to the next.
type AdmissionState struct {
	Next       int64
	Waiting    []AdmissionEntry
	Running    []AdmissionEntry
	Starvation queue.Starvation
	Reclaimed  []int32
}

// AdmissionEntry is a request with where it stands.
type AdmissionEntry struct {
	Request AdmissionRequest
	Queue   string
	Order   int64
	Slots   []int32
	// Reason says why a waiting job waits.
	Reason string
	// State is a granted job's start-up state for StateAware leaves: Starting from the grant
	// (its driver is being started), Running once its job's workflow says so. Empty reads
	// as Running.
	State         queue.AppState
	StartingSince time.Time
	// Preempted counts the slots preemption took back from the job. A QueueBased job with
	// fewer slots than it asked for asks for them again, one at a time.
	Preempted int32
}

// AdmissionReport is the queue picture the API and people read.
type AdmissionReport struct {
	ConfigVersion string
	ConfigError   string
	Queues        []QueueReport
	Waiting       []AdmissionEntry
	Running       []AdmissionEntry
}

// QueueReport is one queue's shares and use.
type QueueReport struct {
	Path                       string
	Leaf                       bool
	SteadyShare, FairShare     queue.Resources
	Usage, Demand              queue.Resources
	RunningJobs, WaitingJobs   int
	PendingDemand              queue.Resources
	MaxResources, MinResources queue.Resources
}

// AdmissionWorkflow holds the queues of one test bed. Schedulings send it their jobs; it
// places each in a queue (placement rules, submit ACL), and, whenever slots free up or
// requests arrive, lets the queue policies choose which waiting jobs start and in which
// slots, and tells their Schedulings. Usage counts executors (slots) against the queues'
// shares and limits; the driver is the job's AM, counted against maxAMShare. The
// allocation file comes from a ConfigMap, read on a signal and every Resync; a bad file
// leaves the last good one in force.
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
	a := &admission{in: in, config: queue.DefaultConfig()}
	if c := in.Carried; c != nil {
		a.next, a.waiting, a.running = c.Next, c.Waiting, c.Running
		a.starvation, a.reclaimed = c.Starvation, c.Reclaimed
	}
	requests := workflow.GetSignalChannel(ctx, AdmissionRequestSignal)
	releases := workflow.GetSignalChannel(ctx, AdmissionReleaseSignal)
	configs := workflow.GetSignalChannel(ctx, AdmissionConfigSignal)
	started := workflow.GetSignalChannel(ctx, AdmissionStartedSignal)
	slotsChanged := workflow.GetSignalChannel(ctx, AdmissionSlotsSignal)
	if err := workflow.SetQueryHandler(ctx, QueuesQuery, func() (AdmissionReport, error) { return a.report, nil }); err != nil {
		return err
	}
	// A move wakes the loop through moved, so the next decision sees the job in its new queue.
	moved := workflow.NewBufferedChannel(ctx, 1)
	err := workflow.SetUpdateHandlerWithOptions(ctx, AdmissionMoveUpdate,
		func(ctx workflow.Context, m AdmissionMove) (AdmissionMoved, error) {
			res, err := a.move(m)
			if err == nil {
				moved.SendAsync(true)
			}
			return res, err
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, m AdmissionMove) error {
			_, _, err := a.checkMove(m)
			return err
		}})
	if err != nil {
		return err
	}
	if err := a.loadConfig(ctx); err != nil {
		return err
	}
	for step := 0; step < in.StepsPerRun; step++ {
		if err := a.decide(ctx); err != nil {
			return err
		}
		reload := false
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(requests, func(c workflow.ReceiveChannel, _ bool) {})
		sel.AddReceive(releases, func(c workflow.ReceiveChannel, _ bool) {})
		sel.AddReceive(configs, func(c workflow.ReceiveChannel, _ bool) { reload = true })
		sel.AddReceive(started, func(c workflow.ReceiveChannel, _ bool) {})
		sel.AddReceive(slotsChanged, func(c workflow.ReceiveChannel, _ bool) {})
		sel.AddReceive(moved, func(c workflow.ReceiveChannel, _ bool) {})
		sel.AddFuture(workflow.NewTimer(timerCtx, in.Resync), func(workflow.Future) { reload = true })
		sel.Select(ctx)
		cancel()
		// Take in everything that arrived, in arrival order per channel. Each message is
		// decoded into a fresh value: decoding into a reused one would share its slices.
		for {
			var r AdmissionRequest
			if !requests.ReceiveAsync(&r) {
				break
			}
			if err := a.request(ctx, r); err != nil {
				return err
			}
		}
		for {
			var rel AdmissionRelease
			if !releases.ReceiveAsync(&rel) {
				break
			}
			a.release(rel)
		}
		for {
			var st AdmissionRelease
			if !started.ReceiveAsync(&st) {
				break
			}
			a.started(st)
		}
		for slotsChanged.ReceiveAsync(nil) {
		}
		for moved.ReceiveAsync(nil) {
		}
		for configs.ReceiveAsync(nil) {
			reload = true
		}
		if reload {
			if err := a.loadConfig(ctx); err != nil {
				return err
			}
		}
	}
	next := in
	next.Carried = &AdmissionState{Next: a.next, Waiting: a.waiting, Running: a.running, Starvation: a.starvation, Reclaimed: a.reclaimed}
	return workflow.NewContinueAsNewError(ctx, AdmissionWorkflow, next)
}

type admission struct {
	in      AdmissionInput
	config  queue.Config
	tree    *queue.Tree
	next    int64
	waiting []AdmissionEntry
	running []AdmissionEntry
	report  AdmissionReport
	// starvation is since when each queue is short of its shares; reclaimed are slots
	// preemption took back that are not free or granted yet.
	starvation queue.Starvation
	reclaimed  []int32
	// total and slot are the test bed's size and slot size at the last decision (zero
	// before the first): what a move of a running job is checked against.
	total, slot queue.Resources
}

func (a *admission) loadConfig(ctx workflow.Context) error {
	var f activities.AllocationFile
	ref := activities.AllocationFileRef{Namespace: a.in.Namespace, ConfigMap: a.in.ConfigMap}
	if err := workflow.ExecuteActivity(ctx, acts.ReadAllocationFile, ref).Get(ctx, &f); err != nil {
		return err
	}
	if f.Exists {
		a.config = a.config.Load([]byte(f.Data), f.Version)
	} else if a.config.Version != "" {
		a.config = queue.DefaultConfig() // the file was removed: back to the defaults
	}
	a.tree = queue.NewTree(a.config.Allocations)
	// Queues placement rules made live on in the new tree while they have jobs.
	for _, e := range slices.Concat(a.running, a.waiting) {
		if _, err := a.tree.Ensure(e.Queue); err != nil {
			workflow.GetLogger(ctx).Warn("a job's queue does not fit the new allocation file", "job", e.Request.Job, "queue", e.Queue, "err", err)
		}
	}
	return nil
}

// request places a new request in its queue, or refuses it (placement, ACL).
func (a *admission) request(ctx workflow.Context, r AdmissionRequest) error {
	for _, e := range slices.Concat(a.waiting, a.running) {
		if e.Request.Scheduling == r.Scheduling && e.Request.Job == r.Job {
			return nil // a repeat (the Scheduling's nudge was retried)
		}
	}
	refuse := func(why string) error {
		return a.tell(ctx, r.Scheduling, AdmissionGrant{Job: r.Job, Refused: why})
	}
	primary, secondary := "", []string(nil)
	if len(r.Groups) > 0 {
		primary, secondary = r.Groups[0], r.Groups[1:]
	}
	p, err := a.config.Allocations.Place(queue.Submitter{Queue: r.Queue, User: r.User, PrimaryGroup: primary, SecondaryGroups: secondary})
	if err != nil {
		return refuse(err.Error())
	}
	if !a.config.Allocations.Allowed(queue.Submit, p.Queue, r.User, r.Groups) {
		return refuse(fmt.Sprintf("user %q may not submit to queue %s (aclSubmitApps)", r.User, p.Queue))
	}
	if _, err := a.tree.Ensure(p.Queue); err != nil {
		return refuse(err.Error())
	}
	a.next++
	a.waiting = append(a.waiting, AdmissionEntry{Request: r, Queue: p.Queue, Order: a.next})
	return nil
}

func (a *admission) release(r AdmissionRelease) {
	match := func(e AdmissionEntry) bool { return e.Request.Scheduling == r.Scheduling && e.Request.Job == r.Job }
	a.waiting = slices.DeleteFunc(a.waiting, match)
	a.running = slices.DeleteFunc(a.running, match)
}

// started marks a granted job Running for StateAware.
func (a *admission) started(r AdmissionRelease) {
	for i := range a.running {
		if e := &a.running[i]; e.Request.Scheduling == r.Scheduling && e.Request.Job == r.Job {
			e.State = queue.Running
		}
	}
}

func (a *admission) tell(ctx workflow.Context, scheduling string, g AdmissionGrant) error {
	err := workflow.SignalExternalWorkflow(ctx, SchedulingWorkflowID(a.in.Namespace, scheduling), "", AdmittedSignal, g).Get(ctx, nil)
	if err != nil {
		// The Scheduling is gone: its jobs will not start; forget them.
		workflow.GetLogger(ctx).Warn("tell a scheduling of its job", "scheduling", scheduling, "job", g.Job, "err", err)
		a.release(AdmissionRelease{Scheduling: scheduling, Job: g.Job})
	}
	return nil
}

// jobID keys a job across Schedulings.
func jobID(e AdmissionEntry) string { return e.Request.Scheduling + "/" + e.Request.Job }

// decide starts every waiting job the policies let through on the free slots.
func (a *admission) decide(ctx workflow.Context) error {
	var slots activities.TestBedSlots
	if err := workflow.ExecuteActivity(ctx, acts.ReadSlots, activities.ReconcileTestBedInput{Namespace: a.in.Namespace, Name: a.in.TestBed}).Get(ctx, &slots); err != nil {
		return err
	}
	slot := toResources(slots.SlotSize)
	free := slices.DeleteFunc(slices.Clone(slots.Free), func(p int32) bool {
		for _, e := range a.running {
			if slices.Contains(e.Slots, p) {
				return true
			}
		}
		return false
	})
	slices.Sort(free)
	total := times(slot, int64(len(slots.Positions)))
	a.total, a.slot = total, slot
	now := workflow.Now(ctx)
	for {
		c := queue.Cluster{Total: total, Now: now}
		for _, e := range a.running {
			app := appOf(e, slot, true)
			app.State, app.StartingSince = e.State, e.StartingSince
			if n := wanted(e); int64(len(e.Slots)) < n && len(a.reclaimed) == 0 && len(free) > 0 {
				// Preempted: it asks for its slots again, one at a time, once the slots
				// taken back have reached the queue they were taken for.
				app.Demand, app.Pending, app.Ask = times(slot, n), true, slot
			}
			c.Apps = append(c.Apps, app)
		}
		for i := range a.waiting {
			e := &a.waiting[i]
			n := wanted(*e)
			switch {
			case !slots.Exists:
				e.Reason = fmt.Sprintf("test bed %s does not exist", a.in.TestBed)
				continue
			case len(e.Request.SlotIDs) > 0 && !allIn(e.Request.SlotIDs, free):
				e.Reason = fmt.Sprintf("its slots %v are not all free", e.Request.SlotIDs)
				continue
			case len(e.Request.SlotIDs) == 0 && int(n) > len(free):
				e.Reason = fmt.Sprintf("needs %d free slots, %d are", n, len(free))
				continue
			}
			c.Apps = append(c.Apps, appOf(*e, slot, false))
		}
		chosen, refusals, ok := a.tree.Next(c)
		for _, r := range refusals {
			for i := range a.waiting {
				if jobID(a.waiting[i]) == r.App {
					a.waiting[i].Reason = r.Reason
				}
			}
		}
		if !ok {
			break
		}
		i := slices.IndexFunc(a.waiting, func(e AdmissionEntry) bool { return jobID(e) == chosen.ID })
		if i < 0 {
			if err := a.giveBack(ctx, chosen.ID, free[0]); err != nil {
				return err
			}
			free = free[1:]
			continue
		}
		e := a.waiting[i]
		if len(e.Request.SlotIDs) > 0 {
			e.Slots = slices.Clone(e.Request.SlotIDs)
		} else {
			e.Slots = slices.Clone(free[:e.Request.Slots])
		}
		free = slices.DeleteFunc(free, func(p int32) bool { return slices.Contains(e.Slots, p) })
		e.Reason = ""
		e.State, e.StartingSince = queue.Starting, now
		a.waiting = slices.Delete(a.waiting, i, i+1)
		a.running = append(a.running, e)
		if err := a.tell(ctx, e.Request.Scheduling, AdmissionGrant{Job: e.Request.Job, Queue: e.Queue, Slots: e.Slots}); err != nil {
			return err
		}
	}
	if err := a.preempt(ctx, free, total, slot, now); err != nil {
		return err
	}
	a.report = a.buildReport(total, slot)
	return nil
}

// checkMove says whether m may be done, and if so which entry it moves (running or not,
// and its index) to which queue. It changes nothing: it is the update's validator too.
func (a *admission) checkMove(m AdmissionMove) (running bool, i int, err error) {
	if a.tree == nil || a.total.IsZero() {
		return false, 0, temporal.NewApplicationError(fmt.Sprintf("the queues of test bed %s are not ready yet; try again", a.in.TestBed), MoveNotReady)
	}
	if m.By == "" {
		return false, 0, temporal.NewApplicationError("the move names nobody asking for it (By)", MoveForbidden)
	}
	match := func(e AdmissionEntry) bool { return e.Request.Scheduling == m.Scheduling && e.Request.Job == m.Job }
	e := AdmissionEntry{}
	if i = slices.IndexFunc(a.running, match); i >= 0 {
		running, e = true, a.running[i]
	} else if i = slices.IndexFunc(a.waiting, match); i >= 0 {
		e = a.waiting[i]
	} else {
		return false, 0, temporal.NewApplicationError(fmt.Sprintf("job %s of scheduling %s is not in the queues (not submitted yet, or ended)", m.Job, m.Scheduling), MoveNotFound)
	}
	if m.By != e.Request.User && !a.config.Allocations.Allowed(queue.Administer, e.Queue, m.By, m.ByGroups) {
		return false, 0, temporal.NewApplicationError(fmt.Sprintf("user %q may not move job %s: it is neither the job's user (%q) nor may it administer queue %s (aclAdministerApps)",
			m.By, m.Job, e.Request.User, e.Queue), MoveForbidden)
	}
	c := queue.Cluster{Total: a.total}
	for _, r := range a.running {
		c.Apps = append(c.Apps, appOf(r, a.slot, true))
	}
	if err := a.tree.CanMove(c, appOf(e, a.slot, running), m.Queue); err != nil {
		return false, 0, temporal.NewApplicationError(fmt.Sprintf("job %s cannot move to %s: %v", m.Job, m.Queue, err), MoveInvalid)
	}
	if to := a.tree.Queue(m.Queue).Path; !a.config.Allocations.Allowed(queue.Submit, to, e.Request.User, e.Request.Groups) {
		return false, 0, temporal.NewApplicationError(fmt.Sprintf("job %s cannot move to %s: its user %q may not submit there (aclSubmitApps)", m.Job, to, e.Request.User), MoveForbidden)
	}
	return running, i, nil
}

// move moves a job to another queue, after checkMove.
func (a *admission) move(m AdmissionMove) (AdmissionMoved, error) {
	running, i, err := a.checkMove(m)
	if err != nil {
		return AdmissionMoved{}, err
	}
	entries := a.waiting
	if running {
		entries = a.running
	}
	e := &entries[i]
	res := AdmissionMoved{Job: m.Job, From: e.Queue, To: a.tree.Queue(m.Queue).Path}
	e.Queue = res.To
	return res, nil
}

// appOf is an entry as the queue policies see it: a running entry uses, and demands, the
// slots it holds; a waiting one demands the slots it asked for.
func appOf(e AdmissionEntry, slot queue.Resources, running bool) queue.App {
	app := queue.App{ID: jobID(e), Queue: e.Queue, User: e.Request.User, Order: e.Order, AM: e.Request.Driver, Demand: times(slot, wanted(e))}
	if running {
		app.Usage = times(slot, int64(len(e.Slots)))
		app.Demand, app.Running = app.Usage, true
	}
	return app
}

// wanted is how many slots a job asked for.
func wanted(e AdmissionEntry) int64 {
	if len(e.Request.SlotIDs) > 0 {
		return int64(len(e.Request.SlotIDs))
	}
	return int64(e.Request.Slots)
}

// assign changes a running job's slots on its BatchJob (and deletes its pods in the revoked
// ones). false: the job's Scheduling no longer holds it, and its entry is dropped.
func (a *admission) assign(ctx workflow.Context, e AdmissionEntry, keep, revoke []int32, why string) (bool, error) {
	in := activities.AssignSlotsInput{Namespace: a.in.Namespace, Scheduling: e.Request.Scheduling, Job: e.Request.Job, TestBed: a.in.TestBed, Keep: keep, Revoke: revoke, Why: why}
	err := workflow.ExecuteActivity(ctx, acts.AssignSlots, in).Get(ctx, nil)
	if activities.IsNotHeld(err) {
		workflow.GetLogger(ctx).Warn("a running job is no longer held by its scheduling", "job", e.Request.Job, "scheduling", e.Request.Scheduling, "err", err)
		a.release(AdmissionRelease{Scheduling: e.Request.Scheduling, Job: e.Request.Job})
		return false, nil
	}
	return err == nil, err
}

// giveBack gives a preempted job one of the slots it lost back (another position if need be).
func (a *admission) giveBack(ctx workflow.Context, id string, slot int32) error {
	i := slices.IndexFunc(a.running, func(e AdmissionEntry) bool { return jobID(e) == id })
	if i < 0 {
		return fmt.Errorf("the queues chose %s, which is neither waiting nor running", id) // cannot happen
	}
	keep := append(slices.Clone(a.running[i].Slots), slot)
	ok, err := a.assign(ctx, a.running[i], keep, nil, "")
	if ok {
		a.running[i].Slots = keep
	}
	return err
}

// preempt takes executors' slots back for queues starved past their timeouts, when the
// allocation file turns preemption on and the test bed is used at least its threshold:
// from QueueBased jobs of queues above their fair share, the newest job and its newest slots
// first. The job's pods in those slots are deleted; Spark and Flink ask for them again, and
// the new pods wait, since the job's BatchJob now lists the slots it keeps. SlotBased jobs
// keep their slots: an external scheduler chose them exactly. No more is taken while slots
// taken earlier are still being vacated.
func (a *admission) preempt(ctx workflow.Context, free []int32, total, slot queue.Resources, now time.Time) error {
	a.reclaimed = slices.DeleteFunc(a.reclaimed, func(p int32) bool {
		if slices.Contains(free, p) {
			return true
		}
		for _, e := range a.running {
			if slices.Contains(e.Slots, p) {
				return true
			}
		}
		return false
	})
	pre := a.config.Allocations.Preemption
	if len(a.reclaimed) > 0 {
		return nil
	}
	c := queue.Cluster{Total: total, Now: now}
	executors := map[string]int{}
	for _, e := range a.running {
		app := appOf(e, slot, true)
		app.Demand = times(slot, wanted(e)) // a preempted job still demands what it asked for
		c.Apps = append(c.Apps, app)
		if len(e.Request.SlotIDs) == 0 {
			executors[jobID(e)] = len(e.Slots)
		}
	}
	for _, e := range a.waiting {
		c.Apps = append(c.Apps, appOf(e, slot, false))
	}
	starving := a.tree.Starved(c, pre, &a.starvation)
	victims := a.tree.PlanPreemption(c, starving, slot, executors)
	// Histories recorded before preemption existed never took this step.
	if len(victims) == 0 || workflow.GetVersion(ctx, "preemption", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	for _, v := range victims {
		i := slices.IndexFunc(a.running, func(e AdmissionEntry) bool { return jobID(e) == v.App })
		if i < 0 {
			continue // dropped a moment ago (no longer held)
		}
		e := a.running[i]
		n := min(v.Executors, len(e.Slots))
		keep, revoke := slices.Clone(e.Slots[:len(e.Slots)-n]), slices.Clone(e.Slots[len(e.Slots)-n:])
		why := fmt.Sprintf("queue %s is above its fair share", e.Queue)
		if i := slices.IndexFunc(starving, func(s queue.Starving) bool { return s.Queue == v.For }); i >= 0 {
			why += "; " + starving[i].Reason
		}
		ok, err := a.assign(ctx, e, keep, revoke, why)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		workflow.GetLogger(ctx).Info("preempted", "job", e.Request.Job, "queue", e.Queue, "slots", revoke, "for", v.For)
		a.running[i].Slots = keep
		a.running[i].Preempted += int32(n)
		a.reclaimed = append(a.reclaimed, revoke...)
	}
	return nil
}

func (a *admission) buildReport(total, slot queue.Resources) AdmissionReport {
	r := AdmissionReport{ConfigVersion: a.config.Version, Waiting: slices.Clone(a.waiting), Running: slices.Clone(a.running)}
	if a.config.Rejected != nil {
		r.ConfigError = a.config.Rejected.Error()
	}
	var apps []queue.App
	for _, e := range a.running {
		use := times(slot, int64(len(e.Slots)))
		apps = append(apps, queue.App{ID: jobID(e), Queue: e.Queue, Demand: use, Usage: use, Running: true})
	}
	pending := map[string]queue.Resources{}
	for _, e := range a.waiting {
		n := wanted(e)
		apps = append(apps, queue.App{ID: jobID(e), Queue: e.Queue, Demand: times(slot, n)})
		pending[e.Queue] = pending[e.Queue].Add(times(slot, n))
	}
	steady := a.tree.SteadyFairShares(total)
	fair := a.tree.InstantaneousFairShares(total, apps)
	usage, demand := a.tree.Usage(apps), a.tree.Demand(apps)
	for _, path := range a.tree.Paths() {
		q := a.tree.Queue(path)
		qr := QueueReport{Path: path, Leaf: q.Leaf(), SteadyShare: steady[path], FairShare: fair[path], Usage: usage[path], Demand: demand[path],
			PendingDemand: pending[path], MaxResources: a.tree.MaxResources(q, total), MinResources: a.tree.MinResources(q)}
		for _, e := range a.running {
			if e.Queue == path {
				qr.RunningJobs++
			}
		}
		for _, e := range a.waiting {
			if e.Queue == path {
				qr.WaitingJobs++
			}
		}
		r.Queues = append(r.Queues, qr)
	}
	return r
}

func allIn(want, set []int32) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

func times(r queue.Resources, n int64) queue.Resources {
	return queue.Resources{MemoryMB: r.MemoryMB * n, VCores: r.VCores * n}
}

// toResources reads a Kubernetes resource list as queue resources: memory in MiB and cpu in
// vcores, both rounded up.
func toResources(l corev1.ResourceList) queue.Resources {
	var r queue.Resources
	if m, ok := l[corev1.ResourceMemory]; ok {
		r.MemoryMB = (m.Value() + (1<<20 - 1)) >> 20
	}
	if c, ok := l[corev1.ResourceCPU]; ok {
		r.VCores = (c.MilliValue() + 999) / 1000
	}
	return r
}
