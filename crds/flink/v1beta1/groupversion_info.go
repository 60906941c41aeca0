// Package v1beta1 is slotplane's Go model of the FlinkDeployment resource
// (flink.apache.org/v1beta1) that the Apache Flink Kubernetes Operator reconciles.
//
// slotplane does not run the Flink operator's code: its activities build FlinkDeployment
// objects (application mode) in Go, create them, and read back their status. The package
// therefore holds only the subset of the operator's API that slotplane writes or reads, plus
// a few closely related fields; names, JSON keys and types follow the operator's published
// FlinkDeployment reference. Local test clusters have no Flink operator, so slotplane
// installs a CRD generated from these types (controller-gen). Every struct that stands for a
// larger upstream object is marked to preserve unknown fields, so an object written with the
// full upstream schema keeps the fields this package does not model when it goes through the
// API server.
//
// Only k8s.io/apimachinery and k8s.io/api may be imported here.
//
// +kubebuilder:object:generate=true
// +groupName=flink.apache.org
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the Flink operator's resources.
const GroupName = "flink.apache.org"

// Names of the FlinkDeployment resource, as the operator's CRD declares them.
const (
	// FlinkDeploymentKind is the kind of a FlinkDeployment.
	FlinkDeploymentKind = "FlinkDeployment"
	// FlinkDeploymentResource is the plural resource name, used in REST paths and RBAC rules.
	FlinkDeploymentResource = "flinkdeployments"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

	// SchemeGroupVersion is GroupVersion under the name client-go style code expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&FlinkDeployment{}, &FlinkDeploymentList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
