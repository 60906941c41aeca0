//go:build integration

package activities_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

func newClient(t *testing.T, c *localcluster.Cluster) client.Client {
	t.Helper()
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	return cl
}

func slotSize(cpu string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("2Gi")}
}

// settle runs reconcile passes until one changes nothing, as the TestBed workflow does.
func settle(t *testing.T, a *activities.Activities, in activities.TestBedRef) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last activities.ReconcileTestBedResult
	for time.Now().Before(deadline) {
		var err error
		last, err = a.ReconcileTestBed(context.Background(), in)
		require.NoError(t, err)
		if last.Settled {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("test bed did not settle: %+v", last)
}

// ghosts returns the running ghost pods of the bed, by node.
func ghosts(t *testing.T, cl client.Client, bed string) map[string][]corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, cl.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabels{v1alpha1.TestBedLabel: bed, v1alpha1.GhostLabel: "true"}))
	out := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

func countGhosts(m map[string][]corev1.Pod) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

func waitGhostsRunning(t *testing.T, cl client.Client, bed string, want int) map[string][]corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		g := ghosts(t, cl, bed)
		running := 0
		for _, ps := range g {
			for _, p := range ps {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		if running == want && countGhosts(g) == want {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d ghosts running (%d exist)", running, want, countGhosts(g))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bedInput names the test bed every test here creates.
var bedInput = activities.TestBedRef{Namespace: "default", Name: "bed"}

// newBed starts a cluster of n nodes and creates the test bed "bed" on it, 2 slots of 2 cpu
// per node; the ghosts are not made yet.
func newBed(t *testing.T, nodes int) (client.Client, *activities.Activities, *v1alpha1.TestBed) {
	t.Helper()
	cl := newClient(t, localcluster.New(t, localcluster.Options{Nodes: nodes}))
	tb := testobjects.TestBed(bedInput.Name).Namespace(bedInput.Namespace).Slots(2, "2", "2Gi").Obj()
	require.NoError(t, cl.Create(context.Background(), tb))
	return cl, &activities.Activities{Client: cl}, tb
}

func TestReconcileTestBed_GhostsFollowTheShapeOfTheBed(t *testing.T) {
	t.Parallel()
	cl, a, tb := newBed(t, 4)
	ctx := context.Background()
	in := bedInput
	// The bed's namespace enforces the restricted Pod Security Standard: ghosts pass it.
	var ns corev1.Namespace
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: in.Namespace}, &ns))
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	require.NoError(t, cl.Update(ctx, &ns))

	// 4 nodes x 2 slots: 8 ghosts Running, 8 free slots.
	settle(t, a, in)
	g := waitGhostsRunning(t, cl, "bed", 8)
	for node, ps := range g {
		require.Len(t, ps, 2, "node %s", node)
		require.Equal(t, v1alpha1.GhostPriorityClass, ps[0].Spec.PriorityClassName)
		require.Contains(t, ps[0].Spec.Tolerations, corev1.Toleration{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists},
			"ghosts must tolerate the dedicated-node taint")
		require.Equal(t, "1", ps[0].Spec.Containers[0].Resources.Requests.Name(v1alpha1.SlotResource, resource.DecimalSI).String())
	}
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.EqualValues(t, 8, tb.Status.Total)
	require.EqualValues(t, 8, tb.Status.Free)
	require.EqualValues(t, 4, tb.Status.Nodes)
	require.Equal(t, metav1.ConditionTrue, readyStatus(tb))
	for i, s := range slotsOf(t, cl, tb) {
		require.EqualValues(t, i, s.Position)
		require.Equal(t, "node-0"+strconv.Itoa(i%4), s.NodeName, "round-robin")
	}

	// A second pass changes nothing: the reconciler is idempotent.
	res, err := a.ReconcileTestBed(ctx, in)
	require.NoError(t, err)
	require.True(t, res.Settled, "%+v", res)

	// Removing a node's label removes its ghosts at once, and its slots after the leaving
	// grace: until then they stay in place, unavailable, for a grant made just before.
	a.LeavingGrace = 2 * time.Second
	setNodeLabel(t, cl, "node-03", nil)
	settle(t, a, in)
	g = waitGhostsRunning(t, cl, "bed", 6)
	require.NotContains(t, g, "node-03")
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.EqualValues(t, 8, tb.Status.Total)
	require.EqualValues(t, 6, tb.Status.Free)
	for _, s := range slotsOf(t, cl, tb) {
		leaving := s.NodeName == "node-03"
		require.Equal(t, leaving, s.LeavingSince != nil, "slot %d", s.Position)
		require.Equal(t, leaving, s.Unavailable != "", "slot %d", s.Position)
	}
	res, err = a.ReconcileTestBed(ctx, in)
	require.NoError(t, err)
	require.Positive(t, res.RecheckIn, "the pass says when the grace ends")
	require.LessOrEqual(t, res.RecheckIn, 2*time.Second)
	// The passes decide a moment after the grace ends (Activities.Clock).
	past := res.RecheckIn + 100*time.Millisecond
	a.Clock = func() time.Time { return time.Now().Add(past) }
	settle(t, a, in)
	a.Clock = nil
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.EqualValues(t, 6, tb.Status.Total)
	require.EqualValues(t, 6, tb.Status.Free)
	for _, s := range slotsOf(t, cl, tb) {
		require.NotEqual(t, "node-03", s.NodeName)
		require.Nil(t, s.LeavingSince)
	}

	// Adding it back restores them.
	value := "03"
	setNodeLabel(t, cl, "node-03", &value)
	settle(t, a, in)
	waitGhostsRunning(t, cl, "bed", 8)

	// New resources per slot recreate every ghost with the new size.
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	tb.Spec.ResourcesPerSlot = slotSize("3")
	require.NoError(t, cl.Update(ctx, tb))
	settle(t, a, in)
	g = waitGhostsRunning(t, cl, "bed", 8)
	for _, ps := range g {
		for _, p := range ps {
			require.Equal(t, "3", p.Spec.Containers[0].Resources.Requests.Cpu().String())
		}
	}

	// A deleted TestBed is reported gone.
	require.NoError(t, cl.Delete(ctx, tb))
	res, err = a.ReconcileTestBed(ctx, in)
	require.NoError(t, err)
	require.True(t, res.Gone)
}

