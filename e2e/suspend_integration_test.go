//go:build integration

package e2e

import (
	"context"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"slotplane/apiclient"
	"slotplane/apitypes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	"slotplane/crds/v1alpha1"
	"slotplane/examples"
)

// Two streaming Flink jobs submitted through the API run until someone suspends their
// FlinkDeployments (kubectl patch of job.state, as a Flink operator's user stops a streaming
// job with its state kept). One ends Completed, as suspendedOutcome defaults to; the other,
// submitted with suspendedOutcome Failed, ends Failed. Both release their slots.
//
// The queues are examples/fair-scheduler-hadoop3.xml, a Hadoop 3 cluster's file: it loads on
// the platform, and the queues API lists what in it means nothing for slots.
func TestE2E_ASuspendedFlinkDeploymentEndsItsJobAsConfigured(t *testing.T) {
	t.Parallel() // no timing it asserts on: it may share the machine with another such test
	queues, err := examples.Files.ReadFile("fair-scheduler-hadoop3.xml")
	require.NoError(t, err)
	p := startE2E(t, string(queues))
	c := p.api
	ctx := context.Background()
	for name, outcome := range map[string]v1alpha1.RunOutcome{"clicks": "", "fraud": v1alpha1.RunFailed} {
		_, err := c.CreateJob(ctx, apitypes.JobRequest{Name: name, Framework: v1alpha1.FrameworkFlink, Queue: "root.analytics.adhoc", SuspendedOutcome: outcome,
			Application:     v1alpha1.Application{Image: "registry.example/" + name + ":1", MainClass: "org.example.Stream", MainApplicationFile: "local:///opt/flink/usrlib/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi")}})
		require.NoError(t, err, name)
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, outcome, j.SuspendedOutcome, "the API shows the job's suspendedOutcome")
	}
	_, err = c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "streams", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.analytics.adhoc",
		Jobs: []v1alpha1.SchedulingJob{{Name: "clicks", Replication: 2}, {Name: "fraud", Replication: 2}}, TTLSecondsAfterFinished: ptr.To[int32](20)})
	require.NoError(t, err)

	apps := map[string]string{}
	require.Eventually(t, func() bool {
		for _, name := range []string{"clicks", "fraud"} {
			j, err := c.GetJob(ctx, name)
			if err != nil || j.Status.State != v1alpha1.JobRunning || j.Status.Application == nil {
				return false
			}
			apps[name] = j.Status.Application.Name
		}
		return true
	}, 2*time.Minute, 250*time.Millisecond, "both streams run")
	report, err := c.Queues(ctx, "bed")
	require.NoError(t, err)
	require.Empty(t, report.ConfigError, "the Hadoop 3 file is in force")
	require.Len(t, report.Ignored, 4, "%v", report.Ignored)
	require.Contains(t, report.Ignored[2], "<maxResources> of root.streaming: yarn.io/gpu")
	time.Sleep(2 * time.Second) // running, not just started
	for _, name := range []string{"clicks", "fraud"} {
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobRunning, j.Status.State, "%s runs until stopped: %s", name, j.Status.Message)
		dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: apps[name]}}
		require.NoError(t, p.kube.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"job":{"state":"suspended"}}}`))))
	}

	var s apitypes.Scheduling
	require.Eventually(t, func() bool {
		s, err = c.GetScheduling(ctx, "streams")
		return err == nil && s.Status.State == v1alpha1.SchedulingCompleted
	}, 2*time.Minute, 250*time.Millisecond, "the Scheduling ends once both are suspended")
	for name, want := range map[string]v1alpha1.BatchJobState{"clicks": v1alpha1.JobCompleted, "fraud": v1alpha1.JobFailed} {
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, want, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Contains(t, j.Status.Message, "suspended", name)
		require.Len(t, j.Status.History, 1, name)
		require.Equal(t, v1alpha1.RunOutcome(want), j.Status.History[0].Outcome, name)
		var dep flinkv1beta1.FlinkDeployment
		require.NoError(t, p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: apps[name]}, &dep))
		require.Equal(t, flinkv1beta1.LifecycleStateSuspended, dep.Status.LifecycleState, name)
	}
	p.waitSlotsFree(t, time.Minute)

	// ttlSecondsAfterFinished: 20 s after it ended, the Scheduling deletes itself, and its
	// jobs are released as a deletion releases them.
	require.Eventually(t, func() bool {
		_, err := c.GetScheduling(ctx, "streams")
		return apiclient.IsNotFound(err)
	}, time.Minute, 250*time.Millisecond, "the Scheduling outlived its time to live")
	require.GreaterOrEqual(t, time.Since(s.Status.FinishedAt.Time), 19*time.Second, "deleted before its time to live")
	for _, name := range []string{"clicks", "fraud"} {
		require.Eventually(t, func() bool {
			j, err := c.GetJob(ctx, name)
			return err == nil && j.Status.State == v1alpha1.JobReady
		}, time.Minute, 250*time.Millisecond, "%s was not released", name)
		require.Eventually(t, func() bool {
			var dep flinkv1beta1.FlinkDeployment
			err := p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: apps[name]}, &dep)
			return apierrors.IsNotFound(err) || (err == nil && dep.DeletionTimestamp != nil)
		}, time.Minute, 250*time.Millisecond, "%s's application stays", name)
	}
}
