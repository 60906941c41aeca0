// Package slotslices reads and writes the slots of a test bed, which live in SlotSlices of at
// most v1alpha1.SlotsPerSlice slots each: slice i holds positions i*SlotsPerSlice onwards.
// The ghost reconciler writes the layout and occupation, the extender its reservations; each
// writes only the slices whose slots changed, under optimistic concurrency on the slice.
package slotslices

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// List reads the slices of tb from r, ordered by index, with opts besides: with
// client.UnsafeDisableDeepCopy a cache's slices are its own, to be read and never changed. A
// slice that another TestBed owns (an earlier bed of the same name, deleted before its
// slices went) is not tb's and is left out; Write replaces it.
func List(ctx context.Context, r client.Reader, tb *v1alpha1.TestBed, opts ...client.ListOption) ([]v1alpha1.SlotSlice, error) {
	var list v1alpha1.SlotSliceList
	opts = append([]client.ListOption{client.InNamespace(tb.Namespace), client.MatchingLabels{v1alpha1.TestBedLabel: tb.Name}}, opts...)
	if err := r.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list the slot slices of test bed %s/%s: %w", tb.Namespace, tb.Name, err)
	}
	out := slices.DeleteFunc(list.Items, func(s v1alpha1.SlotSlice) bool { return !Owned(&s, tb) })
	slices.SortFunc(out, func(a, b v1alpha1.SlotSlice) int { return cmp.Compare(a.Index, b.Index) })
	return out, nil
}

// Owned says whether the slice is one of tb's.
func Owned(s *v1alpha1.SlotSlice, tb *v1alpha1.TestBed) bool {
	if s.TestBed != tb.Name || s.Name != v1alpha1.SlotSliceName(tb.Name, s.Index) {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.UID == tb.UID
		}
	}
	return false
}

// Slots is the slices' slots, ordered by position.
func Slots(in []v1alpha1.SlotSlice) []v1alpha1.SlotStatus {
	n := 0
	for i := range in {
		n += len(in[i].Slots)
	}
	out := make([]v1alpha1.SlotStatus, 0, n)
	for i := range in {
		out = append(out, in[i].Slots...)
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.SlotStatus) int { return cmp.Compare(a.Position, b.Position) })
	return out
}

// Split groups slots by the slice that holds them, each group ordered by position.
func Split(statuses []v1alpha1.SlotStatus) map[int32][]v1alpha1.SlotStatus {
	out := map[int32][]v1alpha1.SlotStatus{}
	for _, s := range statuses {
		i := v1alpha1.SliceOf(s.Position)
		out[i] = append(out[i], s)
	}
	for _, group := range out {
		slices.SortFunc(group, func(a, b v1alpha1.SlotStatus) int { return cmp.Compare(a.Position, b.Position) })
	}
	return out
}

// Writes counts what Write did. Conflicts are the slices of have it left as they are,
// since another writer changed them after have was read.
type Writes struct{ Created, Updated, Deleted, Conflicts int }

// Write makes tb's slices hold want: it updates each slice of have (tb's slices, as List
// read them) whose slots differ, on that slice's resourceVersion, creates the slices want
// needs and have lacks, and deletes those want no longer needs. A slice that another
// writer changed since have was read is left as it is and counted in Conflicts: want was
// decided on what that writer changed, and the caller decides that slice again on a new
// read, while the other slices are written. Writing all or none would not get through
// while the extender writes a slice a second, as it does while a large bed fills. The
// slices left changed by another error are those written before it.
func Write(ctx context.Context, c client.Client, tb *v1alpha1.TestBed, have []v1alpha1.SlotSlice, want []v1alpha1.SlotStatus) (Writes, error) {
	var w Writes
	groups := Split(want)
	had := map[int32]bool{}
	for i := range have {
		s := &have[i]
		group, keep := groups[s.Index]
		had[s.Index] = true
		if !keep {
			uid, rv := s.UID, s.ResourceVersion
			err := c.Delete(ctx, s, client.Preconditions{UID: &uid, ResourceVersion: &rv})
			if apierrors.IsConflict(err) {
				w.Conflicts++
				continue
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return w, fmt.Errorf("delete slot slice %s: %w", s.Name, err)
			}
			w.Deleted++
			continue
		}
		if equality.Semantic.DeepEqual(s.Slots, group) {
			continue
		}
		updated := s.DeepCopy()
		updated.Slots = group
		if err := c.Update(ctx, updated); apierrors.IsConflict(err) {
			w.Conflicts++
			continue
		} else if err != nil {
			return w, fmt.Errorf("write slot slice %s: %w", s.Name, err)
		}
		*s = *updated
		w.Updated++
	}
	indexes := make([]int32, 0, len(groups))
	for i := range groups {
		if !had[i] {
			indexes = append(indexes, i)
		}
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		if err := create(ctx, c, tb, i, groups[i]); err != nil {
			return w, err
		}
		w.Created++
	}
	return w, nil
}

