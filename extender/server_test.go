package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
	"slotplane/slots"
)

// podBuilder makes slot pods for handler tests.
type podBuilder struct{ pod corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		Labels:      map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.BatchJobLabel: "job"},
		Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: "0,1,2,3"},
	}}}
}

func (b *podBuilder) Job(name string) *podBuilder {
	b.pod.Labels[v1alpha1.BatchJobLabel] = name
	return b
}

// grantedJob is the BatchJob "job" of every pod makePod makes, granted slots 0 to 63 of
// test bed bed.
func grantedJob(bed string) *v1alpha1.BatchJob {
	return grantedJobNamed("job", bed)
}

// grantedJobNamed is a BatchJob granted slots 0 to 63 of test bed bed.
func grantedJobNamed(name, bed string) *v1alpha1.BatchJob {
	ids := make([]int32, 64)
	for i := range ids {
		ids[i] = int32(i)
	}
	at := metav1.NewMicroTime(time.Now())
	raw, _ := json.Marshal(v1alpha1.CreationRequest{Scheduling: "s", TestBed: bed, Slots: ids, Run: 1, GrantedAt: &at})
	return &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		Labels:      map[string]string{v1alpha1.GrantedTestBedLabel: bed},
		Annotations: map[string]string{v1alpha1.CreationRequestAnnotation: string(raw)}}}
}

func (b *podBuilder) UID(uid types.UID) *podBuilder { b.pod.UID = uid; return b }
func (b *podBuilder) Bed(name string) *podBuilder {
	b.pod.Labels[v1alpha1.TestBedLabel] = name
	return b
}
func (b *podBuilder) SlotIDs(ids string) *podBuilder {
	b.pod.Annotations[v1alpha1.SlotIDsAnnotation] = ids
	return b
}
func (b *podBuilder) Node(name string) *podBuilder { b.pod.Spec.NodeName = name; return b }
func (b *podBuilder) Obj() *corev1.Pod             { return b.pod.DeepCopy() }

// testSlots are the slots of the bed "bed" the tests here use: two nodes of two slots, all
// free; node-00 holds slots 0 and 2, node-01 1 and 3.
func testSlots() []v1alpha1.SlotStatus {
	layout := slots.Layout([]slots.Node{{Name: "node-00", ID: "00"}, {Name: "node-01", ID: "01"}}, 2)
	return slots.Statuses(layout, nil)
}

// withSlots is tb and its slot slices, holding statuses.
func withSlots(tb *v1alpha1.TestBed, statuses []v1alpha1.SlotStatus) []client.Object {
	out := []client.Object{tb}
	for _, s := range slotslices.Build(tb, statuses) {
		out = append(out, &s)
	}
	return out
}

// newTestHandler serves the handler on a fake cluster holding objs; the fake client is both
// the cache and the writer.
func newTestHandler(t testing.TB, objs ...client.Object) (*Handler, *Reserver, client.Client) {
	t.Helper()
	return newInterceptedHandler(t, interceptor.Funcs{}, objs...)
}

// newInterceptedHandler is newTestHandler with funcs seeing every call to the fake cluster.
func newInterceptedHandler(t testing.TB, funcs interceptor.Funcs, objs ...client.Object) (*Handler, *Reserver, client.Client) {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.TestBed{}).
		WithIndex(&corev1.Pod{}, GhostIndex, func(o client.Object) []string {
			if v := GhostIndexValue(o.(*corev1.Pod)); v != "" {
				return []string{v}
			}
			return nil
		}).
		WithObjects(objs...)
	// Pods of the job "job" are granted slots of bed, unless the test has a job of its own.
	if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*v1alpha1.BatchJob); return ok }) {
		b = b.WithObjects(grantedJob("bed"))
	}
	// A test bed given without slices gets testSlots.
	if slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*v1alpha1.TestBed); return ok }) &&
		!slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*v1alpha1.SlotSlice); return ok }) {
		b = b.WithObjects(withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), testSlots())[1:]...)
	}
	if funcs.SubResourceCreate == nil {
		funcs.SubResourceCreate = fakeBinding
	}
	cl := b.WithInterceptorFuncs(funcs).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
	return NewHandler(r, slog.New(slog.DiscardHandler), nil), r, cl
}

