package v1beta1_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
)

func TestPodTemplate_ConvertsFromAndToATemplateSpec(t *testing.T) {
	in := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container"}}},
	}
	pt := flinkv1beta1.NewPodTemplate(in)
	if pt.Labels["a"] != "b" || pt.Spec == nil || pt.Spec.Containers[0].Name != "flink-main-container" {
		t.Fatalf("NewPodTemplate lost something: %+v", pt)
	}
	if out := pt.TemplateSpec(); !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
	var none *flinkv1beta1.PodTemplate
	if none.TemplateSpec() != nil || flinkv1beta1.NewPodTemplate(nil) != nil {
		t.Error("nil does not stay nil")
	}
}

// The generated schema requires spec.containers, so a template without a spec must not send
// one.
func TestPodTemplate_LeavesAnEmptySpecOut(t *testing.T) {
	pt := flinkv1beta1.NewPodTemplate(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}})
	data, err := json.Marshal(pt)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"spec"`) || strings.Contains(string(data), `"status"`) {
		t.Errorf("got %s, want only metadata", data)
	}
}

// A manifest written the way the operator's documentation writes pod templates reads back
// whole.
func TestPodTemplate_ReadsAPodManifest(t *testing.T) {
	var pt flinkv1beta1.PodTemplate
	err := json.Unmarshal([]byte(`{"apiVersion": "v1", "kind": "Pod",
		"metadata": {"name": "pod-template", "labels": {"team": "a"}},
		"spec": {"containers": [{"name": "flink-main-container", "image": "flink:1.20"}]}}`), &pt)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Kind != "Pod" || pt.APIVersion != "v1" || pt.Name != "pod-template" || pt.Labels["team"] != "a" ||
		pt.Spec == nil || pt.Spec.Containers[0].Image != "flink:1.20" {
		t.Errorf("got %+v", pt)
	}
}
