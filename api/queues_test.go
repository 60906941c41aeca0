package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
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
	require.Equal(t, apitypes.Resources{MemoryBytes: 536870912, MilliCores: 250}, q.Usage)
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

// The settings in force reach the answer as yarn-site.xml properties with their values.
func TestQueueTree_ListsTheSettings(t *testing.T) {
	settings := queue.DefaultSettings()
	settings.Preemption.Enabled = true
	tree := queueTreeOf("bed", &workflows.AdmissionReport{ConfigVersion: "7/fair-scheduler.xml+yarn-site.xml", Settings: settings})
	got := map[string]string{}
	for _, s := range tree.Settings {
		got[s.Name] = s.Value
	}
	require.Equal(t, "true", got["yarn.scheduler.fair.preemption"])
	require.Equal(t, "500", got["yarn.scheduler.fair.update-interval-ms"])
	require.Equal(t, "true", got["yarn.scheduler.fair.user-as-default-queue"])
	require.Len(t, got, len(settings.Properties()))
}

// The warnings about the file in force reach the answer as they are.
func TestQueueTree_ListsTheWarnings(t *testing.T) {
	warning := "every user may submit to and administer every queue: root's aclSubmitApps is not set"
	tree := queueTreeOf("bed", &workflows.AdmissionReport{Warnings: []string{warning}})
	require.Equal(t, []string{warning}, tree.Warnings)
	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"warnings":["every user may submit to and administer every queue`)

	raw, err = json.Marshal(queueTreeOf("bed", &workflows.AdmissionReport{}))
	require.NoError(t, err)
	require.NotContains(t, string(raw), "warnings", "no warnings, no key")
}

// yarnReport is a test bed of 8 slots of 8 GiB and 2 cpu (65536 mb, 16 vcores) with a parent
// queue, root.analytics, over one leaf, and a leaf beside it, as the Admitter reports them.
func yarnReport() *workflows.AdmissionReport {
	total := queue.MBVCores(65536, 16)
	return &workflows.AdmissionReport{Queues: []queue.QueueReport{
		{Path: "root", SteadyShare: total, FairShare: total, MaxResources: total, Policy: queue.PolicyFair,
			Usage: queue.MBVCores(24576, 6), Demand: queue.MBVCores(40960, 10), RunningJobs: 3, WaitingJobs: 2},
		{Path: "root.analytics", Policy: queue.PolicyDRF, SteadyShare: queue.MBVCores(32768, 8), FairShare: queue.MBVCores(40960, 10),
			MinResources: queue.MBVCores(16384, 4), MaxResources: queue.MBVCores(49152, 12),
			Usage: queue.MBVCores(16384, 4), Demand: queue.MBVCores(32768, 8), RunningJobs: 2, WaitingJobs: 2},
		{Path: "root.analytics.daily", Leaf: true, Policy: queue.PolicyFIFO, SteadyShare: queue.MBVCores(32768, 8), FairShare: queue.MBVCores(40960, 10),
			MaxResources: total, Usage: queue.MBVCores(16384, 4), Demand: queue.MBVCores(32768, 8), RunningJobs: 2, WaitingJobs: 2},
		// A limit above the bed (shown as the bed, as YARN does), and amounts that are not whole
		// MB or vcores: 2.5 vcores and 2 bytes over 8192 MB round to 3 and 8192; 1.499 to 1.
		{Path: "root.etl", Leaf: true, Policy: queue.PolicyFair, SteadyShare: queue.MBVCores(32768, 8), FairShare: queue.MBVCores(24576, 6),
			MaxResources: queue.MBVCores(200000, 64), Usage: queue.Resources{MemoryBytes: 8192<<20 + 2, MilliCores: 2500},
			Demand: queue.Resources{MemoryBytes: 8192 << 20, MilliCores: 1499}, RunningJobs: 1},
	}}
}

// ?format=yarn answers in the shape of the YARN ResourceManager's scheduler answer for the
// Fair Scheduler: the tree from root, children under childQueues.queue, leaves marked by
// their type, amounts in MB and vcores, and a parent's applications those of its subtree.
func TestYARNScheduler_HasTheResourceManagersShape(t *testing.T) {
	raw, err := json.Marshal(yarnSchedulerOf(yarnReport()))
	require.NoError(t, err)
	cluster := `"clusterResources": {"memory": 65536, "vCores": 16}`
	require.JSONEq(t, `{"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": {
		"queueName": "root", "schedulingPolicy": "fair",
		"usedResources": {"memory": 24576, "vCores": 6}, "minResources": {"memory": 0, "vCores": 0}, "maxResources": {"memory": 65536, "vCores": 16},
		"fairResources": {"memory": 65536, "vCores": 16}, "steadyFairResources": {"memory": 65536, "vCores": 16}, "demandResources": {"memory": 40960, "vCores": 10},
		`+cluster+`, "numActiveApps": 3, "numPendingApps": 2,
		"childQueues": {"queue": [
			{"queueName": "root.analytics", "schedulingPolicy": "drf",
			 "usedResources": {"memory": 16384, "vCores": 4}, "minResources": {"memory": 16384, "vCores": 4}, "maxResources": {"memory": 49152, "vCores": 12},
			 "fairResources": {"memory": 40960, "vCores": 10}, "steadyFairResources": {"memory": 32768, "vCores": 8}, "demandResources": {"memory": 32768, "vCores": 8},
			 `+cluster+`, "numActiveApps": 2, "numPendingApps": 2,
			 "childQueues": {"queue": [
				{"type": "fairSchedulerLeafQueueInfo", "queueName": "root.analytics.daily", "schedulingPolicy": "fifo",
				 "usedResources": {"memory": 16384, "vCores": 4}, "minResources": {"memory": 0, "vCores": 0}, "maxResources": {"memory": 65536, "vCores": 16},
				 "fairResources": {"memory": 40960, "vCores": 10}, "steadyFairResources": {"memory": 32768, "vCores": 8}, "demandResources": {"memory": 32768, "vCores": 8},
				 `+cluster+`, "numActiveApps": 2, "numPendingApps": 2}
			 ]}},
			{"type": "fairSchedulerLeafQueueInfo", "queueName": "root.etl", "schedulingPolicy": "fair",
			 "usedResources": {"memory": 8192, "vCores": 3}, "minResources": {"memory": 0, "vCores": 0}, "maxResources": {"memory": 65536, "vCores": 16},
			 "fairResources": {"memory": 24576, "vCores": 6}, "steadyFairResources": {"memory": 32768, "vCores": 8}, "demandResources": {"memory": 8192, "vCores": 1},
			 `+cluster+`, "numActiveApps": 1, "numPendingApps": 0}
		]}}}}}`, string(raw))

	// Before Admission has any queue, the answer still has its shape: an empty root.
	empty := yarnSchedulerOf(&workflows.AdmissionReport{})
	require.Equal(t, "fairScheduler", empty.Scheduler.SchedulerInfo.Type)
	require.Equal(t, "root", empty.Scheduler.SchedulerInfo.RootQueue.QueueName)
	require.Nil(t, empty.Scheduler.SchedulerInfo.RootQueue.ChildQueues)
}
