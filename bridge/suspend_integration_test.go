//go:build integration

package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/standin"
	"slotplane/internal/testobjects"
)

// An application suspended while it runs (kubectl patch of the FlinkDeployment's job.state,
// or of the SparkApplication's suspend, as an operator's user would) ends its job as the
// job's suspendedOutcome says: Completed by default, Failed when asked. A run whose
// application passes through the operators' other states (UNKNOWN, PENDING_RERUN,
// INVALIDATING; a job RESTARTING, a lifecycle UPGRADING) is not ended by them.
func TestLifecycle_ASuspendedApplicationEndsItsJobAsConfigured(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	for _, j := range []*v1alpha1.BatchJob{
		testobjects.BatchJob("stream").Flink().Obj(), // runs until stopped
		testobjects.BatchJob("stream-strict").Flink().SuspendedOutcome(v1alpha1.RunFailed).Obj(),
		testobjects.BatchJob("etl").Obj(),
		testobjects.BatchJob("wobbly").RunFor("6s").Annotation(standin.SimDetourAnnotation, "UNKNOWN,PENDING_RERUN,INVALIDATING").Obj(),
		testobjects.BatchJob("wobbly-stream").Flink().RunFor("6s").Annotation(standin.SimDetourAnnotation, "job=RESTARTING,lifecycle=UPGRADING,job=RECONCILING").Obj(),
	} {
		require.NoError(t, p.client.Create(ctx, j))
	}
	s := testobjects.Scheduling("stops").Job("stream", 1).Job("stream-strict", 1).Job("etl", 2).
		Job("wobbly", 2).Job("wobbly-stream", 2).Obj()
	require.NoError(t, p.client.Create(ctx, s))

	running := func(names ...string) bool {
		for _, n := range names {
			if p.batchJob(t, n).Status.State != v1alpha1.JobRunning {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool { return running("stream", "stream-strict", "etl") }, 2*time.Minute, 250*time.Millisecond, "the three run")
	suspend := func(obj client.Object, patch string) {
		app := p.batchJob(t, obj.GetName()).Status.Application
		require.NotNil(t, app, obj.GetName())
		obj.SetNamespace("default")
		obj.SetName(app.Name)
		require.NoError(t, p.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))))
	}
	suspend(&flinkv1beta1.FlinkDeployment{ObjectMeta: objectNamed("stream")}, `{"spec":{"job":{"state":"suspended"}}}`)
	suspend(&flinkv1beta1.FlinkDeployment{ObjectMeta: objectNamed("stream-strict")}, `{"spec":{"job":{"state":"suspended"}}}`)
	suspend(&sparkv1beta2.SparkApplication{ObjectMeta: objectNamed("etl")}, `{"spec":{"suspend":true}}`)

	done := p.waitScheduling(t, "stops", v1alpha1.SchedulingCompleted, 3*time.Minute) // every job ended
	want := map[string]v1alpha1.BatchJobState{"stream": v1alpha1.JobCompleted, "stream-strict": v1alpha1.JobFailed, "etl": v1alpha1.JobCompleted,
		"wobbly": v1alpha1.JobCompleted, "wobbly-stream": v1alpha1.JobCompleted}
	for name, state := range want {
		j := p.batchJob(t, name)
		require.Equal(t, state, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, state, jobStatusOf(done, name).State, name)
		require.Len(t, j.Status.History, 1, name)
		if strings.HasPrefix(name, "wobbly") {
			require.Contains(t, j.Status.Message, "ended", name)
			continue
		}
		require.Contains(t, j.Status.Message, "the application was suspended (SUSPENDED)", name)
		require.Equal(t, v1alpha1.RunOutcome(state), j.Status.History[0].Outcome, name)
	}
	require.Contains(t, p.batchJob(t, "stream-strict").Status.Message, "suspendedOutcome is Failed")
}

// objectNamed is the metadata of the job's object; suspend replaces the name with its
// application's.
func objectNamed(job string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: job} }
