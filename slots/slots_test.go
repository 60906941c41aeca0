package slots

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
)

func nodes(ids ...string) []Node {
	out := make([]Node, len(ids))
	for i, id := range ids {
		out[i] = Node{Name: "node-" + id, ID: id}
	}
	return out
}

// positionsByNode renders a layout as node -> positions, the way a person checks it.
func positionsByNode(layout []Slot) map[string][]int32 {
	out := map[string][]int32{}
	for _, s := range layout {
		out[s.NodeName] = append(out[s.NodeName], s.Position)
	}
	return out
}

func TestLayout_RoundRobinInLabelOrder(t *testing.T) {
	cases := map[string]struct {
		nodes        []Node
		slotsPerNode int32
		want         map[string][]int32
	}{
		"two nodes, two slots": {
			nodes: nodes("b", "a"), slotsPerNode: 2,
			want: map[string][]int32{"node-a": {0, 2}, "node-b": {1, 3}},
		},
		"numeric label values order numerically": {
			nodes: nodes("10", "2", "1"), slotsPerNode: 1,
			want: map[string][]int32{"node-1": {0}, "node-2": {1}, "node-10": {2}},
		},
		"equal label values order by name": {
			nodes:        []Node{{Name: "y", ID: "0"}, {Name: "x", ID: "0"}},
			slotsPerNode: 1,
			want:         map[string][]int32{"x": {0}, "y": {1}},
		},
		"no nodes":      {nodes: nil, slotsPerNode: 3, want: map[string][]int32{}},
		"zero per node": {nodes: nodes("a"), slotsPerNode: 0, want: map[string][]int32{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, positionsByNode(Layout(tc.nodes, tc.slotsPerNode))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestLayout_PositionsUniqueInBedAndOnNode(t *testing.T) {
	layout := Layout(nodes("3", "1", "2", "0"), 5)
	if len(layout) != 20 {
		t.Fatalf("got %d slots, want 20", len(layout))
	}
	seen := map[int32]bool{}
	onNode := map[string]map[int32]bool{}
	for i, s := range layout {
		if s.Position != int32(i) {
			t.Errorf("slot %d has position %d: layout must be ordered by position", i, s.Position)
		}
		if seen[s.Position] {
			t.Errorf("position %d twice", s.Position)
		}
		seen[s.Position] = true
		if onNode[s.NodeName] == nil {
			onNode[s.NodeName] = map[int32]bool{}
		}
		if onNode[s.NodeName][s.PositionOnNode] {
			t.Errorf("position on node %d twice on %s", s.PositionOnNode, s.NodeName)
		}
		onNode[s.NodeName][s.PositionOnNode] = true
	}
}

func TestStatuses_KeepOccupationOfSlotsThatStay(t *testing.T) {
	before := Statuses(Layout(nodes("0", "1"), 2), nil) // node-0: 0,2  node-1: 1,3
	before[2].State, before[2].PodName, before[2].PodUID = v1alpha1.SlotOccupied, "exec-1", "u1"
	before[1].State, before[1].PodName, before[1].PodUID = v1alpha1.SlotReserved, "exec-2", "u2"

	// node-1 leaves: node-0 now holds positions 0 and 1; position 2 is gone.
	after := Statuses(Layout(nodes("0"), 2), before)
	want := []v1alpha1.SlotStatus{
		{Position: 0, PositionOnNode: 0, NodeID: "0", NodeName: "node-0", State: v1alpha1.SlotFree},
		{Position: 1, PositionOnNode: 1, NodeID: "0", NodeName: "node-0", State: v1alpha1.SlotFree},
	}
	if diff := cmp.Diff(want, after); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}

	// Same shape again: the occupant of slot 2 stays.
	again := Statuses(Layout(nodes("0", "1"), 2), before)
	if again[2].State != v1alpha1.SlotOccupied || again[2].PodUID != "u1" || again[1].PodUID != "u2" {
		t.Errorf("occupation lost on an unchanged layout: %+v", again)
	}
}

func TestOccupation_StateMachine(t *testing.T) {
	a := Pod{Name: "a", UID: "ua"}
	b := Pod{Name: "b", UID: "ub"}
	type step struct {
		op      func(*v1alpha1.SlotStatus, Pod) error
		pod     Pod
		wantErr error
		want    v1alpha1.SlotState
	}
	cases := map[string][]step{
		"free -> reserved -> occupied -> free": {
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Occupy, a, nil, v1alpha1.SlotOccupied},
			{Release, a, nil, v1alpha1.SlotFree},
		},
		"retries are no-ops": {
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Occupy, a, nil, v1alpha1.SlotOccupied},
			{Occupy, a, nil, v1alpha1.SlotOccupied},
			{Release, a, nil, v1alpha1.SlotFree},
			{Release, a, nil, v1alpha1.SlotFree},
		},
		"a reserved slot is not reserved twice": {
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Reserve, b, ErrTaken, v1alpha1.SlotReserved},
			{Occupy, b, ErrTaken, v1alpha1.SlotReserved},
			{Release, b, ErrNotHolder, v1alpha1.SlotReserved},
		},
		"an occupied slot is not reserved": {
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Occupy, a, nil, v1alpha1.SlotOccupied},
			{Reserve, b, ErrTaken, v1alpha1.SlotOccupied},
		},
		"occupy needs a reservation": {
			{Occupy, a, ErrNotReserved, v1alpha1.SlotFree},
		},
		"a reservation that never ran is released": {
			{Reserve, a, nil, v1alpha1.SlotReserved},
			{Release, a, nil, v1alpha1.SlotFree},
			{Reserve, b, nil, v1alpha1.SlotReserved},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			s := &v1alpha1.SlotStatus{Position: 7, State: v1alpha1.SlotFree}
			for i, st := range steps {
				err := st.op(s, st.pod)
				if !errors.Is(err, st.wantErr) {
					t.Fatalf("step %d: err %v, want %v", i, err, st.wantErr)
				}
				if s.State != st.want {
					t.Fatalf("step %d: state %s, want %s", i, s.State, st.want)
				}
				if s.State == v1alpha1.SlotFree && (s.PodName != "" || s.PodUID != "") {
					t.Fatalf("step %d: a free slot names pod %q", i, s.PodName)
				}
			}
		})
	}
}

