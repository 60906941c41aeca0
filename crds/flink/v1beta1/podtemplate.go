package v1beta1

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodTemplate is a pod template as the operator takes it: a whole Pod manifest (apiVersion,
// kind, metadata, spec, status), of which the operator uses the metadata and the spec. The
// released CRD spells out the full Pod schema at each podTemplate, and so does the CRD
// generated from this type.
//
// It is not corev1.Pod because controller-gen writes an embedded metav1.ObjectMeta as a
// bare object (or, with generateEmbeddedObjectMeta, as five of its fields), while the
// operator's CRD lists all of ObjectMeta's fields; PodMetadata has them. Spec and Status are
// pointers so that a template that sets neither sends neither: the schema controller-gen
// writes for PodSpec requires containers, so an empty spec would be refused.
//
// NewPodTemplate and TemplateSpec convert from and to the corev1.PodTemplateSpec that
// slotplane's pod-building code takes.
type PodTemplate struct {
	metav1.TypeMeta `json:",inline"`

	// Metadata of the pods; the operator merges labels and annotations into its own.
	// +optional
	PodMetadata `json:"metadata,omitempty"`

	// Spec of the pods; the operator merges what it sets itself over it. Flink runs in the
	// container named flink-main-container, which the template may give settings to.
	// +optional
	Spec *corev1.PodSpec `json:"spec,omitempty"`

	// Status is part of the Pod shape only; the operator does not read it.
	// +optional
	Status *corev1.PodStatus `json:"status,omitempty"`
}

// PodMetadata is a pod template's metadata: the fields of metav1.ObjectMeta, in its order and
// with its types, so that the two convert into each other (metav1.ObjectMeta(m)).
type PodMetadata struct {
	// Name of the object; the operator names the pods itself.
	// +optional
	Name string `json:"name,omitempty"`

	// GenerateName is a prefix for a generated name.
	// +optional
	GenerateName string `json:"generateName,omitempty"`

	// Namespace of the object; the pods go to the deployment's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// SelfLink is a legacy, read-only field.
	// +optional
	SelfLink string `json:"selfLink,omitempty"`

	// UID is set by the API server on stored objects.
	// +optional
	UID types.UID `json:"uid,omitempty"`

	// ResourceVersion is set by the API server on stored objects.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`

	// Generation is set by the API server on stored objects.
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// CreationTimestamp is set by the API server on stored objects.
	// +optional
	CreationTimestamp metav1.Time `json:"creationTimestamp,omitempty,omitzero"`

	// DeletionTimestamp is set by the API server on objects being deleted.
	// +optional
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`

	// DeletionGracePeriodSeconds is set by the API server on objects being deleted.
	// +optional
	DeletionGracePeriodSeconds *int64 `json:"deletionGracePeriodSeconds,omitempty"`

	// Labels to put on the pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations to put on the pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// OwnerReferences of the object.
	// +optional
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`

	// Finalizers of the object.
	// +optional
	Finalizers []string `json:"finalizers,omitempty"`

	// ManagedFields is the API server's record of field ownership.
	// +optional
	ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// NewPodTemplate returns a pod template with t's metadata and spec, sharing their maps and
// slices; nil for nil. A zero spec is left out, for the reason given on PodTemplate.
func NewPodTemplate(t *corev1.PodTemplateSpec) *PodTemplate {
	if t == nil {
		return nil
	}
	out := &PodTemplate{PodMetadata: PodMetadata(t.ObjectMeta)}
	if !reflect.ValueOf(t.Spec).IsZero() {
		spec := t.Spec
		out.Spec = &spec
	}
	return out
}

// TemplateSpec returns t's metadata and spec as a corev1.PodTemplateSpec, sharing their maps
// and slices; nil for nil.
func (t *PodTemplate) TemplateSpec() *corev1.PodTemplateSpec {
	if t == nil {
		return nil
	}
	out := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta(t.PodMetadata)}
	if t.Spec != nil {
		out.Spec = *t.Spec
	}
	return out
}
