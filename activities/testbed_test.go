package activities

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

// These tests run one reconcile pass against controller-runtime's fake client. The bed is
// testobjects.TestBed("bed") with UID bed-uid and generation 1, as an earlier pass left it:
// two nodes labelled nodeLabel, of two slots each; node-00 holds slots 0 and 2, node-01
// holds slots 1 and 3.

const nodeLabel = "slotplane.io/node"

var bedKey = types.NamespacedName{Namespace: "default", Name: "bed"}

func fakeNode(name, id string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nodeLabel: id}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// fakeSlots are the bed's slots as an earlier pass left them: laid out, all free.
func fakeSlots() []v1alpha1.SlotStatus {
	layout := slots.Layout([]slots.Node{{Name: "node-00", ID: "00"}, {Name: "node-01", ID: "01"}}, 2)
	return slots.Statuses(layout, nil)
}

// slotPod is a real pod of the bed.
func slotPod(name string, uid types.UID, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Labels: map[string]string{v1alpha1.TestBedLabel: bedKey.Name}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "spark"}}},
	}
}

// withClaim adds a claim on slot, naming uid: the extender's when uid is the pod's own.
func withClaim(p *corev1.Pod, slot int32, uid types.UID) *corev1.Pod {
	p.Annotations = map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(slot, uid)}
	return p
}

// fakeClient holds objs, the bed's nodes, and fakeSlots in the bed's slices unless objs
// hold slices of their own.
func fakeClient(funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*v1alpha1.SlotSlice); return ok }) {
		for _, s := range slotslices.Build(testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj(), fakeSlots()) {
			objs = append(objs, &s)
		}
	}
	b := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.TestBed{}).
		WithObjects(fakeNode("node-00", "00"), fakeNode("node-01", "01")).
		WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// ghostPlaces lists the ghosts that exist as "node/position on node", sorted.
func ghostPlaces(t *testing.T, cl client.Client) []string {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, cl.List(context.Background(), &pods, client.MatchingLabels{v1alpha1.GhostLabel: "true"}))
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Spec.NodeName+"/"+p.Labels[v1alpha1.PositionOnNodeLabel])
	}
	slices.Sort(out)
	return out
}

func readBed(t *testing.T, cl client.Client) *v1alpha1.TestBed {
	t.Helper()
	var tb v1alpha1.TestBed
	require.NoError(t, cl.Get(context.Background(), bedKey, &tb))
	return &tb
}

// readSlots reads the bed's slots from its slices.
func readSlots(t *testing.T, cl client.Client) []v1alpha1.SlotStatus {
	t.Helper()
	got, err := slotslices.Read(context.Background(), cl, readBed(t, cl))
	require.NoError(t, err)
	return got
}

// A slot claim is the extender's only when it names the pod's own UID. A pod made with a
// claim of its own choosing (in a pod template, say) is not given the slot, and the slot
// keeps its ghost; a pod the extender claimed is adopted as before.
func TestReconcileTestBed_OnlyAProvenSlotClaimIsAdopted(t *testing.T) {
	allGhosts := []string{"node-00/0", "node-00/1", "node-01/0", "node-01/1"}
	cases := map[string]struct {
		pod        *corev1.Pod
		wantGhosts []string
		wantSlot3  v1alpha1.SlotState
	}{
		"no claim": {
			pod:        slotPod("forged", "u-forged", "node-01"),
			wantGhosts: allGhosts, wantSlot3: v1alpha1.SlotFree,
		},
		"a claim copied from another pod": {
			pod:        withClaim(slotPod("forged", "u-forged", "node-01"), 3, "u-victim"),
			wantGhosts: allGhosts, wantSlot3: v1alpha1.SlotFree,
		},
		"the extender's claim": {
			pod:        withClaim(slotPod("exec-1", "u-exec", "node-01"), 3, "u-exec"),
			wantGhosts: []string{"node-00/0", "node-00/1", "node-01/0"}, wantSlot3: v1alpha1.SlotOccupied,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cl := fakeClient(nil, testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj(), tc.pod)
			a := &Activities{Client: cl}
			res, err := a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
			require.NoError(t, err)
			require.False(t, res.InProgress, "%+v", res)
			if diff := cmp.Diff(tc.wantGhosts, ghostPlaces(t, cl)); diff != "" {
				t.Errorf("ghosts (-want +got)\n%s", diff)
			}
			slot3 := readSlots(t, cl)[3]
			require.Equal(t, "node-01", slot3.NodeName)
			require.Equal(t, tc.wantSlot3, slot3.State, "slot 3: %+v", slot3)
			if tc.wantSlot3 == v1alpha1.SlotFree {
				require.Empty(t, slot3.PodUID)
			} else {
				require.Equal(t, tc.pod.UID, slot3.PodUID)
			}
		})
	}
}

