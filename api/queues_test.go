package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/queue"
	"slotplane/workflows"
)

// The queue picture carries the queues' exact amounts, bytes and millicores, so a driver of
// 250m and 512Mi is not shown as a whole vcore; String is the allocation file's form.
func TestQueueTree_CarriesExactAmounts(t *testing.T) {
	usage := queue.Resources{MemoryBytes: 512 << 20, MilliCores: 250}
	tree := queueTreeOf("bed", &workflows.AdmissionReport{Queues: []queue.QueueReport{
		{Path: "root.team", Leaf: true, Usage: usage, FairShare: queue.MBVCores(8192, 8)},
	}})
	q := tree.Queues[0]
	require.Equal(t, Resources{MemoryBytes: 536870912, MilliCores: 250}, q.Usage)
	require.Equal(t, queue.MBVCores(8192, 8), queue.Resources{MemoryBytes: q.FairShare.MemoryBytes, MilliCores: q.FairShare.MilliCores})

	raw, err := json.Marshal(q.Usage)
	require.NoError(t, err)
	require.JSONEq(t, `{"memoryBytes": 536870912, "milliCores": 250}`, string(raw))
}

// The settings of the file in force that slotplane does not act on reach the answer, each
// saying where and why.
func TestQueueTree_ListsTheIgnoredSettings(t *testing.T) {
	tree := queueTreeOf("bed", &workflows.AdmissionReport{Ignored: []queue.Ignored{
		{Line: 13, Element: "maxContainerAllocation", Queue: "root.etl", Reason: "no container sizes"},
	}})
	require.Equal(t, []string{"line 13, <maxContainerAllocation> of root.etl: no container sizes"}, tree.Ignored)
	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"ignored":["line 13, \u003cmaxContainerAllocation\u003e of root.etl: no container sizes"]`)
}
