package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	enumspb "go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
	"slotplane/slots"
)

// SchedulingKey names a Scheduling.
type SchedulingKey struct {
	Namespace string
	Name      string
}

func (k SchedulingKey) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// SchedulingObservation is a Scheduling's spec as the workflow starts from it.
type SchedulingObservation struct {
	Exists bool
	// UID tells this Scheduling apart from a later one of the same name.
	UID  string
	Spec v1alpha1.SchedulingSpec
	// Status is the status as last written, without its job list: a run that starts anew
	// (its predecessor was terminated) takes it up.
	Status v1alpha1.SchedulingStatus
}

// ReadScheduling reads a Scheduling's spec.
func (a *Activities) ReadScheduling(ctx context.Context, in SchedulingKey) (SchedulingObservation, error) {
	var s v1alpha1.Scheduling
	if err := a.Client.Get(ctx, in.nn(), &s); err != nil {
		if apierrors.IsNotFound(err) {
			return SchedulingObservation{}, nil
		}
		return SchedulingObservation{}, fmt.Errorf("get scheduling %s: %w", in.nn(), err)
	}
	s.Status.Jobs = nil
	return SchedulingObservation{Exists: true, UID: string(s.UID), Spec: s.Spec, Status: s.Status}, nil
}

// TestBedSlots is the slot picture a Scheduling decides on.
type TestBedSlots struct {
	Exists bool
	// Positions are all slots of the test bed, Free those the slot slices show free.
	Positions SlotList
	Free      SlotList
	// Unavailable are the slots no new job may get: their node is not Ready or left.
	Unavailable SlotList
	// SlotSize is the test bed's resources per slot.
	SlotSize corev1.ResourceList
}

// ReadSlots reads a test bed's slots from its slot slices: from the worker's copies once
// they synced, else from the API server. The copy is what woke the decision (SlotsWake comes
// after the copy holds the change), and it costs the API server nothing: read live, each
// decision was a Get and a List inside Admission's workflow task, and under load that
// task waited seconds on a busy API server. A copy that lags shows a slot free that a job
// took since only if Admission no longer holds that job, and the extender, which writes
// reservations under optimistic concurrency, places no pod in a slot that is not free.
func (a *Activities) ReadSlots(ctx context.Context, in TestBedRef) (TestBedSlots, error) {
	if out, ok := a.Changes.CopiedSlots(ctx, in); ok {
		return out, nil
	}
	var tb v1alpha1.TestBed
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Name}
	if err := a.Client.Get(ctx, key, &tb); err != nil {
		if apierrors.IsNotFound(err) {
			return TestBedSlots{}, nil
		}
		return TestBedSlots{}, fmt.Errorf("get testbed %s: %w", key, err)
	}
	return slotsOf(ctx, a.Client, &tb)
}

// CopiedSlots is ReadSlots answered from the worker's copies alone, without waiting on
// anything: ok is false when the copies have not synced, do not hold the bed (a bed the copy
// does not have yet is not a deleted one: that is asked of etcd), or fail to read. Admission
// reads the slots this way inside a side effect, with no local activity's round trip. The
// copies' slices are read in place, not copied: at 8,000 slots the copies were most of what
// Admission's worker allocated, and so most of its garbage collection.
func (c *Changes) CopiedSlots(ctx context.Context, in TestBedRef) (TestBedSlots, bool) {
	r := c.slotsReader()
	if r == nil {
		return TestBedSlots{}, false
	}
	var tb v1alpha1.TestBed
	if err := r.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.Name}, &tb); err != nil {
		return TestBedSlots{}, false
	}
	out, err := slotsOf(ctx, r, &tb, client.UnsafeDisableDeepCopy)
	return out, err == nil
}

