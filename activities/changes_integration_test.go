//go:build integration

package activities_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testcluster"
)

// WatchChanges wakes a waiter when a pod of its job is made, changed or deleted, and not for
// another job's pods.
func TestWatchChanges_WakesTheJobsWaiters(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := activities.WatchChanges(ctx, c.Config, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kubeclient.Live(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	job := types.NamespacedName{Namespace: "default", Name: "etl"}
	pod := func(name, job string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{v1alpha1.BatchJobLabel: job}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	}
	// The watches start asynchronously: wait until a change of the job's own pod is seen.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		wake, stop := ch.Wait(job)
		p := pod("warm-"+string(rune('a'+i%26))+time.Now().Format("150405.000000")[7:], "etl")
		if err := cl.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		case <-time.After(time.Second):
			stop()
			if time.Now().After(deadline) {
				t.Fatal("no wake-up for the job's pod in 30s")
			}
			continue
		}
		break
	}
	other, stop := ch.Wait(types.NamespacedName{Namespace: "default", Name: "other"})
	defer stop()
	wake, _ := ch.Wait(job)
	start := time.Now()
	if err := cl.Create(ctx, pod("etl-driver", "etl")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Logf("woken %s after the create", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("the job's waiter was not woken by its pod's creation")
	}
	select {
	case <-other:
		t.Fatal("another job's waiter was woken")
	default:
	}
}