// fakeBinding plays the API server's pods/binding for the fake client, which has none: the
// pod named, under the binding's UID and not bound yet, gets the target node and the
// binding's annotations. The real one is tested on a real API server.
func fakeBinding(ctx context.Context, cl client.Client, sub string, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	b, ok := subResource.(*corev1.Binding)
	if sub != "binding" || !ok {
		return cl.SubResource(sub).Create(ctx, obj, subResource, opts...)
	}
	var pod corev1.Pod
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), &pod); err != nil {
		return err
	}
	if b.UID != "" && b.UID != pod.UID || pod.Spec.NodeName != "" {
		return apierrors.NewConflict(corev1.Resource("pods/binding"), pod.Name, fmt.Errorf("uid %s or bound already (%q)", pod.UID, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = b.Target.Name
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, b.Annotations)
	return cl.Update(ctx, &pod)
}

func bindArgs(p *corev1.Pod, node string) extenderv1.ExtenderBindingArgs {
	return extenderv1.ExtenderBindingArgs{PodName: p.Name, PodNamespace: p.Namespace, PodUID: p.UID, Node: node}
}

// call posts body to path and decodes the answer, which must be JSON with HTTP 200.
func call(t testing.TB, h http.Handler, path string, body any) (int, map[string]any) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(data)))
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), "answer %q is not JSON", rec.Body.String())
	return rec.Code, out
}

func filterArgs(p *corev1.Pod) extenderv1.ExtenderArgs {
	return extenderv1.ExtenderArgs{Pod: p, NodeNames: &[]string{"node-00", "node-01"}}
}

// A request that names a pod the cluster has not under that name and UID is refused, and
// neither the pod nor the test bed changes.
func TestHandler_RefusesARequestForAPodThatIsNotTheLiveOne(t *testing.T) {
	live := makePod("exec").Obj()
	deleting := makePod("leaving").Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"example.com/hold"} // the fake client keeps it only with one
	cases := map[string]struct {
		named *corev1.Pod
		want  string
	}{
		"a pod that does not exist": {makePod("ghost-of-nothing").Obj(), "pod default/ghost-of-nothing does not exist"},
		"a made-up uid":             {makePod("exec").UID("made-up").Obj(), "pod default/exec has uid uid-exec, the request names uid made-up"},
		"a bound pod":               {makePod("bound").Node("node-01").Obj(), "pod default/bound is bound to node node-01 already"},
		"a pod being deleted":       {deleting, "pod default/leaving is being deleted"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, r, cl := newTestHandler(t, testobjects.TestBed("bed").UID("bed-uid").Obj(), live.DeepCopy(), makePod("bound").Node("node-01").Obj(), deleting.DeepCopy())
			for _, verb := range []string{"/filter", "/preempt", "/bind"} {
				var body any = filterArgs(tc.named)
				switch verb {
				case "/preempt":
					body = extenderv1.ExtenderPreemptionArgs{Pod: tc.named}
				case "/bind":
					body = bindArgs(tc.named, "node-00")
				}
				code, out := call(t, h, verb, body)
				require.Equal(t, http.StatusOK, code)
				require.Contains(t, out["Error"], ErrNotThePod.Error(), verb)
				require.Contains(t, out["Error"], tc.want, verb)
				require.Nil(t, out["NodeNames"], "no node for a pod that is not the live one")
			}
			var got corev1.Pod
			require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(live), &got))
			require.NotContains(t, got.Annotations, v1alpha1.SlotClaimAnnotation, "the live pod was claimed")
			require.Zero(t, r.Beds(), "a refused call made test bed state")
		})
	}
}