// A real pod that holds a slot replaces the slot's ghost; when it ends, the ghost returns.
func TestReconcileTestBed_RealPodTakesGhostsPlace(t *testing.T) {
	t.Parallel()
	cl, a, tb := newBed(t, 2)
	ctx := context.Background()
	in := bedInput
	settle(t, a, in)
	waitGhostsRunning(t, cl, "bed", 4)

	real := occupySlot(t, cl, tb, "exec-1", 3)
	settle(t, a, in)
	g := waitGhostsRunning(t, cl, "bed", 3)
	require.Len(t, g["node-01"], 1)
	require.Equal(t, "0", g["node-01"][0].Labels[v1alpha1.PositionOnNodeLabel], "the ghost of slot 3 (position 1 on node-01) must be the one gone")
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.Equal(t, v1alpha1.SlotOccupied, slotsOf(t, cl, tb)[3].State)
	require.Equal(t, "exec-1", slotsOf(t, cl, tb)[3].PodName)
	require.EqualValues(t, 1, tb.Status.Occupied)

	deletePod(t, cl, real)
	settle(t, a, in)
	waitGhostsRunning(t, cl, "bed", 4)
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.Equal(t, v1alpha1.SlotFree, slotsOf(t, cl, tb)[3].State)
	require.Empty(t, slotsOf(t, cl, tb)[3].PodName)
}

// occupySlot puts a job's pod in a slot of the bed as the extender does: it reserves the slot
// in its slice, labels the pod with the slot and its claim, and the pod is bound to the
// slot's node.
func occupySlot(t *testing.T, cl client.Client, tb *v1alpha1.TestBed, name string, position int32) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	statuses := slotsOf(t, cl, tb)
	slot := &statuses[position]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{
			v1alpha1.TestBedLabel: tb.Name,
		}},
		Spec: corev1.PodSpec{NodeName: slot.NodeName, Containers: []corev1.Container{{Name: "main", Image: "spark"}}},
	}
	require.NoError(t, cl.Create(ctx, pod))
	base := pod.DeepCopy()
	pod.Annotations = map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(position, pod.UID)}
	require.NoError(t, cl.Patch(ctx, pod, client.MergeFrom(base)))
	slot.State, slot.PodName, slot.PodUID = v1alpha1.SlotReserved, pod.Name, pod.UID
	require.NoError(t, slotslices.Put(ctx, cl, tb, statuses))
	return pod
}