// slotsOf is tb's slot picture, its slot slices read from r with opts. The slices are only
// read, never changed: with client.UnsafeDisableDeepCopy they are the cache's own.
func slotsOf(ctx context.Context, r client.Reader, tb *v1alpha1.TestBed, opts ...client.ListOption) (TestBedSlots, error) {
	out := TestBedSlots{Exists: true, SlotSize: tb.Spec.ResourcesPerSlot}
	have, err := slotslices.List(ctx, r, tb, opts...)
	if err != nil {
		return TestBedSlots{}, err
	}
	n := 0
	for i := range have {
		n += len(have[i].Slots)
	}
	if n > 0 {
		out.Positions = make([]int32, 0, n)
	}
	for i := range have {
		for j := range have[i].Slots {
			s := &have[i].Slots[j]
			out.Positions = append(out.Positions, s.Position)
			switch {
			case s.Unavailable != "":
				out.Unavailable = append(out.Unavailable, s.Position)
			case s.State == v1alpha1.SlotFree || s.State == "":
				out.Free = append(out.Free, s.Position)
			}
		}
	}
	// Slices written by hand may hold their slots out of order.
	if !slices.IsSorted(out.Positions) {
		slices.Sort(out.Positions)
		slices.Sort(out.Free)
		slices.Sort(out.Unavailable)
	}
	return out, nil
}

// WriteSchedulingStatusInput is a Scheduling's status: whole, or (Delta) with only the
// jobs whose status changed since the workflow's last write in Status.Jobs.
type WriteSchedulingStatusInput struct {
	Scheduling SchedulingKey
	Status     v1alpha1.SchedulingStatus
	// Delta: Status.Jobs holds the changed jobs only; the object keeps the others.
	// Status.TotalJobs says how many there are in all.
	Delta bool
}

// ErrStatusOutOfStep is a delta write that does not fit the object's status (someone else
// wrote it, or a write was lost): the workflow writes the whole status instead.
const ErrStatusOutOfStep = "StatusOutOfStep"

// ApplyStatus is the status a write leaves on an object whose status is current: in's whole,
// or for a delta, in's with current's job list, in which in's jobs replace theirs by name or
// are appended. ok is false when a delta does not fit current: the job count it leaves is
// not in.Status.TotalJobs.
func ApplyStatus(current v1alpha1.SchedulingStatus, in WriteSchedulingStatusInput) (v1alpha1.SchedulingStatus, bool) {
	st := in.Status
	if !in.Delta {
		return st, true
	}
	jobs := slices.Clone(current.Jobs)
	at := make(map[string]int, len(jobs))
	for i, j := range jobs {
		at[j.Name] = i
	}
	for _, j := range in.Status.Jobs {
		if i, ok := at[j.Name]; ok {
			jobs[i] = j
			continue
		}
		at[j.Name] = len(jobs)
		jobs = append(jobs, j)
	}
	st.Jobs = jobs
	return st, int32(len(jobs)) == in.Status.TotalJobs
}

// WriteSchedulingStatus writes a Scheduling's status; one that is gone is fine.
func (a *Activities) WriteSchedulingStatus(ctx context.Context, in WriteSchedulingStatusInput) error {
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s v1alpha1.Scheduling
		if err := getForUpdate(ctx, a.Client, in.Scheduling.nn(), &s, &attempt); err != nil {
			return err
		}
		st, ok := ApplyStatus(s.Status, in)
		if !ok && attempt == 1 {
			// The cache's copy may not have the last write yet: ask etcd before saying so.
			if err := getForUpdate(ctx, a.Client, in.Scheduling.nn(), &s, &attempt); err != nil {
				return err
			}
			st, ok = ApplyStatus(s.Status, in)
		}
		if !ok {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("scheduling %s: the status on the object has %d jobs, not what the changes since the last write expect", in.Scheduling.nn(), len(s.Status.Jobs)), ErrStatusOutOfStep, nil)
		}
		st.ObservedGeneration = observedGeneration(&s, st)
		s.Status = st
		return a.Client.Status().Update(ctx, &s)
	})
	if err = client.IgnoreNotFound(err); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return err
		}
		return fmt.Errorf("write status of scheduling %s: %w", in.Scheduling.nn(), err)
	}
	return nil
}