// The decision is made on the cluster's copy of the pod: slot ids or a test bed that the
// request makes up for a real pod count for nothing.
func TestHandler_DecidesOnTheClusterCopyOfThePod(t *testing.T) {
	pod := makePod("exec").SlotIDs("3").Obj()
	h, _, cl := newTestHandler(t, testobjects.TestBed("bed").UID("bed-uid").Obj(), pod.DeepCopy())
	forged := makePod("exec").SlotIDs("0").Bed("other").Obj()

	code, out := call(t, h, "/filter", filterArgs(forged))
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, out["Error"])
	require.Equal(t, []any{"node-01"}, out["NodeNames"], "slot 3 is on node-01")

	code, out = call(t, h, "/bind", bindArgs(pod, "node-01"))
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, out["Error"])
	var got corev1.Pod
	require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
	slot, ok := slots.ProvenSlot(&got)
	require.True(t, ok)
	require.EqualValues(t, 3, slot, "the pod took a slot its own annotation does not allow")
}

// /filter writes nothing for the pod; /bind binds it to its slot's node with its claim in
// the one write, and counts the call as bound.
func TestHandler_BindsThePodIntoTheSlotFilterReserved(t *testing.T) {
	pod := makePod("exec").SlotIDs("3,1").Obj()
	var writes []string
	h, _, cl := newInterceptedHandler(t, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				writes = append(writes, "patch "+obj.GetName())
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
			writes = append(writes, sub+" "+obj.GetName())
			return fakeBinding(ctx, cl, sub, obj, subResource, opts...)
		},
	}, testobjects.TestBed("bed").UID("bed-uid").Obj(), pod.DeepCopy())

	_, out := call(t, h, "/filter", filterArgs(pod))
	require.Equal(t, []any{"node-01"}, out["NodeNames"])
	require.Empty(t, writes, "/filter wrote for the pod")

	_, out = call(t, h, "/bind", bindArgs(pod, "node-01"))
	require.Empty(t, out["Error"])
	require.Equal(t, []string{"binding exec"}, writes)
	var got corev1.Pod
	require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
	require.Equal(t, "node-01", got.Spec.NodeName)
	require.Equal(t, slots.SlotClaim(3, pod.UID), got.Annotations[v1alpha1.SlotClaimAnnotation], "the first of the pod's slot ids, 3")
	require.Equal(t, 1.0, counted(t, h.requests.WithLabelValues("bind", "bound")))
}

// A binding the extender holds no reservation for (it restarted since its /filter answer)
// takes a free slot of the pod's on the scheduler's node, or fails without a write: the
// scheduler then tries the pod again from the start.
func TestHandler_BindWithoutAReservationTakesAFreeSlotOfTheNodeOrFails(t *testing.T) {
	t.Run("a free slot on the node", func(t *testing.T) {
		pod := makePod("exec").SlotIDs("3").Obj()
		h, _, cl := newTestHandler(t, testobjects.TestBed("bed").UID("bed-uid").Obj(), pod.DeepCopy())
		_, out := call(t, h, "/bind", bindArgs(pod, "node-01"))
		require.Empty(t, out["Error"])
		var got corev1.Pod
		require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
		slot, ok := slots.ProvenSlot(&got)
		require.True(t, ok)
		require.EqualValues(t, 3, slot)
		require.Equal(t, "node-01", got.Spec.NodeName)
	})
	cases := map[string]struct {
		slots func() []v1alpha1.SlotStatus
		node  string
	}{
		"the pod's slot is on another node": {testSlots, "node-00"},
		"the pod's slot is held by another pod": {func() []v1alpha1.SlotStatus {
			s := testSlots()
			for i := range s {
				if s[i].Position == 3 {
					s[i].State, s[i].PodName, s[i].PodUID = v1alpha1.SlotOccupied, "other", "uid-other"
				}
			}
			return s
		}, "node-01"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := makePod("exec").SlotIDs("3").Obj()
			h, _, cl := newTestHandler(t, append(withSlots(testobjects.TestBed("bed").UID("bed-uid").Obj(), tc.slots()), pod.DeepCopy(), makePod("other").Node("node-01").Obj())...)
			_, out := call(t, h, "/bind", bindArgs(pod, tc.node))
			require.Contains(t, out["Error"], "slot")
			require.Equal(t, 1.0, counted(t, h.requests.WithLabelValues("bind", "no_slot")))
			var got corev1.Pod
			require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
			require.Empty(t, got.Spec.NodeName, "bound without a slot")
			require.NotContains(t, got.Annotations, v1alpha1.SlotClaimAnnotation)
		})
	}
}

