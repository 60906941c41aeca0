// Package testplatform starts, for one test, everything `slotplane dev` runs: a control
// plane with the slot scheduler and kwok nodes, the extender, the operators' stand-in, the
// embedded Temporal server, a worker, the bridge and a Ready test bed "bed" in "default".
package testplatform

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/internal/appsim"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testcluster"
	"slotplane/internal/testtemporal"
	"slotplane/worker"
)

// Platform is what Start started; the test's cleanup stops all of it.
type Platform struct {
	Cluster  *testcluster.Cluster
	Client   client.Client
	Temporal temporalclient.Client
	// Restart stops the worker and starts a new one.
	Restart func()
}

// Bed is the test bed's shape: slots per node (of 4 nodes) and their size.
type Bed struct {
	SlotsPerNode int32
	CPU, Memory  string
}

// DefaultBed is 8 slots of 2 cpu and 8Gi.
var DefaultBed = Bed{SlotsPerNode: 2, CPU: "2", Memory: "8Gi"}

// Start starts the platform with a test bed of the given shape and waits until it is Ready.
func Start(t testing.TB, bed Bed) *Platform {
	t.Helper()
	// The extender's listener is opened first, so no other process can take its port
	// while the control plane starts.
	extenderListener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := extenderListener.Addr().String()
	c := testcluster.New(t, testcluster.Options{
		Nodes: 4, PlainNodes: 2, ExtenderURL: "https://" + addr + "/",
		NodeResources: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
		},
	})
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Over TLS both ways, as the scheduler is configured (testcluster.ExtenderCerts).
	tlsConf, err := extender.ServerTLS(c.ExtenderCerts.CertFile, c.ExtenderCerts.KeyFile, c.ExtenderCerts.ClientCAFile)
	require.NoError(t, err)
	ext, err := extender.Serve(context.Background(), c.Config, extenderListener, log, extender.WithTLS(tlsConf))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ext.Stop()) })
	sim, err := appsim.Start(context.Background(), c.Config, log, appsim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sim.Stop()) })

	_, tc := testtemporal.Start(t)
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	w := worker.New(tc, &activities.Activities{Client: cl})
	require.NoError(t, w.Start())
	p := &Platform{Cluster: c, Client: cl, Temporal: tc}
	p.Restart = func() {
		w.Stop()
		time.Sleep(2 * time.Second)
		w = worker.New(tc, &activities.Activities{Client: cl})
		require.NoError(t, w.Start())
	}
	t.Cleanup(func() { w.Stop() })

	// The bridge serves the spec check of BatchJobs, which the API server calls over TLS.
	hookCerts, err := testcluster.NewWebhookCerts(c.Dir, "bridge-webhook")
	require.NoError(t, err)
	hookPort, err := freeport.Get(1)
	require.NoError(t, err)
	mgr, err := bridge.New(c.Config, tc, bridge.Options{Webhook: bridge.WebhookOptions{
		Addr: "127.0.0.1:" + strconv.Itoa(hookPort[0]), CertDir: hookCerts.Dir, CertName: hookCerts.CertName, KeyName: hookCerts.KeyName}})
	require.NoError(t, err)
	require.NoError(t, testcluster.RegisterWebhook(context.Background(), c.Client(),
		bridge.SpecWebhookConfiguration(hookCerts.ClientConfig(hookPort[0], bridge.SpecWebhookPath))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	tb := &v1alpha1.TestBed{
		ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default"},
		Spec: v1alpha1.TestBedSpec{NodeLabel: testcluster.DefaultNodeLabel, SlotsPerNode: bed.SlotsPerNode, ResourcesPerSlot: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(bed.CPU), corev1.ResourceMemory: resource.MustParse(bed.Memory),
		}},
	}
	require.NoError(t, cl.Create(context.Background(), tb))
	WaitBed(t, cl, 4*int(bed.SlotsPerNode), 4*int(bed.SlotsPerNode))
	return p
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// WaitBed waits until test bed default/bed has total slots, all free, is Ready, and has
// that many running ghosts.
func WaitBed(t testing.TB, cl client.Client, total, ghosts int) {
	t.Helper()
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last seen: %s", last)
		}
	}()
	require.Eventually(t, func() bool {
		var tb v1alpha1.TestBed
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bed"}, &tb); err != nil {
			return false
		}
		var pods corev1.PodList
		if err := cl.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{v1alpha1.GhostLabel: "true"}); err != nil {
			return false
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		ready := false
		for _, c := range tb.Status.Conditions {
			ready = ready || (c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionTrue)
		}
		last = fmt.Sprintf("total %d free %d ghosts %d running %d ready %v", tb.Status.Total, tb.Status.Free, len(pods.Items), running, ready)
		return int(tb.Status.Total) == total && int(tb.Status.Free) == total && running == ghosts && len(pods.Items) == ghosts && ready
	}, 60*time.Second, 100*time.Millisecond, "bed never reached %d slots / %d ghosts", total, ghosts)
}