func TestParseSlotIDs(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []int32
		wantErr string
	}{
		"two ids in order":   {in: "5, 3", want: []int32{5, 3}},
		"one id":             {in: "0", want: []int32{0}},
		"missing annotation": {in: "", wantErr: "the pod has no slotplane.io/slot-ids annotation"},
		"not a number":       {in: "3,x", wantErr: `"x" is not a slot position`},
		"negative":           {in: "-1", wantErr: `"-1" is not a slot position`},
		"empty element":      {in: "3,,4", wantErr: `"" is not a slot position`},
		"repeated":           {in: "3,3", wantErr: "slot 3 is listed twice"},
		"beyond int32":       {in: "4294967296", wantErr: "is not a slot position"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSlotIDs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadSlotIDs) || !contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// bed is a 4-node x 2-slot test bed: node-0 holds 0,4; node-1 1,5; node-2 2,6; node-3 3,7.
func bed() []v1alpha1.SlotStatus { return Statuses(Layout(nodes("0", "1", "2", "3"), 2), nil) }

func TestChoose(t *testing.T) {
	taken := func(statuses []v1alpha1.SlotStatus, pos int32, state v1alpha1.SlotState, uid types.UID) []v1alpha1.SlotStatus {
		statuses[pos].State, statuses[pos].PodName, statuses[pos].PodUID = state, "pod-"+string(uid), uid
		return statuses
	}
	cases := map[string]struct {
		statuses   []v1alpha1.SlotStatus
		uid        types.UID
		allowed    []int32
		candidates []string
		wantSlot   int32
		wantHeld   bool
		wantErr    string
		wantNodes  map[string]string
	}{
		"preempt: first free allowed slot, any node": {
			statuses: bed(), uid: "p", allowed: []int32{3, 5}, wantSlot: 3,
		},
		"preempt: allowed order is the preference": {
			statuses: bed(), uid: "p", allowed: []int32{5, 3}, wantSlot: 5,
		},
		"filter: only candidate nodes count": {
			statuses: bed(), uid: "p", allowed: []int32{3, 5}, candidates: []string{"node-0", "node-1"}, wantSlot: 5,
		},
		"a taken slot is skipped": {
			statuses: taken(bed(), 3, v1alpha1.SlotReserved, "other"), uid: "p", allowed: []int32{3, 5}, wantSlot: 5,
		},
		"a retry gets the slot it holds": {
			statuses: taken(bed(), 5, v1alpha1.SlotReserved, "p"), uid: "p", allowed: []int32{3, 5}, wantSlot: 5, wantHeld: true,
		},
		"a held slot off the candidates is not swapped for another": {
			statuses: taken(bed(), 5, v1alpha1.SlotReserved, "p"), uid: "p", allowed: []int32{3, 5},
			candidates: []string{"node-3"}, wantErr: "the pod holds slot 5 on node node-1, which is not a candidate",
		},
		"all allowed slots taken": {
			statuses: taken(taken(bed(), 3, v1alpha1.SlotOccupied, "x"), 5, v1alpha1.SlotReserved, "y"),
			uid:      "p", allowed: []int32{3, 5}, candidates: []string{"node-0", "node-1", "node-3"},
			wantErr:   "none of the pod's slots [3 5] is free on a candidate node",
			wantNodes: map[string]string{"node-3": "slot 3 is occupied by pod-x", "node-1": "slot 5 is reserved by pod-y"},
		},
		"a slot the bed does not have": {
			statuses: bed(), uid: "p", allowed: []int32{3, 99}, candidates: []string{"node-0"},
			wantErr: "the test bed has no slot [99]",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := NewIndex(tc.statuses).Choose(tc.uid, tc.allowed, tc.candidates)
			if tc.wantErr != "" {
				var noSlot *NoSlotError
				if !errors.As(err, &noSlot) || noSlot.Reason != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if tc.wantNodes != nil {
					if diff := cmp.Diff(tc.wantNodes, noSlot.Nodes); diff != "" {
						t.Errorf("node reasons (-want +got)\n%s", diff)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.statuses[d.Index].Position != d.Slot.Position {
				t.Errorf("Index %d points at slot %d, not the chosen %d", d.Index, tc.statuses[d.Index].Position, d.Slot.Position)
			}
			if d.Slot.Position != tc.wantSlot || d.Held != tc.wantHeld {
				t.Errorf("got slot %d held=%v, want %d held=%v", d.Slot.Position, d.Held, tc.wantSlot, tc.wantHeld)
			}
		})
	}
}

// The reason given for every other candidate node names a few of the pod's slots, not all:
// the answer repeats it for each of a thousand nodes. The overall reason names them all.
func TestChoose_OtherNodesNameAFewSlots(t *testing.T) {
	statuses := Statuses(Layout(nodes("0", "1", "2", "3", "4", "5"), 2), nil)
	var allowed, missing []int32
	for i := range statuses {
		statuses[i].State, statuses[i].PodName = v1alpha1.SlotOccupied, "busy"
		allowed = append(allowed, statuses[i].Position)
		missing = append(missing, int32(100+i))
	}
	if len(allowed) != 12 {
		t.Fatalf("the bed has %d slots, want 12", len(allowed))
	}
	cases := []struct {
		allowed                []int32
		wantReason, wantOthers string
	}{
		{allowed, "none of the pod's slots [0 1 2 3 4 5 6 7 8 9 10 11] is free on a candidate node",
			"the node holds none of the pod's slots [0 1 2 3 4 5 6 7 and 4 more]"},
		{missing, "the test bed has no slot [100 101 102 103 104 105 106 107 108 109 110 111]",
			"the test bed has no slot [100 101 102 103 104 105 106 107 and 4 more]"},
		{allowed[:reasonIDs], "none of the pod's slots [0 1 2 3 4 5 6 7] is free on a candidate node",
			"the node holds none of the pod's slots [0 1 2 3 4 5 6 7]"},
	}
	for _, tc := range cases {
		_, err := NewIndex(statuses).Choose("p", tc.allowed, []string{"elsewhere"})
		var noSlot *NoSlotError
		if !errors.As(err, &noSlot) {
			t.Fatalf("allowed %v: %v, want no slot", tc.allowed, err)
		}
		if noSlot.Reason != tc.wantReason || noSlot.OtherNodes != tc.wantOthers {
			t.Errorf("allowed %v: reason %q, other nodes %q; want %q, %q", tc.allowed, noSlot.Reason, noSlot.OtherNodes, tc.wantReason, tc.wantOthers)
		}
	}
}

func TestIndexReserveFollowsItsOwnReservations(t *testing.T) {
	statuses := bed()
	ix := NewIndex(statuses)
	a, b := Pod{Name: "pod-a", UID: "a"}, Pod{Name: "pod-b", UID: "b"}

	d, err := ix.Choose(a.UID, []int32{3, 5}, nil)
	if err != nil || d.Slot.Position != 3 {
		t.Fatalf("first choice: slot %d, %v; want 3", d.Slot.Position, err)
	}
	if _, err := ix.Reserve(3, a); err != nil {
		t.Fatal(err)
	}
	if statuses[d.Index].State != v1alpha1.SlotFree {
		t.Fatal("the index wrote through to the caller's statuses")
	}
	// b wants the same slots: 3 is gone, 5 is next; a asking again holds 3.
	if d, err := ix.Choose(b.UID, []int32{3, 5}, nil); err != nil || d.Slot.Position != 5 || d.Held {
		t.Fatalf("second pod: slot %d held=%v, %v; want 5, not held", d.Slot.Position, d.Held, err)
	}
	if d, err := ix.Choose(a.UID, []int32{3, 5}, nil); err != nil || d.Slot.Position != 3 || !d.Held {
		t.Fatalf("retry: slot %d held=%v, %v; want 3 held", d.Slot.Position, d.Held, err)
	}
	if _, err := ix.Reserve(3, b); !errors.Is(err, ErrTaken) {
		t.Errorf("reserving a's slot for b: %v, want ErrTaken", err)
	}
	if _, err := ix.Reserve(5, a); err == nil {
		t.Error("a pod reserved a second slot")
	}
	if _, err := ix.Reserve(99, b); err == nil {
		t.Error("reserved a slot the bed does not have")
	}
}

var slotSize = corev1.ResourceList{
	corev1.ResourceCPU:                         resource.MustParse("2"),
	corev1.ResourceMemory:                      resource.MustParse("4Gi"),
	corev1.ResourceName(v1alpha1.SlotResource): resource.MustParse("1"),
}

func ghost(node string, posOnNode int32, requests corev1.ResourceList) ObservedPod {
	return ObservedPod{
		Name: fmt.Sprintf("ghost-%s-%d", node, posOnNode), UID: types.UID(fmt.Sprintf("g-%s-%d", node, posOnNode)),
		NodeName: node, Ghost: true, Slot: -1, PositionOnNode: posOnNode, Requests: requests,
	}
}

func names(pods []ObservedPod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func positions(layout []Slot) []int32 {
	var out []int32
	for _, s := range layout {
		out = append(out, s.Position)
	}
	return out
}

func TestPlanGhosts(t *testing.T) {
	layout := Layout(nodes("0", "1"), 2) // node-0: 0 (pos 0), 2 (pos 1); node-1: 1, 3
	all := []ObservedPod{ghost("node-0", 0, slotSize), ghost("node-0", 1, slotSize), ghost("node-1", 0, slotSize), ghost("node-1", 1, slotSize)}
	bigger := slotSize.DeepCopy()
	bigger[corev1.ResourceCPU] = resource.MustParse("3")
	real := ObservedPod{Name: "exec-1", UID: "e1", NodeName: "node-1", Slot: 3, Requests: slotSize}
	terminating := func(p ObservedPod) ObservedPod { p.Terminating = true; return p }

	cases := map[string]struct {
		pods       []ObservedPod
		wantCreate []int32
		wantDelete []string
		wantKeep   int
		// What is held back; all empty means the plan is not in progress.
		wantHeldNodes []string
		wantHeldSlots []int32
		wantReason    string
	}{
		"empty cluster: every slot needs a ghost": {wantCreate: []int32{0, 1, 2, 3}},
		"all in place": {pods: all, wantKeep: 4},
		"a ghost of a node that left the bed is deleted": {
			pods: append(all[:4:4], ghost("node-9", 0, slotSize)), wantKeep: 4, wantDelete: []string{"ghost-node-9-0"},
		},
		"a resized slot recreates its ghost": {
			pods:       []ObservedPod{ghost("node-0", 0, bigger), all[1], all[2], all[3]},
			wantCreate: []int32{0}, wantDelete: []string{"ghost-node-0-0"}, wantKeep: 3,
		},
		"a real pod's slot loses its ghost": {
			pods: append(all[:4:4], real), wantKeep: 3, wantDelete: []string{"ghost-node-1-1"},
		},
		"a finished real pod gets its ghost back": {
			pods:       []ObservedPod{all[0], all[1], all[2], func() ObservedPod { p := real; p.Finished = true; return p }()},
			wantCreate: []int32{3}, wantKeep: 3,
		},
		"duplicates: one survives": {
			pods:     append(all[:4:4], func() ObservedPod { g := ghost("node-0", 0, slotSize); g.Name = "ghost-node-0-0-dup"; return g }()),
			wantKeep: 4, wantDelete: []string{"ghost-node-0-0-dup"},
		},
		"an unscheduled pod holding a slot holds back that slot alone": {
			// Slots 1 and 3 (node-1) have lost their ghosts; slot 1 is being given to exec-2.
			pods:       []ObservedPod{all[0], all[1], {Name: "exec-2", UID: "e2", Slot: 1}},
			wantCreate: []int32{3}, wantKeep: 2,
			wantHeldSlots: []int32{1}, wantReason: "held back: slot 1 (pod exec-2 is not scheduled yet)",
		},
		"a held slot's ghost is not deleted either": {
			pods:     []ObservedPod{all[0], all[1], ghost("node-1", 0, bigger), all[3], {Name: "exec-2", UID: "e2", Slot: 1}},
			wantKeep: 3, wantHeldSlots: []int32{1}, wantReason: "held back: slot 1 (pod exec-2 is not scheduled yet)",
		},
		"a pod the scheduler found no place for, holding no slot, waits beside the pass": {
			pods:     append(all[:4:4], ObservedPod{Name: "exec-9", Slot: -1, Unschedulable: true}),
			wantKeep: 4,
		},
		"a claimed pod marked unschedulable is still being placed": {
			pods:     append(all[:4:4], ObservedPod{Name: "exec-3", Slot: 2, Unschedulable: true}),
			wantKeep: 4, wantHeldSlots: []int32{2}, wantReason: "held back: slot 2 (pod exec-3 is not scheduled yet)",
		},
		"a pod not tried yet, holding no slot, holds nothing back": {
			// A pod whose slot claim was forged looks like this too: ObservePod drops the claim.
			pods:       []ObservedPod{all[1], all[2], all[3], {Name: "exec-4", Slot: -1}},
			wantCreate: []int32{0}, wantKeep: 3,
		},
		"a terminating ghost holds back its own node only": {
			pods:       []ObservedPod{terminating(all[0])},
			wantCreate: []int32{1, 3}, wantKeep: 1,
			wantHeldNodes: []string{"node-0"}, wantReason: "held back: node node-0 (pod ghost-node-0-0 is terminating)",
		},
		"a terminating real pod on node-0 does not stop node-1's ghosts": {
			// node-0 keeps its stale ghost and gets no new one; node-1 is reconciled.
			pods: []ObservedPod{
				terminating(ObservedPod{Name: "exec-7", UID: "e7", NodeName: "node-0", Slot: 0}),
				ghost("node-0", 1, bigger), ghost("node-1", 0, bigger),
			},
			wantCreate: []int32{1, 3}, wantDelete: []string{"ghost-node-1-0"},
			wantHeldNodes: []string{"node-0"}, wantReason: "held back: node node-0 (pod exec-7 is terminating)",
		},
		"a finished terminating pod holds nothing back": {
			pods:       []ObservedPod{all[0], all[1], all[2], func() ObservedPod { p := terminating(real); p.Finished = true; return p }()},
			wantCreate: []int32{3}, wantKeep: 3,
		},
		"both kinds at once, and the reason names the first pod by name": {
			pods: []ObservedPod{
				all[0], all[1],
				terminating(ObservedPod{Name: "exec-b", UID: "eb", NodeName: "node-0", Slot: -1}),
				terminating(ObservedPod{Name: "exec-a", UID: "ea", NodeName: "node-0", Slot: -1}),
				{Name: "exec-c", UID: "ec", Slot: 3},
			},
			wantCreate: []int32{1}, wantKeep: 2,
			wantHeldNodes: []string{"node-0"}, wantHeldSlots: []int32{3},
			wantReason: "held back: node node-0 (pod exec-a is terminating), slot 3 (pod exec-c is not scheduled yet)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			plan := PlanGhosts(layout, slotSize, tc.pods)
			wantInProgress := len(tc.wantHeldNodes)+len(tc.wantHeldSlots) > 0
			if plan.InProgress != wantInProgress || plan.Reason != tc.wantReason {
				t.Errorf("in progress %v %q, want %v %q", plan.InProgress, plan.Reason, wantInProgress, tc.wantReason)
			}
			if diff := cmp.Diff(tc.wantHeldNodes, plan.HeldNodes); diff != "" {
				t.Errorf("held nodes (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHeldSlots, plan.HeldSlots); diff != "" {
				t.Errorf("held slots (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCreate, positions(plan.Create)); diff != "" {
				t.Errorf("create (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, names(plan.Delete)); diff != "" {
				t.Errorf("delete (-want +got)\n%s", diff)
			}
			if len(plan.Keep) != tc.wantKeep {
				t.Errorf("keep %d, want %d", len(plan.Keep), tc.wantKeep)
			}
		})
	}
}

// A bed with many pods stuck keeps its reason short: it ends up in a status condition.
func TestPlanGhosts_ReasonNamesTheFirstFewHeldOnly(t *testing.T) {
	ids := []string{"0", "1", "2", "3", "4", "5", "6", "7"}
	var pods []ObservedPod
	for _, id := range ids {
		pods = append(pods, ObservedPod{Name: "exec-" + id, UID: types.UID("e" + id), NodeName: "node-" + id, Slot: -1, Terminating: true})
	}
	plan := PlanGhosts(Layout(nodes(ids...), 1), slotSize, pods)
	want := "held back: node node-0 (pod exec-0 is terminating), node node-1 (pod exec-1 is terminating), " +
		"node node-2 (pod exec-2 is terminating), node node-3 (pod exec-3 is terminating), " +
		"node node-4 (pod exec-4 is terminating), 3 more"
	if plan.Reason != want {
		t.Errorf("reason\n%s\nwant\n%s", plan.Reason, want)
	}
	if len(plan.HeldNodes) != 8 || len(plan.Create) != 0 {
		t.Errorf("held %v, create %v: every node is held back", plan.HeldNodes, positions(plan.Create))
	}
}

func TestSyncOccupation(t *testing.T) {
	statuses := bed()
	statuses[1].State, statuses[1].PodName, statuses[1].PodUID = v1alpha1.SlotReserved, "runs", "u-runs"
	statuses[2].State, statuses[2].PodName, statuses[2].PodUID = v1alpha1.SlotReserved, "pending", "u-pending"
	statuses[3].State, statuses[3].PodName, statuses[3].PodUID = v1alpha1.SlotOccupied, "done", "u-done"
	statuses[4].State, statuses[4].PodName, statuses[4].PodUID = v1alpha1.SlotOccupied, "gone", "u-gone"
	statuses[5].State, statuses[5].PodName, statuses[5].PodUID = v1alpha1.SlotReserved, "elsewhere", "u-else"
	pods := []ObservedPod{
		{Name: "runs", UID: "u-runs", NodeName: "node-1", Slot: 1},
		{Name: "pending", UID: "u-pending", Slot: 2},
		{Name: "done", UID: "u-done", NodeName: "node-3", Slot: 3, Finished: true},
		{Name: "elsewhere", UID: "u-else", NodeName: "node-0", Slot: 5},
		// Labelled by the extender before its status write: adopted.
		{Name: "labelled-running", UID: "u-lr", NodeName: "node-2", Slot: 6},
		{Name: "labelled-pending", UID: "u-lp", Slot: 7},
		{Name: "labelled-second", UID: "u-l2", Slot: 7}, // loses slot 7 to the first by name
		{Name: "labelled-wrong-node", UID: "u-lw", NodeName: "node-1", Slot: 0},
		{Name: "labelled-finished", UID: "u-lf", NodeName: "node-0", Slot: 0, Finished: true},
		{Name: "labelled-absent-slot", UID: "u-la", Slot: 99},
	}
	running := func(p ObservedPod) bool { return p.NodeName != "" }
	if !SyncOccupation(statuses, pods, running) {
		t.Fatal("reported no change")
	}
	got := map[int32]v1alpha1.SlotState{}
	for _, s := range statuses {
		got[s.Position] = s.State
	}
	want := map[int32]v1alpha1.SlotState{
		0: v1alpha1.SlotFree, 1: v1alpha1.SlotOccupied, 2: v1alpha1.SlotReserved, 3: v1alpha1.SlotFree,
		4: v1alpha1.SlotFree, 5: v1alpha1.SlotFree, 6: v1alpha1.SlotOccupied, 7: v1alpha1.SlotReserved,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if statuses[7].PodName != "labelled-pending" {
		t.Errorf("slot 7 went to %s, want labelled-pending (first by name)", statuses[7].PodName)
	}
	if SyncOccupation(statuses, pods, running) {
		t.Error("a second pass changed something: SyncOccupation must be idempotent")
	}
}

func TestFormatSlotIDs_RoundTrips(t *testing.T) {
	if got := FormatSlotIDs(nil); got != "" {
		t.Errorf("FormatSlotIDs(nil) = %q, want empty", got)
	}
	if got := FormatSlotIDs([]int32{12, 0, 4}); got != "12,0,4" {
		t.Errorf("FormatSlotIDs([12 0 4]) = %q, want \"12,0,4\"", got)
	}
	for _, ids := range [][]int32{{7}, {3, 5}, {12, 0, 4}} {
		got, err := ParseSlotIDs(FormatSlotIDs(ids))
		if err != nil {
			t.Fatalf("%v: %v", ids, err)
		}
		if diff := cmp.Diff(ids, got); diff != "" {
			t.Errorf("round trip of %v, order kept (-want +got):\n%s", ids, diff)
		}
	}
}

// A terminating pod holds back its node for a bounded time only: once it is stuck (overdue
// by more than StuckTerminating) its node is planned again, the stuck ghost still counted as
// its slot's ghost.
func TestPlanGhosts_AStuckPodHoldsBackForABoundedTime(t *testing.T) {
	layout := Layout(nodes("0", "1"), 2) // node-0: 0 and 2; node-1: 1 and 3
	stuckGhost := ghost("node-0", 0, slotSize)
	stuckGhost.Terminating = true
	pods := []ObservedPod{stuckGhost, ghost("node-1", 0, slotSize), ghost("node-1", 1, slotSize)}

	stuckGhost.Overdue = StuckTerminating / 2
	pods[0] = stuckGhost
	plan := PlanGhosts(layout, slotSize, pods)
	if !plan.InProgress || !slices.Equal(plan.HeldNodes, []string{"node-0"}) || len(plan.Create) != 0 {
		t.Fatalf("within the bound: held %v, create %v, in progress %v; want node-0 held, nothing created", plan.HeldNodes, positions(plan.Create), plan.InProgress)
	}

	stuckGhost.Overdue = StuckTerminating + time.Second
	pods[0] = stuckGhost
	plan = PlanGhosts(layout, slotSize, pods)
	if plan.InProgress || len(plan.HeldNodes) != 0 {
		t.Fatalf("past the bound: held %v, in progress %v (%s); want nothing held", plan.HeldNodes, plan.InProgress, plan.Reason)
	}
	if got := positions(plan.Create); !slices.Equal(got, []int32{2}) {
		t.Errorf("created ghosts for %v; want only slot 2 (slot 0 keeps its stuck ghost)", got)
	}
	if len(plan.Delete) != 0 {
		t.Errorf("deleted %v", names(plan.Delete))
	}
}

// A node that is not Ready is skipped: no ghost is made or removed there, its terminating
// pods hold nothing back, and nothing is in progress because of it.
func TestPlanGhosts_SkipsNodesThatAreNotReady(t *testing.T) {
	ns := nodes("0", "1")
	ns[0].Unready = true
	layout := Layout(ns, 2)
	terminating := ghost("node-0", 0, slotSize)
	terminating.Terminating = true
	extra := ghost("node-0", 5, slotSize) // a ghost no slot wants: left for when the node is back
	plan := PlanGhosts(layout, slotSize, []ObservedPod{terminating, extra, ghost("node-1", 0, slotSize)})
	if plan.InProgress || len(plan.HeldNodes) != 0 {
		t.Errorf("in progress %v, held %v; a lost node holds nothing back", plan.InProgress, plan.HeldNodes)
	}
	if !slices.Equal(plan.SkippedNodes, []string{"node-0"}) {
		t.Errorf("skipped %v; want node-0", plan.SkippedNodes)
	}
	if got := positions(plan.Create); !slices.Equal(got, []int32{3}) {
		t.Errorf("created %v; want only node-1's missing slot 3", got)
	}
	if len(plan.Delete) != 0 {
		t.Errorf("deleted %v on a node that is not Ready", names(plan.Delete))
	}
	// Its slots keep their positions: the layout does not move when a node is lost.
	if got := positions(layout); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Errorf("positions %v", got)
	}
}

// A node with a taint ghosts do not tolerate (a cordon) gets no new ghost, bound past the
// taint by its node name, and its slots go to no new job, with the reason.
func TestPlanGhosts_SkipsNodesWithATaintGhostsDoNotTolerate(t *testing.T) {
	ns := nodes("0", "1")
	ns[0].Taint = "node.kubernetes.io/unschedulable"
	layout := Layout(ns, 2)
	plan := PlanGhosts(layout, slotSize, nil)
	if !slices.Equal(plan.SkippedNodes, []string{"node-0"}) {
		t.Errorf("skipped %v; want node-0", plan.SkippedNodes)
	}
	if got := positions(plan.Create); !slices.Equal(got, []int32{1, 3}) {
		t.Errorf("created %v; want node-1's slots 1 and 3", got)
	}
	if got := layout[0].Unavailable(); !strings.Contains(got, "taint node.kubernetes.io/unschedulable") {
		t.Errorf("slot 0 unavailable for %q", got)
	}
}

// A slot a running job holds has no ghost while the job's pod is away: none is made, and one
// still there goes (a pod of the job placed by room alone would otherwise sit beside it).
func TestPlanGhosts_AssignedSlotsHaveNoGhost(t *testing.T) {
	layout := Layout(nodes("0", "1"), 1) // slot 0 on node-0, slot 1 on node-1
	layout[0].Assigned, layout[1].Assigned = true, true
	old := ghost("node-1", 0, slotSize)
	plan := PlanGhosts(layout, slotSize, []ObservedPod{old})
	if len(plan.Create) != 0 {
		t.Errorf("created ghosts for %v, slots a running job holds", positions(plan.Create))
	}
	if !slices.Equal(names(plan.Delete), []string{old.Name}) || len(plan.Keep) != 0 {
		t.Errorf("delete %v keep %v; want the ghost gone", names(plan.Delete), names(plan.Keep))
	}
	layout[0].Assigned = false
	if got := positions(PlanGhosts(layout, slotSize, []ObservedPod{old}).Create); !slices.Equal(got, []int32{0}) {
		t.Errorf("once the job ended: created %v, want slot 0", got)
	}
}

// While a job holds any slot, nodes coming and going move no slot: the slots of a node that
// left stay (Leaving) while held and go once free, a new node's slots come after the highest
// position, and a node that comes back takes its old positions. Once nothing is held, the
// layout is round-robin again.
func TestRelayout_PositionsStayWhileHeld(t *testing.T) {
	four := nodes("0", "1", "2", "3") // round-robin: node-i holds i and i+4
	before := Statuses(Layout(four, 2), nil)
	occupied := map[int32]bool{1: true, 5: true} // a job on node-1's two slots
	held := func(s v1alpha1.SlotStatus) bool { return occupied[s.Position] }
	at := func(layout []Slot) map[int32]string {
		out := map[int32]string{}
		for _, s := range layout {
			tag := s.NodeName
			if s.Leaving {
				tag += " leaving"
			}
			if s.Unready {
				tag += " unready"
			}
			out[s.Position] = tag
		}
		return out
	}

	// node-1 loses the label, node-4 gains it: node-1's held slots stay, leaving; node-4's
	// come after position 7; nobody else moves.
	now := append(nodes("0", "2", "3"), Node{Name: "node-4", ID: "4"})
	got := Relayout(before, now, 2, held)
	want := map[int32]string{0: "node-0", 1: "node-1 leaving", 2: "node-2", 3: "node-3", 4: "node-0", 5: "node-1 leaving", 6: "node-2", 7: "node-3", 8: "node-4", 9: "node-4"}
	if diff := cmp.Diff(want, at(got)); diff != "" {
		t.Errorf("node-1 left, node-4 came (-want +got)\n%s", diff)
	}
	st := Statuses(got, before)
	if st[1].Unavailable == "" || st[0].Unavailable != "" {
		t.Errorf("a leaving slot is unavailable, the others are not: %+v %+v", st[0], st[1])
	}
	if free, _, _ := Count(st); free != 8 {
		t.Errorf("free slots %d, want 8: the leaving ones go to no new job", free)
	}
	if st[1].LeavingSince != nil {
		t.Errorf("a leaving slot without a time from the caller says it left at %v", st[1].LeavingSince)
	}
	left := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	got[1].LeavingSince, got[2].LeavingSince = left, left // slot 2 does not leave: its time is not kept
	st = Statuses(got, before)
	if st[1].LeavingSince == nil || !st[1].LeavingSince.Time.Equal(left) || st[2].LeavingSince != nil {
		t.Errorf("when the leaving slot's node left: %v, and the staying one's: %v", st[1].LeavingSince, st[2].LeavingSince)
	}

	// The job let go of slot 5: it goes; slot 1, still held, stays, and keeps when it
	// started leaving.
	delete(occupied, 5)
	got = Relayout(st, now, 2, held)
	delete(want, 5)
	if diff := cmp.Diff(want, at(got)); diff != "" {
		t.Errorf("slot 5 let go (-want +got)\n%s", diff)
	}
	if !got[1].LeavingSince.Equal(left) {
		t.Errorf("slot 1 started leaving at %v, Relayout says %v", left, got[1].LeavingSince)
	}

	// node-1 comes back: its held slot is its own again, its other slot comes anew.
	back := append(nodes("0", "1", "2", "3"), Node{Name: "node-4", ID: "4"})
	got = Relayout(Statuses(got, st), back, 2, held)
	want[1], want[10] = "node-1", "node-1"
	if diff := cmp.Diff(want, at(got)); diff != "" {
		t.Errorf("node-1 came back (-want +got)\n%s", diff)
	}

	// slotsPerNode shrinks to 1: the held slot beyond it stays, leaving; the others go.
	occupied = map[int32]bool{4: true}
	got = Relayout(Statuses(got, nil), back, 1, held)
	want = map[int32]string{0: "node-0", 1: "node-1", 2: "node-2", 3: "node-3", 4: "node-0 leaving", 8: "node-4"}
	if diff := cmp.Diff(want, at(got)); diff != "" {
		t.Errorf("one slot per node (-want +got)\n%s", diff)
	}

	// Nothing held: round-robin again, from 0.
	got = Relayout(Statuses(got, nil), back, 1, func(v1alpha1.SlotStatus) bool { return false })
	if diff := cmp.Diff(Layout(back, 1), got); diff != "" {
		t.Errorf("nothing held: want Layout's shape (-want +got)\n%s", diff)
	}
}

func TestPlanGhosts_LeavingSlotsHaveNoGhost(t *testing.T) {
	layout := Layout(nodes("0", "1"), 1)
	layout[1].Leaving = true
	old := ghost("node-1", 0, slotSize)
	plan := PlanGhosts(layout, slotSize, []ObservedPod{old})
	if got := positions(plan.Create); !slices.Equal(got, []int32{0}) {
		t.Errorf("created ghosts for %v, want slot 0 only", got)
	}
	if !slices.Equal(names(plan.Delete), []string{old.Name}) {
		t.Errorf("delete %v; want the leaving slot's ghost gone", names(plan.Delete))
	}
}

// A node's allocatable resources hold as many slots as the scarcest resource allows; what
// it lacks is said per resource.
func TestFit(t *testing.T) {
	slot := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	gpuSlot := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}
	alloc := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	for name, c := range map[string]struct {
		alloc, slot corev1.ResourceList
		want        int32
		fits        int32
		lacks       string
	}{
		"room to spare":     {alloc("16", "64Gi"), slot, 2, 2, ""},
		"exactly":           {alloc("4", "16Gi"), slot, 2, 2, ""},
		"short of cpu":      {alloc("3500m", "64Gi"), slot, 2, 1, "room for 1 of its 2 slots (cpu: 2 slots need 4, 3500m allocatable)"},
		"short of both":     {alloc("1", "4Gi"), slot, 2, 0, "room for 0 of its 2 slots (cpu: 2 slots need 4, 1 allocatable; memory: 2 slots need 16Gi, 4Gi allocatable)"},
		"a resource absent": {alloc("8", "8Gi"), gpuSlot, 1, 0, "room for 0 of its 1 slots (nvidia.com/gpu: 1 slots need 1, 0 allocatable)"},
	} {
		t.Run(name, func(t *testing.T) {
			fits, lacks := Fit(c.alloc, c.slot, c.want)
			if fits != c.fits || lacks != c.lacks {
				t.Errorf("got %d %q; want %d %q", fits, lacks, c.fits, c.lacks)
			}
		})
	}
}

// The slots a node has no room for are unavailable, get no ghost, and the bed names the node.
func TestPlanGhosts_SlotsWithoutRoomHaveNoGhost(t *testing.T) {
	ns := nodes("0", "1")
	one := int32(1)
	ns[0].Fits, ns[0].Lacks = &one, "room for 1 of its 2 slots (cpu: 2 slots need 4, 3 allocatable)"
	layout := Layout(ns, 2)
	plan := PlanGhosts(layout, slotSize, nil)
	if got := positions(plan.Create); !slices.Equal(got, []int32{0, 1, 3}) {
		t.Errorf("created %v; want every slot but node-0's second (2)", got)
	}
	if got := layout[2].Unavailable(); got != "the node has no room for it: room for 1 of its 2 slots (cpu: 2 slots need 4, 3 allocatable)" {
		t.Errorf("slot 2 unavailable for %q", got)
	}
	if layout[0].Unavailable() != "" || layout[1].Unavailable() != "" {
		t.Errorf("slots 0 and 1 have room: %q %q", layout[0].Unavailable(), layout[1].Unavailable())
	}
	if got := WithoutRoom(layout); !slices.Equal(got, []string{"node-0: " + ns[0].Lacks}) {
		t.Errorf("without room: %v", got)
	}
	// Relaid out while a job holds slot 2, it keeps its place and stays without room.
	held := Relayout(Statuses(layout, nil), ns, 2, func(s v1alpha1.SlotStatus) bool { return s.Position == 2 })
	if held[2].NoRoom == "" || held[2].Leaving {
		t.Errorf("relaid out: %+v", held[2])
	}
}
