package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// memoryCache serves one TestBed and its ghosts the way the extender's informer cache does
// (no deep copy of TestBeds, the ghost field index), so a benchmark measures the handler.
type memoryCache struct {
	bed    *v1alpha1.TestBed
	ghosts map[string]corev1.Pod // by GhostIndex value
	pods   map[client.ObjectKey]*corev1.Pod
}

func (m *memoryCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *v1alpha1.TestBed:
		if key.Name == m.bed.Name && key.Namespace == m.bed.Namespace {
			*o = *m.bed
			return nil
		}
	case *corev1.Pod:
		if p, ok := m.pods[key]; ok {
			p.DeepCopyInto(o) // as the informer cache does for pods
			return nil
		}
	}
	return fmt.Errorf("memoryCache has no %T %s", obj, key)
}

func (m *memoryCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	pods, ok := list.(*corev1.PodList)
	if !ok {
		return fmt.Errorf("memoryCache lists pods only, not %T", list)
	}
	pods.Items = pods.Items[:0]
	if o.FieldSelector != nil {
		key, ok := o.FieldSelector.RequiresExactMatch(GhostIndex)
		if g, found := m.ghosts[key]; ok && found {
			pods.Items = append(pods.Items, g)
		}
		return nil
	}
	for _, g := range m.ghosts {
		if o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(g.Labels)) {
			pods.Items = append(pods.Items, g)
		}
	}
	return nil
}

// benchBed is 1,000 nodes x 8 slots with the first half of the slots occupied, and the pod
// "held" holding the last slot.
func benchBed() (*memoryCache, []string) {
	const nodes, perNode = 1000, 8
	in := make([]slots.Node, nodes)
	names := make([]string, nodes)
	for i := range in {
		names[i] = fmt.Sprintf("node-%04d", i)
		in[i] = slots.Node{Name: names[i], ID: strconv.Itoa(i)}
	}
	statuses := slots.Statuses(slots.Layout(in, perNode), nil)
	for i := range len(statuses) / 2 {
		_ = slots.Reserve(&statuses[i], slots.Pod{Name: "p" + strconv.Itoa(i), UID: types.UID("u" + strconv.Itoa(i))})
	}
	last := &statuses[len(statuses)-1]
	_ = slots.Reserve(last, slots.Pod{Name: "held", UID: "held"})
	m := &memoryCache{
		bed: &v1alpha1.TestBed{
			ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default", UID: "bed", ResourceVersion: "1"},
			Status:     v1alpha1.TestBedStatus{Slots: statuses},
		},
		ghosts: map[string]corev1.Pod{},
	}
	for _, s := range statuses {
		g := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("ghost-%s-%d", s.NodeName, s.PositionOnNode), Namespace: "default",
			UID:    types.UID(fmt.Sprintf("g-%d", s.Position)),
			Labels: map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.GhostLabel: "true", v1alpha1.PositionOnNodeLabel: strconv.Itoa(int(s.PositionOnNode))},
		}, Spec: corev1.PodSpec{NodeName: s.NodeName}}
		m.ghosts[GhostIndexValue(&g)] = g
	}
	return m, names
}

// heldPod is the pod that holds the last slot and may take 64 slots of the upper half, as
// an executor of a 64-slot job does.
func heldPod(m *memoryCache) *corev1.Pod {
	n := len(m.bed.Status.Slots)
	ids := make([]byte, 0, 6*64)
	for i := n - 64; i < n; i++ {
		if len(ids) > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, int64(i), 10)
	}
	last := m.bed.Status.Slots[n-1]
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "held", Namespace: "default", UID: "held",
		Labels: map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.SlotIDLabel: strconv.Itoa(int(last.Position))},
		Annotations: map[string]string{
			v1alpha1.SlotIDsAnnotation:   string(ids),
			v1alpha1.SlotClaimAnnotation: slots.SlotClaim(last.Position, "held"),
		},
	}}
}

func benchHandler(b *testing.B, m *memoryCache) *Handler {
	p := heldPod(m)
	m.pods = map[client.ObjectKey]*corev1.Pod{client.ObjectKeyFromObject(p): p}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	r := NewReserver(ctx, m, nil, slog.New(slog.DiscardHandler))
	return NewHandler(r, slog.New(slog.DiscardHandler), nil)
}

// serve makes one call; into, if not nil, receives the decoded answer.
func serve(b *testing.B, h http.Handler, path string, body []byte, into any) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: HTTP %d", path, rec.Code)
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandler_Filter is one /filter call as kube-scheduler makes it with
// nodeCacheCapable: the pod (64 allowed slot ids in its annotation) and the names of 1,000
// candidate nodes in, one node out. The pod holds its slot already, which is every /filter
// after a preemption; a first reservation adds the label write, a round trip to the API
// server.
func BenchmarkHandler_Filter(b *testing.B) {
	m, names := benchBed()
	h := benchHandler(b, m)
	body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: heldPod(m), NodeNames: &names})
	if err != nil {
		b.Fatal(err)
	}
	want := m.bed.Status.Slots[len(m.bed.Status.Slots)-1].NodeName
	var out extenderv1.ExtenderFilterResult
	serve(b, h, "/filter", body, &out)
	if out.Error != "" || out.NodeNames == nil || len(*out.NodeNames) != 1 || (*out.NodeNames)[0] != want {
		b.Fatalf("answer %+v, want node %s", out, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, "/filter", body, nil)
	}
}

// BenchmarkHandler_Preempt is one /preempt call with the single candidate the slot profile's
// preemption settings produce: the answer names the slot's node and its ghost.
func BenchmarkHandler_Preempt(b *testing.B) {
	m, names := benchBed()
	h := benchHandler(b, m)
	args := extenderv1.ExtenderPreemptionArgs{
		Pod:                   heldPod(m),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{names[0]: {Pods: []*extenderv1.MetaPod{{UID: "g-0"}}}},
	}
	body, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	last := m.bed.Status.Slots[len(m.bed.Status.Slots)-1]
	wantGhost := m.ghosts[ghostKey("default", "bed", last.NodeName, strconv.Itoa(int(last.PositionOnNode)))].UID
	var out preemptResult
	serve(b, h, "/preempt", body, &out)
	v := out.NodeNameToMetaVictims[last.NodeName]
	if out.Error != "" || v == nil || len(v.Pods) != 1 || v.Pods[0].UID != string(wantGhost) {
		b.Fatalf("answer %+v, want ghost %s on %s", out, wantGhost, last.NodeName)
	}
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, "/preempt", body, nil)
	}
}

var _ client.Reader = (*memoryCache)(nil)
