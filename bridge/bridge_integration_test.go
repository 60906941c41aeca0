//go:build integration

package bridge_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/internal/lifecycle"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/localplatform/temporaltest"
	"slotplane/internal/testobjects"
	"slotplane/worker"
	"slotplane/workflows"
)

// startBridge runs, for the test, what keeps test beds in shape on cluster c: Temporal, a
// worker with its watches (which wake Admission when slots free) and the bridge. It returns clients of the cluster and of Temporal.
func startBridge(t *testing.T, c *localcluster.Cluster) (client.Client, temporalclient.Client) {
	t.Helper()
	return startBridgeWith(t, c, bridge.Options{})
}

// startBridgeWith is startBridge with the bridge's options.
func startBridgeWith(t *testing.T, c *localcluster.Cluster, opts bridge.Options) (client.Client, temporalclient.Client) {
	t.Helper()
	_, tc := temporaltest.Start(t)
	mgr, err := bridge.New(c.Config, tc, opts)
	require.NoError(t, err)
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	// Two workers, as a large bed runs them: one of the jobs' workflows, one of Admission's
	// that wakes it and keeps no copy of the jobs' pods.
	changes, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	w := worker.New(tc, &activities.Activities{Client: cl, Changes: changes}, installation.Default, []string{installation.Default.Queue()})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	waker := &worker.AdmissionWaker{Temporal: tc, Log: slog.Default(), Ctx: ctx}
	copies, err := activities.WatchCopies(ctx, c.Config, slog.Default(), waker.Wake)
	require.NoError(t, err)
	aw := worker.New(tc, &activities.Activities{Client: cl, Changes: copies}, installation.Default, []string{installation.Default.AdmissionQueue()})
	require.NoError(t, aw.Start())
	t.Cleanup(aw.Stop)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-mgrDone)
	})
	return cl, tc
}

// kubectl apply of a TestBed is all it takes: the bridge starts its workflow, the worker
// runs the passes, and ghosts follow the nodes as they are relabelled.
func TestBridge_TestBedWorkflowKeepsGhostsInPlace(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 4})
	cl, tc := startBridge(t, c)
	ctx := context.Background()

	tb := testobjects.TestBed("bed").Namespace("default").NodeLabel(localcluster.DefaultNodeLabel).Obj()
	require.NoError(t, cl.Create(ctx, tb))
	waitBed(t, cl, 8, 8)

	// Unlabel a node: the node watch signals the workflow, which reshapes the bed.
	var node corev1.Node
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: "node-02"}, &node))
	delete(node.Labels, localcluster.DefaultNodeLabel)
	require.NoError(t, cl.Update(ctx, &node))
	waitBed(t, cl, 6, 6)

	// Deleting the TestBed ends its workflow.
	require.NoError(t, cl.Delete(ctx, tb))
	run := tc.GetWorkflow(ctx, installation.Default.TestBedID("default", "bed"), "")
	waitCtx, waitCancel := context.WithTimeout(ctx, 30*time.Second)
	defer waitCancel()
	var out workflows.TestBedOutput
	require.NoError(t, run.Get(waitCtx, &out))
	require.Positive(t, out.Passes)
}