// The extender reserves a slot for a pod created after the pass listed the pods, and its
// write of the slot's slice makes the pass's write of that slice conflict. The pass leaves
// that slice as the extender wrote it and says it is not settled; the next pass reads the
// slice and then lists the pods, the new one among them. Synced against the old list, the
// new pod would look gone, and its reservation would be released while the scheduler is
// placing the pod into it.
func TestReconcileTestBed_ASliceChangedMeanwhileWaitsForTheNextPass(t *testing.T) {
	// Slot 0 shows a holder that is gone, so the pass has the slice to write: it frees it.
	held := fakeSlots()
	require.NoError(t, slots.Reserve(&held[0], slots.Pod{Name: "gone", UID: "u-gone"}))
	var objs []client.Object
	for _, s := range slotslices.Build(testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj(), held) {
		objs = append(objs, &s)
	}
	updates := 0
	funcs := &interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*v1alpha1.SlotSlice); ok {
				updates++
			}
			if updates == 1 {
				// What the extender does meanwhile: claim the new pod, then write its
				// reservation into the slot's slice.
				late := withClaim(slotPod("late", "u-late", ""), 1, "u-late")
				require.NoError(t, cl.Create(ctx, late))
				var sl v1alpha1.SlotSlice
				require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(obj), &sl))
				require.NoError(t, slots.Reserve(&sl.Slots[1], slots.Pod{Name: late.Name, UID: late.UID}))
				require.NoError(t, cl.Update(ctx, &sl))
				updates++
			}
			return cl.Update(ctx, obj, opts...)
		},
	}
	cl := fakeClient(funcs, append(objs, testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj())...)
	a := &Activities{Client: cl}
	res, err := a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, 2, updates, "the extender's write, and the pass's, which conflicted")
	require.False(t, res.Settled, "a pass that left a slice is not settled")
	ready := meta.FindStatusCondition(readBed(t, cl).Status.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	require.Contains(t, ready.Message, "1 slot slices changed while the pass wrote them")
	got := readSlots(t, cl)
	require.Equal(t, types.UID("u-gone"), got[0].PodUID, "the slice as the extender left it: %+v", got[0])
	require.Equal(t, types.UID("u-late"), got[1].PodUID)

	_, err = a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, 3, updates, "the next pass wrote the slice")
	got = readSlots(t, cl)
	require.Equal(t, v1alpha1.SlotFree, got[0].State, "the gone holder's slot: %+v", got[0])
	slot1 := got[1]
	require.Equal(t, v1alpha1.SlotReserved, slot1.State, "the reservation was released: %+v", slot1)
	require.Equal(t, types.UID("u-late"), slot1.PodUID)
}

