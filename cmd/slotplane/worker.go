package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/bridge"
	"slotplane/internal/kubeclient"
	"slotplane/worker"
)

// connections are the flags every cluster-and-Temporal command shares.
type connections struct {
	kubeconfig, temporal, namespace *string
}

func connectionFlags(fs *flag.FlagSet) connections {
	return connections{
		kubeconfig: fs.String("kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account"),
		temporal:   fs.String("temporal-address", envOr("SLOTPLANE_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port"),
		namespace:  fs.String("temporal-namespace", envOr("SLOTPLANE_TEMPORAL_NAMESPACE", worker.DefaultNamespace), "Temporal namespace"),
	}
}

func (c connections) dial() (*rest.Config, client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", *c.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes config: %w", err)
	}
	tc, err := client.Dial(client.Options{HostPort: *c.temporal, Namespace: *c.namespace})
	if err != nil {
		return nil, nil, fmt.Errorf("dial temporal at %s: %w", *c.temporal, err)
	}
	return cfg, tc, nil
}

// dialLive is dial plus a live Kubernetes client (no cache), for commands that read the
// API server directly. The caller closes the Temporal client.
func (c connections) dialLive() (client.Client, ctrlclient.Client, error) {
	cfg, tc, err := c.dial()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kubeclient.Live(cfg)
	if err != nil {
		tc.Close()
		return nil, nil, err
	}
	return tc, cl, nil
}

func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	conn := connectionFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tc, cl, err := conn.dialLive()
	if err != nil {
		return err
	}
	defer tc.Close()
	w := worker.New(tc, &activities.Activities{Client: cl})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	slog.Info("worker polling", "temporal", *conn.temporal, "namespace", *conn.namespace)
	<-ctx.Done()
	w.Stop()
	return nil
}

func runBridge(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	conn := connectionFlags(fs)
	metrics := fs.String("metrics-listen", envOr("SLOTPLANE_METRICS_LISTEN", ":8080"), "Prometheus metrics address; 0 turns them off")
	health := fs.String("health-listen", envOr("SLOTPLANE_HEALTH_LISTEN", ":8081"), "/healthz and /readyz address; 0 turns them off")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, tc, err := conn.dial()
	if err != nil {
		return err
	}
	defer tc.Close()
	mgr, err := bridge.New(cfg, tc, bridge.Options{MetricsAddr: *metrics, HealthAddr: *health})
	if err != nil {
		return err
	}
	slog.Info("bridge watching", "temporal", *conn.temporal)
	return mgr.Start(ctx)
}
