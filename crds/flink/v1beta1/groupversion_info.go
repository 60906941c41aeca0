// Package v1beta1 is slotplane's Go model of the FlinkDeployment resource
// (flink.apache.org/v1beta1) that the Apache Flink Kubernetes Operator reconciles.
//
// slotplane does not run the Flink operator's code: its activities build FlinkDeployment
// objects (application mode) in Go, create them, and read back their status. Local test
// clusters have no Flink operator, so slotplane installs a CRD generated from these types
// (controller-gen) in place of the operator's.
//
// The types cover the whole v1beta1 API as the Apache Flink Kubernetes operator 1.15.0
// releases it (tag release-1.15.0, commit 79d730bab4d8403f3a447fb027f879f5cbdc59ad): every
// spec and status field, with the operator's JSON names, types and enum values, read from its
// API classes and from the CRD in its Helm chart
// (helm/flink-kubernetes-operator/crds/flinkdeployments.flink.apache.org-v1.yml). The
// comments are slotplane's own. crds/upstream_test.go checks the generated CRD against a
// table flattened from the released one
// (crds/testdata/flinkdeployment-v1beta1-flink-operator-1.15.0.paths); the differences that
// cannot be helped are listed, with their reasons, beside it in the .exceptions file.
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
