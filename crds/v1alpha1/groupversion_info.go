// Package v1alpha1 holds slotplane's own API: BatchJob (one Spark or Flink application),
// TestBed (fixed-size slots on labelled nodes, held by ghost pods) and Scheduling (an ordered
// queue of BatchJobs run on a TestBed).
//
// The invariants a user can break are CEL rules on the types, so the API server itself rejects
// a bad object with a message that names the field. ValidateScheduling, ValidateBatchJob and
// their parts state the same rules in Go, for the REST API and the workflows, which check a
// request before it reaches the cluster; nothing here performs I/O.
//
// +kubebuilder:object:generate=true
// +groupName=slotplane.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every slotplane resource.
const GroupName = "slotplane.io"

// GroupVersion is the group and version of the types in this package.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&BatchJob{}, &BatchJobList{},
		&TestBed{}, &TestBedList{},
		&Scheduling{}, &SchedulingList{},
		&SlotSlice{}, &SlotSliceList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