// slotsOf is the bed's slots, read from its slot slices.
func slotsOf(t *testing.T, cl client.Client, tb *v1alpha1.TestBed) []v1alpha1.SlotStatus {
	t.Helper()
	got, err := slotslices.Read(context.Background(), cl, tb)
	require.NoError(t, err)
	return got
}

// deletePod deletes a pod at once and waits until it is gone.
func deletePod(t *testing.T, cl client.Client, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cl.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	}, 10*time.Second, 50*time.Millisecond)
}

// A freed slot waits HandOverGrace for its next job before it gets its ghost: a grant in that
// time finds it without one, and no ghost is made and deleted for nothing. A slot is freed
// when a pass finds its job's pod gone, or when its run ended (the job's status says when).
// A slot nobody takes gets its ghost at the pass after.
func TestReconcileTestBed_AFreedSlotWaitsForItsNextJob(t *testing.T) {
	t.Parallel()
	cl, a, tb := newBed(t, 2)
	ctx := context.Background()
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 4)
	first, second := occupySlot(t, cl, tb, "exec-1", 3), occupySlot(t, cl, tb, "exec-2", 1)
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 2)

	// Slot 3's pod leaves: the pass makes it no ghost yet, and says when to come back.
	deletePod(t, cl, first)
	res, err := a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.HandingOver, "%+v", res)
	require.Zero(t, res.Created)
	require.False(t, res.Settled)
	require.Positive(t, res.RecheckIn)
	require.LessOrEqual(t, res.RecheckIn, slots.HandOverGrace)
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	require.Equal(t, v1alpha1.SlotFree, slotsOf(t, cl, tb)[3].State, "the slot is free for the next job")
	require.Equal(t, metav1.ConditionFalse, readyStatus(tb))

	// The next job is granted it before the next pass: no ghost is ever made for it.
	grantSlot(t, cl, a, "next", 3)
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Zero(t, res.Created, "%+v", res)
	require.Zero(t, res.HandingOver)
	require.True(t, res.Settled)

	// Slot 1's pod leaves and nobody takes the slot: its ghost comes at the pass after.
	deletePod(t, cl, second)
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.HandingOver, "%+v", res)
	require.Zero(t, res.Created)
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "%+v", res)
	require.Zero(t, res.HandingOver)
	slotGhosts := map[string]bool{}
	for node, ps := range waitGhostsRunning(t, cl, "bed", 3) {
		for _, p := range ps {
			slotGhosts[node+"/"+p.Labels[v1alpha1.PositionOnNodeLabel]] = true
		}
	}
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	for _, s := range slotsOf(t, cl, tb) {
		require.Equal(t, s.Position != 3, slotGhosts[s.NodeName+"/"+strconv.Itoa(int(s.PositionOnNode))], "slot %d", s.Position)
	}

	// A run in slot 0 ends before any pass saw a pod of it there: its slot waits out what is
	// left of the grace from the end the job's status records, then gets its ghost.
	grantSlot(t, cl, a, "brief", 0)
	waitGhostsRunning(t, cl, "bed", 2)
	endedAt := endRunNow(t, cl, "brief", 0)
	start := time.Now()
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	if start.Sub(endedAt) < slots.HandOverGrace {
		require.Equal(t, 1, res.HandingOver, "%+v", res)
		require.Zero(t, res.Created)
		require.Positive(t, res.RecheckIn)
		require.LessOrEqual(t, res.RecheckIn, slots.HandOverGrace-start.Sub(endedAt))
		endRunAt(t, cl, "brief", 0, time.Now().Add(-slots.HandOverGrace)) // the grace passes
		res, err = a.ReconcileTestBed(ctx, bedInput)
		require.NoError(t, err)
	} else {
		t.Logf("the pass came %v after the end, past the grace", start.Sub(endedAt))
	}
	require.Equal(t, 1, res.Created, "%+v", res)
	require.Zero(t, res.HandingOver)
	waitGhostsRunning(t, cl, "bed", 3)
}

func readyStatus(tb *v1alpha1.TestBed) metav1.ConditionStatus {
	for _, c := range tb.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Status
		}
	}
	return metav1.ConditionUnknown
}

