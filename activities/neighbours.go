package activities

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
)

// findPlace finds where a job's current run ran, for its run record: the nodes of its slots,
// each once in slot order, and the other BatchJobs of the namespace whose runs held slots on
// one of those nodes at some time between the creation of this run's application and end.
// It reads the worker's copies of BatchJobs and test beds once they have synced, where it
// looks up only the jobs whose runs were on those nodes (jobPlacesIndex), else the API
// server's watch cache, every job of the namespace. The records of runs that ended a moment
// ago may be missing from either, and such a run still shows as its job's current one, so
// it is counted all the same.
func (a *Activities) findPlace(ctx context.Context, job types.NamespacedName, end time.Time) (place placeOfRun, _ error) {
	if r := a.Changes.placesReader(); r != nil {
		return a.findPlaceIndexed(ctx, r, job, end)
	}
	jobs, err := a.namespaceJobs(ctx, job.Namespace)
	if err != nil {
		return place, err
	}
	var self *v1alpha1.BatchJob
	for _, j := range jobs {
		if j.Name == job.Name {
			self = j
		}
	}
	if self == nil || self.Status.TestBed == "" || len(self.Status.Slots) == 0 {
		return place, nil
	}
	// The nodes of every slot the bed's jobs hold now: this run's and its neighbours'.
	positions := slices.Clone(self.Status.Slots)
	for _, other := range jobs {
		if other.Status.TestBed == self.Status.TestBed && other.Name != self.Name {
			positions = append(positions, other.Status.Slots...)
		}
	}
	slices.Sort(positions)
	positions = slices.Compact(positions)
	bed, err := readBedFrom(ctx, a.readCopy, types.NamespacedName{Namespace: job.Namespace, Name: self.Status.TestBed}, positions)
	if apierrors.IsNotFound(err) {
		return place, nil
	}
	if err != nil {
		return place, fmt.Errorf("get testbed %s: %w", self.Status.TestBed, err)
	}
	return placeAmong(self, jobs, bed.tb.Name, func(slot int32) string { return bed.slots[slot].NodeName }, end), nil
}

// findPlaceIndexed is findPlace on the worker's copies, by their indexes: the slices that
// hold a slot on the run's nodes (sliceNodesIndex), and the jobs whose current run holds one
// of those slots or whose history ran on one of those nodes (jobPlacesIndex).
func (a *Activities) findPlaceIndexed(ctx context.Context, r client.Reader, job types.NamespacedName, end time.Time) (place placeOfRun, _ error) {
	var self v1alpha1.BatchJob
	if err := r.Get(ctx, job, &self); err != nil {
		return place, client.IgnoreNotFound(err)
	}
	if self.Status.TestBed == "" || len(self.Status.Slots) == 0 {
		return place, nil
	}
	key := types.NamespacedName{Namespace: job.Namespace, Name: self.Status.TestBed}
	bed, err := readBedFrom(ctx, a.readCopy, key, self.Status.Slots)
	if apierrors.IsNotFound(err) {
		return place, nil
	}
	if err != nil {
		return place, fmt.Errorf("get testbed %s: %w", key.Name, err)
	}
	nodeAt := map[int32]string{}
	var keys []string
	for _, p := range self.Status.Slots {
		n := bed.slots[p].NodeName
		node := placeOnNode(key.Name, n)
		if n == "" || slices.Contains(keys, node) {
			continue
		}
		keys = append(keys, node)
		var on v1alpha1.SlotSliceList
		if err := r.List(ctx, &on, client.InNamespace(job.Namespace), client.MatchingFields{sliceNodesIndex: node}, client.UnsafeDisableDeepCopy); err != nil {
			return place, fmt.Errorf("list the slot slices of node %s: %w", n, err)
		}
		for i := range on.Items {
			if !slotslices.Owned(&on.Items[i], &bed.tb) {
				continue
			}
			for _, st := range on.Items[i].Slots {
				if st.NodeName == n {
					nodeAt[st.Position] = n
					keys = append(keys, placeInSlot(key.Name, st.Position))
				}
			}
		}
	}
	seen := map[string]bool{self.Name: true}
	var others []*v1alpha1.BatchJob
	for _, k := range keys {
		var list v1alpha1.BatchJobList
		if err := r.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFields{jobPlacesIndex: k}, client.UnsafeDisableDeepCopy); err != nil {
			return place, fmt.Errorf("list the batch jobs at %s: %w", k, err)
		}
		for i := range list.Items {
			if j := &list.Items[i]; !seen[j.Name] {
				seen[j.Name] = true
				others = append(others, j)
			}
		}
	}
	return placeAmong(&self, others, key.Name, func(slot int32) string { return nodeAt[slot] }, end), nil
}

