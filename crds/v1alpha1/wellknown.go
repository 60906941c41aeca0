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

// Condition types shared by the resources.
const (
	// ConditionReady is True when the object is in the state its spec asks for.
	ConditionReady = "Ready"
)
