//go:build integration

package localcluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/internal/localplatform/standin"
)

// kwok ends a pod annotated with a simulated run after that run, Succeeded or Failed as the
// outcome annotation says, and leaves every other pod running until it is deleted.
func TestKwok_EndsAPodAfterItsSimulatedRun(t *testing.T) {
	c := New(t, Options{Nodes: 1})
	ctx := context.Background()
	pods := map[string]map[string]string{
		"ends-well":     {standin.SimDurationAnnotation: "2s"},
		"ends-badly":    {standin.SimDurationAnnotation: "2s", standin.SimOutcomeAnnotation: standin.SimOutcomeFailed},
		"said-to-pass":  {standin.SimDurationAnnotation: "1s", standin.SimOutcomeAnnotation: standin.SimOutcomeSucceeded},
		"runs-for-ever": nil,
	}
	for name, annotations := range pods {
		pod := testPod(name, nil)
		pod.Annotations = annotations
		_, err := c.Client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	ended := func(name string, phase corev1.PodPhase, exitCode int32, reason string, after time.Duration) {
		t.Helper()
		var pod *corev1.Pod
		require.Eventually(t, func() bool {
			var err error
			pod, err = c.Client().CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			return pod.Status.Phase == phase
		}, 20*time.Second, 50*time.Millisecond, "pod %s never %s", name, phase)
		require.Len(t, pod.Status.ContainerStatuses, 1)
		term := pod.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, "pod %s: container not terminated: %+v", name, pod.Status.ContainerStatuses[0].State)
		require.Equal(t, exitCode, term.ExitCode)
		require.Equal(t, reason, term.Reason)
		require.False(t, pod.Status.ContainerStatuses[0].Ready)
		// The status keeps one-second precision; a run may look up to a second short.
		ran := term.FinishedAt.Sub(pod.Status.StartTime.Time)
		require.GreaterOrEqual(t, ran, after-time.Second, "pod %s ran %s", name, ran)
		require.Less(t, ran, after+5*time.Second, "pod %s ran %s", name, ran)
	}
	ended("ends-well", corev1.PodSucceeded, 0, "Completed", 2*time.Second)
	ended("ends-badly", corev1.PodFailed, 1, "Error", 2*time.Second)
	ended("said-to-pass", corev1.PodSucceeded, 0, "Completed", time.Second)

	forever := waitPodRunning(t, c, "runs-for-ever")
	require.NotEmpty(t, forever.Status.PodIP)
	require.NoError(t, c.Client().CoreV1().Pods("default").Delete(ctx, "runs-for-ever", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := c.Client().CoreV1().Pods("default").Get(ctx, "runs-for-ever", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 20*time.Second, 50*time.Millisecond, "a deleted running pod is removed")
}
