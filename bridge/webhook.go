package bridge

import (
	"context"
	"net/http"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/operatorapp"
)

// SpecWebhookPath is where the bridge serves the admission check of BatchJobs' wrapped
// specs (Options.Webhook), for a ValidatingWebhookConfiguration on create and update.
const SpecWebhookPath = "/validate-batchjob"

// specWebhook refuses, at kubectl's door, a BatchJob whose wrapped sparkApplication or
// flinkDeployment sets what the namespace's policy does not allow (operatorapp.CheckSpec, the list
// the REST API and the worker use too), with a 422 naming each field. An update is checked
// only when it changes a wrapped spec, so a job written before the policy narrowed keeps
// taking its claim labels and other edits. When the policy cannot be read, the job is let
// through with a warning: the workflow marks it and the worker refuses to build it all the
// same, so the webhook is the early answer, not the only guard.
type specWebhook struct {
	policies client.Reader
	decoder  admission.Decoder
}

func newSpecWebhook(policies client.Reader) *specWebhook {
	return &specWebhook{policies: policies, decoder: admission.NewDecoder(kubeclient.Scheme())}
}

func (w *specWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var job v1alpha1.BatchJob
	if err := w.decoder.DecodeRaw(req.Object, &job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if req.Operation == admissionv1.Update {
		var old v1alpha1.BatchJob
		if err := w.decoder.DecodeRaw(req.OldObject, &old); err == nil &&
			reflect.DeepEqual(old.Spec.SparkApplication, job.Spec.SparkApplication) && reflect.DeepEqual(old.Spec.FlinkDeployment, job.Spec.FlinkDeployment) {
			return admission.Allowed("")
		}
	}
	policy, err := activities.ReadJobPolicy(ctx, w.policies, req.Namespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "read the job policy for the admission check", "namespace", req.Namespace)
		return admission.Allowed("").WithWarnings("slotplane could not read the namespace's job policy; the job's spec is checked when it runs")
	}
	refused := operatorapp.CheckSpec(&job.Spec, policy)
	if len(refused) == 0 {
		return admission.Allowed("")
	}
	return refusal(refused)
}

// refusal is a 422 with one cause per refused field, as the API server answers for its
// own schema's rules.
func refusal(refused []operatorapp.SpecRefusal) admission.Response {
	msgs := make([]string, len(refused))
	causes := make([]metav1.StatusCause, len(refused))
	for i, r := range refused {
		msgs[i] = r.String()
		causes[i] = metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: r.Path, Message: r.Reason}
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnprocessableEntity,
			Reason:  metav1.StatusReasonInvalid,
			Message: "the wrapped spec sets what it may not: " + strings.Join(msgs, "; "),
			Details: &metav1.StatusDetails{Causes: causes},
		},
	}}
}

// SpecChangedCondition and SpecChangedExpression are the webhook's match condition: a
// create, or an update that changes the spec. An object without a spec is sent on too.
const (
	SpecChangedCondition  = "spec-changed"
	SpecChangedExpression = "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"
)

// SpecWebhookName names the ValidatingWebhookConfiguration of the spec check, and its one
// webhook.
const SpecWebhookName = "batchjob-spec.slotplane.io"

// SpecWebhookConfiguration is the ValidatingWebhookConfiguration that sends BatchJob
// creates and updates to the bridge's spec check at client (a URL, or the bridge's
// Service, with the CA bundle that signed its certificate). deploy/bridge.yaml holds the
// same for a cluster. Its failure policy is Ignore: when the bridge is away, jobs are still
// written (their claims too), and the workflow and the worker refuse a bad spec all the
// same. A match condition keeps the updates that leave the spec as it was from the webhook:
// the API server decides those itself, and they are most of the writes (a claim, a creation
// request, a release: three per job run), each of which a call to the bridge made 3-9 ms
// slower in the 1,000-job long run.
func SpecWebhookConfiguration(client admissionregv1.WebhookClientConfig) *admissionregv1.ValidatingWebhookConfiguration {
	ignore := admissionregv1.Ignore
	none := admissionregv1.SideEffectClassNone
	timeout := int32(5)
	exact := admissionregv1.Exact
	return &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: SpecWebhookName},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:         SpecWebhookName,
			ClientConfig: client,
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
				Rule: admissionregv1.Rule{APIGroups: []string{v1alpha1.GroupName}, APIVersions: []string{"*"},
					Resources: []string{"batchjobs"}},
			}},
			MatchConditions:         []admissionregv1.MatchCondition{{Name: SpecChangedCondition, Expression: SpecChangedExpression}},
			FailurePolicy:           &ignore,
			MatchPolicy:             &exact,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