// observedGeneration is the generation a status write may claim to have seen: the object's
// when the status tracks every job its spec lists, the one it had otherwise. An extension
// the workflow has not taken yet (written by kubectl, or by the API whose update did not
// get through) must stay unobserved, or the bridge would never pass it on.
func observedGeneration(s *v1alpha1.Scheduling, st v1alpha1.SchedulingStatus) int64 {
	tracked := make(map[string]bool, len(st.Jobs))
	for _, j := range st.Jobs {
		tracked[j.Name] = true
	}
	for _, j := range s.Spec.Jobs {
		if !tracked[j.Name] {
			return s.Status.ObservedGeneration
		}
	}
	return s.Generation
}

// RemoveSchedulingFinalizer lets a deleted Scheduling go once its workflow has cleaned up.
func (a *Activities) RemoveSchedulingFinalizer(ctx context.Context, in SchedulingKey) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s v1alpha1.Scheduling
		if err := a.Client.Get(ctx, in.nn(), &s); err != nil {
			return err
		}
		if !controllerutil.RemoveFinalizer(&s, v1alpha1.SchedulingFinalizer) {
			return nil
		}
		return a.Client.Update(ctx, &s)
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("remove finalizer of scheduling %s: %w", in.nn(), err)
	}
	return nil
}

// DeleteSchedulingInput names the Scheduling to delete; UID, when set, only that object,
// not a later one of the same name.
type DeleteSchedulingInput struct {
	Key SchedulingKey
	UID string
}

// DeleteScheduling deletes a Scheduling whose ttlSecondsAfterFinished passed. Its
// finalizer keeps it until its workflow has released the jobs. A Scheduling gone already,
// or made again under the name (another UID), is left alone.
func (a *Activities) DeleteScheduling(ctx context.Context, in DeleteSchedulingInput) error {
	s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Namespace: in.Key.Namespace, Name: in.Key.Name}}
	var opts []client.DeleteOption
	if in.UID != "" {
		uid := types.UID(in.UID)
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	err := a.Client.Delete(ctx, s, opts...)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete scheduling %s: %w", in.Key.nn(), err)
	}
	return nil
}

// SignalWithStart signals one workflow, starting it first if it does not run.
type SignalWithStart struct {
	WorkflowID   string
	WorkflowType string
	Input        any
	Signal       string
	// SignalArg is the signal's payload (nil for a bare "look again").
	SignalArg any
	// TaskQueue, when set, is the task queue the workflow starts on, in place of the
	// batch's.
	TaskQueue string `json:",omitempty"`
}

// WorkflowTaskTimeout is the workflow task timeout of the workflows a signal-with-start
// starts: workflows.TaskTimeout, which says why.
const WorkflowTaskTimeout = 10 * time.Second

// SignalWithStartInput is a batch of signal-with-starts.
type SignalWithStartInput struct {
	TaskQueue string
	Signals   []SignalWithStart
}

