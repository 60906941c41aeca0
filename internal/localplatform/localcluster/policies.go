package localcluster

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// InstallAdmissionPolicies creates the ValidatingAdmissionPolicies and their bindings of
// deploy/admission-policies.yaml. The API server enforces them a moment later (its policy
// source refreshes every second or so); their status, written by kube-controller-manager,
// stays empty here, as the local platform runs none.
func InstallAdmissionPolicies(ctx context.Context, cs kubernetes.Interface, manifest []byte) error {
	api := cs.AdmissionregistrationV1()
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return fmt.Errorf("decode admission policy: %w", err)
		}
		var err error
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
				return fmt.Errorf("decode %s: %w", meta.Kind, err)
			}
			_, err = api.ValidatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{})
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				return fmt.Errorf("decode %s: %w", meta.Kind, err)
			}
			_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, &b, metav1.CreateOptions{})
		default:
			return fmt.Errorf("admission policies: unexpected kind %q", meta.Kind)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", meta.Kind, err)
		}
	}
	return nil
}
