// Package v1beta2 is slotplane's Go model of the SparkApplication resource
// (sparkoperator.k8s.io/v1beta2) that the Kubeflow Spark operator reconciles.
//
// slotplane does not run the Spark operator's code: its activities build SparkApplication
// objects in Go, create them, and read back their status. The package therefore holds only
// the subset of the operator's API that slotplane writes or reads, plus a few closely
// related fields; names, JSON keys and types follow the operator's published v1beta2 API
// reference. Local test clusters have no Spark operator, so slotplane installs a CRD
// generated from these types (controller-gen). Every struct that stands for a larger
// upstream object is marked to preserve unknown fields, so an object written with the full
// upstream schema keeps the fields this package does not model when it goes through the API
// server.
//
// Optional strings are plain strings with omitempty where upstream uses *string: the JSON is
// the same, since none of those fields gives the empty string a meaning of its own.
//
// Only k8s.io/apimachinery and k8s.io/api may be imported here.
//
// +kubebuilder:object:generate=true
// +groupName=sparkoperator.k8s.io
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the Spark operator's resources.
const GroupName = "sparkoperator.k8s.io"

// Names of the SparkApplication resource, as the operator's CRD declares them.
const (
	// SparkApplicationKind is the kind of a SparkApplication.
	SparkApplicationKind = "SparkApplication"
	// SparkApplicationResource is the plural resource name, used in REST paths and RBAC rules.
	SparkApplicationResource = "sparkapplications"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta2"}

	// SchemeGroupVersion is GroupVersion under the name client-go style code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&SparkApplication{}, &SparkApplicationList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