// A binding that fails for another reason than the pod being gone keeps the reservation:
// the write may have gone through all the same. The pod, tried again, gets the same slot,
// and no other pod gets it meanwhile.
func TestHandler_AFailedBindingKeepsTheSlotForThePod(t *testing.T) {
	pod := makePod("exec").SlotIDs("3,1").Obj()
	fail := true
	h, _, _ := newInterceptedHandler(t, interceptor.Funcs{
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
			if fail {
				return apierrors.NewTimeoutError("the binding's answer was lost", 1)
			}
			return fakeBinding(ctx, cl, sub, obj, subResource, opts...)
		},
	}, testobjects.TestBed("bed").UID("bed-uid").Obj(), pod.DeepCopy(), makePod("rival").SlotIDs("3").Obj())

	_, out := call(t, h, "/filter", filterArgs(pod))
	require.Equal(t, []any{"node-01"}, out["NodeNames"])
	_, out = call(t, h, "/bind", bindArgs(pod, "node-01"))
	require.Contains(t, out["Error"], "the binding's answer was lost")

	_, out = call(t, h, "/filter", filterArgs(makePod("rival").SlotIDs("3").Obj()))
	require.Empty(t, out["NodeNames"], "a rival took the slot of a pod whose binding may stand")
	require.NotEmpty(t, out["FailedNodes"])
	fail = false
	_, out = call(t, h, "/filter", filterArgs(pod))
	require.Equal(t, []any{"node-01"}, out["NodeNames"])
	_, out = call(t, h, "/bind", bindArgs(pod, "node-01"))
	require.Empty(t, out["Error"])
}

// A /bind body must name the pod and the node in full.
func TestHandler_RefusesAnIncompleteBinding(t *testing.T) {
	pod := makePod("exec").Obj()
	h, r, _ := newTestHandler(t, testobjects.TestBed("bed").UID("bed-uid").Obj(), pod.DeepCopy())
	for name, body := range map[string]any{
		"no node":     bindArgs(pod, ""),
		"no uid":      extenderv1.ExtenderBindingArgs{PodName: "exec", PodNamespace: "default", Node: "node-00"},
		"no name":     extenderv1.ExtenderBindingArgs{PodNamespace: "default", PodUID: pod.UID, Node: "node-00"},
		"not an args": []string{"exec"},
	} {
		code, out := call(t, h, "/bind", body)
		require.Equal(t, http.StatusOK, code, name)
		require.Contains(t, out["Error"], "malformed request", name)
	}
	require.Zero(t, r.Beds())
}

