package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestBedSpec describes the slots: every node that carries NodeLabel holds SlotsPerNode slots
// of ResourcesPerSlot each.
type TestBedSpec struct {
	// NodeLabel is the key of the label that marks the nodes of the test bed. Only the key is
	// given: the label's value on each node orders the nodes, and so the slot positions. Two
	// test beds on one label would share the nodes: the older one owns them, and the other
	// has no slots while it exists (condition Ready, reason NodeLabelTaken).
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="nodeLabel must be a valid label key, such as slotplane.io/node or testbed"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([^/]*\\\\.)?(kubernetes|k8s)\\\\.io/')",message="nodeLabel must be a key of your own that marks the test bed's nodes only: keys under kubernetes.io and k8s.io (hostname, topology, node-role) are Kubernetes', on every node or on the control plane"
	NodeLabel string `json:"nodeLabel"`

	// SlotsPerNode is the number of slots on every labelled node.
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="slotsPerNode must be at least 1"
	// +kubebuilder:validation:XValidation:rule="self <= 1024",message="slotsPerNode must be at most 1024"
	SlotsPerNode int32 `json:"slotsPerNode"`

	// ResourcesPerSlot is what one slot holds, and so what its ghost pod and every executor or
	// TaskManager placed into it request. cpu and memory are required; other resources (a GPU)
	// may be added.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="'cpu' in self && 'memory' in self",message="resourcesPerSlot must give both cpu and memory"
	// +kubebuilder:validation:XValidation:rule="self.all(r, quantity(string(self[r])).isGreaterThan(quantity('0')))",message="every quantity in resourcesPerSlot must be greater than zero"
	ResourcesPerSlot corev1.ResourceList `json:"resourcesPerSlot"`

	// GrantedSlotTimeout is how long a slot granted to a job stays without its ghost pod
	// while no pod of the job holds it. A grant removes the slot's ghost at once, so that the
	// job's pods are placed without preempting it; a job whose pods have not come by then
	// (its application failed to start, its driver waits for an image) gets the ghost back
	// in that slot, and its pods, when they come, take the slot from the ghost by preemption.
	// Default 2m.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="grantedSlotTimeout must be between 1s and 24h"
	// +optional
	GrantedSlotTimeout *metav1.Duration `json:"grantedSlotTimeout,omitempty"`
}

// DefaultGrantedSlotTimeout is a TestBed's GrantedSlotTimeout when it gives none.
const DefaultGrantedSlotTimeout = 2 * time.Minute

// GrantedSlotTimeoutOrDefault is the spec's GrantedSlotTimeout, or the default.
func (s *TestBedSpec) GrantedSlotTimeoutOrDefault() time.Duration {
	if s.GrantedSlotTimeout == nil || s.GrantedSlotTimeout.Duration <= 0 {
		return DefaultGrantedSlotTimeout
	}
	return s.GrantedSlotTimeout.Duration
}

// SlotState is where a slot is in its occupation cycle: free -> reserved -> occupied -> free.
// +kubebuilder:validation:Enum=free;reserved;occupied
type SlotState string

const (
	// SlotFree: only the slot's ghost pod holds it.
	SlotFree SlotState = "free"
	// SlotReserved: the extender promised the slot to a pod that is not yet running there.
	SlotReserved SlotState = "reserved"
	// SlotOccupied: a real pod runs in the slot and its ghost pod is gone.
	SlotOccupied SlotState = "occupied"
)

// SlotStatus is one slot of the test bed.
type SlotStatus struct {
	// Position is the slot id: unique in the test bed, assigned round-robin across the nodes in
	// the order of their NodeLabel values.
	Position int32 `json:"position"`
	// PositionOnNode is unique among the slots of one node.
	PositionOnNode int32 `json:"positionOnNode"`
	// NodeID is the value of NodeLabel on the slot's node.
	NodeID string `json:"nodeID"`
	// NodeName is the name of the slot's node.
	NodeName string `json:"nodeName"`
	// State is free, reserved or occupied.
	State SlotState `json:"state"`
	// PodName and PodUID name the pod that reserved or occupies the slot.
	// +optional
	PodName string `json:"podName,omitempty"`
	// +optional
	PodUID types.UID `json:"podUID,omitempty"`
	// Unavailable says why the slot is given to no new job, when it is not: its node is not
	// Ready, or its node left the test bed (lost the node label, or slotsPerNode shrank).
	// A slot whose node left stays at its position while a job holds it, and at least a
	// short grace after the node left, so that a grant made just before finds it.
	// +optional
	Unavailable string `json:"unavailable,omitempty"`
	// LeavingSince is when the slot's node left the test bed, while the slot stays.
	// +optional
	LeavingSince *metav1.MicroTime `json:"leavingSince,omitempty"`
}

// TestBedStatus counts the slots and says how the bed is. The slots themselves, their layout
// and occupation, are in the bed's SlotSlices.
type TestBedStatus struct {
	// ObservedGeneration is the spec generation the slots were laid out for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Nodes is the number of labelled nodes.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// Total, Free, Reserved and Occupied count the slots by state; Free counts only the free
	// slots a new job may have (not Unavailable).
	// +optional
	Total int32 `json:"total,omitempty"`
	// +optional
	Free int32 `json:"free,omitempty"`
	// +optional
	Reserved int32 `json:"reserved,omitempty"`
	// +optional
	Occupied int32 `json:"occupied,omitempty"`
	// Conditions: Ready is True when every free slot holds its ghost pod. SlotsFit says
	// whether every node's allocatable resources hold its slots (NoRoom names the nodes that
	// lack room, whose extra slots go to no job). QueuesConfigured says what became of the
	// namespace's queue configuration (ConfigMap slotplane-queues): Accepted, OpenACLs (it
	// loads, but root's ACLs leave every queue open), Rejected (the last good one stays in
	// force) or NoFile.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TestBed is a set of fixed-size slots on labelled nodes, each held by a low-priority ghost
// pod until a real pod takes it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tb,categories=slotplane
// +kubebuilder:printcolumn:name="Label",type=string,JSONPath=`.spec.nodeLabel`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Slots",type=integer,JSONPath=`.status.total`
// +kubebuilder:printcolumn:name="Free",type=integer,JSONPath=`.status.free`
// +kubebuilder:printcolumn:name="Reserved",type=integer,JSONPath=`.status.reserved`,priority=1
// +kubebuilder:printcolumn:name="Occupied",type=integer,JSONPath=`.status.occupied`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TestBed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TestBedSpec `json:"spec"`
	// +optional
	Status TestBedStatus `json:"status,omitempty"`
}

// TestBedList is a list of TestBeds.
// +kubebuilder:object:root=true
type TestBedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TestBed `json:"items"`
}