// setNodeLabel sets (value != nil) or removes the test bed label of a node.
func setNodeLabel(t *testing.T, cl client.Client, name string, value *string) {
	t.Helper()
	var node corev1.Node
	require.NoError(t, cl.Get(context.Background(), client.ObjectKey{Name: name}, &node))
	if value == nil {
		delete(node.Labels, localcluster.DefaultNodeLabel)
	} else {
		node.Labels[localcluster.DefaultNodeLabel] = *value
	}
	require.NoError(t, cl.Update(context.Background(), &node))
}

// A grant clears its slots' ghosts at once (RequestCreation), and the reconciler makes them
// none while the grant is young. A granted slot whose job never makes its pods gets its
// ghost back once the bed's grantedSlotTimeout has passed, and the pass before says when to
// look again; a slot of a job that runs keeps no ghost however old its grant.
func TestReconcileTestBed_AGrantedSlotNobodyTakesGetsItsGhostBack(t *testing.T) {
	t.Parallel()
	cl, a, tb := newBed(t, 2)
	ctx := context.Background()
	tb.Spec.GrantedSlotTimeout = &metav1.Duration{Duration: 3 * time.Second}
	require.NoError(t, cl.Update(ctx, tb))
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 4)

	grantSlot(t, cl, a, "never-comes", 0)
	grantSlot(t, cl, a, "runs", 1)
	// The job in slot 1 runs (its status says so; its pods are not what this test is about).
	var runs v1alpha1.BatchJob
	require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "runs"}, &runs))
	runs.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", TestBed: "bed", Slots: []int32{1}, Run: 1}
	require.NoError(t, cl.Status().Update(ctx, &runs))

	// The grants took the ghosts away at once, and a pass does not bring them back.
	res, err := a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Zero(t, res.Created, "a pass made ghosts for young grants")
	require.Greater(t, res.RecheckIn, time.Duration(0), "the pass says when the grant times out")
	require.LessOrEqual(t, res.RecheckIn, 3*time.Second)
	require.Equal(t, 2, countGhosts(ghosts(t, cl, "bed")), "the granted slots' ghosts are gone")

	// The pass decides a moment after the grant timed out (Activities.Clock).
	past := res.RecheckIn + 100*time.Millisecond
	a.Clock = func() time.Time { return time.Now().Add(past) }
	res, err = a.ReconcileTestBed(ctx, bedInput)
	a.Clock = nil
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "the slot nobody took gets its ghost back, the running job's does not")
	require.Zero(t, res.RecheckIn, "no grant is left to time out")
	slotGhosts := map[string]bool{}
	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(tb), tb))
	for node, ps := range waitGhostsRunning(t, cl, "bed", 3) {
		for _, p := range ps {
			slotGhosts[node+"/"+p.Labels[v1alpha1.PositionOnNodeLabel]] = true
		}
	}
	for _, s := range slotsOf(t, cl, tb) {
		key := s.NodeName + "/" + strconv.Itoa(int(s.PositionOnNode))
		require.Equal(t, s.Position != 1, slotGhosts[key], "slot %d", s.Position)
	}
}

// nudgeWitness is a Temporal client that takes only signal-with-start: at each one it counts
// the bed's ghosts that etcd still has undeleted.
type nudgeWitness struct {
	temporalclient.Client
	t      *testing.T
	cl     client.Client
	ghosts []int
}

func (w *nudgeWitness) SignalWithStartWorkflow(context.Context, string, string, any, temporalclient.StartWorkflowOptions, any, ...any) (temporalclient.WorkflowRun, error) {
	w.ghosts = append(w.ghosts, countGhosts(ghosts(w.t, w.cl, "bed")))
	return nil, nil
}

// A grant's job is nudged only once its slots' ghosts are gone: its pods must not meet a
// ghost that is being deleted (the scheduler would preempt a victim slotplane deletes under
// it, and kube-scheduler's asynchronous preemption can then strand the pod). The slot not
// granted keeps its ghost.
func TestRequestCreation_TheJobIsNudgedOnceItsGhostsAreGone(t *testing.T) {
	t.Parallel()
	cl, a, _ := newBed(t, 2)
	ctx := context.Background()
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 4)
	w := &nudgeWitness{t: t, cl: cl}
	a.Temporal = w

	j := testobjects.BatchJob("wide").Obj()
	j.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
	require.NoError(t, cl.Create(ctx, j))
	at := metav1.NewMicroTime(time.Now())
	req := v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid", TestBed: "bed", Slots: []int32{0, 1, 2}, Run: 1, GrantedAt: &at}
	nudge := &activities.SignalWithStart{WorkflowID: "batchjob/default/wide", WorkflowType: "BatchJobWorkflow", Signal: "look-again"}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "wide", Request: req, Nudge: nudge, TaskQueue: "q"}))
	require.Equal(t, []int{1}, w.ghosts, "one nudge, sent when only the slot not granted had its ghost")
	require.Equal(t, 1, countGhosts(ghosts(t, cl, "bed")))
}