// A node that is not Ready (no kubelet serves it) is skipped: it gets no ghosts, and its
// stuck pods hold nothing back. A pod stuck Terminating on a Ready node holds back that node
// only: the other nodes' ghosts are still made again.
func TestBridge_PodStuckTerminatingHoldsBackOnlyItsNode(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	cl, _ := startBridge(t, c)
	ctx := context.Background()

	// A node no kubelet serves (kwok manages only the nodes it marks), as a lost node is:
	// it never reports Ready, its pods never start, and a deleted one stays Terminating.
	lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost", Labels: map[string]string{localcluster.DefaultNodeLabel: "lost"}}}
	require.NoError(t, cl.Create(ctx, lost))
	// A node that says it is Ready but runs nothing either: a pod deleted there stays
	// Terminating (kwok, which ends pods at once whatever their finalizers, leaves it alone).
	frozen := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "frozen", Labels: map[string]string{localcluster.DefaultNodeLabel: "frozen"}}}
	require.NoError(t, cl.Create(ctx, frozen))
	frozen.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	frozen.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	frozen.Status.Capacity = frozen.Status.Allocatable
	require.NoError(t, cl.Status().Update(ctx, frozen))
	tb := testobjects.TestBed("bed").Namespace("default").NodeLabel(localcluster.DefaultNodeLabel).Obj()
	require.NoError(t, cl.Create(ctx, tb))
	require.Eventually(t, func() bool {
		g := ghostsByNode(t, cl)
		return len(g["node-00"]) == 2 && len(g["node-01"]) == 2 && len(g["frozen"]) == 2 && readyReason(t, cl) == "GhostsInPlace"
	}, 60*time.Second, 100*time.Millisecond, "the bed never got its 6 ghosts")
	require.Empty(t, ghostsByNode(t, cl)["lost"], "a node that is not Ready gets no ghosts")
	require.Equal(t, int32(8), bedOf(t, cl).Status.Total, "its slots keep their places in the bed")
	require.Contains(t, meta.FindStatusCondition(bedOf(t, cl).Status.Conditions, v1alpha1.ConditionReady).Message, "not Ready and their slots are left alone (lost)")

	// A pod of the bed on each node is deleted; a finalizer keeps each Terminating for as
	// long as the test needs.
	const hold = "example.com/hold"
	stuckPod := func(name, node string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: []string{hold},
				Labels: map[string]string{v1alpha1.TestBedLabel: "bed"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "spark"}}},
		}
		require.NoError(t, cl.Create(ctx, p))
		return p
	}
	release := func(p *corev1.Pod) func() {
		return func() {
			var got corev1.Pod
			if err := cl.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
				return
			}
			got.Finalizers = nil
			_ = cl.Update(ctx, &got)
		}
	}
	onLost, onReady := stuckPod("stuck-lost", "lost"), stuckPod("stuck-ready", "frozen")
	t.Cleanup(release(onLost))
	t.Cleanup(release(onReady))
	require.NoError(t, cl.Delete(ctx, onLost, client.GracePeriodSeconds(0)))
	require.NoError(t, cl.Delete(ctx, onReady, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		cond := meta.FindStatusCondition(bedOf(t, cl).Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Reason == "InProgress" && strings.Contains(cond.Message, "node frozen (pod stuck-ready is terminating)")
	}, 30*time.Second, 100*time.Millisecond, "the pass never reported the frozen node held back")
	require.NotContains(t, meta.FindStatusCondition(bedOf(t, cl).Status.Conditions, v1alpha1.ConditionReady).Message, "stuck-lost",
		"a pod on a node that is not Ready holds nothing back")
	frozenGhosts := ghostsByNode(t, cl)["frozen"]

	// node-00 loses its ghosts; the workflow makes them again despite the stuck pods.
	for _, g := range ghostsByNode(t, cl)["node-00"] {
		require.NoError(t, client.IgnoreNotFound(cl.Delete(ctx, &g, client.GracePeriodSeconds(0))))
	}
	require.Eventually(t, func() bool {
		running := 0
		for _, g := range ghostsByNode(t, cl)["node-00"] {
			if g.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2
	}, 30*time.Second, 100*time.Millisecond, "node-00's ghosts were not made again while a pod on another node was stuck")
	// The held node was left as it was.
	require.ElementsMatch(t, uids(frozenGhosts), uids(ghostsByNode(t, cl)["frozen"]))

	// The pod goes; the bed is whole and Ready again.
	release(onReady)()
	require.Eventually(t, func() bool { return readyReason(t, cl) == "GhostsInPlace" },
		30*time.Second, 100*time.Millisecond, "the bed did not settle once the stuck pod was gone")
}

func bedOf(t *testing.T, cl client.Client) *v1alpha1.TestBed {
	t.Helper()
	var tb v1alpha1.TestBed
	require.NoError(t, cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bed"}, &tb))
	return &tb
}

// readyReason is the reason of the bed's Ready condition ("" without one).
func readyReason(t *testing.T, cl client.Client) string {
	t.Helper()
	if cond := meta.FindStatusCondition(bedOf(t, cl).Status.Conditions, v1alpha1.ConditionReady); cond != nil {
		return cond.Reason
	}
	return ""
}

// ghostsByNode lists the bed's ghosts that are not being deleted, by node.
func ghostsByNode(t *testing.T, cl client.Client) map[string][]corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, cl.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabels{v1alpha1.TestBedLabel: "bed", v1alpha1.GhostLabel: "true"}))
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

func uids(pods []corev1.Pod) []types.UID {
	out := make([]types.UID, len(pods))
	for i, p := range pods {
		out[i] = p.UID
	}
	return out
}

// waitBed waits until the bed has total slots, all free and Ready, with a running ghost each.
func waitBed(t *testing.T, cl client.Client, total, ghosts int) {
	t.Helper()
	platformtest.WaitBed(t, cl, total, ghosts)
}

