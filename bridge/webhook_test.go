package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

func TestSpecWebhook(t *testing.T) {
	raw := func(j *v1alpha1.BatchJob) runtime.RawExtension {
		b, err := json.Marshal(j)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	job := func(spark string) *v1alpha1.BatchJob {
		j := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "team"},
			Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, Application: v1alpha1.Application{Image: "i", MainApplicationFile: "local:///a.jar"}}}
		if spark != "" {
			j.Spec.SparkApplication = &runtime.RawExtension{Raw: []byte(spark)}
		}
		return j
	}
	ask := func(w *specWebhook, op admissionv1.Operation, obj, old *v1alpha1.BatchJob) admission.Response {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Namespace: "team", Object: raw(obj)}}
		if old != nil {
			req.OldObject = raw(old)
		}
		return w.Handle(context.Background(), req)
	}
	const sa = `{"driver":{"serviceAccount":"admin"}}`
	plain := newSpecWebhook(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).Build())

	got := ask(plain, admissionv1.Create, job(sa), nil)
	require.False(t, got.Allowed)
	require.EqualValues(t, http.StatusUnprocessableEntity, got.Result.Code)
	require.Contains(t, got.Result.Message, "spec.sparkApplication.driver.serviceAccount")
	require.Equal(t, "spec.sparkApplication.driver.serviceAccount", got.Result.Details.Causes[0].Field)
	require.True(t, ask(plain, admissionv1.Create, job(`{"sparkConf":{"spark.sql.shuffle.partitions":"4"}}`), nil).Allowed)
	require.True(t, ask(plain, admissionv1.Create, job(""), nil).Allowed, "no wrapped spec")

	// An update that leaves the wrapped specs as they were passes, whatever they hold: a
	// job made before the policy narrowed still takes its claim labels.
	labelled := job(sa)
	labelled.Labels = map[string]string{v1alpha1.ActiveSchedulingLabel: "s"}
	require.True(t, ask(plain, admissionv1.Update, labelled, job(sa)).Allowed)
	require.False(t, ask(plain, admissionv1.Update, job(sa), job("")).Allowed, "an update that adds the field")

	// The namespace's policy widens it.
	widened := newSpecWebhook(fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.JobPolicyConfigMap, Namespace: "team"},
		Data:       map[string]string{"allow": "spark driver.serviceAccount\n"},
	}).Build())
	require.True(t, ask(widened, admissionv1.Create, job(sa), nil).Allowed)

	require.True(t, ask(plain, admissionv1.Delete, job(sa), nil).Allowed)
	bad := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "team", Object: runtime.RawExtension{Raw: []byte(`{"spec": 7}`)}}}
	require.False(t, plain.Handle(context.Background(), bad).Allowed, "an object that does not decode")
}
