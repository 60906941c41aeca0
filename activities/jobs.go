package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/jobapp"
	"slotplane/slots"
)

// Error types of non-retryable activity failures, which workflows branch on.
const (
	// ErrInvalidJob: the job cannot make an application; a person must fix the BatchJob.
	ErrInvalidJob = "InvalidJob"
)

func nonRetryable(kind, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), kind, nil)
}

// JobKey names a BatchJob.
type JobKey struct {
	Namespace string
	Name      string
}

func (k JobKey) nn() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// JobObservation is what a BatchJob's workflow needs to know of its job.
type JobObservation struct {
	Exists bool
	// Holder is the Scheduling that holds the job ("" when none).
	Holder string
	// Request is the holder's creation request, if it made one.
	Request *v1alpha1.CreationRequest
	// BadRequest says why the creation request annotation could not be read.
	BadRequest string
	Status     v1alpha1.BatchJobStatus
	// Refused lists the fields of the job's wrapped spec that the namespace's policy does
	// not allow ("path: reason"); the job cannot run until they are gone or allowed.
	Refused []string
	// Kill is the kill on the job, if one was asked (v1alpha1.KillAnnotation; one that does
	// not parse is none). It ends the run of the Scheduling it names only: the workflow
	// compares it with Holder.
	Kill *v1alpha1.KillRequest `json:",omitempty"`
}

// ObserveJob reads a BatchJob's claim, creation request and status.
func (a *Activities) ObserveJob(ctx context.Context, in JobKey) (JobObservation, error) {
	var job v1alpha1.BatchJob
	if err := a.Client.Get(ctx, in.nn(), &job); err != nil {
		if apierrors.IsNotFound(err) {
			return JobObservation{}, nil
		}
		return JobObservation{}, fmt.Errorf("get batchjob %s: %w", in.nn(), err)
	}
	obs := JobObservation{Exists: true, Holder: job.Labels[v1alpha1.ActiveSchedulingLabel], Status: job.Status}
	if job.Spec.SparkApplication != nil || job.Spec.FlinkDeployment != nil {
		policy, err := ReadJobPolicy(ctx, a.Client, job.Namespace)
		if err != nil {
			return JobObservation{}, err
		}
		for _, r := range jobapp.CheckSpec(&job.Spec, policy) {
			obs.Refused = append(obs.Refused, r.String())
		}
	}
	if raw := job.Annotations[v1alpha1.KillAnnotation]; raw != "" {
		var k v1alpha1.KillRequest
		if err := json.Unmarshal([]byte(raw), &k); err != nil {
			slog.Warn("a kill annotation that does not parse is ignored", "job", in.nn().String(), "err", err)
		} else {
			obs.Kill = &k
		}
	}
	req, err := v1alpha1.CreationRequestOf(job.Annotations)
	switch {
	case err != nil:
		obs.BadRequest = err.Error()
	case req != nil && req.Scheduling == obs.Holder && req.SchedulingUID != "":
		// A request of a Scheduling deleted and made again under its name is the old one's:
		// the new Scheduling asks afresh.
		sched := &metav1.PartialObjectMetadata{}
		sched.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Scheduling"))
		err := fromWatchCache(ctx, a.Client, types.NamespacedName{Namespace: in.Namespace, Name: req.Scheduling}, sched)
		switch {
		case apierrors.IsNotFound(err):
			obs.BadRequest = fmt.Sprintf("the creation request is of scheduling %s, which is gone", req.Scheduling)
		case err != nil:
			return JobObservation{}, fmt.Errorf("get scheduling %s/%s: %w", in.Namespace, req.Scheduling, err)
		case string(sched.UID) != req.SchedulingUID:
			obs.BadRequest = fmt.Sprintf("the creation request is of an earlier scheduling named %s (uid %s, not %s)", req.Scheduling, req.SchedulingUID, sched.UID)
		default:
			obs.Request = req
		}
	default:
		obs.Request = req
	}
	return obs, nil
}

// CreateApplicationInput is one run of a job.
type CreateApplicationInput struct {
	Job     JobKey
	Request v1alpha1.CreationRequest
}