// NudgeWorkflows signals each workflow, starting it first if it is not running: a batch of
// signal-with-starts. Workflows cannot do this themselves: signal-with-start is a client
// call. (The activity keeps its first name: recorded histories and running workflows
// schedule it by that name.)
//
// Nudges to different workflows go nudgeWidth at a time, those to one workflow one after
// another in the order given (a Scheduling's request batches to Admission keep its queue
// order): a Scheduling granted hundreds of jobs nudges each job's workflow from a local
// activity inside its workflow task, and one call after another (10 to 20 ms each on a
// busy server) outlasted the task's timeout, so the task was lost and tried again for
// ever. A repeat is harmless: the workflows take a nudge as "look again".
func (a *Activities) NudgeWorkflows(ctx context.Context, in SignalWithStartInput) error {
	if a.Temporal == nil {
		return nonRetryable("NoTemporalClient", "the worker gave its activities no Temporal client")
	}
	var order []string
	byWorkflow := map[string][]SignalWithStart{}
	for _, n := range in.Signals {
		if _, ok := byWorkflow[n.WorkflowID]; !ok {
			order = append(order, n.WorkflowID)
		}
		byWorkflow[n.WorkflowID] = append(byWorkflow[n.WorkflowID], n)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(nudgeWidth)
	for _, id := range order {
		g.Go(func() error {
			for _, n := range byWorkflow[id] {
				if err := a.nudge(ctx, in.TaskQueue, n); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// nudge sends one message, starting its workflow first if it does not run: an
// update-with-start when the message's name is one of Updates, a signal-with-start
// otherwise.
func (a *Activities) nudge(ctx context.Context, taskQueue string, n SignalWithStart) error {
	opts := temporalclient.StartWorkflowOptions{ID: n.WorkflowID, TaskQueue: cmp.Or(n.TaskQueue, taskQueue), WorkflowTaskTimeout: WorkflowTaskTimeout}
	if !a.Updates[n.Signal] {
		if _, err := a.Temporal.SignalWithStartWorkflow(ctx, n.WorkflowID, n.Signal, n.SignalArg, opts, n.WorkflowType, n.Input); err != nil {
			return fmt.Errorf("signal-with-start %s: %w", n.WorkflowID, err)
		}
		return nil
	}
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	h, err := a.Temporal.UpdateWithStartWorkflow(ctx, temporalclient.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: a.Temporal.NewWithStartWorkflowOperation(opts, n.WorkflowType, n.Input),
		UpdateOptions:          temporalclient.UpdateWorkflowOptions{UpdateName: n.Signal, Args: argsOf(n.SignalArg), WaitForStage: temporalclient.WorkflowUpdateStageCompleted},
	})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("update-with-start %s %s: %w", n.Signal, n.WorkflowID, err)
	}
	return nil
}

// nudgeWidth is how many signal-with-starts NudgeWorkflows has in flight at once.
const nudgeWidth = 16

// JobInfo is what admission needs of a job: its queue, user and driver size.
type JobInfo struct {
	Name   string
	Exists bool
	Queue  string
	User   string
	Groups []string
	Driver corev1.ResourceList
	// Expected is the job's expected duration (0: none).
	Expected time.Duration
	// Priority is the job's priority (spec.priority).
	Priority int32 `json:",omitempty"`
	// Shown is the queue the job's status shows (status.queue) for the run of the
	// Scheduling that holds the job: what a write of its placement would not change. Empty
	// when the status speaks of another Scheduling's run, or of none.
	Shown string `json:",omitempty"`
	// Granted is the job's run that the Scheduling holding it was granted, as the job shows
	// it (nil: no creation request of its holder is on it). A Scheduling whose workflow
	// started anew takes up its jobs' runs from it.
	Granted *GrantedRun `json:",omitempty"`
}

// GrantedRun is a job's granted run as the job shows it: the creation request its
// Scheduling wrote, the slots the run holds (the request's, or what preemption left), and
// how far the run got by the job's status. State is empty while the status speaks of no
// start of this run yet (the job's workflow has not taken the request up).
type GrantedRun struct {
	Request                            v1alpha1.CreationRequest
	Slots                              []int32
	State                              v1alpha1.BatchJobState `json:",omitempty"`
	Message                            string                 `json:",omitempty"`
	SubmittedAt, RunningAt, FinishedAt time.Time              `json:",omitzero"`
}

// grantedRun is the run of job its holder was granted, if the job shows one.
func grantedRun(job *v1alpha1.BatchJob) *GrantedRun {
	holder := job.Labels[v1alpha1.ActiveSchedulingLabel]
	if holder == "" {
		return nil
	}
	req, err := v1alpha1.CreationRequestOf(job.Annotations)
	if err != nil || req == nil || req.Scheduling != holder || req.SchedulingUID == "" {
		return nil
	}
	g := &GrantedRun{Request: *req, Slots: req.Slots}
	if v, ok := job.Annotations[v1alpha1.AssignedSlotsAnnotation]; ok {
		if ids, err := slots.ParseSlotIDs(v); err == nil {
			g.Slots = ids
		}
	}
	st := &job.Status
	if st.Scheduling == holder && st.Run == req.Run && st.State != v1alpha1.JobReady && st.State != v1alpha1.JobInQueue && st.State != "" {
		g.State, g.Message = st.State, st.Message
		for _, t := range []struct {
			to   *time.Time
			from *metav1.Time
		}{{&g.SubmittedAt, st.SubmittedAt}, {&g.RunningAt, st.RunningAt}, {&g.FinishedAt, st.FinishedAt}} {
			if t.from != nil {
				*t.to = t.from.Time
			}
		}
	}
	return g
}

// ReadJobsInput names jobs of one namespace.
type ReadJobsInput struct {
	Namespace string
	Names     []string
	// Scheduling, when set, is the Scheduling that claimed the jobs: ReadJobs then reads
	// them with one List of the jobs it holds, and only a name the list lacks with a Get of
	// its own. Empty reads each name with a Get.
	Scheduling string
}

// ReadJobs reads the queue, user, groups and driver size of each job. The answer does not
// depend on Scheduling: a job another Scheduling holds, or none, is read all the same.
func (a *Activities) ReadJobs(ctx context.Context, in ReadJobsInput) ([]JobInfo, error) {
	var held map[string]*v1alpha1.BatchJob
	if in.Scheduling != "" {
		held = a.copiedClaims(ctx, in)
	}
	// One name costs one request either way, and a Get carries one job, not every job the
	// Scheduling holds.
	if in.Scheduling != "" && len(in.Names)-len(held) > 1 {
		var list v1alpha1.BatchJobList
		if err := a.Client.List(ctx, &list, client.InNamespace(in.Namespace), client.MatchingLabels{v1alpha1.ActiveSchedulingLabel: in.Scheduling}); err != nil {
			return nil, fmt.Errorf("list batchjobs of scheduling %s/%s: %w", in.Namespace, in.Scheduling, err)
		}
		if held == nil {
			held = make(map[string]*v1alpha1.BatchJob, len(list.Items))
		}
		for i := range list.Items {
			held[list.Items[i].Name] = &list.Items[i]
		}
	}
	out := make([]JobInfo, 0, len(in.Names))
	for _, name := range in.Names {
		job, ok := held[name]
		if !ok {
			job = &v1alpha1.BatchJob{}
			err := a.Client.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: name}, job)
			if apierrors.IsNotFound(err) {
				out = append(out, JobInfo{Name: name})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("get batchjob %s/%s: %w", in.Namespace, name, err)
			}
		}
		out = append(out, jobInfo(job))
	}
	return out, nil
}

// copiedClaims are the jobs of in that the worker's copy shows claimed by in.Scheduling:
// a copy that shows the claim is at least as new as the claim, as a List after it would be.
// A job the copy lacks or shows otherwise is left to the API server. A Scheduling reads its
// jobs a hundred at a time, at its start and again every few seconds for those that wait:
// from etcd, a 1,000-job Scheduling listed all its jobs ten times over before its first job
// could be asked for.
func (a *Activities) copiedClaims(ctx context.Context, in ReadJobsInput) map[string]*v1alpha1.BatchJob {
	r := a.Changes.reader(v1alpha1.GroupVersion.WithKind("BatchJob"))
	if r == nil {
		return nil
	}
	held := make(map[string]*v1alpha1.BatchJob, len(in.Names))
	for _, name := range in.Names {
		var job v1alpha1.BatchJob
		if r.Get(ctx, types.NamespacedName{Namespace: in.Namespace, Name: name}, &job) == nil && job.Labels[v1alpha1.ActiveSchedulingLabel] == in.Scheduling {
			held[name] = &job
		}
	}
	return held
}

// jobInfo is what admission needs of job.
func jobInfo(job *v1alpha1.BatchJob) JobInfo {
	info := JobInfo{Name: job.Name, Exists: true, Queue: job.Spec.Queue, User: job.Spec.User, Groups: job.Spec.Groups, Driver: job.Spec.DriverResources,
		Priority: job.Spec.Priority}
	if d := job.Spec.ExpectedDuration; d != nil && d.Duration > 0 {
		info.Expected = d.Duration
	}
	if holder := job.Labels[v1alpha1.ActiveSchedulingLabel]; holder != "" && job.Status.Scheduling == holder {
		info.Shown = job.Status.Queue
	}
	info.Granted = grantedRun(job)
	return info
}

// Signal is one signal to the running workflow of an id.
type Signal struct {
	WorkflowID string
	Name       string
	Arg        any
}

// SignalWorkflowsInput is a batch of signals, sent in order.
type SignalWorkflowsInput struct {
	Signals []Signal
}

// SignalWorkflowsResult names, by index, the signals whose workflow does not run (never
// started, or ended): nobody was there to hear them.
type SignalWorkflowsResult struct {
	NotRunning []int
}

// SignalWorkflows sends signals to other workflows through the Temporal client. A workflow
// that signals another one itself (SignalExternalWorkflow) has the server hold its own lock
// while it takes the target's, for up to 3 s: two workflows that signal each other (a
// Scheduling and its Admission) then wait on each other until that runs out, and each
// delivery falls into a back-off of 3 s or more. A client call holds no workflow's lock.
// A repeat after a retry sends some signals twice; every slotplane message is keyed, so a
// repeat changes nothing.
func (a *Activities) SignalWorkflows(ctx context.Context, in SignalWorkflowsInput) (SignalWorkflowsResult, error) {
	if a.Temporal == nil {
		return SignalWorkflowsResult{}, nonRetryable("NoTemporalClient", "the worker gave its activities no Temporal client")
	}
	// Workflows are signalled side by side, each one's signals in their order: a batch of
	// sixteen requests to one Admission and nudges to sixteen jobs costs the slowest
	// target's round trips, not the sum.
	var order []string
	byTarget := map[string][]int{}
	for i, s := range in.Signals {
		if _, ok := byTarget[s.WorkflowID]; !ok {
			order = append(order, s.WorkflowID)
		}
		byTarget[s.WorkflowID] = append(byTarget[s.WorkflowID], i)
	}
	var (
		mu       sync.Mutex
		out      SignalWorkflowsResult
		firstErr error
	)
	g := make(chan struct{}, signalFanOut)
	var wg sync.WaitGroup
	for _, id := range order {
		wg.Add(1)
		g <- struct{}{}
		go func(id string, idx []int) {
			defer func() { <-g; wg.Done() }()
			for len(idx) > 0 {
				// A run of signals of Batched names goes as one part of a batch; any other
				// alone. Either way this target's signals go in their order.
				batched, n := a.Batched[in.Signals[idx[0]].Name], 1
				for batched && n < len(idx) && a.Batched[in.Signals[idx[n]].Name] {
					n++
				}
				run := idx[:n]
				idx = idx[n:]
				var notRunning bool
				var err error
				if s := in.Signals[run[0]]; batched {
					part := make([]Signal, len(run))
					for j, i := range run {
						part[j] = in.Signals[i]
					}
					notRunning, err = a.batches.send(ctx, a.deliver, id, part)
				} else if notRunning, err = a.deliver(ctx, s.WorkflowID, s.Name, s.Arg); err != nil {
					err = fmt.Errorf("send %s to %s: %w", s.Name, s.WorkflowID, err)
				}
				mu.Lock()
				if notRunning {
					out.NotRunning = append(out.NotRunning, run...)
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}(id, byTarget[id])
	}
	wg.Wait()
	slices.Sort(out.NotRunning)
	if firstErr != nil {
		return out, firstErr
	}
	return out, nil
}

// signalFanOut is how many workflows SignalWorkflows signals at once.
const signalFanOut = 8