// A pod stuck terminating on node-00 (its node lost, say) leaves node-00's ghosts as they
// are, and node-01 still gets its ghosts. The pass says what it held back.
func TestReconcileTestBed_TerminatingPodHoldsBackOnlyItsNode(t *testing.T) {
	stuck := withClaim(slotPod("stuck", "u-stuck", "node-00"), 0, "u-stuck")
	stuck.Finalizers = []string{"example.com/hold"}
	stuck.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	cl := fakeClient(nil, testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj(), stuck)
	a := &Activities{Client: cl}

	res, err := a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
	require.NoError(t, err)
	require.True(t, res.InProgress)
	require.False(t, res.Settled, "a pass that held something back is not settled")
	require.Equal(t, 2, res.Created)
	require.Contains(t, res.Reason, "node node-00 (pod stuck is terminating)")
	require.Equal(t, []string{"node-01/0", "node-01/1"}, ghostPlaces(t, cl))

	tb := readBed(t, cl)
	var ready *metav1.Condition
	for i := range tb.Status.Conditions {
		if tb.Status.Conditions[i].Type == v1alpha1.ConditionReady {
			ready = &tb.Status.Conditions[i]
		}
	}
	require.NotNil(t, ready)
	require.Equal(t, "InProgress", ready.Reason)
	require.Contains(t, ready.Message, "node-00")
}

// The pass owns the Ready condition only. The bridge writes its QueuesConfigured condition
// into the same status, before the pass reads it and between the pass's read and its
// write; the pass keeps both: the first from what it read, the second by reading again when
// its write conflicts.
func TestReconcileTestBed_KeepsConditionsItDoesNotOwn(t *testing.T) {
	const queuesConfigured = "QueuesConfigured" // bridge.ConditionQueuesConfigured
	queues := func(reason string) metav1.Condition {
		return metav1.Condition{Type: queuesConfigured, Status: metav1.ConditionTrue, Reason: reason, Message: "the allocation file loads", LastTransitionTime: metav1.Now()}
	}
	bed := testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj()
	bed.Status.Conditions = []metav1.Condition{queues("OpenACLs")}
	updates := 0
	funcs := &interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			updates++
			if updates == 1 {
				var tb v1alpha1.TestBed
				require.NoError(t, cl.Get(ctx, bedKey, &tb))
				require.True(t, meta.SetStatusCondition(&tb.Status.Conditions, queues("Accepted")))
				require.NoError(t, cl.Status().Update(ctx, &tb))
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
	cl := fakeClient(funcs, bed)
	a := &Activities{Client: cl}
	_, err := a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, 2, updates, "the first status write must have conflicted")
	got := readBed(t, cl).Status.Conditions
	require.NotNil(t, meta.FindStatusCondition(got, v1alpha1.ConditionReady), "%+v", got)
	c := meta.FindStatusCondition(got, queuesConfigured)
	require.NotNil(t, c, "%+v", got)
	require.Equal(t, "Accepted", c.Reason, "the bridge's newer condition, written while the pass ran")

	// A pass with nothing in its way keeps it too.
	_, err = a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, "Accepted", meta.FindStatusCondition(readBed(t, cl).Status.Conditions, queuesConfigured).Reason)
}