// create makes slice i of tb. A slice of that name that tb does not own (its bed's
// predecessor's) is deleted first; one that tb owns already means another writer made it
// since have was read: a conflict.
func create(ctx context.Context, c client.Client, tb *v1alpha1.TestBed, i int32, group []v1alpha1.SlotStatus) error {
	s := New(tb, i)
	s.Slots = group
	err := c.Create(ctx, s)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create slot slice %s: %w", s.Name, err)
		}
		return nil
	}
	var old v1alpha1.SlotSlice
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), &old); err != nil {
		return fmt.Errorf("read slot slice %s: %w", s.Name, err)
	}
	if Owned(&old, tb) {
		return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("slotslices").GroupResource(), s.Name,
			fmt.Errorf("made by another writer since the slices were read"))
	}
	uid := old.UID
	if err := c.Delete(ctx, &old, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete slot slice %s of an earlier test bed: %w", s.Name, err)
	}
	s = New(tb, i)
	s.Slots = group
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("slotslices").GroupResource(), s.Name, err)
		}
		return fmt.Errorf("create slot slice %s: %w", s.Name, err)
	}
	return nil
}

// New is an empty slice i of tb, owned by tb.
func New(tb *v1alpha1.TestBed, i int32) *v1alpha1.SlotSlice {
	yes := true
	return &v1alpha1.SlotSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: tb.Namespace,
			Name:      v1alpha1.SlotSliceName(tb.Name, i),
			Labels:    map[string]string{v1alpha1.TestBedLabel: tb.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "TestBed", Name: tb.Name, UID: tb.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		TestBed: tb.Name,
		Index:   i,
	}
}

// Build is the slices of tb that hold statuses, ordered by index, as Write would create
// them.
func Build(tb *v1alpha1.TestBed, statuses []v1alpha1.SlotStatus) []v1alpha1.SlotSlice {
	groups := Split(statuses)
	indexes := make([]int32, 0, len(groups))
	for i := range groups {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	out := make([]v1alpha1.SlotSlice, 0, len(indexes))
	for _, i := range indexes {
		s := New(tb, i)
		s.Slots = groups[i]
		out = append(out, *s)
	}
	return out
}

// Read is tb's slots, ordered by position, read from r.
func Read(ctx context.Context, r client.Reader, tb *v1alpha1.TestBed) ([]v1alpha1.SlotStatus, error) {
	have, err := List(ctx, r, tb)
	if err != nil {
		return nil, err
	}
	return Slots(have), nil
}

// Put makes tb's slices hold statuses whatever they hold now, reading them again after a
// conflict: for tools and tests that set a bed's slots outright. The slotplane components
// never do: they merge what they know into what they read (Write).
func Put(ctx context.Context, c client.Client, tb *v1alpha1.TestBed, statuses []v1alpha1.SlotStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have, err := List(ctx, c, tb)
		if err != nil {
			return err
		}
		_, err = Write(ctx, c, tb, have, statuses)
		return err
	})
}
