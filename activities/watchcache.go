package activities

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/slotslices"
)

// fromWatchCache asks the API server for its watch cache's copy (resourceVersion "0"): no
// read of etcd and no decoding of the stored object, which for custom resources is most of
// what a GET costs the API server. The copy may be a few milliseconds behind the last write,
// so it is only for reads that a write guards (an update sent with the copy's
// resourceVersion fails on a newer object) or that tolerate the lag. A copy that is missing
// is asked again of etcd: one API server's cache may not hold what another has just
// created, and "not found" decides more than a lag does.
func fromWatchCache(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) error {
	err := c.Get(ctx, key, obj, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if apierrors.IsNotFound(err) {
		return c.Get(ctx, key, obj)
	}
	return err
}

// getForUpdate reads obj before an update: the first attempt from the watch cache, a retry
// after a conflict from etcd, so that a cache that lags cannot make every attempt conflict.
func getForUpdate(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object, attempt *int) error {
	*attempt++
	if *attempt == 1 {
		return fromWatchCache(ctx, c, key, obj)
	}
	return c.Get(ctx, key, obj)
}

// readBed reads a test bed from the worker's copy (else the API server's watch cache), and
// again from etcd when the copy does not fit what the run needs (a slot missing or
// leaving): a copy that lags (a node just back in the bed) must not decide against a run. A
// run's reads of its bed cost the API server nothing when the copies agree, which is nearly
// always.
//
// Of the bed's slots, only those at positions are read: from the slices that hold them.
func (a *Activities) readBed(ctx context.Context, key types.NamespacedName, positions []int32, fits func(*bedSlots) bool) (*bedSlots, error) {
	b, err := readBedFrom(ctx, a.readCopy, key, positions)
	if err != nil || fits(b) {
		return b, err
	}
	live := func(ctx context.Context, key types.NamespacedName, obj client.Object) error {
		return a.Client.Get(ctx, key, obj)
	}
	return readBedFrom(ctx, live, key, positions)
}

// bedSlots is a test bed and those of its slots a caller asked for.
type bedSlots struct {
	tb v1alpha1.TestBed
	// slots are the bed's slots at the positions asked for, by position; a position the bed
	// has no slot at is missing.
	slots map[int32]v1alpha1.SlotStatus
}

// readBedFrom reads the test bed key and its slots at positions through get.
func readBedFrom(ctx context.Context, get func(context.Context, types.NamespacedName, client.Object) error, key types.NamespacedName, positions []int32) (*bedSlots, error) {
	b := &bedSlots{slots: make(map[int32]v1alpha1.SlotStatus, len(positions))}
	if err := get(ctx, key, &b.tb); err != nil {
		return nil, err
	}
	want := make(map[int32]bool, len(positions))
	read := map[int32]bool{}
	for _, p := range positions {
		want[p] = true
	}
	for _, p := range positions {
		i := v1alpha1.SliceOf(p)
		if p < 0 || read[i] {
			continue
		}
		read[i] = true
		var s v1alpha1.SlotSlice
		err := get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: v1alpha1.SlotSliceName(key.Name, i)}, &s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get the slots of test bed %s: %w", key, err)
		}
		if !slotslices.Owned(&s, &b.tb) {
			continue
		}
		for _, st := range s.Slots {
			if want[st.Position] {
				b.slots[st.Position] = st
			}
		}
	}
	return b, nil
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