// CreatedApplication is the application CreateApplication made, and when.
type CreatedApplication struct {
	v1alpha1.ApplicationRef
	// CreatedAt is when slotplane asked for the application (v1alpha1.CreatedAtAnnotation),
	// also when an earlier attempt did: the job's workflow retries this on a worker that
	// came back from a kill, seconds later. Zero when the application does not say (made by
	// a worker from before the annotation).
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// CreateApplication creates the run's SparkApplication or FlinkDeployment, owned by the
// BatchJob. An application of that name that exists already is the one a previous attempt
// created: success, with that attempt's moment.
func (a *Activities) CreateApplication(ctx context.Context, in CreateApplicationInput) (CreatedApplication, error) {
	// The job (with its wrapped spec), the test bed and the namespace's job policy are read
	// side by side: each read is a round trip to the API server, and this activity is on
	// the path from every grant to the job's pods. The job and the policy come from the API
	// server's watch cache: the spec of a moment ago builds the same application.
	var job v1alpha1.BatchJob
	var bed *bedSlots
	var policy jobapp.JobPolicy
	var jobErr, bedErr, policyErr error
	var reads sync.WaitGroup
	reads.Go(func() { jobErr = fromWatchCache(ctx, a.Client, in.Job.nn(), &job) })
	reads.Go(func() {
		// A slot missing from a copy that lags (its node just came back to the bed) would
		// fail the run for good: etcd decides (readBed).
		bedKey := types.NamespacedName{Namespace: in.Job.Namespace, Name: in.Request.TestBed}
		bed, bedErr = a.readBed(ctx, bedKey, in.Request.Slots, func(b *bedSlots) bool { _, missing := slotNodes(b, in.Request.Slots); return missing < 0 })
	})
	reads.Go(func() { policy, policyErr = ReadJobPolicy(ctx, a.Client, in.Job.Namespace) })
	reads.Wait()
	switch {
	case apierrors.IsNotFound(jobErr):
		return CreatedApplication{}, nonRetryable(ErrNotHeld, "job %s is gone", in.Job.nn())
	case jobErr != nil:
		return CreatedApplication{}, fmt.Errorf("get batchjob %s: %w", in.Job.nn(), jobErr)
	case apierrors.IsNotFound(bedErr):
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "test bed %s does not exist", in.Request.TestBed)
	case bedErr != nil:
		return CreatedApplication{}, fmt.Errorf("get testbed %s: %w", in.Request.TestBed, bedErr)
	case policyErr != nil:
		return CreatedApplication{}, policyErr
	}
	nodes, missing := slotNodes(bed, in.Request.Slots)
	if missing >= 0 {
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "test bed %s has no slot %d", bed.tb.Name, missing)
	}
	var err error
	run := jobapp.Run{Job: &job, Request: in.Request, SlotSize: bed.tb.Spec.ResourcesPerSlot, Nodes: nodes, Policy: policy}
	var obj client.Object
	switch job.Spec.Framework {
	case v1alpha1.FrameworkSpark:
		obj, err = jobapp.Spark(run)
	case v1alpha1.FrameworkFlink:
		obj, err = jobapp.Flink(run)
	default:
		err = fmt.Errorf("%w: unknown framework %q", jobapp.ErrInvalid, job.Spec.Framework)
	}
	if err != nil {
		return CreatedApplication{}, nonRetryable(ErrInvalidJob, "%v", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if err := controllerutil.SetControllerReference(&job, obj, a.Client.Scheme()); err != nil {
		return CreatedApplication{}, fmt.Errorf("own application by job %s: %w", job.Name, err)
	}
	notes := obj.GetAnnotations()
	if notes == nil {
		notes = map[string]string{}
	}
	notes[v1alpha1.CreatedAtAnnotation] = a.now().UTC().Format(time.RFC3339Nano)
	obj.SetAnnotations(notes)
	err = a.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		err = a.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return CreatedApplication{}, nonRetryable(ErrInvalidJob, "the API server refused the application: %v", err)
		}
		return CreatedApplication{}, fmt.Errorf("create %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	made := CreatedApplication{ApplicationRef: v1alpha1.ApplicationRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: obj.GetUID()}}
	if at, err := time.Parse(time.RFC3339Nano, obj.GetAnnotations()[v1alpha1.CreatedAtAnnotation]); err == nil {
		made.CreatedAt = at
	}
	return made, nil
}

// AppKey names a job's application.
type AppKey struct {
	Namespace string
	Job       string
	App       v1alpha1.ApplicationRef
	// Replicas is how many executors or TaskManagers the application has.
	Replicas int
	// Enough is how many placed executors WaitPlaced waits for; 0 means all Replicas.
	Enough int
	// Within, when positive, bounds a wait: once that long has passed, it answers with what
	// it has seen so far, done or not. A worker from before the field waits on.
	Within time.Duration `json:",omitempty"`
	// Scheduling and Since name the run whose slot pods the worker's watch remembers placed
	// (Changes.NotePod): those of Scheduling placed since Since, the application's creation.
	// A wait that finds the application ended learns of placements it came too late to see.
	// Since is the workflow's clock, the watch's times the worker's: a worker whose clock
	// lags the Temporal server's by more than a run's start takes (a tenth of a second or
	// more) loses the memory, and its waits keep the times they see, as before. A workflow
	// from before the fields gives none: its wait knows only what it sees.
	Scheduling string    `json:",omitempty"`
	Since      time.Time `json:",omitzero"`
	// Known is how many placement times the run has already. A wait of a run that has them
	// all reads no events for the times of pods placed before the worker's watch began
	// (placedBeforeTheWatch): the workflow keeps the times it has.
	Known int `json:",omitempty"`
}

// AppProgress is how far an application got.
type AppProgress struct {
	// Gone: the application does not exist (it was deleted behind slotplane's back).
	Gone bool
	// Placed counts executors or TaskManagers that are bound to a node with a slot.
	Placed  int
	Outcome jobapp.Outcome
	// EndedAt is when a terminal outcome was first seen.
	EndedAt time.Time
	// DriverRunningAt is when the driver or JobManager was first seen running: by the
	// worker's watch when it remembers (AppKey.Since), else by this wait (zero: not seen
	// running).
	DriverRunningAt time.Time
	// PlacedAt are the moments each placed executor or TaskManager was first seen placed,
	// earliest first: by the worker's watch when it remembers the pod (AppKey.Since), else
	// by this wait, whose first look gives its time to those placed before it began. Once
	// the application ended, those the watch remembers and the wait never saw (they were
	// gone when it looked) are counted too.
	PlacedAt []time.Time
	// Nodes and SharedWith say where the run ran, once WaitFinished saw it end: the nodes
	// of its slots, and the other jobs that held slots there meanwhile (findPlace).
	Nodes          []string
	SharedWith     []string
	SharedWithMore int

	driverRunning bool
	placedPods    []types.UID
	placedNames   []string // of placedPods, in their order
	// executors are, once a SparkApplication ended, the executor pods its status names
	// (executorState), gone ones too, but those it says never left Pending; a
	// FlinkDeployment names none.
	executors []string
	// taskManagers is, once a FlinkDeployment ended, the cluster whose TaskManager pods are
	// sought by their names (flinkTaskManager), which its status does not give.
	taskManagers string
}

// pollInterval is how often the waiting activities look at an application when nothing
// wakes them (no Changes); watchedPoll is the safety net when Changes does.
const (
	pollInterval = time.Second
	watchedPoll  = 10 * time.Second
)

// WaitPlaced waits until every executor or TaskManager of the application (or in.Enough of
// them) holds a slot and is bound to its node, or the application ended (a restart may find
// it finished: a jump). It heartbeats while it waits.
func (a *Activities) WaitPlaced(ctx context.Context, in AppKey) (AppProgress, error) {
	want := in.Replicas
	if in.Enough > 0 && in.Enough < want {
		want = in.Enough
	}
	return a.waitApp(ctx, in, heartbeatEvery, func(p AppProgress) bool { return p.Gone || p.Outcome.Terminal || p.Placed >= want })
}

// WaitFinished waits until the application ends, heartbeating while it waits.
//
// The run's end is where it ran: the answer says on which nodes, and next to which jobs.
func (a *Activities) WaitFinished(ctx context.Context, in AppKey) (AppProgress, error) {
	p, err := a.waitApp(ctx, in, finishedHeartbeatEvery, func(p AppProgress) bool { return p.Gone || p.Outcome.Terminal })
	if err != nil {
		return p, err
	}
	end := p.EndedAt
	if end.IsZero() {
		end = a.now()
	}
	place, err := a.findPlace(ctx, types.NamespacedName{Namespace: in.Namespace, Name: in.Job}, end)
	if err != nil {
		return AppProgress{}, err
	}
	p.Nodes, p.SharedWith, p.SharedWithMore = place.Nodes, place.SharedWith, place.SharedWithMore
	return p, nil
}

// waitApp looks at the application until done says so: at every change of the job's
// application or pods when Changes is there, else every pollInterval. It notes when it first
// saw the driver running and each executor placed.
func (a *Activities) waitApp(ctx context.Context, in AppKey, beatEvery time.Duration, done func(AppProgress) bool) (AppProgress, error) {
	var driverAt time.Time
	placedAt := map[types.UID]time.Time{}
	// listed are the run's pods this wait found placed at its first look with no note of
	// the watch's, by name: their first-seen times only bound when they were placed.
	listed := map[types.UID]string{}
	job := types.NamespacedName{Namespace: in.Namespace, Name: in.Job}
	began := time.Now()
	beat := heartbeat{last: began, every: beatEvery}
	for look := 0; ; look++ {
		var wake <-chan struct{}
		stop, every := func() {}, pollInterval
		if a.Changes != nil {
			// Registered before the look: a change during it wakes the next wait at once.
			wake, stop = a.Changes.Wait(job)
			every = watchedPoll
		}
		p, err := a.appProgress(ctx, in)
		if err != nil {
			stop()
			return AppProgress{}, err
		}
		seen := time.Now()
		if p.driverRunning && driverAt.IsZero() {
			driverAt = seen
		}
		var remembered map[types.UID]time.Time
		if in.Scheduling != "" && !in.Since.IsZero() {
			remembered = a.Changes.placedSince(in.Namespace, in.Job, in.Scheduling, in.Since)
			// The driver the watch saw running first, even if it ended before this look.
			if t := a.Changes.driverSince(in.Namespace, in.Job, in.Since); !t.IsZero() && (driverAt.IsZero() || t.Before(driverAt)) {
				driverAt = t
			}
		}
		for i, uid := range p.placedPods {
			if _, ok := placedAt[uid]; !ok {
				placedAt[uid] = seen
				if t, ok := remembered[uid]; ok && t.Before(seen) {
					placedAt[uid] = t
				}
				if _, watched := remembered[uid]; !watched && look == 0 && i < len(p.placedNames) {
					// Placed before this wait began, and the watch does not say when: this
					// look's time only bounds it.
					listed[uid] = p.placedNames[i]
				}
			}
		}
		late := in.Within > 0 && seen.Sub(began) >= in.Within
		if done(p) || late {
			stop()
			if p.Outcome.Terminal {
				p.EndedAt = seen
				// Every pod the run had placed counts, also those gone by now: seen by an
				// earlier look of this wait, or, before it began, by the watch.
				for uid, t := range remembered {
					if _, ok := placedAt[uid]; !ok {
						placedAt[uid] = t
					}
				}
				if len(placedAt) < in.Replicas && !in.Since.IsZero() {
					a.placedUnwatched(ctx, in, p.executors, placedAt)
					a.taskManagersUnwatched(ctx, in, p.taskManagers, placedAt)
				}
				p.placedPods = slices.Collect(maps.Keys(placedAt)) // the pods placed now are among them
			}
			if in.Known < in.Replicas && !in.Since.IsZero() {
				// With the pods the watch itself listed when it began: read once, here, not at
				// every look.
				maps.Copy(listed, a.Changes.listedSince(in.Namespace, in.Job, in.Scheduling, in.Since))
				a.placedBeforeTheWatch(ctx, in, listed, placedAt)
			}
			p.DriverRunningAt = driverAt
			for _, uid := range p.placedPods {
				p.PlacedAt = append(p.PlacedAt, placedAt[uid])
			}
			slices.SortFunc(p.PlacedAt, func(x, y time.Time) int { return x.Compare(y) })
			return p, nil
		}
		beat.due(ctx, p.Placed)
		if in.Within > 0 {
			every = min(every, max(in.Within-time.Since(began), time.Millisecond))
		}
		pause(ctx, wake, every, &beat, p.Placed)
		stop()
		if ctx.Err() != nil {
			return AppProgress{}, ctx.Err()
		}
	}
}

// placedUnwatched adds to placedAt the executors of an ended run that no watch saw placed:
// they came and went while no worker was up to watch (it was restarting), so neither this
// wait nor the worker's watch knows them. The kube-scheduler's Scheduled event of each pod
// says when it was bound. A SparkApplication names its executors (executors); a
// FlinkDeployment's TaskManagers are found by their names (taskManagersUnwatched). Events of
// an earlier application of the same name (before in.Since) do not count. It reads one
// executor's events at a time, until the run has as many placements as executors, and at
// most twice that many executors' (a run that failed may name many). What cannot be read is
// left out: the run's record then lacks a time, which is no reason to fail the run.
func (a *Activities) placedUnwatched(ctx context.Context, in AppKey, executors []string, placedAt map[types.UID]time.Time) {
	for _, name := range executors[:min(len(executors), 2*in.Replicas)] {
		if len(placedAt) >= in.Replicas {
			return
		}
		bound, err := a.boundAt(ctx, in.Namespace, name, in.Since)
		if err != nil {
			slog.Warn("the scheduler's events of an executor no watch saw could not be read", "job", in.Job, "pod", name, "err", err)
			return
		}
		for uid, at := range bound {
			if _, known := placedAt[uid]; !known {
				placedAt[uid] = at
			}
		}
	}
}

// taskManagersUnwatched is placedUnwatched for a FlinkDeployment's run (cluster: the
// deployment's name; "" for any other run): its status names no TaskManager, but Flink names
// each cluster's TaskManager pods alike (flinkTaskManager), so one read of the namespace's
// Scheduled events, from the API server's watch cache, finds those of the run's pods. The
// earliest first, it adds until the run has as many placements as TaskManagers. A pod of an
// earlier deployment of the same name (an event before in.Since) does not count.
func (a *Activities) taskManagersUnwatched(ctx context.Context, in AppKey, cluster string, placedAt map[types.UID]time.Time) {
	if cluster == "" || len(placedAt) >= in.Replicas {
		return
	}
	bound, err := a.scheduledEvents(ctx, in.Namespace, fields.Set{}, in.Since, func(pod string) bool { return flinkTaskManager(cluster, pod) })
	if err != nil {
		slog.Warn("the scheduler's events of TaskManagers no watch saw could not be read", "job", in.Job, "deployment", cluster, "err", err)
		return
	}
	uids := slices.SortedFunc(maps.Keys(bound), func(x, y types.UID) int { return bound[x].Compare(bound[y]) })
	for _, uid := range uids {
		if len(placedAt) >= in.Replicas {
			return
		}
		if _, known := placedAt[uid]; !known {
			placedAt[uid] = bound[uid]
		}
	}
}

// flinkTaskManager says whether pod is the name Flink's native Kubernetes mode gives a
// TaskManager of cluster: "<cluster>-taskmanager-<attempt>-<index>", both numbers.
func flinkTaskManager(cluster, pod string) bool {
	rest, ok := strings.CutPrefix(pod, cluster+"-taskmanager-")
	if !ok {
		return false
	}
	attempt, index, ok := strings.Cut(rest, "-")
	return ok && allDigits(attempt) && allDigits(index)
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// placedBeforeTheWatch takes, for each pod in listed (by name) that placedAt holds, the moment
// the kube-scheduler bound it, from its Scheduled event, when that comes before the time
// placedAt has: the pods were placed before the worker's watch began (they were placed
// while the worker was away, and its new watch listed them) or before this wait's first
// look, so their first-seen time is late by as much as the worker was away. Only the times
// of a run that lacks some are worth reading (AppKey.Known), at most twice its executor
// count, in the pods' names' order; what cannot be read keeps its first-seen time.
func (a *Activities) placedBeforeTheWatch(ctx context.Context, in AppKey, listed map[types.UID]string, placedAt map[types.UID]time.Time) {
	uids := slices.SortedFunc(maps.Keys(listed), func(x, y types.UID) int { return strings.Compare(listed[x], listed[y]) })
	read := 0
	for _, uid := range uids {
		had, ok := placedAt[uid]
		if !ok {
			continue
		}
		if read++; read > 2*in.Replicas {
			return
		}
		bound, err := a.boundAt(ctx, in.Namespace, listed[uid], in.Since)
		if err != nil {
			slog.Warn("the scheduler's events of a pod placed before the watch began could not be read", "job", in.Job, "pod", listed[uid], "err", err)
			return
		}
		if t, ok := bound[uid]; ok && t.Before(had) {
			placedAt[uid] = t
		}
	}
}

// boundAt reads the kube-scheduler's Scheduled events of the pods named pod (from the API
// server's watch cache) and returns, by pod UID, when each was bound, at since or later:
// an event from before since is of an earlier pod of that name.
func (a *Activities) boundAt(ctx context.Context, namespace, pod string, since time.Time) (map[types.UID]time.Time, error) {
	return a.scheduledEvents(ctx, namespace, fields.Set{"involvedObject.name": pod}, since, nil)
}

// scheduledEvents reads the kube-scheduler's Scheduled events of pods in namespace that also
// match set (from the API server's watch cache), of the pods whose names name accepts (nil:
// all), and returns, by pod UID, when each was bound, at since or later.
func (a *Activities) scheduledEvents(ctx context.Context, namespace string, set fields.Set, since time.Time, name func(string) bool) (map[types.UID]time.Time, error) {
	var events corev1.EventList
	match := fields.Set{"involvedObject.kind": "Pod", "reason": "Scheduled"}
	maps.Copy(match, set)
	err := a.Client.List(ctx, &events, client.InNamespace(namespace), client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(match)},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		return nil, err
	}
	out := map[types.UID]time.Time{}
	for _, e := range events.Items {
		if name != nil && !name(e.InvolvedObject.Name) {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.FirstTimestamp.Time
		}
		uid := e.InvolvedObject.UID
		if uid == "" || at.IsZero() || at.Before(since) {
			continue
		}
		if was, ok := out[uid]; !ok || at.Before(was) {
			out[uid] = at
		}
	}
	return out, nil
}

// HeartbeatEvery is how often a waiting activity says it is alive, whatever it waits for.
// Each heartbeat is a write of the workflow's state in the Temporal server, and every running
// job waits in one: at 200 running jobs, heartbeats once a second were 200 writes a second,
// and the embedded server's store fell behind until workflow tasks took over 5 s. The
// workflows give the waits a heartbeat timeout of three of these (WaitHeartbeatTimeout); a
// worker that restarts on its host takes up its predecessor's waits at once
// (worker.RetryOrphans), so the timeout only bounds the loss of a worker's host.
const HeartbeatEvery = 10 * time.Second

// FinishedHeartbeatEvery is how often WaitFinished, the wait of a running job for its end,
// says it is alive. Every running job waits in one for as long as it runs, so its
// heartbeats grow with the running jobs: at 8,000 running, one every HeartbeatEvery would
// be 800 writes a second in the Temporal store, one every minute is 133. Its heartbeat
// timeout (workflows.FinishedHeartbeatTimeout, three of these) bounds only how late the end
// of a job whose wait was on a lost host is seen: its executors' slots are freed by the
// slot reconcile all the same, and the next job's wait is not held up.
const FinishedHeartbeatEvery = time.Minute

// heartbeatEvery and finishedHeartbeatEvery are HeartbeatEvery and FinishedHeartbeatEvery;
// a unit test shortens them.
var (
	heartbeatEvery         = HeartbeatEvery
	finishedHeartbeatEvery = FinishedHeartbeatEvery
)

// heartbeat sends a waiting activity's heartbeats, one every every from the wait's start:
// none at the start, so a wait that ends sooner (most placements) sends none.
type heartbeat struct {
	last  time.Time
	every time.Duration
}

// recordHeartbeat sends a heartbeat (the SDK then holds it back up to its throttle; a test
// counts what the waits send).
var recordHeartbeat = activity.RecordHeartbeat

// due sends one, with details, if every passed since the last (or the start).
func (h *heartbeat) due(ctx context.Context, details any) {
	if now := time.Now(); now.Sub(h.last) >= h.every {
		recordHeartbeat(ctx, details)
		h.last = now
	}
}

// next is how long until the next heartbeat is due.
func (h *heartbeat) next() time.Duration {
	return max(h.every-time.Since(h.last), time.Millisecond)
}

// pause waits until wake, d or the end of ctx, heartbeating (with details) meanwhile.
func pause(ctx context.Context, wake <-chan struct{}, d time.Duration, beat *heartbeat, details any) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		tick := time.NewTimer(beat.next())
		select {
		case <-ctx.Done():
			tick.Stop()
			return
		case <-wake:
			tick.Stop()
			return
		case <-timer.C:
			tick.Stop()
			return
		case <-tick.C:
			beat.due(ctx, details)
		}
	}
}