// Two test beds on one nodeLabel would put two ghosts, and two jobs, in every slot: the
// older bed owns the nodes, the other has no slots and says why, and takes the nodes over
// once the older one is deleted. A label every node carries is refused outright.
func TestBridge_TwoBedsOnOneLabel(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	cl, _ := startBridge(t, c)
	ctx := context.Background()
	for _, label := range []string{"kubernetes.io/hostname", "node-role.kubernetes.io/control-plane", "topology.kubernetes.io/zone", "k8s.io/x"} {
		err := cl.Create(ctx, testobjects.TestBed("everywhere").Namespace("default").NodeLabel(label).Obj())
		require.ErrorContains(t, err, "nodeLabel must be a key of your own", label)
	}

	require.NoError(t, cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}))
	first := testobjects.TestBed("bed").Namespace("default").NodeLabel(localcluster.DefaultNodeLabel).Obj()
	require.NoError(t, cl.Create(ctx, first))
	waitBed(t, cl, 4, 4)
	time.Sleep(1100 * time.Millisecond) // creation times are in seconds
	require.NoError(t, cl.Create(ctx, testobjects.TestBed("late").Namespace("team-b").NodeLabel(localcluster.DefaultNodeLabel).Obj()))
	late := func() *v1alpha1.TestBed {
		var tb v1alpha1.TestBed
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "late"}, &tb))
		return &tb
	}
	require.Eventually(t, func() bool {
		cond := meta.FindStatusCondition(late().Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Reason == "NodeLabelTaken" && strings.Contains(cond.Message, "default/bed")
	}, 30*time.Second, 100*time.Millisecond, "the later bed does not say its nodes are taken")
	require.Zero(t, late().Status.Total)
	var theirs corev1.PodList
	require.NoError(t, cl.List(ctx, &theirs, client.InNamespace("team-b")))
	require.Empty(t, theirs.Items, "the later bed made ghosts on nodes it does not own")
	require.Equal(t, int32(4), bedOf(t, cl).Status.Total, "the first bed keeps its slots")

	require.NoError(t, cl.Delete(ctx, first))
	require.Eventually(t, func() bool {
		tb := late()
		cond := meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionReady)
		return tb.Status.Total == 4 && cond != nil && cond.Reason == "GhostsInPlace"
	}, 30*time.Second, 100*time.Millisecond, "the later bed did not take the nodes over")
}

// A TestBed's or BatchJob's workflow terminated (from the Web UI, as an operator would) is
// started again by the bridge's keeper within a check or two, and its fresh run goes on from
// the cluster: the bed keeps its ghosts, the job its state.
func TestWorkflowKeeper_StartsAgainWhatWasTerminated(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	cl, tc := startBridgeWith(t, c, bridge.Options{WorkflowCheckEvery: time.Second})
	ctx := context.Background()
	tb := testobjects.TestBed("bed").Namespace("default").NodeLabel(localcluster.DefaultNodeLabel).Obj()
	require.NoError(t, cl.Create(ctx, tb))
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("wordcount").Obj()))
	waitBed(t, cl, 4, 4)
	ids := []string{installation.Default.TestBedID("default", "bed"), installation.Default.BatchJobID("default", "wordcount")}
	runOf := func(id string) (string, bool) {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return "", false
		}
		info := d.GetWorkflowExecutionInfo()
		return info.GetExecution().GetRunId(), info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}
	before := map[string]string{}
	for _, id := range ids {
		require.Eventually(t, func() bool { run, ok := runOf(id); before[id] = run; return ok }, 30*time.Second, 100*time.Millisecond, "%s never ran", id)
		require.NoError(t, tc.TerminateWorkflow(ctx, id, "", "an operator, from the Web UI"))
	}
	for _, id := range ids {
		require.Eventually(t, func() bool { run, ok := runOf(id); return ok && run != before[id] }, 30*time.Second, 200*time.Millisecond,
			"%s was not started again", id)
	}
	// The fresh runs go on: the job is Ready, and a ghost deleted by hand comes back.
	require.Eventually(t, func() bool {
		var j v1alpha1.BatchJob
		return cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wordcount"}, &j) == nil && j.Status.State == v1alpha1.JobReady
	}, 30*time.Second, 200*time.Millisecond)
	ghosts := ghostsByNode(t, cl)["node-00"]
	require.NotEmpty(t, ghosts)
	require.NoError(t, cl.Delete(ctx, &ghosts[0]))
	waitBed(t, cl, 4, 4)
}

