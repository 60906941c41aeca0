//go:build integration

package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
)

// Every test bed of a namespace says, in its QueuesConfigured condition, what became of the
// namespace's allocation file: applied open (root's ACLs unset), it loads with reason
// OpenACLs and the warning; closed, Accepted; broken, Rejected with the parse error; gone,
// NoFile. A test bed made later gets the condition of the file as it is, and the condition
// lives beside the Ready condition the test bed's workflow writes.
func TestQueuesConfigured_ConditionFollowsTheFile(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	cl, _ := startBridge(t, c)
	ctx := context.Background()
	newBed := func(name string) {
		require.NoError(t, cl.Create(ctx, testobjects.TestBed(name).NodeLabel(localcluster.DefaultNodeLabel).Obj()))
	}
	condition := func(bed string) *metav1.Condition {
		var tb v1alpha1.TestBed
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: bed}, &tb))
		return meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionQueuesConfigured)
	}
	waitReason := func(bed, reason string, status metav1.ConditionStatus) *metav1.Condition {
		t.Helper()
		var last *metav1.Condition
		require.Eventually(t, func() bool {
			last = condition(bed)
			return last != nil && last.Reason == reason
		}, 30*time.Second, 100*time.Millisecond, "test bed %s: want reason %s, have %+v", bed, reason, last)
		require.Equal(t, status, last.Status, last.Message)
		return last
	}

	newBed("bed")
	waitReason("bed", v1alpha1.ReasonNoQueuesFile, metav1.ConditionFalse)
	waitBed(t, cl, 4, 4) // the bed's own workflow lays it out, and writes Ready beside it

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
		Data: map[string]string{v1alpha1.QueuesConfigMapKey: `<allocations>
  <queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue>
</allocations>`},
	}
	require.NoError(t, cl.Create(ctx, cm))
	open := waitReason("bed", v1alpha1.ReasonOpenACLs, metav1.ConditionTrue)
	require.Contains(t, open.Message, "every user may submit to and administer every queue")
	require.Contains(t, open.Message, "set both on root")
	require.Contains(t, open.Message, "The ACLs set on root.secure restrict nobody")

	cm.Data[v1alpha1.QueuesConfigMapKey] = `<allocations>
  <queue name="root">
    <aclSubmitApps>ops</aclSubmitApps>
    <aclAdministerApps>ops</aclAdministerApps>
    <queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue>
  </queue>
</allocations>`
	require.NoError(t, cl.Update(ctx, cm))
	waitReason("bed", v1alpha1.ReasonQueuesAccepted, metav1.ConditionTrue)

	cm.Data[v1alpha1.QueuesConfigMapKey] = "<allocations>\n<queue name=\"secure\">\n<weight>heavy</weight>\n</queue>\n</allocations>\n"
	require.NoError(t, cl.Update(ctx, cm))
	rejected := waitReason("bed", v1alpha1.ReasonQueuesRejected, metav1.ConditionFalse)
	require.Contains(t, rejected.Message, "allocation file line 3, <weight>: \"heavy\" is not a non-negative number")

	// A test bed made now learns of the file as it is.
	newBed("late")
	waitReason("late", v1alpha1.ReasonQueuesRejected, metav1.ConditionFalse)

	require.NoError(t, cl.Delete(ctx, cm))
	waitReason("bed", v1alpha1.ReasonNoQueuesFile, metav1.ConditionFalse)
	waitReason("late", v1alpha1.ReasonNoQueuesFile, metav1.ConditionFalse)
	var tb v1alpha1.TestBed
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &tb))
	require.NotNil(t, meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionReady), "the workflow's condition stays: %+v", tb.Status.Conditions)
}
