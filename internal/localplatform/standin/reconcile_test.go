package standin

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/kubeclient"
)

// The note of a write: the version it replaced is behind until a newer one is seen, and a
// write the API server took as no change notes nothing.
func TestReconciler_TheVersionAWriteReplacedIsBehind(t *testing.T) {
	var r reconciler
	read := &sparkv1beta2.SparkApplication{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: "7"}}
	require.False(t, r.behind(read), "nothing written yet")
	written := read.DeepCopy()
	written.ResourceVersion = "8"
	r.wrote(written, "7")
	require.True(t, r.behind(read), "the cache still shows the version the write replaced")
	require.True(t, r.behind(read), "and stays behind until it shows another")
	other := read.DeepCopy()
	other.UID = "v"
	require.False(t, r.behind(other), "another application is not")
	require.False(t, r.behind(written))
	require.False(t, r.behind(read), "once a newer version was seen, the note is gone")
	r.wrote(written, "8")
	require.False(t, r.behind(written), "a write that changed nothing notes nothing")
}

// A pass that reads the copy its last write replaced does nothing and comes back; once the
// cache shows the write, the pass goes on.
func TestReconciler_APassOnTheReplacedCopyWaitsForTheWrite(t *testing.T) {
	ctx := context.Background()
	app := &sparkv1beta2.SparkApplication{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", UID: "u"}}
	c := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(app).
		WithIndex(&corev1.Pod{}, appPodsIndex, func(o client.Object) []string { return []string{o.GetLabels()[AppUIDLabel]} }).
		Build()
	r := &reconciler{client: c, live: c, log: slog.New(slog.DiscardHandler), now: time.Now}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "a"}}

	var stored sparkv1beta2.SparkApplication
	require.NoError(t, c.Get(ctx, req.NamespacedName, &stored))
	written := stored.DeepCopy()
	written.ResourceVersion += "0" // another version, as the API server's answer to a write
	r.wrote(written, stored.ResourceVersion)

	_, done, result, err := r.begin(ctx, req, &sparkv1beta2.SparkApplication{})
	require.NoError(t, err)
	require.True(t, done, "the pass stops on the replaced copy")
	require.Equal(t, retryAfter, result.RequeueAfter, "and comes back, should the write's event be missed")
	require.NoError(t, c.Get(ctx, req.NamespacedName, &stored))
	require.False(t, controllerutil.ContainsFinalizer(&stored, Finalizer), "it wrote nothing")

	stored.Labels = map[string]string{"changed": "yes"} // the cache moves on
	require.NoError(t, c.Update(ctx, &stored))
	_, done, _, err = r.begin(ctx, req, &sparkv1beta2.SparkApplication{})
	require.NoError(t, err)
	require.False(t, done, "the pass goes on")
	require.NoError(t, c.Get(ctx, req.NamespacedName, &stored))
	require.True(t, controllerutil.ContainsFinalizer(&stored, Finalizer))
}
