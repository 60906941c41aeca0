//go:build integration

package localcluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Two schedulers elect one leader, and the other takes over when it dies; etcd and the API
// server come back from an outage with the cluster's objects.
func TestCluster_FaultsOfTheControlPlane(t *testing.T) {
	t.Parallel()
	c := New(t, Options{Schedulers: 2})
	ctx := context.Background()
	var leader int
	require.Eventually(t, func() bool {
		var err error
		leader, err = c.SchedulerLeader()
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "no scheduler leads")
	c.KillScheduler(leader)
	killed := time.Now()
	require.Eventually(t, func() bool {
		next, err := c.SchedulerLeader()
		return err == nil && next != leader
	}, 20*time.Second, 200*time.Millisecond, "the standby scheduler never took over")
	t.Logf("the standby scheduler leads %s after the leader's death", time.Since(killed).Round(100*time.Millisecond))
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		ended, _ := c.schedulers[leader].proc.exited()
		return !ended
	}, 10*time.Second, 100*time.Millisecond, "the killed scheduler was not started again")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	_, err := c.Client().CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"kube-apiserver", "etcd"} {
		require.NoError(t, c.Outage(ctx, name, 2*time.Second), name)
		require.Eventually(t, func() bool {
			got, err := c.Client().CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
			return err == nil && got.Data["k"] == "v"
		}, 30*time.Second, 200*time.Millisecond, "after the outage of %s", name)
	}
	require.Error(t, c.Outage(ctx, "kwok", time.Second), "only etcd and the API server have outages")
}