func (a *Activities) appProgress(ctx context.Context, in AppKey) (AppProgress, error) {
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.App.Name}
	var p AppProgress
	switch in.App.Kind {
	case sparkv1beta2.SparkApplicationKind:
		var app sparkv1beta2.SparkApplication
		if err := a.readCopy(ctx, key, &app); err != nil {
			if apierrors.IsNotFound(err) {
				return AppProgress{Gone: true}, nil
			}
			return AppProgress{}, fmt.Errorf("get sparkapplication %s: %w", key, err)
		}
		p.Outcome = jobapp.SparkOutcome(&app)
		if p.Outcome.Terminal { // only an ended run's wait may need them (placedUnwatched)
			for name, st := range app.Status.ExecutorState {
				if st != sparkv1beta2.ExecutorStatePending {
					p.executors = append(p.executors, name)
				}
			}
			slices.Sort(p.executors)
		}
	case flinkv1beta1.FlinkDeploymentKind:
		var dep flinkv1beta1.FlinkDeployment
		if err := a.readCopy(ctx, key, &dep); err != nil {
			if apierrors.IsNotFound(err) {
				return AppProgress{Gone: true}, nil
			}
			return AppProgress{}, fmt.Errorf("get flinkdeployment %s: %w", key, err)
		}
		p.Outcome = jobapp.FlinkOutcome(&dep)
		if p.Outcome.Terminal {
			p.taskManagers = dep.Name // the cluster id Flink gives the operator's deployment
		}
	default:
		return AppProgress{}, nonRetryable(ErrInvalidJob, "unknown application kind %q", in.App.Kind)
	}
	// From a watch's copy too (the worker's own, or the API server's watch cache): a look
	// follows a change that copy saw, and a copy a moment old only delays what the next
	// change shows.
	pods, err := a.jobPods(ctx, in.Namespace, in.Job)
	if err != nil {
		return AppProgress{}, err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Labels[v1alpha1.GhostLabel] == "true" {
			continue
		}
		if _, slotPod := pod.Labels[v1alpha1.TestBedLabel]; !slotPod {
			// The driver or JobManager: the one pod of the job that takes no slot.
			p.driverRunning = p.driverRunning || pod.Status.Phase == corev1.PodRunning
			continue
		}
		if _, proven := slots.ProvenSlot(pod); proven && pod.Spec.NodeName != "" {
			p.Placed++
			p.placedPods = append(p.placedPods, pod.UID)
			p.placedNames = append(p.placedNames, pod.Name)
		}
	}
	return p, nil
}

