//go:build integration

package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
)

// A BatchJob made with kubectl whose wrapped spec asks for a service account and a host
// volume is refused at the door (the bridge's admission webhook, 422 naming both), while
// the namespace does not allow them. One made while the namespace allowed them, once the
// policy narrows, is marked (SpecAllowed=False, naming both: the bridge nudges the jobs when
// the policy changes), and when a Scheduling runs it, fails without any application being
// made; a job beside it runs. Once the namespace's admins allow both fields again, the same
// job, untouched, is marked allowed and runs, with the account it asked for.
func TestSpecPolicy_RefusedFieldsNeverReachAnApplication(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	spec := []byte(`{
		"driver": {"serviceAccount": "cluster-admin-sa"},
		"volumes": [{"name": "root", "hostPath": {"path": "/"}}],
		"sparkConf": {"spark.sql.shuffle.partitions": "4"}
	}`)
	sneaky := testobjects.BatchJob("sneaky").RunFor("1s").Obj()
	sneaky.Spec.SparkApplication = &runtime.RawExtension{Raw: spec}
	err := p.client.Create(ctx, sneaky)
	require.True(t, apierrors.IsInvalid(err), "the webhook refuses it: %v", err)
	require.ErrorContains(t, err, "spec.sparkApplication.driver.serviceAccount")
	require.ErrorContains(t, err, "spec.sparkApplication.volumes")
	require.NotContains(t, err.Error(), "sparkConf", "what the list allows is not named")

	allow := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.JobPolicyConfigMap, Namespace: "default"},
		Data:       map[string]string{"allow": "spark driver.serviceAccount\nspark volumes\n"},
	}
	require.NoError(t, p.client.Create(ctx, allow))
	require.Eventually(t, func() bool { // the webhook reads the policy through its cache
		again := testobjects.BatchJob("sneaky").RunFor("1s").Obj()
		again.Spec.SparkApplication = &runtime.RawExtension{Raw: spec}
		return p.client.Create(ctx, again) == nil
	}, 30*time.Second, 200*time.Millisecond, "allowed by the namespace, the job is taken")
	require.NoError(t, p.client.Create(ctx, testobjects.BatchJob("plain").RunFor("1s").Obj()))
	require.NoError(t, p.client.Delete(ctx, allow)) // the policy narrows under the job

	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		cond = meta.FindStatusCondition(p.batchJob(t, "sneaky").Status.Conditions, v1alpha1.ConditionSpecAllowed)
		return cond != nil
	}, time.Minute, 250*time.Millisecond, "the job is marked")
	require.Equal(t, metav1.ConditionFalse, cond.Status)
	require.Equal(t, v1alpha1.ReasonSpecRefused, cond.Reason)
	require.Contains(t, cond.Message, "spec.sparkApplication.driver.serviceAccount")
	require.Contains(t, cond.Message, "spec.sparkApplication.volumes")
	require.NotContains(t, cond.Message, "sparkConf", "what the list allows is not named")
	require.Nil(t, meta.FindStatusCondition(p.batchJob(t, "plain").Status.Conditions, v1alpha1.ConditionSpecAllowed), "a job without a wrapped spec carries no condition")
	// An edit that brings in what the policy refuses meets the webhook as a create does: its
	// match condition lets updates that leave the spec alone (claims, requests) skip it, and
	// passes this one on.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		edited := p.batchJob(t, "plain")
		edited.Spec.SparkApplication = &runtime.RawExtension{Raw: spec}
		return p.client.Update(ctx, edited)
	})
	require.True(t, apierrors.IsInvalid(err), "the webhook refuses the edit: %v", err)
	require.ErrorContains(t, err, "spec.sparkApplication.volumes")

	run := testobjects.Scheduling("first").Job("sneaky", 1).Job("plain", 1).Obj()
	require.NoError(t, p.client.Create(ctx, run))
	p.waitScheduling(t, "first", v1alpha1.SchedulingCompleted, 2*time.Minute)
	got := p.batchJob(t, "sneaky")
	require.Equal(t, v1alpha1.JobFailed, got.Status.State)
	require.Contains(t, got.Status.Message, "driver.serviceAccount")
	require.Equal(t, v1alpha1.JobCompleted, p.batchJob(t, "plain").Status.State)
	require.Equal(t, 0, sparkAppsOf(t, p, "sneaky"), "no application was made for the refused job")
	require.NoError(t, p.client.Delete(ctx, run))
	require.Eventually(t, func() bool { return p.batchJob(t, "sneaky").Status.State == v1alpha1.JobReady }, time.Minute, 250*time.Millisecond)

	// The namespace widens the list again: the bridge nudges the namespace's jobs, and the
	// job, unchanged, is looked at again.
	allow.ResourceVersion = ""
	require.NoError(t, p.client.Create(ctx, allow))
	require.Eventually(t, func() bool {
		c := meta.FindStatusCondition(p.batchJob(t, "sneaky").Status.Conditions, v1alpha1.ConditionSpecAllowed)
		return c != nil && c.Status == metav1.ConditionTrue
	}, time.Minute, 250*time.Millisecond, "the job is marked allowed")

	again := testobjects.Scheduling("second").Job("sneaky", 1).Obj()
	require.NoError(t, p.client.Create(ctx, again))
	p.waitScheduling(t, "second", v1alpha1.SchedulingCompleted, 2*time.Minute)
	require.Equal(t, v1alpha1.JobCompleted, p.batchJob(t, "sneaky").Status.State, p.batchJob(t, "sneaky").Status.Message)
}

func sparkAppsOf(t *testing.T, p *platform, job string) int {
	t.Helper()
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, p.client.List(context.Background(), &apps, client.InNamespace("default"), client.MatchingLabels{v1alpha1.BatchJobLabel: job}))
	n := 0
	for _, a := range apps.Items {
		if strings.HasPrefix(a.Name, job) {
			n++
		}
	}
	return n
}
