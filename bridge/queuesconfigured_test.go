package bridge

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/queue"
	"slotplane/workflows"
)

func queuesConfigMap(file string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default", ResourceVersion: "42"},
		Data: map[string]string{v1alpha1.QueuesConfigMapKey: file}}
}

// withSettings puts settings (yarn-site.xml) into the ConfigMap.
func withSettings(cm *corev1.ConfigMap, settings string) *corev1.ConfigMap {
	cm = cm.DeepCopy()
	cm.Data[v1alpha1.QueuesSettingsKey] = settings
	return cm
}

const (
	openQueues   = `<allocations><queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue></allocations>`
	closedQueues = `<allocations><queue name="root"><aclSubmitApps>ops</aclSubmitApps><aclAdministerApps>ops</aclAdministerApps>
  <queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue></queue></allocations>`
)

// The condition says whether the file loads and, when it does, whether root's ACLs leave
// every queue open, in the words `slotplane queues` uses.
func TestQueuesCondition_SaysWhatBecameOfTheFile(t *testing.T) {
	noKey := queuesConfigMap("")
	noKey.Data = map[string]string{"other.xml": openQueues}
	cases := map[string]struct {
		cm     *corev1.ConfigMap
		status metav1.ConditionStatus
		reason string
		says   []string
	}{
		"no ConfigMap": {nil, metav1.ConditionFalse, v1alpha1.ReasonNoQueuesFile,
			[]string{"no allocation file (ConfigMap slotplane-queues, key fair-scheduler.xml)", "the default queues are in force"}},
		"no key": {noKey, metav1.ConditionFalse, v1alpha1.ReasonNoQueuesFile, []string{"no allocation file", "resourceVersion 42"}},
		"open": {queuesConfigMap(openQueues), metav1.ConditionTrue, v1alpha1.ReasonOpenACLs,
			[]string{"loads, but every user may submit to and administer every queue", "set both on root", "root.secure"}},
		"closed": {queuesConfigMap(closedQueues), metav1.ConditionTrue, v1alpha1.ReasonQueuesAccepted, []string{"resourceVersion 42) loads"}},
		"broken": {queuesConfigMap("<allocations>\n<queue name=\"a\">\n<weight>heavy</weight>\n</queue>\n</allocations>"), metav1.ConditionFalse, v1alpha1.ReasonQueuesRejected,
			[]string{"does not load, so the queues keep the last one that did", "allocation file line 3, <weight>: \"heavy\" is not a non-negative number"}},
		"closed, with a misspelt element": {queuesConfigMap(strings.Replace(closedQueues, "</queue></queue>", "<maxRunningApp>3</maxRunningApp></queue></queue>", 1)),
			metav1.ConditionTrue, v1alpha1.ReasonQueuesAccepted, []string{"loads", "It leaves out the elements it does not know", "line 2, <maxRunningApp>"}},
		"closed, with broken settings": {withSettings(queuesConfigMap(closedQueues), "<configuration><property>"), metav1.ConditionFalse, v1alpha1.ReasonQueuesRejected,
			[]string{"does not load", queue.SettingsFile}},
		"settings only": {withSettings(noKey, "<configuration/>"), metav1.ConditionTrue, v1alpha1.ReasonOpenACLs,
			[]string{"every user may submit to and administer every queue"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := QueuesCondition(tc.cm)
			require.Equal(t, v1alpha1.ConditionQueuesConfigured, c.Type)
			require.Equal(t, tc.status, c.Status, c.Message)
			require.Equal(t, tc.reason, c.Reason, c.Message)
			for _, s := range tc.says {
				require.Contains(t, c.Message, s)
			}
		})
	}
}

// The API server refuses a condition message over 32768 bytes; a refused file can quote
// that much of itself, so the message is cut, whole characters only.
func TestQueuesCondition_MessageFitsTheAPIServer(t *testing.T) {
	c := QueuesCondition(queuesConfigMap("<allocations>" + strings.Repeat("é", 40000) + "</allocations>"))
	require.Equal(t, v1alpha1.ReasonQueuesRejected, c.Reason)
	require.LessOrEqual(t, len(c.Message), maxConditionMessage)
	require.True(t, utf8.ValidString(c.Message))
	require.True(t, strings.HasSuffix(c.Message, "…"))
}

// The signaller writes its condition next to the ones it does not own. A status write of
// another writer between its read and its write (the extender reserving a slot) makes its
// write conflict: it keeps that write, and tries again on a fresher read.
func TestQueuesSignaller_KeepsOtherWritersConditions(t *testing.T) {
	bedKey := types.NamespacedName{Namespace: "default", Name: "bed"}
	bed := &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: bedKey.Name, Namespace: bedKey.Namespace},
		Status: v1alpha1.TestBedStatus{Total: 2, Free: 2, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "GhostsInPlace", LastTransitionTime: metav1.Now()}}}}
	updates := 0
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithStatusSubresource(&v1alpha1.TestBed{}).
		WithObjects(bed, queuesConfigMap(openQueues)).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			updates++
			if updates == 1 {
				var now v1alpha1.TestBed
				require.NoError(t, c.Get(ctx, bedKey, &now))
				now.Status.Free, now.Status.Reserved = 1, 1
				require.NoError(t, c.Status().Update(ctx, &now))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	tc := &mocks.Client{}
	told := &mocks.WorkflowUpdateHandle{}
	told.On("Get", mock.Anything, nil).Return(nil)
	tc.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o temporal.UpdateWorkflowOptions) bool {
		return o.WorkflowID == installation.Default.AdmissionID("default", "bed") && o.UpdateName == workflows.AdmissionConfigUpdate && len(o.Args) == 0
	})).Return(told, nil)
	s := &QueuesSignaller{Client: cl, Temporal: tc}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: v1alpha1.QueuesConfigMap}}

	res, err := s.Reconcile(context.Background(), req)
	require.NoError(t, err)
	require.Positive(t, res.RequeueAfter, "the write lost the race: try again")
	res, err = s.Reconcile(context.Background(), req)
	require.NoError(t, err)
	require.Zero(t, res.RequeueAfter)
	require.Equal(t, 2, updates, "the write that conflicted, and the one that held")

	var got v1alpha1.TestBed
	require.NoError(t, cl.Get(context.Background(), bedKey, &got))
	require.Equal(t, int32(1), got.Status.Reserved, "the other writer's status stays")
	require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady), "%+v", got.Status.Conditions)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionQueuesConfigured)
	require.NotNil(t, c)
	require.Equal(t, v1alpha1.ReasonOpenACLs, c.Reason)

	// Nothing changed: no write.
	_, err = s.Reconcile(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, 2, updates)
	tc.AssertNumberOfCalls(t, "UpdateWorkflow", 3)
}
