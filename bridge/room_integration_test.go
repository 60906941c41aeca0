//go:build integration

package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
)

// A bed whose nodes cannot hold its slots, on the real platform: three slots of 2 cpu on
// nodes of 4 cpu. The bed says which nodes lack what (SlotsFit), offers the 8 slots that
// fit, and Admission grants only those: a job of 8 runs in them, one of 9 waits.
func TestTestBed_SlotsANodeHasNoRoomForGoToNoJob(t *testing.T) {
	t.Parallel()
	p := startPlatformWith(t, bedShape{slotsPerNode: 3, cpu: "2", memory: "4Gi"}) // nodes of 4 cpu, 16Gi
	ctx := context.Background()
	var bed v1alpha1.TestBed
	require.Eventually(t, func() bool {
		require.NoError(t, p.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &bed))
		fit := meta.FindStatusCondition(bed.Status.Conditions, v1alpha1.ConditionSlotsFit)
		return fit != nil && fit.Status == metav1.ConditionFalse && bed.Status.Free == 8
	}, time.Minute, 250*time.Millisecond, "the bed does not say its slots do not fit: %+v", bed.Status)
	fit := meta.FindStatusCondition(bed.Status.Conditions, v1alpha1.ConditionSlotsFit)
	require.Equal(t, "NoRoom", fit.Reason)
	require.Contains(t, fit.Message, "4 nodes lack room for some of their slots")
	require.Contains(t, fit.Message, "room for 2 of its 3 slots (cpu: 3 slots need 6, 4 allocatable)")
	require.EqualValues(t, 12, bed.Status.Total)

	require.NoError(t, p.client.Create(ctx, testobjects.BatchJob("fits").RunFor("10s").Obj()))
	require.NoError(t, p.client.Create(ctx, testobjects.BatchJob("too-wide").RunFor("5s").Obj()))
	require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("too-wide").Job("too-wide", 9).Obj()))
	require.Never(t, func() bool { return p.batchJob(t, "too-wide").Status.State == v1alpha1.JobRunning },
		10*time.Second, 500*time.Millisecond, "a job of 9 ran on a bed with room for 8")

	require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("fits").Job("fits", 8).Obj()))
	require.Eventually(t, func() bool { return p.batchJob(t, "fits").Status.State == v1alpha1.JobRunning },
		time.Minute, 250*time.Millisecond, "the job of 8 never ran")
	onNode := map[int32]int32{} // slot id: its position on its node
	var slices v1alpha1.SlotSliceList
	require.NoError(t, p.client.List(ctx, &slices, client.InNamespace("default")))
	for _, sl := range slices.Items {
		for _, s := range sl.Slots {
			onNode[s.Position] = s.PositionOnNode
		}
	}
	for _, s := range p.batchJob(t, "fits").Status.Slots {
		require.Less(t, onNode[s], int32(2), "slot %d is one its node has no room for", s)
	}
	for slot := range p.slotPods(t) {
		require.NotContains(t, []string{"8", "9", "10", "11"}, slot, "an executor in a slot without room")
	}
}