// A pass's writes go passWritesAtOnce at a time, all of them within the budget; none
// starts after it; the first error is returned and the writes not yet started are not sent.
func TestWriteEach_AtOnceWithinTheBudget(t *testing.T) {
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	var mu sync.Mutex
	running, most := 0, 0
	n, err := writeEach(context.Background(), items, time.Now().Add(time.Minute), func(context.Context, int) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 100, n)
	require.LessOrEqual(t, most, passWritesAtOnce, "writes in flight at most")
	require.Greater(t, most, 1, "writes go side by side")

	var sent atomic.Int64
	n, err = writeEach(context.Background(), items, time.Now().Add(-time.Second), func(context.Context, int) error {
		sent.Add(1)
		return nil
	})
	require.NoError(t, err)
	require.Zero(t, n, "a budget that ran out starts no write")
	require.Zero(t, sent.Load())

	sent.Store(0)
	n, err = writeEach(context.Background(), items, time.Now().Add(time.Minute), func(_ context.Context, i int) error {
		sent.Add(1)
		if i == 3 {
			return errors.New("refused")
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	})
	require.EqualError(t, err, "refused")
	require.Less(t, n, 100)
	require.Less(t, sent.Load(), int64(100), "the writes after an error are not sent")
}

// A pass decides by the activities' clock (Activities.Clock): a slot granted to a job whose
// pods have not come stays without a ghost until the bed's grantedSlotTimeout has passed on
// that clock, and gets its ghost at the first pass after.
func TestReconcileTestBed_DecidesByTheInjectedClock(t *testing.T) {
	granted := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := metav1.NewMicroTime(granted)
	req, err := json.Marshal(v1alpha1.CreationRequest{Scheduling: "nightly", SchedulingUID: "uid-1", TestBed: "bed", Slots: []int32{3}, Run: 1, GrantedAt: &at})
	require.NoError(t, err)
	job := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default",
		Labels:      map[string]string{v1alpha1.ActiveSchedulingLabel: "nightly", v1alpha1.GrantedTestBedLabel: "bed"},
		Annotations: map[string]string{v1alpha1.CreationRequestAnnotation: string(req)}}}
	timeout := v1alpha1.DefaultGrantedSlotTimeout
	for _, c := range []struct {
		name       string
		now        time.Time
		wantGhosts []string
	}{
		{"within the timeout", granted.Add(timeout / 2), []string{"node-00/0", "node-00/1", "node-01/0"}},
		{"past the timeout", granted.Add(timeout + time.Second), []string{"node-00/0", "node-00/1", "node-01/0", "node-01/1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := fakeClient(nil, testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj(), job.DeepCopy())
			a := &Activities{Client: cl, Clock: func() time.Time { return c.now }}
			_, err := a.ReconcileTestBed(context.Background(), TestBedRef(bedKey))
			require.NoError(t, err)
			require.Equal(t, c.wantGhosts, ghostPlaces(t, cl))
		})
	}
}

// node-00's allocatable resources hold one of its two slots: the other gets no ghost and goes
// to no job, and the bed's SlotsFit condition names the node and what it lacks. Once the
// node has room, the slot comes back.
func TestReconcileTestBed_ASlotANodeHasNoRoomForIsNotOffered(t *testing.T) {
	cl := fakeClient(nil, testobjects.TestBed(bedKey.Name).UID("bed-uid").Generation(1).Obj())
	ctx := context.Background()
	setAllocatable := func(cpu string) {
		var n corev1.Node
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Name: "node-00"}, &n))
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}
		require.NoError(t, cl.Status().Update(ctx, &n))
	}
	setAllocatable("1500m")
	a := &Activities{Client: cl}
	_, err := a.ReconcileTestBed(ctx, TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, []string{"node-00/0", "node-01/0", "node-01/1"}, ghostPlaces(t, cl))
	tb := readBed(t, cl)
	fit := meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionSlotsFit)
	require.NotNil(t, fit)
	require.Equal(t, metav1.ConditionFalse, fit.Status)
	require.Equal(t, "NoRoom", fit.Reason)
	require.Contains(t, fit.Message, "node-00: room for 1 of its 2 slots (cpu: 2 slots need 2, 1500m allocatable)")
	require.EqualValues(t, 3, tb.Status.Free, "the slot without room is not free for a job")
	got := readSlots(t, cl)
	require.Equal(t, "node-00", got[2].NodeName)
	require.Contains(t, got[2].Unavailable, "the node has no room for it")

	setAllocatable("4")
	_, err = a.ReconcileTestBed(ctx, TestBedRef(bedKey))
	require.NoError(t, err)
	require.Equal(t, []string{"node-00/0", "node-00/1", "node-01/0", "node-01/1"}, ghostPlaces(t, cl))
	tb = readBed(t, cl)
	require.Equal(t, metav1.ConditionTrue, meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionSlotsFit).Status)
	require.EqualValues(t, 4, tb.Status.Free)
}
