package api

import (
	"context"
	"net/http"
	"strings"

	"slotplane/activities"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// checkWrappedSpec refuses, with 422 and one field error per refused path, a job whose
// wrapped Spark or Flink spec sets what the namespace's policy does not allow
// (operatorapp.CheckSpec). The worker checks again when it creates the application.
func (s *server) checkWrappedSpec(ctx context.Context, namespace string, spec *v1alpha1.BatchJobSpec) error {
	if spec.SparkApplication == nil && spec.FlinkDeployment == nil {
		return nil
	}
	policy, err := activities.ReadJobPolicy(ctx, s.Client, namespace)
	if err != nil {
		return &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not read the namespace's policy on wrapped specs: " + err.Error(), Status: http.StatusServiceUnavailable}
	}
	refused := operatorapp.CheckSpec(spec, policy)
	if len(refused) == 0 {
		return nil
	}
	fields := make([]apitypes.FieldError, len(refused))
	for i, r := range refused {
		// The request names the wrapped specs at its top level; the BatchJob under spec.
		fields[i] = apitypes.FieldError{Field: strings.TrimPrefix(r.Path, "spec."), Message: r.Reason}
	}
	return invalid(fields...)
}