// A Scheduling whose finalizer an operator removes by hand, and which is then deleted, does
// not leave its workflow running and its job claimed: the keeper cancels the workflow, which
// releases the job.
func TestWorkflowKeeper_CancelsTheWorkflowOfAGoneScheduling(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	cl, tc := startBridgeWith(t, c, bridge.Options{WorkflowCheckEvery: time.Second})
	ctx := context.Background()
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("wordcount").Obj()))
	sched := testobjects.Scheduling("nightly").Job("wordcount", 1).Obj()
	require.NoError(t, cl.Create(ctx, sched))
	held := func() bool {
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wordcount"}, &j))
		return j.Labels[v1alpha1.ActiveSchedulingLabel] == "nightly"
	}
	require.Eventually(t, held, 30*time.Second, 100*time.Millisecond, "the scheduling never claimed its job")

	// The finalizer goes by hand, then the object.
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(sched), sched))
	sched.Finalizers = nil
	require.NoError(t, cl.Update(ctx, sched))
	require.NoError(t, cl.Delete(ctx, sched))

	id := installation.Default.SchedulingID("default", "nightly")
	require.Eventually(t, func() bool {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 200*time.Millisecond, "the gone scheduling's workflow runs on")
	require.Eventually(t, func() bool { return !held() }, 30*time.Second, 200*time.Millisecond, "the job stays claimed")
}

// A Scheduling deleted without its workflow's clean-up (its finalizer removed by hand) and
// made again at once under its name does not take over the old object's run: the old run is
// terminated and the new object gets a run of its own, which holds the job.
func TestWorkflowKeeper_ANewSchedulingOfAGoneOnesNameRunsItsOwnWorkflow(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	cl, tc := startBridgeWith(t, c, bridge.Options{WorkflowCheckEvery: time.Hour}) // the keeper stays out of it
	ctx := context.Background()
	require.NoError(t, cl.Create(ctx, testobjects.BatchJob("wordcount").Obj()))
	makeOne := func() *v1alpha1.Scheduling {
		s := testobjects.Scheduling("nightly").Job("wordcount", 1).Obj()
		require.NoError(t, cl.Create(ctx, s))
		return s
	}
	old := makeOne()
	id := installation.Default.SchedulingID("default", "nightly")
	uidOf := func() (string, string, enumspb.WorkflowExecutionStatus) {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return "", "", 0
		}
		info := d.GetWorkflowExecutionInfo()
		return lifecycle.UIDOf(info.GetMemo()), info.GetExecution().GetRunId(), info.GetStatus()
	}
	var oldRun string
	require.Eventually(t, func() bool {
		uid, run, st := uidOf()
		oldRun = run
		return uid == string(old.UID) && st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 100*time.Millisecond, "the first scheduling's workflow never ran with its uid")
	require.Eventually(t, func() bool {
		return schedulingState(t, cl) == v1alpha1.SchedulingScheduling
	}, 30*time.Second, 100*time.Millisecond)

	// The object goes without the bridge seeing a deletion, so that its workflow still runs
	// when the new one starts. The bridge may put its finalizer back between the update and
	// the delete: the delete holds only for the version the update wrote.
	require.Eventually(t, func() bool {
		var o v1alpha1.Scheduling
		if err := cl.Get(ctx, client.ObjectKeyFromObject(old), &o); apierrors.IsNotFound(err) {
			return true
		} else if err != nil {
			return false
		}
		o.Finalizers = nil
		if cl.Update(ctx, &o) == nil {
			_ = cl.Delete(ctx, &o, client.Preconditions{UID: &o.UID, ResourceVersion: &o.ResourceVersion})
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the first scheduling never went")
	_, _, st := uidOf()
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st, "the first scheduling's workflow ended with its object")
	renewed := makeOne()
	require.NotEqual(t, old.UID, renewed.UID)

	require.Eventually(t, func() bool {
		uid, run, st := uidOf()
		return uid == string(renewed.UID) && run != oldRun && st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 100*time.Millisecond, "the new scheduling has no workflow of its own")
	d, err := tc.DescribeWorkflowExecution(ctx, id, oldRun)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, d.GetWorkflowExecutionInfo().GetStatus(), "the old run was not ended")
	require.Eventually(t, func() bool {
		return schedulingState(t, cl) == v1alpha1.SchedulingScheduling
	}, 30*time.Second, 100*time.Millisecond)
	var j v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wordcount"}, &j))
	require.Equal(t, "nightly", j.Labels[v1alpha1.ActiveSchedulingLabel], "the new scheduling holds the job")
	// The keeper reads the UID from visibility's list, as it lists the running workflows.
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = 'SchedulingWorkflow' AND ExecutionStatus = 'Running'"})
		return err == nil && len(resp.GetExecutions()) == 1 && lifecycle.UIDOf(resp.GetExecutions()[0].GetMemo()) == string(renewed.UID)
	}, 30*time.Second, 200*time.Millisecond, "visibility does not list the run with its uid")
}

// schedulingState is the state of Scheduling default/nightly ("" when it cannot be read).
func schedulingState(t *testing.T, cl client.Client) v1alpha1.SchedulingState {
	var s v1alpha1.Scheduling
	if cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "nightly"}, &s) != nil {
		return ""
	}
	return s.Status.State
}
