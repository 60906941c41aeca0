//go:build integration

package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/testobjects"
)

// On the real platform: a BatchJob deleted while it runs fails in its Scheduling, which
// completes, and its slots go to the next job; Admission keeps nothing of it. Then a test
// bed deleted while a job waits for its slots: Admission refuses the waiting job and ends,
// and the Scheduling completes once its running job ends.
func TestAdmission_DeletedJobAndDeletedTestBedEndCleanly(t *testing.T) {
	t.Parallel()
	p := startPlatform(t) // 8 slots
	ctx := context.Background()

	t.Run("a BatchJob deleted mid-run", func(t *testing.T) {
		require.NoError(t, p.client.Create(ctx, queuedJob("doomed", "ann", "10m")))
		require.NoError(t, p.client.Create(ctx, queuedJob("next", "ann", "3s")))
		require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("deleting").Queue("team").Job("doomed", 8).Job("next", 8).Obj()))
		require.Eventually(t, func() bool { return p.batchJob(t, "doomed").Status.State == v1alpha1.JobRunning }, 2*time.Minute, 250*time.Millisecond)
		require.NoError(t, p.client.Delete(ctx, &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "doomed", Namespace: "default"}}))

		s := p.waitScheduling(t, "deleting", v1alpha1.SchedulingCompleted, 2*time.Minute)
		doomed := jobStatusOf(s, "doomed")
		require.Equal(t, v1alpha1.JobFailed, doomed.State)
		require.Contains(t, doomed.Message, "was deleted")
		require.Equal(t, v1alpha1.JobCompleted, jobStatusOf(s, "next").State, "the next job got the deleted job's slots")
		require.Eventually(t, func() bool {
			r := p.queues(t)
			return len(r.Running) == 0 && len(r.Waiting) == 0
		}, time.Minute, 250*time.Millisecond, "Admission keeps nothing")
	})

	t.Run("a test bed deleted while a job waits", func(t *testing.T) {
		require.NoError(t, p.client.Create(ctx, queuedJob("blocker", "ann", "10s")))
		require.NoError(t, p.client.Create(ctx, queuedJob("waiter", "ann", "1s")))
		require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("orphaned").Queue("team").Job("blocker", 8).Job("waiter", 1).Obj()))
		require.Eventually(t, func() bool { return p.batchJob(t, "blocker").Status.State == v1alpha1.JobRunning }, 2*time.Minute, 250*time.Millisecond)
		require.NoError(t, p.client.Delete(ctx, &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"}}))

		s := p.waitScheduling(t, "orphaned", v1alpha1.SchedulingCompleted, 2*time.Minute)
		waiter := jobStatusOf(s, "waiter")
		require.Equal(t, v1alpha1.JobFailed, waiter.State)
		require.Contains(t, waiter.Message, "test bed bed was deleted")
		require.Equal(t, v1alpha1.JobCompleted, jobStatusOf(s, "blocker").State, "the running job ran to its end")
		require.Eventually(t, func() bool {
			d, err := p.temporal.DescribeWorkflowExecution(ctx, installation.Default.AdmissionID("default", "bed"), "")
			return err == nil && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, time.Minute, 250*time.Millisecond, "Admission ended with its test bed")
	})
}
