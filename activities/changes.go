package activities

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// Changes wakes the activities that wait on a job's application (WaitPlaced, WaitFinished)
// when the application or one of the job's pods changes, so a job's end or its last pod's
// placement is seen within milliseconds rather than at the next poll. Fed by WatchChanges,
// it also keeps the watched objects whole, and the waiting activity reads them there: a
// look costs the API server nothing (it was a Get and a List of the watch cache, about
// twenty requests per job run and the most frequent request of the long run). The
// wake-up comes after the copy is updated, so a look after it sees the change. Without it
// (nil), the activities poll every second.
type Changes struct {
	mu      sync.Mutex
	waiters map[types.NamespacedName]map[*waiter]struct{}
	// copies holds the watched kinds' objects, each kind's informer once synced; none in
	// a hub a test feeds.
	copies client.Reader
	synced map[schema.GroupVersionKind]func() bool
	// podsIndexed: the copies index pods by their job (jobPodsIndex), so the pods of one job
	// are a lookup rather than a walk over every pod of the namespace; placesIndexed: they
	// index BatchJobs by jobPlacesIndex and SlotSlices by sliceNodesIndex.
	podsIndexed, placesIndexed bool
	// placed remembers when each run's slot pods were first seen placed (NotePod).
	placed placements
}

// jobPodsIndex indexes the copied pods by the BatchJob label's value. Pods of ended runs stay
// (a finished driver is kept, as the operators keep it), so in the long run's namespace a
// label match walked thousands of pods for each look at one job: 8% of the worker's CPU.
const jobPodsIndex = "slotplane.io/batchjob"

// jobPodsOption selects the pods of job from the hub's copy: by the index when the copy has
// it, else by the label (a copy a test made).
func (c *Changes) jobPodsOption(job string) client.ListOption {
	if c.podsIndexed {
		return client.MatchingFields{jobPodsIndex: job}
	}
	return client.MatchingLabels{v1alpha1.BatchJobLabel: job}
}

// jobPlacesIndex indexes the copied BatchJobs by where their runs were: each slot of the
// current run (placeInSlot) and each node of a run in the history (placeOnNode).
// sliceNodesIndex indexes the copied SlotSlices by the nodes of their slots (placeOnNode).
// With them a run's end finds its neighbours (findPlace) without a walk over every job of
// the namespace: at 10,000 jobs that walk was a fifth of the worker's CPU.
const (
	jobPlacesIndex  = "slotplane.io/places"
	sliceNodesIndex = "slotplane.io/nodes"
)

func placeInSlot(bed string, position int32) string { return bed + "#" + strconv.Itoa(int(position)) }
func placeOnNode(bed, node string) string           { return bed + "@" + node }

