package activities

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// Changes wakes the activities that wait on a job's application (WaitPlaced, WaitFinished)
// when the application or one of the job's pods changes, so a job's end or its last pod's
// placement is seen within milliseconds rather than at the next poll. It only wakes: the
// waiting activity reads the cluster itself, live, as before. Without it (nil), the
// activities poll every second.
type Changes struct {
	mu      sync.Mutex
	waiters map[types.NamespacedName]map[*waiter]struct{}
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

// Waiting is the number of jobs someone waits on.
func (c *Changes) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// watchedKinds are what a job's run is made of: its pods and its application. The watches
// carry metadata only (the job's label is all that is read), so a busy cluster's pod specs
// are neither sent to nor kept by the worker.
var watchedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"},
	{Group: "sparkoperator.k8s.io", Version: "v1beta2", Kind: "SparkApplication"},
	{Group: "flink.apache.org", Version: "v1beta1", Kind: "FlinkDeployment"},
}

// WatchChanges starts metadata-only watches of the objects that carry a BatchJob's label
// and feeds their changes to a new hub, until ctx ends. A kind the cluster does not serve
// (an operator that is not installed) is left out, with a warning.
func WatchChanges(ctx context.Context, cfg *rest.Config, log *slog.Logger) (*Changes, error) {
	hasJob, err := labels.NewRequirement(v1alpha1.BatchJobLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*hasJob)
	byObject := map[client.Object]cache.ByObject{}
	objs := make([]*metav1.PartialObjectMetadata, 0, len(watchedKinds))
	for _, gvk := range watchedKinds {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		objs = append(objs, o)
		byObject[o] = cache.ByObject{Label: sel}
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: kubeclient.Scheme(), ByObject: byObject})
	if err != nil {
		return nil, fmt.Errorf("watch jobs' applications and pods: %w", err)
	}
	c := NewChanges()
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
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
	for _, o := range objs {
		inf, err := informers.GetInformer(ctx, o, cache.BlockUntilSynced(false))
		if err != nil {
			log.Warn("not watching a kind the cluster may not serve; waits on it poll", "kind", o.GroupVersionKind().Kind, "err", err)
			continue
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watch %s: %w", o.GroupVersionKind().Kind, err)
		}
	}
	go func() {
		if err := informers.Start(ctx); err != nil {
			log.Error("the watches of jobs' applications and pods stopped; waits poll", "err", err)
		}
	}()
	return c, nil
}
