package slots

import (
	"fmt"
	"testing"

	"slotplane/crds/v1alpha1"
)

// bigBed is 1,000 nodes x 8 slots with every other slot taken, the scale the extender must
// decide at well under 100µs per call.
func bigBed() ([]v1alpha1.SlotStatus, []string) {
	ns := make([]Node, 1000)
	names := make([]string, len(ns))
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("node-%04d", i), ID: fmt.Sprintf("%04d", i)}
		names[i] = ns[i].Name
	}
	statuses := Statuses(Layout(ns, 8), nil)
	for i := range statuses {
		if i%2 == 0 {
			statuses[i].State, statuses[i].PodName, statuses[i].PodUID = v1alpha1.SlotOccupied, "busy", "busy"
		}
	}
	return statuses, names
}

func BenchmarkChoose_Filter1000Nodes8000Slots(b *testing.B) {
	statuses, candidates := bigBed()
	ix := NewIndex(statuses)
	allowed := []int32{7000, 7002, 7004, 7001} // three taken, then a free one
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ix.Choose("pod", allowed, candidates); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChoose_Preempt8000Slots(b *testing.B) {
	statuses, _ := bigBed()
	ix := NewIndex(statuses)
	allowed := []int32{7000, 7002, 7004, 7001}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ix.Choose("pod", allowed, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewIndex8000Slots(b *testing.B) {
	statuses, _ := bigBed()
	b.ReportAllocs()
	for b.Loop() {
		NewIndex(statuses)
	}
}

func BenchmarkPlanGhosts8000Slots(b *testing.B) {
	ns := make([]Node, 1000)
	for i := range ns {
		ns[i] = Node{Name: fmt.Sprintf("node-%04d", i), ID: fmt.Sprintf("%04d", i)}
	}
	layout := Layout(ns, 8)
	pods := make([]ObservedPod, len(layout))
	for i, s := range layout {
		pods[i] = ObservedPod{Name: fmt.Sprintf("ghost-%d", s.Position), NodeName: s.NodeName, Ghost: true, Slot: s.Position, PositionOnNode: s.PositionOnNode, Requests: slotSize}
	}
	b.ReportAllocs()
	for b.Loop() {
		if p := PlanGhosts(layout, slotSize, pods); len(p.Keep) != len(layout) {
			b.Fatalf("kept %d", len(p.Keep))
		}
	}
}
