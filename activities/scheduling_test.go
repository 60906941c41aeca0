package activities

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

func TestApplyStatus(t *testing.T) {
	js := func(name string, st v1alpha1.BatchJobState) v1alpha1.SchedulingJobStatus {
		return v1alpha1.SchedulingJobStatus{Name: name, State: st}
	}
	current := v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, TotalJobs: 2,
		Jobs: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", "")}}
	cases := map[string]struct {
		in   WriteSchedulingStatusInput
		want []v1alpha1.SchedulingJobStatus
		ok   bool
	}{
		"whole": {in: WriteSchedulingStatusInput{Status: v1alpha1.SchedulingStatus{TotalJobs: 1, Jobs: []v1alpha1.SchedulingJobStatus{js("z", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("z", "")}, ok: true},
		"a change in place": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 2, Jobs: []v1alpha1.SchedulingJobStatus{js("b", v1alpha1.JobSubmitted)}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", v1alpha1.JobSubmitted)}, ok: true},
		"appended jobs come last, in order": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 4,
			Jobs: []v1alpha1.SchedulingJobStatus{js("d", ""), js("a", v1alpha1.JobCompleted), js("c", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobCompleted), js("b", ""), js("d", ""), js("c", "")}, ok: true},
		"out of step": {in: WriteSchedulingStatusInput{Delta: true, Status: v1alpha1.SchedulingStatus{TotalJobs: 5, Jobs: []v1alpha1.SchedulingJobStatus{js("c", "")}}},
			want: []v1alpha1.SchedulingJobStatus{js("a", v1alpha1.JobRunning), js("b", ""), js("c", "")}, ok: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ApplyStatus(current, tc.in)
			if ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got.Jobs); diff != "" {
				t.Errorf("jobs (-want +got)\n%s", diff)
			}
			if got.TotalJobs != tc.in.Status.TotalJobs {
				t.Errorf("the counts are the write's: %d", got.TotalJobs)
			}
		})
	}
	if len(current.Jobs) != 2 || current.Jobs[0].State != v1alpha1.JobRunning {
		t.Errorf("the current status was changed: %+v", current.Jobs)
	}
}

// A status write claims the object's generation only when it tracks every job the spec
// lists: an extension the workflow has not taken stays unobserved, so the bridge passes it on.
func TestObservedGeneration_OnlyWhenEveryJobIsTracked(t *testing.T) {
	s := &v1alpha1.Scheduling{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       v1alpha1.SchedulingSpec{Jobs: []v1alpha1.SchedulingJob{{Name: "a"}, {Name: "b"}}},
		Status:     v1alpha1.SchedulingStatus{ObservedGeneration: 1},
	}
	onlyA := v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{{Name: "a"}}}
	if got := observedGeneration(s, onlyA); got != 1 {
		t.Errorf("b is not taken yet: observed %d, want 1", got)
	}
	both := v1alpha1.SchedulingStatus{Jobs: []v1alpha1.SchedulingJobStatus{{Name: "a"}, {Name: "b"}}}
	if got := observedGeneration(s, both); got != 2 {
		t.Errorf("both taken: observed %d, want 2", got)
	}
}

// The slot picture lists every position in order, free and unavailable apart, whether the
// slices hold their slots in order (as slotplane writes them) or not (as a hand may), and
// reads the same from the worker's copies, which it reads in place.
func TestSlotsOf_InPositionOrder(t *testing.T) {
	ctx := context.Background()
	tb := &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "ns", UID: "bed-uid"}}
	slot := func(p int32, st v1alpha1.SlotState, unavailable string) v1alpha1.SlotStatus {
		return v1alpha1.SlotStatus{Position: p, State: st, Unavailable: unavailable}
	}
	slice := func(index int32, slots ...v1alpha1.SlotStatus) *v1alpha1.SlotSlice {
		yes := true
		return &v1alpha1.SlotSlice{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.SlotSliceName("bed", index), Namespace: "ns",
			Labels:          map[string]string{v1alpha1.TestBedLabel: "bed"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "TestBed", Name: "bed", UID: "bed-uid", Controller: &yes}}},
			TestBed: "bed", Index: index, Slots: slots}
	}
	want := TestBedSlots{Exists: true, Positions: []int32{0, 1, 2, 100, 101, 250}, Free: []int32{0, 100, 250}, Unavailable: []int32{2}}
	for name, slices := range map[string][]client.Object{
		"in order": {slice(0, slot(0, v1alpha1.SlotFree, ""), slot(1, v1alpha1.SlotOccupied, ""), slot(2, v1alpha1.SlotFree, "node gone")),
			slice(1, slot(100, "", ""), slot(101, v1alpha1.SlotReserved, "")), slice(2, slot(250, v1alpha1.SlotFree, ""))},
		"out of order": {slice(2, slot(250, v1alpha1.SlotFree, "")), slice(1, slot(101, v1alpha1.SlotReserved, ""), slot(100, "", "")),
			slice(0, slot(2, v1alpha1.SlotFree, "node gone"), slot(0, v1alpha1.SlotFree, ""), slot(1, v1alpha1.SlotOccupied, ""))},
	} {
		cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(append(slices, tb.DeepCopy())...).Build()
		got, err := (&Activities{Client: cl}).ReadSlots(ctx, TestBedRef{Namespace: "ns", Name: "bed"})
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
		copies := ChangesCopying(cl, v1alpha1.GroupVersion.WithKind("TestBed"), v1alpha1.GroupVersion.WithKind("SlotSlice"))
		copied, ok := copies.CopiedSlots(ctx, TestBedRef{Namespace: "ns", Name: "bed"})
		require.True(t, ok, name)
		require.Equal(t, want, copied, name)
	}
}