// jobPlaces are the keys of jobPlacesIndex for a BatchJob.
func jobPlaces(o client.Object) []string {
	j, ok := o.(*v1alpha1.BatchJob)
	if !ok {
		return nil
	}
	var out []string
	if j.Status.TestBed != "" {
		for _, p := range j.Status.Slots {
			out = append(out, placeInSlot(j.Status.TestBed, p))
		}
	}
	for _, r := range j.Status.History {
		for _, n := range r.Nodes {
			out = append(out, placeOnNode(r.TestBed, n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sliceNodes are the keys of sliceNodesIndex for a SlotSlice.
func sliceNodes(o client.Object) []string {
	s, ok := o.(*v1alpha1.SlotSlice)
	if !ok {
		return nil
	}
	var out []string
	for _, st := range s.Slots {
		if st.NodeName != "" {
			out = append(out, placeOnNode(s.TestBed, st.NodeName))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// placesReader is where findPlace looks runs' places up by jobPlacesIndex and
// sliceNodesIndex: the hub's copies once BatchJobs and SlotSlices synced and when it has
// those indexes, else nil.
func (c *Changes) placesReader() client.Reader {
	if c == nil || !c.placesIndexed || c.reader(v1alpha1.GroupVersion.WithKind("SlotSlice")) == nil {
		return nil
	}
	return c.reader(v1alpha1.GroupVersion.WithKind("BatchJob"))
}

type waiter struct{ ch chan struct{} }

// NewChanges returns a hub nothing feeds yet: Notify feeds it (WatchChanges, or a test).
func NewChanges() *Changes {
	return &Changes{waiters: map[types.NamespacedName]map[*waiter]struct{}{}}
}

// Wait registers for the next change of a job: the channel is closed when it comes. Register
// before reading, so that a change between the read and the wait is not missed; call the
// returned function to unregister.
func (c *Changes) Wait(job types.NamespacedName) (<-chan struct{}, func()) {
	w := &waiter{ch: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.waiters[job]
	if set == nil {
		set = map[*waiter]struct{}{}
		c.waiters[job] = set
	}
	set[w] = struct{}{}
	return w.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if set, ok := c.waiters[job]; ok {
			if _, ok := set[w]; ok {
				delete(set, w)
				if len(set) == 0 {
					delete(c.waiters, job)
				}
			}
		}
	}
}

// Notify wakes every waiter of a job, once.
func (c *Changes) Notify(job types.NamespacedName) {
	c.mu.Lock()
	set := c.waiters[job]
	delete(c.waiters, job)
	c.mu.Unlock()
	for w := range set {
		close(w.ch)
	}
}

// reader is where a waiting activity reads objects of kind gvk: the hub's copies when it
// watches that kind and has synced, else nil (read the API server).
func (c *Changes) reader(gvk schema.GroupVersionKind) client.Reader {
	if c == nil || c.copies == nil {
		return nil
	}
	if synced, ok := c.synced[gvk]; ok && synced() {
		return c.copies
	}
	return nil
}

// slotsReader is where ReadSlots reads a test bed and its slot slices: the hub's copies
// once both kinds synced, else nil (read the API server).
func (c *Changes) slotsReader() client.Reader {
	r := c.reader(v1alpha1.GroupVersion.WithKind("TestBed"))
	if r == nil || c.reader(v1alpha1.GroupVersion.WithKind("SlotSlice")) == nil {
		return nil
	}
	return r
}

// queuesReader is where LoadAllocationFile may look whether a namespace's allocation file
// changed: the hub's copies of the slotplane-queues ConfigMaps once they synced, else nil.
// The copy holds that name alone: another name is read from the API server.
func (c *Changes) queuesReader(configMap string) client.Reader {
	if configMap != v1alpha1.QueuesConfigMap {
		return nil
	}
	return c.reader(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
}

// TestBeds lists every test bed from the hub's copies once they synced, else from cl.
func (c *Changes) TestBeds(ctx context.Context, cl client.Reader) ([]v1alpha1.TestBed, error) {
	if r := c.reader(v1alpha1.GroupVersion.WithKind("TestBed")); r != nil {
		cl = r
	}
	var list v1alpha1.TestBedList
	if err := cl.List(ctx, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Waiting is the number of jobs someone waits on.
func (c *Changes) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// watchedKinds are what a job's run is made of: its pods and its application. Only objects
// that carry a BatchJob's label are watched, so of a busy cluster's pods the worker sees and
// keeps only the jobs'.
func watchedKinds() []client.Object {
	return []client.Object{&corev1.Pod{}, &sparkv1beta2.SparkApplication{}, &flinkv1beta1.FlinkDeployment{}}
}

// copiedKinds are kept whole too, all of them, for what a run's end records of where it ran
// (findPlace): which jobs held slots on which nodes, and the test beds' slots, which the
// admission decisions read (ReadSlots); and the allocation files' ConfigMaps, by their name
// alone, which Admission's resyncs look at (LoadAllocationFile). Their changes wake no job's
// wait; a slot that may let a job start wakes its bed's Admission (SlotsWake).
func copiedKinds() []client.Object {
	return []client.Object{&v1alpha1.BatchJob{}, &v1alpha1.TestBed{}, &v1alpha1.SlotSlice{}, &corev1.ConfigMap{}}
}

// SlotsWake tells a test bed's Admission that its slots changed in a way that may let a
// waiting job start. WatchChanges calls it after its copy holds the change, so a decision
// that reads the copy after the wake-up sees the slot.
type SlotsWake func(bed types.NamespacedName)

// slotsHandler calls wake for the changes of test beds and slot slices that may let a job
// start: a bed made, deleted or respecified, and a slice with a slot newly free to take or a
// slot gone. Reservations and occupations, the bulk of slice writes, only take slots.
func slotsHandler(wake SlotsWake) toolscache.ResourceEventHandler {
	bedOf := func(obj any) (types.NamespacedName, bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		switch o := obj.(type) {
		case *v1alpha1.TestBed:
			return types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, true
		case *v1alpha1.SlotSlice:
			return types.NamespacedName{Namespace: o.Namespace, Name: o.TestBed}, o.TestBed != ""
		}
		return types.NamespacedName{}, false
	}
	always := func(obj any) {
		if bed, ok := bedOf(obj); ok {
			wake(bed)
		}
	}
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { always(obj) },
		DeleteFunc: always,
		UpdateFunc: func(before, after any) {
			if !mayStartAJob(before, after) {
				return
			}
			always(after)
		},
	}
}

// mayStartAJob says whether an update of a test bed or a slot slice may let a waiting job
// start.
func mayStartAJob(before, after any) bool {
	switch a := after.(type) {
	case *v1alpha1.TestBed:
		b, ok := before.(*v1alpha1.TestBed)
		return !ok || a.Generation != b.Generation || a.UID != b.UID
	case *v1alpha1.SlotSlice:
		b, ok := before.(*v1alpha1.SlotSlice)
		if !ok || a.UID != b.UID || len(a.Slots) != len(b.Slots) {
			return true
		}
		takable := func(s *v1alpha1.SlotStatus) bool {
			return (s.State == v1alpha1.SlotFree || s.State == "") && s.Unavailable == ""
		}
		for i := range a.Slots {
			was, now := &b.Slots[i], &a.Slots[i]
			if was.Position != now.Position || takable(now) && !takable(was) {
				return true
			}
		}
	}
	return false
}

// lightJob drops from a copied BatchJob what findPlace never reads and can be large: the
// wrapped Spark or Flink spec, and the managed fields.
func lightJob(obj any) (any, error) {
	if j, ok := obj.(*v1alpha1.BatchJob); ok {
		j.ManagedFields = nil
		j.Spec.SparkApplication, j.Spec.FlinkDeployment = nil, nil
	}
	return obj, nil
}

// WatchChanges starts watches of the objects that carry a BatchJob's label, keeps them, and
// feeds their changes to a new hub, until ctx ends; it keeps copies of the BatchJobs, test
// beds and slot slices besides, and calls wake (when not nil) for the slot changes that may
// let a job start. A kind the cluster does not serve (an operator that is not installed) is
// left out, with a warning.
func WatchChanges(ctx context.Context, cfg *rest.Config, log *slog.Logger, wake SlotsWake) (*Changes, error) {
	return watch(ctx, cfg, log, wake, watchedKinds())
}

// WatchCopies is WatchChanges without the jobs' pods and applications: the hub of a worker
// of Admission alone, whose activities read only the copied kinds (copiedKinds). Its waits
// (Wait) are never woken.
func WatchCopies(ctx context.Context, cfg *rest.Config, log *slog.Logger, wake SlotsWake) (*Changes, error) {
	return watch(ctx, cfg, log, wake, nil)
}

// watch keeps copies of the copied kinds and of objs, each of the watched kinds or none.
func watch(ctx context.Context, cfg *rest.Config, log *slog.Logger, wake SlotsWake, objs []client.Object) (*Changes, error) {
	hasJob, err := labels.NewRequirement(v1alpha1.BatchJobLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*hasJob)
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range objs {
		byObject[o] = cache.ByObject{Label: sel}
	}
	byObject[&v1alpha1.BatchJob{}] = cache.ByObject{Transform: lightJob}
	byObject[&v1alpha1.TestBed{}] = cache.ByObject{}
	byObject[&v1alpha1.SlotSlice{}] = cache.ByObject{}
	byObject[&corev1.ConfigMap{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", v1alpha1.QueuesConfigMap)}
	informers, err := cache.New(cfg, cache.Options{Scheme: kubeclient.Scheme(), ByObject: byObject,
		DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, fmt.Errorf("watch jobs' applications and pods: %w", err)
	}
	if len(objs) > 0 {
		err = informers.IndexField(ctx, &corev1.Pod{}, jobPodsIndex, func(o client.Object) []string {
			return []string{o.GetLabels()[v1alpha1.BatchJobLabel]}
		})
		if err != nil {
			return nil, fmt.Errorf("index pods by job: %w", err)
		}
	}
	if err := informers.IndexField(ctx, &v1alpha1.BatchJob{}, jobPlacesIndex, jobPlaces); err != nil {
		return nil, fmt.Errorf("index batch jobs by their runs' places: %w", err)
	}
	if err := informers.IndexField(ctx, &v1alpha1.SlotSlice{}, sliceNodesIndex, sliceNodes); err != nil {
		return nil, fmt.Errorf("index slot slices by node: %w", err)
	}
	c := NewChanges()
	c.copies, c.synced, c.podsIndexed, c.placesIndexed = informers, map[schema.GroupVersionKind]func() bool{}, len(objs) > 0, true
	notify := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		if job := m.GetLabels()[v1alpha1.BatchJobLabel]; job != "" {
			c.Notify(types.NamespacedName{Namespace: m.GetNamespace(), Name: job})
		}
	}
	seen := func(obj any, listed bool) {
		// Before the wake-up: a wait that looks after it finds the placement remembered.
		if pod, ok := obj.(*corev1.Pod); ok {
			if listed {
				c.NoteListedPod(pod, time.Now())
			} else {
				c.NotePod(pod, time.Now())
			}
		}
		notify(obj)
	}
	handler := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj, false) },
		DeleteFunc: notify,
	}
	for i, o := range append(objs, copiedKinds()...) {
		gvk, err := apiutil.GVKForObject(o, kubeclient.Scheme())
		if err != nil {
			return nil, err
		}
		inf, err := informers.GetInformer(ctx, o, cache.BlockUntilSynced(false))
		if err != nil {
			log.Warn("not watching a kind the cluster may not serve; waits on it poll", "kind", gvk.Kind, "err", err)
			continue
		}
		var h toolscache.ResourceEventHandler
		switch {
		case i < len(objs):
			h = handler
		case wake != nil && (gvk.Kind == "TestBed" || gvk.Kind == "SlotSlice"):
			h = slotsHandler(wake)
		}
		if h != nil {
			if _, err := inf.AddEventHandler(h); err != nil {
				return nil, fmt.Errorf("watch %s: %w", gvk.Kind, err)
			}
		}
		c.synced[gvk] = inf.HasSynced
	}
	go func() {
		if err := informers.Start(ctx); err != nil {
			log.Error("the watches of jobs' applications and pods stopped; waits poll", "err", err)
		}
	}()
	return c, nil
}
