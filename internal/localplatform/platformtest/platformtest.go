// Package platformtest starts, for one test, the local platform `slotplane dev` runs
// (localplatform: a control plane with the slot scheduler and kwok nodes, the extender, the
// operators' stand-in, the embedded Temporal server, a worker and the bridge) with a Ready
// test bed "bed" in "default", and stops it when the test ends.
package platformtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/slots"
)

// Platform is what Start started; the test's cleanup stops all of it.
type Platform struct {
	Cluster  *localcluster.Cluster
	Client   client.Client
	Temporal temporalclient.Client
	// Metrics holds the metrics of the components that run in the test's process (the
	// Temporal SDK's among them).
	Metrics *prometheus.Registry
	// TemporalMetrics is the URL of the embedded Temporal server's Prometheus metrics.
	TemporalMetrics string
	// Restart stops the worker and, two seconds later, starts a new one.
	Restart func()
}

// Bed is the test bed's shape: slots per node (of 4 nodes) and their size.
type Bed struct {
	SlotsPerNode int32
	CPU, Memory  string
}

// nodeResources are each node's: a bed's slots beyond them have no room.
var nodeResources = corev1.ResourceList{
	corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
}

// DefaultBed is 8 slots of 2 cpu and 8Gi.
var DefaultBed = Bed{SlotsPerNode: 2, CPU: "2", Memory: "8Gi"}

// Start starts the local platform (localplatform) with a test bed of the given shape and waits
// until it is Ready.
func Start(t testing.TB, bed Bed) *Platform {
	t.Helper()
	// What of controller-runtime has no logger of its own (the webhook server's certificate
	// watcher) logs to its global one, which only the command line sets; unset, it prints a
	// warning with a stack trace into the test's output. A test's components log through
	// the platform's logger.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	dp, err := localplatform.Start(ctx, localplatform.Options{
		Nodes: 4, PlainNodes: 2, Metrics: reg,
		NodeResources: nodeResources,
		Log:           slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		dp.KeepDir = t.Failed()
		require.NoError(t, dp.Stop())
		if dp.KeepDir {
			t.Logf("platform logs kept in %s", dp.Dir)
		}
	})
	p := &Platform{Cluster: dp.Cluster, Client: dp.Kube, Temporal: dp.Temporal, Metrics: reg, TemporalMetrics: dp.TemporalServer.MetricsAddress}
	p.Restart = func() {
		dp.StopWorker()
		time.Sleep(2 * time.Second)
		require.NoError(t, dp.StartWorker())
	}
	tb := &v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
		Spec: v1alpha1.TestBedSpec{NodeLabel: localcluster.DefaultNodeLabel, SlotsPerNode: bed.SlotsPerNode, ResourcesPerSlot: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(bed.CPU), corev1.ResourceMemory: resource.MustParse(bed.Memory),
		}},
	}
	require.NoError(t, p.Client.Create(context.Background(), tb))
	fits, _ := slots.Fit(nodeResources, tb.Spec.ResourcesPerSlot, bed.SlotsPerNode) // the rest get no ghost
	WaitBed(t, p.Client, 4*int(bed.SlotsPerNode), 4*int(fits))
	return p
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// WaitBed waits until test bed default/bed has total slots, is Ready, and has ghosts running
// ghosts, one in each free slot (slots a node has no room for are neither).
func WaitBed(t testing.TB, cl client.Client, total, ghosts int) {
	t.Helper()
	var last localplatform.BedView
	require.Eventually(t, func() bool {
		v, err := localplatform.ReadBed(context.Background(), cl, client.ObjectKey{Namespace: "default", Name: "bed"})
		last = v
		return err == nil && int(v.Total) == total && int(v.Free) == ghosts && v.RunningGhosts == ghosts && v.Ghosts == ghosts && v.Ready
	}, 60*time.Second, 100*time.Millisecond, "bed never reached %d slots / %d ghosts; last seen %+v", total, ghosts, &last)
}