// jobPods lists the pods of a job from the worker's copy (by its index, see jobPodsIndex), or
// from the API server's watch cache when there is no copy.
func (a *Activities) jobPods(ctx context.Context, namespace, job string) (*corev1.PodList, error) {
	var pods corev1.PodList
	var r client.Reader = a.Client
	match := []client.ListOption{client.InNamespace(namespace)}
	if c := a.Changes.reader(corev1.SchemeGroupVersion.WithKind("Pod")); c != nil {
		r, match = c, append(match, a.Changes.jobPodsOption(job))
	} else {
		match = append(match, client.MatchingLabels{v1alpha1.BatchJobLabel: job}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	}
	if err := r.List(ctx, &pods, match...); err != nil {
		return nil, fmt.Errorf("list pods of job %s/%s: %w", namespace, job, err)
	}
	return &pods, nil
}

// readCopy reads an object from the worker's copy (Changes) when it has one of that kind,
// else from the API server's watch cache. One the copy lacks, such as one created a moment
// ago, is read from etcd before it counts as gone. A job's application is read this way, and
// a job before a write of its status or its creation request (copyForUpdate).
func (a *Activities) readCopy(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, a.Client.Scheme())
	if err != nil {
		return err
	}
	if r := a.Changes.reader(gvk); r != nil {
		if err := r.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			return err
		}
		return a.Client.Get(ctx, key, obj)
	}
	return fromWatchCache(ctx, a.Client, key, obj)
}

