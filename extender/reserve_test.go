package extender

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/slots"
)

func labelledPod(name string, uid types.UID, labels map[string]string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Labels: labels, Annotations: annotations}}
}

// LabelPod writes the claim beside the label, also over a label the pod came with.
func TestLabelPod_WritesTheClaimBesideTheLabel(t *testing.T) {
	cases := map[string]*corev1.Pod{
		"an unlabelled pod": labelledPod("exec", "u1", nil, nil),
		"a pod created with the very label": labelledPod("exec", "u1",
			map[string]string{v1alpha1.SlotIDLabel: "5"}, nil),
		"a pod created with a label and a claim of another pod": labelledPod("exec", "u1",
			map[string]string{v1alpha1.SlotIDLabel: "5"}, map[string]string{v1alpha1.SlotClaimAnnotation: "5/u0"}),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(pod.DeepCopy()).Build()
			r := &Reserver{Client: cl}
			require.NoError(t, r.LabelPod(context.Background(), pod, 5))
			var got corev1.Pod
			require.NoError(t, cl.Get(context.Background(), client.ObjectKeyFromObject(pod), &got))
			slot, ok := slots.ProvenSlot(&got)
			require.True(t, ok, "labels %v annotations %v", got.Labels, got.Annotations)
			require.EqualValues(t, 5, slot)
		})
	}
}

// After a restart, the extender takes back the reservations its labels record, and only
// those: a pod that came with a slot label of its own holds nothing.
func TestReserve_SeedsOnlyProvenLabels(t *testing.T) {
	layout := slots.Layout([]slots.Node{{Name: "node-00", ID: "00"}, {Name: "node-01", ID: "01"}}, 2)
	tb := &v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default", UID: "bed-uid"},
		Status:     v1alpha1.TestBedStatus{Slots: slots.Statuses(layout, nil)},
	}
	bedLabels := func(slot string) map[string]string {
		return map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.SlotIDLabel: slot}
	}
	forged := labelledPod("forged", "u-forged", bedLabels("1"), nil)
	proven := labelledPod("proven", "u-proven", bedLabels("3"), map[string]string{v1alpha1.SlotClaimAnnotation: slots.SlotClaim(3, "u-proven")})
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).
		WithStatusSubresource(&v1alpha1.TestBed{}).WithObjects(tb, forged, proven).Build()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := NewReserver(ctx, cl, cl, slog.New(slog.DiscardHandler))
	key := types.NamespacedName{Namespace: "default", Name: "bed"}

	// Slot 3 is the proven pod's; slot 1 is free whatever the forged label says.
	got, err := r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{1, 3}, Pod: slots.Pod{Name: "newcomer", UID: "u-new"}}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, got.Slot.Position)
	require.False(t, got.Held)

	got, err = r.Reserve(ctx, SlotRequest{TestBed: key, Allowed: []int32{3}, Pod: slots.Pod{Name: "proven", UID: "u-proven"}}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 3, got.Slot.Position)
	require.True(t, got.Held, "the proven pod's reservation was not taken back")
}

// A pod's slots are narrowed to those its BatchJob holds now, read from the job's metadata
// alone (the cache keeps nothing else of BatchJobs).
func TestAssigned_ReadsTheSlotsAJobHoldsNowFromItsMetadata(t *testing.T) {
	job := func(name string, annotations map[string]string) *v1alpha1.BatchJob {
		return &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations}}
	}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(
		job("preempted", map[string]string{v1alpha1.AssignedSlotsAnnotation: "7,5"}),
		job("lost-all", map[string]string{v1alpha1.AssignedSlotsAnnotation: " "}),
		job("untouched", map[string]string{"other": "x"}),
	).Build()
	r := &Reserver{Cache: cl}
	own := SlotRequest{Allowed: []int32{1, 3, 5, 7}}
	cases := map[string]struct {
		job        string
		want       []int32
		wantNoSlot bool
	}{
		"no batch job label":       {"", []int32{1, 3, 5, 7}, false},
		"a job that is not there":  {"gone", []int32{1, 3, 5, 7}, false},
		"a job never preempted":    {"untouched", []int32{1, 3, 5, 7}, false},
		"a job preempted in part":  {"preempted", []int32{7, 5}, false},
		"a job preempted entirely": {"lost-all", nil, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := labelledPod("exec", "u1", map[string]string{v1alpha1.BatchJobLabel: tc.job}, nil)
			got, err := r.Assigned(context.Background(), pod, own)
			if tc.wantNoSlot {
				_, ok := errors.AsType[*slots.NoSlotError](err)
				require.True(t, ok, "want no slot, got %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Allowed)
		})
	}
}