// Requests for pods that name test beds which do not exist leave no state and no goroutine
// behind, however many there are; a deleted test bed takes its state and flusher along.
func TestHandler_UnknownTestBedsCostNothingThatStays(t *testing.T) {
	const pods = 10_000
	objs := []client.Object{testobjects.TestBed("bed").UID("bed-uid").Obj(), grantedJob("bed")}
	rng := rand.New(rand.NewPCG(14, 14))
	named := make([]*corev1.Pod, pods)
	for i := range named {
		// Each pod's job holds a grant in the pod's bed: the calls get past the grant check
		// to the test bed's.
		bed, job := fmt.Sprintf("bed-%x", rng.Uint64()), "job-"+strconv.Itoa(i)
		named[i] = makePod("p" + strconv.Itoa(i)).Bed(bed).Job(job).Obj()
		objs = append(objs, named[i], grantedJobNamed(job, bed))
	}
	h, r, cl := newTestHandler(t, objs...)

	settle := func() (int, uint64) {
		var m runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		time.Sleep(50 * time.Millisecond) // let exiting goroutines finish
		runtime.ReadMemStats(&m)
		return runtime.NumGoroutine(), m.HeapAlloc
	}
	// One call for the real bed first: its state and flusher are the one thing that stays.
	code, out := call(t, h, "/filter", filterArgs(makePod("known").Obj()))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, out["Error"], "does not exist", "pod known is not in the cluster")
	require.NoError(t, cl.Create(context.Background(), makePod("known").Obj()))
	_, out = call(t, h, "/filter", filterArgs(makePod("known").Obj()))
	require.Empty(t, out["Error"])
	require.Equal(t, 1, r.Beds())
	goroutines, heap := settle()

	for i, p := range named {
		verb, body := "/filter", any(filterArgs(p))
		if i%2 == 1 {
			verb, body = "/preempt", extenderv1.ExtenderPreemptionArgs{Pod: p}
		}
		_, out := call(t, h, verb, body)
		require.Contains(t, out["Error"], ErrUnknownTestBed.Error())
	}
	goroutinesAfter, heapAfter := settle()
	t.Logf("after %d calls for unknown test beds: %d test bed states, goroutines %d -> %d, heap %d KiB -> %d KiB",
		pods, r.Beds(), goroutines, goroutinesAfter, heap>>10, heapAfter>>10)
	require.Equal(t, 1, r.Beds(), "state was made for test beds that do not exist")
	// Measured: the goroutine count does not move, and the heap moves by well under a MiB
	// (the fake client's own caches, GC noise). Without the check, each unknown bed kept a
	// state and a flusher goroutine: 10,000 goroutines and several MiB.
	require.LessOrEqual(t, goroutinesAfter, goroutines+5, "goroutines grew with the unknown test beds")
	require.Less(t, int64(heapAfter)-int64(heap), int64(2<<20), "the heap grew with the unknown test beds")

	r.TestBedDeleted(testobjects.TestBed("bed").UID("bed-uid").Obj())
	goroutinesGone, _ := settle()
	require.Zero(t, r.Beds())
	require.Less(t, goroutinesGone, goroutinesAfter, "the deleted bed's flusher still runs")
}

// A TestBed deleted and created again keeps the state the new one has, when the deletion of
// the old one is seen late.
func TestReserver_ALateDeletionKeepsTheNewTestBedsState(t *testing.T) {
	h, r, _ := newTestHandler(t, testobjects.TestBed("bed").UID("bed-uid").Obj(), makePod("exec").Obj())
	_, out := call(t, h, "/filter", filterArgs(makePod("exec").Obj()))
	require.Empty(t, out["Error"])
	old := testobjects.TestBed("bed").UID("an-older-bed").Obj()
	r.TestBedDeleted(old)
	require.Equal(t, 1, r.Beds())
}

// The "no slot" answer, written by hand, is what encoding/json makes of the same result,
// whatever the names and reasons hold.
func TestNoSlotAnswer_IsTheJSONOfTheResult(t *testing.T) {
	noSlot := &slots.NoSlotError{
		Reason:     "none of the pod's slots [1 3] is free on a candidate node",
		Nodes:      map[string]string{"node-01": `slot 3 is reserved by "x" <&>`, "node-09": "not a candidate"},
		OtherNodes: "the node holds none of the pod's slots [1 3]",
	}
	candidates := []string{"node-00", "node-01", "nöde\"2\n", "node-00", "<b>"}
	got := noSlotAnswer{candidates, noSlot}.appendJSON(nil)
	require.True(t, json.Valid(got), "%s", got)
	require.Equal(t, byte('\n'), got[len(got)-1], "encoding/json ends an answer with a newline")

	failed := extenderv1.FailedNodesMap{}
	for _, n := range candidates {
		failed[n] = noSlot.OtherNodes
		if why, ok := noSlot.Nodes[n]; ok {
			failed[n] = why
		}
	}
	want, err := json.Marshal(extenderv1.ExtenderFilterResult{NodeNames: &[]string{}, FailedNodes: failed})
	require.NoError(t, err)
	var gotValue, wantValue any
	require.NoError(t, json.Unmarshal(got, &gotValue))
	require.NoError(t, json.Unmarshal(want, &wantValue))
	require.Equal(t, wantValue, gotValue)
}