// slotNodes are the nodes of the test bed's slots at positions, each once, in the order of
// positions; missing is a position the bed has no slot at (-1: none).
func slotNodes(b *bedSlots, positions []int32) (nodes []string, missing int32) {
	for _, pos := range positions {
		s, ok := b.slots[pos]
		if !ok {
			return nil, pos
		}
		node := s.NodeName
		if !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
		}
	}
	return nodes, -1
}

// DeleteApplication deletes a job's application; one that is gone already is fine.
func (a *Activities) DeleteApplication(ctx context.Context, in AppKey) error {
	var obj client.Object
	switch in.App.Kind {
	case sparkv1beta2.SparkApplicationKind:
		obj = &sparkv1beta2.SparkApplication{}
	case flinkv1beta1.FlinkDeploymentKind:
		obj = &flinkv1beta1.FlinkDeployment{}
	default:
		return nil // nothing slotplane could have created
	}
	obj.SetNamespace(in.Namespace)
	obj.SetName(in.App.Name)
	policy := metav1.DeletePropagationBackground
	if err := a.Client.Delete(ctx, obj, &client.DeleteOptions{PropagationPolicy: &policy}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s/%s: %w", in.App.Kind, in.Namespace, in.App.Name, err)
	}
	return nil
}

// WriteJobStatusInput is a job's whole status as its workflow sees it.
type WriteJobStatusInput struct {
	Job    JobKey
	Status v1alpha1.BatchJobStatus
}