// placeAmong is where self's current run, on test bed bed, ran: its nodes, and those of
// jobs whose runs held slots on one of them while it ran (self among jobs is skipped).
// nodeOf names the node of a slot of the bed, "" when unknown; it must know every slot on
// self's nodes.
func placeAmong(self *v1alpha1.BatchJob, jobs []*v1alpha1.BatchJob, bed string, nodeOf func(int32) string, end time.Time) (place placeOfRun) {
	mine := map[string]bool{}
	for _, s := range self.Status.Slots {
		if n := nodeOf(s); n != "" && !mine[n] {
			mine[n] = true
			place.Nodes = append(place.Nodes, n)
		}
	}
	from := firstOf(self.Status.Phases, nil)
	if from.IsZero() {
		from = end
	}
	onMyNodes := func(nodes []string) bool {
		return slices.ContainsFunc(nodes, func(n string) bool { return mine[n] })
	}
	overlaps := func(start, stop time.Time) bool {
		return !start.IsZero() && start.Before(end) && (stop.IsZero() || stop.After(from))
	}
	var shared []string
	for _, other := range jobs {
		if other.Name == self.Name {
			continue
		}
		if st := &other.Status; st.TestBed == bed && st.Run > 0 && st.Phases != nil {
			var nodes []string
			for _, s := range st.Slots {
				nodes = append(nodes, nodeOf(s))
			}
			if onMyNodes(nodes) && overlaps(firstOf(st.Phases, nil), timeOfMicro(st.Phases.EndedAt)) {
				shared = append(shared, other.Name)
				continue
			}
		}
		for _, r := range other.Status.History {
			if r.TestBed == bed && onMyNodes(r.Nodes) && overlaps(firstOf(nil, &r), timeOfMicro(r.EndedAt)) {
				shared = append(shared, other.Name)
				break
			}
		}
	}
	slices.Sort(shared)
	if len(shared) > v1alpha1.MaxSharedWith {
		place.SharedWithMore = len(shared) - v1alpha1.MaxSharedWith
		shared = shared[:v1alpha1.MaxSharedWith]
	}
	place.SharedWith = shared
	return place
}

// placeOfRun is where a run ran: its nodes and its neighbours (AppProgress carries it).
type placeOfRun struct {
	Nodes          []string
	SharedWith     []string
	SharedWithMore int
}

// firstOf is when a run's pods began to exist: its application's creation, else its grant.
func firstOf(ph *v1alpha1.RunPhases, r *v1alpha1.RunRecord) time.Time {
	var created, admitted *metav1.MicroTime
	switch {
	case ph != nil:
		created, admitted = ph.ApplicationCreatedAt, ph.AdmittedAt
	case r != nil:
		created, admitted = r.ApplicationCreatedAt, r.AdmittedAt
	}
	if created != nil {
		return created.Time
	}
	return timeOfMicro(admitted)
}

func timeOfMicro(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// namespaceJobs lists a namespace's BatchJobs from the worker's copy (which leaves out
// their wrapped specs), else from the API server's watch cache. The objects are shared with
// the copy: read them, never change them.
func (a *Activities) namespaceJobs(ctx context.Context, namespace string) ([]*v1alpha1.BatchJob, error) {
	var list v1alpha1.BatchJobList
	var err error
	if r := a.Changes.reader(v1alpha1.GroupVersion.WithKind("BatchJob")); r != nil {
		err = r.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy)
	} else {
		err = a.Client.List(ctx, &list, client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	}
	if err != nil {
		return nil, fmt.Errorf("list batchjobs of %s: %w", namespace, err)
	}
	out := make([]*v1alpha1.BatchJob, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
