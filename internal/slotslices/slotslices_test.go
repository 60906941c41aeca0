package slotslices

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
)

// free is n free slots on nodes of 8, round-robin as a layout would put them.
func free(n int) []v1alpha1.SlotStatus {
	out := make([]v1alpha1.SlotStatus, n)
	nodes := max(1, n/8)
	for i := range out {
		node := fmt.Sprintf("node-%04d", i%nodes)
		out[i] = v1alpha1.SlotStatus{Position: int32(i), PositionOnNode: int32(i / nodes), NodeID: node, NodeName: node, State: v1alpha1.SlotFree}
	}
	return out
}

// writes counts the writes each slice gets.
func counting(objs ...client.Object) (client.Client, map[string]int) {
	n := map[string]int{}
	cl := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n["create "+obj.GetName()]++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n["update "+obj.GetName()]++
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n["delete "+obj.GetName()]++
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	return cl, n
}

// A bed's slots are spread over slices of a hundred; a change to one slot writes its slice
// and no other; a bed that shrinks loses the slices it no longer needs.
func TestWrite_WritesOnlyTheSlicesThatChange(t *testing.T) {
	ctx := context.Background()
	tb := testobjects.TestBed("bed").Namespace("ns").UID("u1").Obj()
	cl, writes := counting()
	have, err := List(ctx, cl, tb)
	require.NoError(t, err)
	w, err := Write(ctx, cl, tb, have, free(250))
	require.NoError(t, err)
	require.Equal(t, Writes{Created: 3}, w)
	have, err = List(ctx, cl, tb)
	require.NoError(t, err)
	require.Len(t, have, 3)
	require.Len(t, have[2].Slots, 50)
	require.Equal(t, free(250), Slots(have))

	want := free(250)
	want[142].State, want[142].PodName, want[142].PodUID = v1alpha1.SlotReserved, "exec", "u-exec"
	clear(writes)
	w, err = Write(ctx, cl, tb, have, want)
	require.NoError(t, err)
	require.Equal(t, Writes{Updated: 1}, w)
	require.Equal(t, map[string]int{"update bed-slots-1": 1}, writes)

	have, err = List(ctx, cl, tb)
	require.NoError(t, err)
	clear(writes)
	w, err = Write(ctx, cl, tb, have, want)
	require.NoError(t, err)
	require.Equal(t, Writes{}, w, "nothing changed, nothing written")

	have, err = List(ctx, cl, tb)
	require.NoError(t, err)
	w, err = Write(ctx, cl, tb, have, want[:120])
	require.NoError(t, err)
	require.Equal(t, Writes{Updated: 1, Deleted: 1}, w)
	got, err := Read(ctx, cl, tb)
	require.NoError(t, err)
	require.Equal(t, want[:120], got)
}

// A slice another writer changed after the slices were read is left as that writer left
// it and counted as a conflict; the other slices are written.
func TestWrite_LeavesASliceChangedMeanwhileAndWritesTheOthers(t *testing.T) {
	ctx := context.Background()
	tb := testobjects.TestBed("bed").Namespace("ns").UID("u1").Obj()
	cl, _ := counting()
	require.NoError(t, Put(ctx, cl, tb, free(150)))
	stale, err := List(ctx, cl, tb)
	require.NoError(t, err)
	other := free(150)
	other[3].State, other[3].PodName, other[3].PodUID = v1alpha1.SlotReserved, "a", "u-a"
	require.NoError(t, Put(ctx, cl, tb, other))

	mine := free(150)
	mine[5].State, mine[5].PodName, mine[5].PodUID = v1alpha1.SlotReserved, "b", "u-b"
	mine[120].State, mine[120].PodName, mine[120].PodUID = v1alpha1.SlotReserved, "c", "u-c"
	w, err := Write(ctx, cl, tb, stale, mine)
	require.NoError(t, err)
	require.Equal(t, Writes{Updated: 1, Conflicts: 1}, w)
	got, err := Read(ctx, cl, tb)
	require.NoError(t, err)
	require.Equal(t, other[:100], got[:100], "the slice changed meanwhile, as the other writer left it")
	require.Equal(t, mine[100:], got[100:], "the other slice, written")
}

// Slices left by an earlier bed of the same name are not the new bed's: they are not read
// as its slots, and its first write replaces them.
func TestWrite_ReplacesTheSlicesOfAnEarlierBed(t *testing.T) {
	ctx := context.Background()
	old := testobjects.TestBed("bed").Namespace("ns").UID("u-old").Obj()
	left := Build(old, []v1alpha1.SlotStatus{{Position: 0, NodeName: "gone", State: v1alpha1.SlotOccupied, PodName: "p", PodUID: "u-p"}})
	cl, writes := counting(&left[0])
	tb := testobjects.TestBed("bed").Namespace("ns").UID("u-new").Obj()
	have, err := List(ctx, cl, tb)
	require.NoError(t, err)
	require.Empty(t, have, "an earlier bed's slice is not this one's")
	_, err = Write(ctx, cl, tb, have, free(4))
	require.NoError(t, err)
	require.Equal(t, 1, writes["delete bed-slots-0"])
	got, err := Read(ctx, cl, tb)
	require.NoError(t, err)
	require.Equal(t, free(4), got)
}

// The objects that grow with a bed stay far from etcd's 1.5 MiB limit at ten times the
// envelope's 8,000 slots: a slice is bounded whatever the bed, and the TestBed carries
// counts only. Every slot is occupied by a pod whose name is as long as a Spark executor's
// gets, with a long node name.
func TestSlotSliceSizesFit(t *testing.T) {
	const etcdLimit = 1536 << 10
	const slots = 80_000
	statuses := make([]v1alpha1.SlotStatus, slots)
	for i := range statuses {
		node := fmt.Sprintf("ip-10-120-%03d-%03d.eu-west-1.compute.internal", i/8/250, i/8%250)
		statuses[i] = v1alpha1.SlotStatus{Position: int32(i), PositionOnNode: int32(i % 8), NodeID: fmt.Sprintf("%05d", i/8), NodeName: node,
			State: v1alpha1.SlotOccupied, PodName: fmt.Sprintf("nightly-etl-customer-aggregates-%06d-exec-%d", i, i%64),
			PodUID: types.UID(fmt.Sprintf("%08x-1111-2222-3333-444455556666", i))}
	}
	tb := testobjects.TestBed("bed").Namespace("ns").UID("u1").Obj()
	largest := 0
	for _, s := range Build(tb, statuses) {
		data, err := json.Marshal(s)
		require.NoError(t, err)
		largest = max(largest, len(data))
	}
	t.Logf("largest of %d slices: %d bytes (%.1f%% of etcd's limit)", slots/v1alpha1.SlotsPerSlice, largest, 100*float64(largest)/etcdLimit)
	require.Less(t, largest, etcdLimit/20, "a slice must stay far from etcd's limit")

	tb.Status = v1alpha1.TestBedStatus{Nodes: slots / 8, Total: slots, Occupied: slots}
	data, err := json.Marshal(tb)
	require.NoError(t, err)
	require.Less(t, len(data), 4<<10, "the TestBed carries no slots")
}