// A pass reads the jobs' grants from the worker's copy, and only a pass that changes
// nothing keeps that answer: one that would make or delete a ghost, or move a slot, reads
// the jobs from the API server again and decides on that, and one that would leave a slot
// held with no pod in it first asks etcd about that slot's holder. A copy that lags
// therefore costs neither a granted slot its room nor a freed slot its ghost, a settled pass
// lists no job from the API server, and one with no slot held empty reads none.
func TestReconcileTestBed_TheWorkersCopyOfTheJobsDecidesNothingAlone(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 2})
	cl := newClient(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, cl.Create(ctx, testobjects.TestBed(bedInput.Name).Namespace(bedInput.Namespace).Slots(2, "2", "2Gi").Obj()))
	plain := &activities.Activities{Client: cl}
	settle(t, plain, bedInput)
	waitGhostsRunning(t, cl, "bed", 4)

	grant := func(job string, slot int32) {
		t.Helper()
		grantSlot(t, cl, plain, job, slot)
		setRun(t, cl, job, v1alpha1.JobRunning, slot)
	}
	// ghostIn says which slot positions have a ghost.
	ghostIn := func() map[int32]bool {
		t.Helper()
		var tb v1alpha1.TestBed
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &tb))
		at := map[string]bool{}
		for node, ps := range ghosts(t, cl, "bed") {
			for _, p := range ps {
				at[node+"/"+p.Labels[v1alpha1.PositionOnNodeLabel]] = true
			}
		}
		out := map[int32]bool{}
		for _, s := range slotsOf(t, cl, &tb) {
			out[s.Position] = at[s.NodeName+"/"+strconv.Itoa(int(s.PositionOnNode))]
		}
		return out
	}

	// The copy is taken while "done" runs in slot 0; then "late" is granted slot 1 and
	// "done" ends: the copy has neither.
	grant("done", 0)
	stale := jobsCopy(t, cl)
	grant("late", 1)
	setRun(t, cl, "done", v1alpha1.JobCompleted, 0)

	counted := &countingClient{Client: cl}
	a := &activities.Activities{Client: counted, Changes: stale}
	res, err := a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "the freed slot gets its ghost, the newly granted one does not: %+v", res)
	require.Positive(t, counted.readsOf("BatchJob"), "the pass read the jobs from the API server")
	waitGhostsRunning(t, cl, "bed", 3)
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: true}, ghostIn())

	// The copy still has "done" in slot 0: a pass on it alone would take the new ghost away.
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Zero(t, res.Deleted, "a ghost went on the copy's word")
	require.Zero(t, res.Created)
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: true}, ghostIn())

	// A run ends that the copy has running, in a slot no pod holds: the pass that follows
	// would change nothing on the copy's word, and the freed slot would stay without its
	// ghost.
	grant("gone", 2)
	waitGhostsRunning(t, cl, "bed", 2)
	a.Changes = jobsCopy(t, cl)
	setRun(t, cl, "gone", v1alpha1.JobFailed, 2)
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "the slot of the run the copy still has running gets its ghost: %+v", res)
	waitGhostsRunning(t, cl, "bed", 3)
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: true}, ghostIn())

	// A busy bed: two slots held for running jobs whose pods are away ("late"'s and
	// "coming"'s), and a copy that is right about them. The pass asks etcd about those two
	// jobs alone, and lists none.
	grant("coming", 3)
	waitGhostsRunning(t, cl, "bed", 2)
	a.Changes = jobsCopy(t, cl)
	reads, lists := counted.readsOf("BatchJob"), counted.listsOf("BatchJob")
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.True(t, res.Settled, "%+v", res)
	require.Equal(t, reads+2, counted.readsOf("BatchJob"), "each slot's holder is read from etcd")
	require.Equal(t, lists, counted.listsOf("BatchJob"), "no job is listed from etcd")
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: false}, ghostIn())
	// Its run ends, and the copy still has it running: that one read shows the end, and the
	// slot gets its ghost.
	setRun(t, cl, "coming", v1alpha1.JobCompleted, 3)
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "%+v", res)
	waitGhostsRunning(t, cl, "bed", 3)
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: true}, ghostIn())

	// A run that ended a moment ago, which the copy still has running: its freed slot may be
	// on its way to a next job (a hand-over), and a pass that read every job would leave it
	// without a ghost too. The pass reads that one job, lists none, makes no ghost, and comes
	// back when the hand-over's grace ends; then, the copy as stale as before, the slot gets
	// its ghost on the API server's word.
	grant("quick", 3)
	waitGhostsRunning(t, cl, "bed", 2)
	a.Changes = jobsCopy(t, cl)
	endRunNow(t, cl, "quick", 3)
	reads, lists = counted.readsOf("BatchJob"), counted.listsOf("BatchJob")
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, lists, counted.listsOf("BatchJob"), "no job is listed from etcd")
	require.Equal(t, reads+2, counted.readsOf("BatchJob"), "the two held-empty slots' holders are read from etcd")
	require.Zero(t, res.Created, "%+v", res)
	require.Equal(t, 1, res.HandingOver, "%+v", res)
	require.False(t, res.Settled)
	require.Positive(t, res.RecheckIn)
	require.LessOrEqual(t, res.RecheckIn, slots.HandOverGrace)
	endRunAt(t, cl, "quick", 3, time.Now().Add(-slots.HandOverGrace)) // the grace passes
	res, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, 1, res.Created, "the grace is over: the freed slot gets its ghost: %+v", res)
	require.Less(t, lists, counted.listsOf("BatchJob"), "that pass read the jobs from the API server")
	waitGhostsRunning(t, cl, "bed", 3)
	require.Equal(t, map[int32]bool{0: true, 1: false, 2: true, 3: true}, ghostIn())

	// The worker's real copy: once it caught up and no slot is held empty ("late" ends
	// too), a settled pass reads no job from the API server.
	setRun(t, cl, "late", v1alpha1.JobCompleted, 1)
	live, err := activities.WatchChanges(ctx, c.Config, slog.Default(), nil)
	require.NoError(t, err)
	a = &activities.Activities{Client: counted, Changes: live}
	require.Eventually(t, func() bool {
		before := counted.readsOf("BatchJob")
		res, err := a.ReconcileTestBed(ctx, bedInput)
		require.NoError(t, err)
		return res.Settled && counted.readsOf("BatchJob") == before
	}, 30*time.Second, 100*time.Millisecond, "every settled pass read the jobs from the API server")
	waitGhostsRunning(t, cl, "bed", 4)
}

