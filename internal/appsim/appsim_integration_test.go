//go:build integration

package appsim_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/internal/appsim"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testcluster"
)

func spark(name, duration, outcome string) *sparkv1beta2.SparkApplication {
	two := int32(2)
	app := &sparkv1beta2.SparkApplication{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{appsim.SimDurationAnnotation: duration}},
		Spec: sparkv1beta2.SparkApplicationSpec{
			Type: "Scala", SparkVersion: "3.5.3", Image: "spark:3.5.3", MainApplicationFile: "local:///opt/app.jar",
			Executor: sparkv1beta2.ExecutorSpec{Instances: &two, SparkPodSpec: sparkv1beta2.SparkPodSpec{Memory: "512m"}},
		},
	}
	if outcome != "" {
		app.Annotations[appsim.SimOutcomeAnnotation] = outcome
	}
	return app
}

func podNames(t *testing.T, cl client.Client, role string) []string {
	var pods corev1.PodList
	require.NoError(t, cl.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{appsim.RoleLabel: role}))
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p.Name)
		}
	}
	return out
}

// A SparkApplication runs its driver, then its executors, and completes when kwok ends the
// driver after the simulated run; a FlinkDeployment finishes the same way; a failing run
// ends FAILED; deleting an application removes its pods; a restart duplicates nothing.
func TestAppsim_PlaysTheOperators(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{PlainNodes: 2})
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	ctx := context.Background()
	sim, err := appsim.Start(ctx, c.Config, slog.New(slog.DiscardHandler), appsim.Options{})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			require.NoError(t, sim.Stop())
		}
	})
	state := func(name string) sparkv1beta2.ApplicationStateType {
		var app sparkv1beta2.SparkApplication
		require.NoError(t, cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &app))
		return app.Status.AppState.State
	}

	require.NoError(t, cl.Create(ctx, spark("wc", "4s", "")))
	require.Eventually(t, func() bool {
		return state("wc") == sparkv1beta2.ApplicationStateRunning && len(podNames(t, cl, "executor")) == 2
	}, 30*time.Second, 100*time.Millisecond, "driver and two executors run")
	require.ElementsMatch(t, []string{"wc-exec-1", "wc-exec-2"}, podNames(t, cl, "executor"))

	// Restart mid-run: nothing is created twice, the run still completes.
	require.NoError(t, sim.Stop())
	stopped = true
	sim, err = appsim.Start(ctx, c.Config, slog.New(slog.DiscardHandler), appsim.Options{})
	require.NoError(t, err)
	stopped = false
	require.Eventually(t, func() bool { return state("wc") == sparkv1beta2.ApplicationStateCompleted }, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool { return len(podNames(t, cl, "executor")) == 0 }, 10*time.Second, 100*time.Millisecond, "executors go with the driver")

	require.NoError(t, cl.Create(ctx, spark("bad", "1s", "Failed")))
	require.Eventually(t, func() bool { return state("bad") == sparkv1beta2.ApplicationStateFailed }, 30*time.Second, 100*time.Millisecond)

	cpu, one := 1.0, int32(1)
	dep := &flinkv1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "clicks", Namespace: "default", Annotations: map[string]string{appsim.SimDurationAnnotation: "3s"}},
		Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", TaskManager: &flinkv1beta1.TaskManagerSpec{
			Resource: &flinkv1beta1.Resource{CPU: &cpu, Memory: "1g"}, Replicas: &one,
		}},
	}
	require.NoError(t, cl.Create(ctx, dep))
	flinkState := func() flinkv1beta1.FlinkJobState {
		var d flinkv1beta1.FlinkDeployment
		require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(dep), &d))
		return d.Status.JobStatus.State
	}
	require.Eventually(t, func() bool {
		return flinkState() == flinkv1beta1.FlinkJobRunning && len(podNames(t, cl, "taskmanager")) == 1
	}, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool { return flinkState() == flinkv1beta1.FlinkJobFinished }, 30*time.Second, 100*time.Millisecond)

	// Deleting an application takes its pods along, then the application goes.
	require.NoError(t, cl.Create(ctx, spark("forever", "1h", "")))
	require.Eventually(t, func() bool { return len(podNames(t, cl, "executor")) == 2 }, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, cl.Delete(ctx, &sparkv1beta2.SparkApplication{ObjectMeta: metav1.ObjectMeta{Name: "forever", Namespace: "default"}}))
	require.Eventually(t, func() bool {
		var pods corev1.PodList
		require.NoError(t, cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{appsim.AppLabel: "sparkapplication.forever"}))
		var app sparkv1beta2.SparkApplication
		gone := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "forever"}, &app) != nil
		return len(pods.Items) == 0 && gone
	}, 30*time.Second, 100*time.Millisecond, "pods and application gone")
}
