//go:build integration

package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/testobjects"
)

// A Scheduling runs as its user: a job of another user is claimed only if that user may
// submit for them (the worker asks the API server). Refused, the Scheduling fails saying so
// and holds nothing; once RBAC grants submit-as on that user, the same jobs run.
func TestIdentity_ASchedulingRunsOthersJobsOnlyWithTheRight(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	alices := testobjects.BatchJob("alices").RunFor("1s").Obj()
	alices.Spec.User = "alice"
	require.NoError(t, p.client.Create(ctx, alices))
	mine := testobjects.BatchJob("mine").RunFor("1s").Obj()
	mine.Spec.User = "mallory"
	require.NoError(t, p.client.Create(ctx, mine))
	run := func(name string) *v1alpha1.Scheduling {
		s := testobjects.Scheduling(name).User("mallory").Groups("analysts").Job("mine", 1).Job("alices", 1).Obj()
		require.NoError(t, p.client.Create(ctx, s))
		return s
	}

	first := run("first")
	failed := p.waitScheduling(t, "first", v1alpha1.SchedulingFailed, time.Minute)
	require.Contains(t, failed.Status.Message, "job alices may not be run by this scheduling: it runs as user mallory, who may not run jobs of user alice")
	require.NotContains(t, p.batchJob(t, "mine").Labels, v1alpha1.ActiveSchedulingLabel, "nothing stays claimed")
	require.NotContains(t, p.batchJob(t, "alices").Labels, v1alpha1.ActiveSchedulingLabel)
	require.NoError(t, p.client.Delete(ctx, first))

	// The analysts may run alice's jobs.
	require.NoError(t, p.client.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "run-for-alice"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"users"}, ResourceNames: []string{"alice"}, Verbs: []string{"submit-as"}}},
	}))
	require.NoError(t, p.client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "analysts-run-for-alice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "run-for-alice"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "analysts"}},
	}))
	require.Eventually(t, func() bool {
		var s v1alpha1.Scheduling
		return p.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "first"}, &s) != nil
	}, time.Minute, 250*time.Millisecond, "the failed scheduling goes")
	run("second")
	done := p.waitScheduling(t, "second", v1alpha1.SchedulingCompleted, 2*time.Minute)
	require.Equal(t, int32(2), done.Status.FinishedJobs)
	require.Equal(t, v1alpha1.JobCompleted, p.batchJob(t, "alices").Status.State)
}
