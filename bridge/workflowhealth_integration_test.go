//go:build integration

package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
	"slotplane/workflows"
)

// A test bed whose Admission workflow fails its task again and again (here: a carried state
// this build cannot read) says so: its WorkflowsHealthy condition turns False with the
// failure, and slotplane_workflow_task_failing is 1 for it. Once the workflow is gone the
// condition is True again and the gauge 0. A Scheduling on the bed whose workflow cannot
// run shows the same way, until the Scheduling has ended, and so does one whose workflow
// ended in failure while the Scheduling had not.
func TestWorkflowHealth_AFailingAdmissionShowsOnItsTestBed(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	// The keeper stays away: it would start the terminated workflows below again.
	cl, tc := startBridgeWith(t, c, bridge.Options{WorkflowCheckEvery: 500 * time.Millisecond, KeepEvery: time.Hour})
	ctx := context.Background()
	require.NoError(t, cl.Create(ctx, testobjects.TestBed("sick").Slots(1, "1", "1Gi").Obj()))
	healthy := func() *metav1.Condition {
		var tb v1alpha1.TestBed
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "sick"}, &tb))
		return meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionWorkflowsHealthy)
	}
	waitFor := func(status metav1.ConditionStatus) *metav1.Condition {
		t.Helper()
		var last *metav1.Condition
		require.Eventually(t, func() bool {
			last = healthy()
			return last != nil && last.Status == status
		}, time.Minute, 100*time.Millisecond, "want WorkflowsHealthy %s, have %+v", status, last)
		return last
	}
	gauge := func(kind string) float64 {
		families, err := ctrlmetrics.Registry.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() != "slotplane_workflow_task_failing" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["testbed"] == "sick" && labels["workflow"] == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
		return -1
	}
	require.Equal(t, v1alpha1.ReasonTasksComplete, waitFor(metav1.ConditionTrue).Reason)

	id := installation.Default.AdmissionID("default", "sick")
	_, err := tc.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: id, TaskQueue: installation.Default.AdmissionQueue()}, workflows.AdmissionWorkflow,
		workflows.AdmissionInput{Namespace: "default", TestBed: "sick", Carried: []byte("not a packed state")})
	require.NoError(t, err)
	sick := waitFor(metav1.ConditionFalse)
	require.Equal(t, v1alpha1.ReasonWorkflowTaskFailing, sick.Reason)
	require.Contains(t, sick.Message, id)
	require.Contains(t, sick.Message, "the carried admission state", "the message names the cause")
	require.Eventually(t, func() bool { return gauge("admission") == 1 }, 30*time.Second, 100*time.Millisecond)

	require.NoError(t, tc.TerminateWorkflow(ctx, id, "", "test over"))
	require.Equal(t, v1alpha1.ReasonTasksComplete, waitFor(metav1.ConditionTrue).Reason)
	require.Eventually(t, func() bool { return gauge("admission") == 0 }, 30*time.Second, 100*time.Millisecond)

	// A Scheduling on the bed whose workflow no worker can run (a type this build does not
	// have, as a worker of another build would meet) shows on the bed too.
	sid := installation.Default.SchedulingID("default", "stuck")
	_, err = tc.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: sid, TaskQueue: installation.Default.Queue()}, "NoSuchWorkflow")
	require.NoError(t, err)
	require.NoError(t, cl.Create(ctx, testobjects.Scheduling("stuck").TestBed("sick").Job("j", 1).Obj()))
	stuck := waitFor(metav1.ConditionFalse)
	require.Contains(t, stuck.Message, sid)
	require.Contains(t, stuck.Message, "NoSuchWorkflow")
	require.Eventually(t, func() bool { return gauge("scheduling") == 1 }, 30*time.Second, 100*time.Millisecond)

	// An ended Scheduling's workflow is not asked after: it only waits for the deletion.
	var s v1alpha1.Scheduling
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "stuck"}, &s))
	s.Status.State = v1alpha1.SchedulingCompleted
	require.NoError(t, cl.Status().Update(ctx, &s))
	require.Equal(t, v1alpha1.ReasonTasksComplete, waitFor(metav1.ConditionTrue).Reason)
	require.Eventually(t, func() bool { return gauge("scheduling") == 0 }, 30*time.Second, 100*time.Millisecond)

	// A Scheduling whose workflow ended in failure before the Scheduling did shows too:
	// its jobs stay claimed with nobody to run them.
	// (Its workflow runs before the Scheduling is made, so that the bridge starts none.)
	did := installation.Default.SchedulingID("default", "dead")
	_, err = tc.ExecuteWorkflow(ctx, temporalclient.StartWorkflowOptions{ID: did, TaskQueue: installation.Default.Queue()}, "NoSuchWorkflow")
	require.NoError(t, err)
	require.NoError(t, cl.Create(ctx, testobjects.Scheduling("dead").TestBed("sick").Job("j", 1).Obj()))
	require.Contains(t, waitFor(metav1.ConditionFalse).Message, did)
	require.NoError(t, tc.TerminateWorkflow(ctx, did, "", "an operator's mistake"))
	var dead *metav1.Condition
	require.Eventually(t, func() bool {
		dead = healthy()
		return dead != nil && strings.Contains(dead.Message, "ended terminated")
	}, time.Minute, 100*time.Millisecond, "the Scheduling's workflow ended: %+v", dead)
	require.Equal(t, metav1.ConditionFalse, dead.Status)
	require.Contains(t, dead.Message, did)
	require.Contains(t, dead.Message, "an operator's mistake")
	require.Equal(t, 1.0, gauge("scheduling"))
}
