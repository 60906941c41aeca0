// Package v1beta2 is slotplane's Go model of the SparkApplication resource
// (sparkoperator.k8s.io/v1beta2) that the Kubeflow Spark operator reconciles.
//
// slotplane does not run the Spark operator's code: its activities build SparkApplication
// objects in Go, create them, and read back their status. Local test clusters have no Spark
// operator, so slotplane installs a CRD generated from these types (controller-gen) in its
// place. The types therefore model the operator's whole v1beta2 API, field for field: every
// field with its JSON name, type, enum and the validation that shapes the schema, and every
// application, driver and executor state. A manifest written for the real operator then
// means the same here, and what slotplane writes has the shape the real operator's CRD
// expects. Only the pod templates (driver.template, executor.template) keep unknown fields,
// as upstream's do.
//
// Pinned release: Kubeflow Spark operator v2.5.2 (commit
// 43afb8bbd32463037d8fb6e414e252c69081882b), files api/v1beta2/sparkapplication_types.go and
// charts/spark-operator-chart/crds/sparkoperator.k8s.io_sparkapplications.yaml.
// crds/upstream_test.go compares the generated CRD with that release's field by field. The
// only differences are core/v1 fields that the newer k8s.io/api in go.mod adds inside the
// embedded Kubernetes types; a real operator's API server prunes them. They are listed, with
// reasons, in crds/testdata/sparkapplication-v1beta2-spark-operator-v2.5.2.exceptions.
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