// A job holds its test bed's granted-testbed label while its run may hold slots, and the
// bed's reads of its grants go by that label: a pass takes it off a run that ended once the
// hand-over's grace is over, and leaves it on a running job, on a run that ended a moment
// ago, and on a job asked for again since its run ended, even when the pass read a copy
// from before that request.
func TestReconcileTestBed_TakesTheGrantOffARunThatEnded(t *testing.T) {
	t.Parallel()
	cl, a, tb := newBed(t, 2)
	ctx := context.Background()
	settle(t, a, bedInput)
	waitGhostsRunning(t, cl, "bed", 4)
	granted := func(job string) string {
		t.Helper()
		var j v1alpha1.BatchJob
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: job}, &j))
		return j.Labels[v1alpha1.GrantedTestBedLabel]
	}

	grantSlot(t, cl, a, "running", 0)
	setRun(t, cl, "running", v1alpha1.JobRunning, 0)
	grantSlot(t, cl, a, "ended", 1)
	endRunNow(t, cl, "ended", 1)
	grantSlot(t, cl, a, "again", 2)
	endRunNow(t, cl, "again", 2)
	again := v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid", TestBed: "bed", Slots: []int32{2}, Run: 2, GrantedAt: grantedAt()}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "again", Request: again}))
	for _, job := range []string{"running", "ended", "again"} {
		require.Equal(t, "bed", granted(job), job)
	}

	_, err := a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Equal(t, "bed", granted("ended"), "within the grace, the freed slot may be on its way to a next job")
	endRunAt(t, cl, "ended", 1, time.Now().Add(-slots.HandOverGrace))
	_, err = a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Empty(t, granted("ended"), "the grace is over")
	require.Equal(t, "bed", granted("running"))
	require.Equal(t, "bed", granted("again"), "its second run holds slot 2")

	// A copy from before a new request, and a pass that decides on it alone (the new run's
	// pod is in slot 3 already, so the pass changes nothing): its write carries the copy's
	// resourceVersion, and the new request keeps its label.
	grantSlot(t, cl, a, "stale", 3)
	endRunAt(t, cl, "stale", 3, time.Now().Add(-slots.HandOverGrace))
	a.Changes = jobsCopy(t, cl)
	next := v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid", TestBed: "bed", Slots: []int32{3}, Run: 2, GrantedAt: grantedAt()}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: "stale", Request: next}))
	occupySlot(t, cl, tb, "stale-exec", 3)
	res, err := a.ReconcileTestBed(ctx, bedInput)
	require.NoError(t, err)
	require.Zero(t, res.Created+res.Deleted, "%+v", res)
	require.Equal(t, "bed", granted("stale"), "a request written after the copy keeps its label")
	settle(t, a, bedInput)
	require.Equal(t, "bed", granted("stale"))
	require.Equal(t, 1, countGhosts(ghosts(t, cl, "bed")), "slots 0, 2 and 3 are held, slot 1 has its ghost back")
}