// WriteJobStatus writes a BatchJob's status; a job that is gone is fine. The conditions the
// workflow sets replace theirs by type; any other condition on the job stays.
//
// The job's queue (status.queue) is Admission's, not the workflow's: the one on the object
// stays, and goes when the job is Ready.
//
// A status that says who holds the job (Ready: nobody; InQueue: a Scheduling) is written
// only while that is so: the workflow decided on what it read before, and a claim since has
// written InQueue itself or nudges the workflow (ClaimJobs), a release nudges it. Writing the
// older picture over the claim's would show a held job as Ready until its run began.
func (a *Activities) WriteJobStatus(ctx context.Context, in WriteJobStatusInput) error {
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var job v1alpha1.BatchJob
		if err := a.copyForUpdate(ctx, in.Job.nn(), &job, &attempt); err != nil {
			return err
		}
		if s := in.Status.State; (s == v1alpha1.JobReady || s == v1alpha1.JobInQueue) && job.Labels[v1alpha1.ActiveSchedulingLabel] != in.Status.Scheduling {
			if attempt == 1 {
				return errCheckAgain // the cache's copy may lag: decide on etcd's
			}
			return nil
		}
		st := in.Status
		st.ObservedGeneration = job.Generation
		// The queue is Admission's to write (RecordQueues); it goes with the holder.
		st.Queue = job.Status.Queue
		if st.State == v1alpha1.JobReady {
			st.Queue = ""
		}
		st.Conditions = job.Status.Conditions
		for _, c := range in.Status.Conditions {
			meta.SetStatusCondition(&st.Conditions, c)
		}
		job.Status = st
		return a.Client.Status().Update(ctx, &job)
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("write status of batchjob %s: %w", in.Job.nn(), err)
	}
	return nil
}

// copyForUpdate is getForUpdate for a write that sends none of what the worker's copy
// leaves out: its first attempt reads the copy when there is one (readCopy: no request at
// all), a retry after a conflict reads etcd. The copy lacks a job's wrapped spec and the
// managed fields. A write of the status subresource neither sends nor changes them (the
// API server keeps the stored spec and metadata, and the stored managed fields when the
// request has none; a job's workflow writes its status three times a run), and neither
// does a patch of the annotations (a creation request). A copy that lags fails the write
// on its resourceVersion, and the retry reads etcd.
func (a *Activities) copyForUpdate(ctx context.Context, key types.NamespacedName, obj client.Object, attempt *int) error {
	*attempt++
	if *attempt == 1 {
		return a.readCopy(ctx, key, obj)
	}
	return a.Client.Get(ctx, key, obj)
}

// IsNotHeld reports whether an activity error says the Scheduling lost its job.
func IsNotHeld(err error) bool { return hasErrorType(err, ErrNotHeld) }

// IsSlotsGone says whether err is ErrSlotsGone.
func IsSlotsGone(err error) bool { return hasErrorType(err, ErrSlotsGone) }

// hasErrorType says whether err is an application error of type t.
func hasErrorType(err error, t string) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == t
}
