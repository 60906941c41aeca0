package activities

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
	"slotplane/slots"
)

// AppKey names a job's application.
type AppKey struct {
	Namespace string
	Job       string
	App       v1alpha1.ApplicationRef
	// Replicas is how many executors or TaskManagers the application has.
	Replicas int
	// Enough is how many placed executors WaitPlaced waits for; 0 means all Replicas.
	Enough int
	// UntilDriverAlone: WaitPlaced also answers once the driver or JobManager runs and no
	// executor or TaskManager pod exists (AppProgress.DriverAlone).
	UntilDriverAlone bool `json:",omitempty"`
	// Within, when positive, bounds a wait: once that long has passed, it answers with what
	// it has seen so far, done or not. Zero waits on.
	Within time.Duration `json:",omitempty"`
	// Scheduling and Since name the run whose slot pods the worker's watch remembers placed
	// (Changes.NotePod): those of Scheduling placed since Since, the application's creation.
	// A wait that finds the application ended learns of placements it came too late to see.
	// Since is the workflow's clock, the watch's times the worker's: a worker whose clock
	// lags the Temporal server's by more than a run's start takes (a tenth of a second or
	// more) loses the memory, and its waits keep the times they see, as a wait without Since
	// does. Without them, a wait knows only what it sees.
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
	// Placed counts executors or TaskManagers that are bound to a node with a slot; Asked,
	// those that exist, placed or not (the driver asked for them).
	Placed  int
	Asked   int `json:",omitempty"`
	Outcome operatorapp.Outcome
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
	return a.waitApp(ctx, in, heartbeatEvery, func(p AppProgress) bool {
		return p.Gone || p.Outcome.Terminal || p.Placed >= want || in.UntilDriverAlone && p.driverRunning && p.Asked == 0
	})
}

// DriverAlone says the application's driver or JobManager was seen running while it had
// asked for no executor or TaskManager, and it has not ended.
func (p AppProgress) DriverAlone() bool {
	return !p.Gone && !p.Outcome.Terminal && !p.DriverRunningAt.IsZero() && p.Asked == 0 && p.Placed == 0
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
		p.Outcome = operatorapp.SparkOutcome(&app)
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
		p.Outcome = operatorapp.FlinkOutcome(&dep)
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
		p.Asked++
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
