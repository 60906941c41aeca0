package v1alpha1

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SlotsPerSlice is the most slots one SlotSlice holds. Slice i of a test bed holds the slots
// at positions i*SlotsPerSlice to (i+1)*SlotsPerSlice-1, so a slot's slice follows from its
// position alone. A full slice of occupied slots is about 21 KB.
const SlotsPerSlice = 100

// SliceOf is the index of the slice that holds the slot at position.
func SliceOf(position int32) int32 { return position / SlotsPerSlice }

// SlotSliceName is the name of a test bed's slice: "<bed>-slots-<index>".
func SlotSliceName(bed string, index int32) string {
	return bed + "-slots-" + strconv.Itoa(int(index))
}

// SlotSlice holds the layout and occupation of up to SlotsPerSlice slots of one test bed.
// A test bed's slots are spread over slices so that no object grows with the bed: the ghost
// reconciler and the extender write only the slices whose slots changed, each under
// optimistic concurrency on its own resourceVersion. slotplane makes, writes and deletes
// them; the TestBed owns them and carries the counts. A slice carries the label
// slotplane.io/testbed with its bed's name.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ss,categories=slotplane
// +kubebuilder:printcolumn:name="TestBed",type=string,JSONPath=`.testBed`
// +kubebuilder:printcolumn:name="Index",type=integer,JSONPath=`.index`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SlotSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// TestBed is the name of the test bed, in the slice's namespace, whose slots these are.
	// +kubebuilder:validation:MaxLength=253
	TestBed string `json:"testBed"`
	// Index is the slice's place in the bed: it holds positions Index*100 to Index*100+99.
	// +kubebuilder:validation:Minimum=0
	Index int32 `json:"index"`
	// Slots are the slice's slots, ordered by position. A position the bed does not have
	// (a node left while the others stayed) has no entry.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Slots []SlotStatus `json:"slots,omitempty"`
}

// SlotSliceList is a list of SlotSlices.
// +kubebuilder:object:root=true
type SlotSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SlotSlice `json:"items"`
}