// jobsCopy is a worker's copy of the BatchJobs that holds them as they are now and never
// changes: a copy that lags behind everything written after it.
func jobsCopy(t *testing.T, cl client.Client) *activities.Changes {
	t.Helper()
	var jobs v1alpha1.BatchJobList
	require.NoError(t, cl.List(context.Background(), &jobs, client.InNamespace("default")))
	snapshot := make([]client.Object, len(jobs.Items))
	for i := range jobs.Items {
		snapshot[i] = &jobs.Items[i]
	}
	return activities.ChangesCopying(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(snapshot...).Build(),
		v1alpha1.GroupVersion.WithKind("BatchJob"))
}

// grantSlot creates a BatchJob claimed by Scheduling "nightly" and grants it one slot of
// bed "bed", as a Scheduling does (RequestCreation, which also clears the slot's ghost).
func grantSlot(t *testing.T, cl client.Client, a *activities.Activities, job string, slot int32) {
	t.Helper()
	ctx := context.Background()
	j := testobjects.BatchJob(job).Obj()
	j.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly"}
	require.NoError(t, cl.Create(ctx, j))
	at := metav1.NewMicroTime(time.Now())
	req := v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid", TestBed: "bed", Slots: []int32{slot}, Run: 1, GrantedAt: &at}
	require.NoError(t, a.RequestCreation(ctx, activities.RequestCreationInput{Namespace: "default", Job: job, Request: req}))
}

// endRunNow writes a job's status as its run 1 of Scheduling "nightly" in test bed "bed",
// Completed now (phases.endedAt), and returns that moment.
func endRunNow(t *testing.T, cl client.Client, job string, slot int32) time.Time {
	t.Helper()
	return endRunAt(t, cl, job, slot, time.Now())
}

// endRunAt is endRunNow with the run's end at the time at: a run that ended a hand-over's
// grace ago is one whose grace is over.
func endRunAt(t *testing.T, cl client.Client, job string, slot int32, at time.Time) time.Time {
	t.Helper()
	var j v1alpha1.BatchJob
	require.NoError(t, cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: job}, &j))
	ended := metav1.NewMicroTime(at)
	j.Status = v1alpha1.BatchJobStatus{State: v1alpha1.JobCompleted, Scheduling: "nightly", TestBed: "bed", Slots: []int32{slot}, Run: 1,
		Phases: &v1alpha1.RunPhases{EndedAt: &ended}}
	require.NoError(t, cl.Status().Update(context.Background(), &j))
	return ended.Time
}

// setRun writes a job's status as its run 1 of Scheduling "nightly" in test bed "bed".
func setRun(t *testing.T, cl client.Client, job string, state v1alpha1.BatchJobState, slot int32) {
	t.Helper()
	var j v1alpha1.BatchJob
	require.NoError(t, cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: job}, &j))
	j.Status = v1alpha1.BatchJobStatus{State: state, Scheduling: "nightly", TestBed: "bed", Slots: []int32{slot}, Run: 1}
	require.NoError(t, cl.Status().Update(context.Background(), &j))
}
