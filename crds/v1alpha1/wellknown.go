package v1alpha1

// Names that other components agree on. They are part of the API: changing one breaks running
// clusters.
const (
	// SlotResource is the extended resource every slot pod (ghost or real) requests exactly one
	// of. The scheduler extender manages it (ignoredByScheduler), so only slot pods reach the
	// extender and ordinary pods are never slowed down by it.
	SlotResource = GroupName + "/slot"

	// SlotSchedulerName is the kube-scheduler profile whose pods are placed into slots.
	SlotSchedulerName = "slot-scheduler"
)

// The protocol between the test bed, its pods and the extender.
const (
	// TestBedLabel names, on a slot pod (ghost or real), the test bed whose slot it takes.
	TestBedLabel = GroupName + "/testbed"
	// SlotIDLabel is the position of the slot a pod holds. Ghosts get it at creation; the
	// extender sets it on a real pod when it reserves a slot for it.
	SlotIDLabel = GroupName + "/slot-id"
	// GhostLabel is "true" on ghost pods.
	GhostLabel = GroupName + "/ghost"
	// PositionOnNodeLabel is a ghost's position on its node, which, with the node, says
	// which slot it holds even when a reshaped test bed renumbers the slots.
	PositionOnNodeLabel = GroupName + "/position-on-node"
	// SlotIDsAnnotation lists, comma-separated, the slot positions a real pod may take. All
	// pods of one application carry the same list; the extender gives each its own slot.
	SlotIDsAnnotation = GroupName + "/slot-ids"
)

// TestBedTaint is the taint key that dedicates nodes to test beds (any value, any effect).
// Ghosts and slot pods tolerate it; ordinary pods do not, so they can neither land on nor
// preempt ghosts on a dedicated node.
const TestBedTaint = GroupName + "/testbed"

// PriorityClasses of slot pods (deploy/priorityclasses.yaml).
const (
	// GhostPriorityClass is the lowest priority in the cluster: any slot pod preempts a ghost.
	GhostPriorityClass = "slotplane-ghost"
	// BatchPriorityClass is what executors and TaskManagers run with.
	BatchPriorityClass = "slotplane-batch"
)

// Condition types shared by the resources.
const (
	// ConditionReady is True when the object is in the state its spec asks for.
	ConditionReady = "Ready"
)
