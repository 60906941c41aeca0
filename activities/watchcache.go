package activities

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
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
func (a *Activities) readBed(ctx context.Context, key types.NamespacedName, tb *v1alpha1.TestBed, fits func(*v1alpha1.TestBed) bool) error {
	if err := a.readCopy(ctx, key, tb); err != nil || fits(tb) {
		return err
	}
	*tb = v1alpha1.TestBed{}
	return a.Client.Get(ctx, key, tb)
}
