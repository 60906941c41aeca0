//go:build integration

package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testcluster"
	"slotplane/internal/testplatform"
	"slotplane/internal/testtemporal"
	"slotplane/worker"
	"slotplane/workflows"
)

// kubectl apply of a TestBed is all it takes: the bridge starts its workflow, the worker
// runs the passes, and ghosts follow the nodes as they are relabelled.
func TestBridge_TestBedWorkflowKeepsGhostsInPlace(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 4})
	_, tc := testtemporal.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	mgr, err := bridge.New(c.Config, tc, bridge.Options{})
	require.NoError(t, err)
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	w := worker.New(tc, &activities.Activities{Client: cl})
	require.NoError(t, w.Start())
	defer w.Stop()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-mgrDone)
	}()

	tb := &v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
		Spec: v1alpha1.TestBedSpec{NodeLabel: testcluster.DefaultNodeLabel, SlotsPerNode: 2, ResourcesPerSlot: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}},
	}
	require.NoError(t, cl.Create(ctx, tb))
	waitBed(t, cl, 8, 8)

	// Unlabel a node: the node watch signals the workflow, which reshapes the bed.
	var node corev1.Node
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: "node-02"}, &node))
	delete(node.Labels, testcluster.DefaultNodeLabel)
	require.NoError(t, cl.Update(ctx, &node))
	waitBed(t, cl, 6, 6)

	// Deleting the TestBed ends its workflow.
	require.NoError(t, cl.Delete(ctx, tb))
	run := tc.GetWorkflow(ctx, workflows.TestBedWorkflowID("default", "bed"), "")
	waitCtx, waitCancel := context.WithTimeout(ctx, 30*time.Second)
	defer waitCancel()
	var out workflows.TestBedOutput
	require.NoError(t, run.Get(waitCtx, &out))
	require.Positive(t, out.Passes)
}

// waitBed waits until the bed has total slots, all free and Ready, with a running ghost each.
func waitBed(t *testing.T, cl client.Client, total, ghosts int) {
	t.Helper()
	testplatform.WaitBed(t, cl, total, ghosts)
}
