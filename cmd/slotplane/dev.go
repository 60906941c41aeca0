package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"slotplane/internal/testcluster"
	"slotplane/worker"
)

func runDev(ctx context.Context, args []string) error {
	home, _ := os.UserHomeDir()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	stateDir := fs.String("state-dir", envOr("SLOTPLANE_STATE_DIR", filepath.Join(home, ".local", "state", "slotplane", "dev")),
		"folder for the cluster's etcd data, the Temporal database and all logs; kept across runs")
	reset := fs.Bool("reset", false, "delete the state folder first and start from an empty platform")
	nodes := fs.Int("nodes", envInt("SLOTPLANE_NODES", 4), "number of fake nodes")
	nodeLabel := fs.String("node-label", envOr("SLOTPLANE_NODE_LABEL", testcluster.DefaultNodeLabel), "label key put on every fake node")
	temporalPort := fs.Int("temporal-port", envInt("SLOTPLANE_TEMPORAL_PORT", 7233), "Temporal frontend gRPC port")
	uiPort := fs.Int("ui-port", envInt("SLOTPLANE_UI_PORT", 8233), "Temporal Web UI port")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes < 0 {
		return fmt.Errorf("-nodes must not be negative, got %d", *nodes)
	}
	if *reset {
		if err := os.RemoveAll(*stateDir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*stateDir, 0o755); err != nil {
		return err
	}
	started := time.Now()
	slog.Info("starting the local control plane", "nodes", *nodes, "state", *stateDir)
	cluster, err := testcluster.Start(ctx, testcluster.Options{
		Nodes:     *nodes,
		NodeLabel: *nodeLabel,
		Dir:       filepath.Join(*stateDir, "cluster"),
	})
	if err != nil {
		return err
	}
	defer func() {
		slog.Info("stopping the local control plane")
		if err := cluster.Close(); err != nil {
			slog.Error("stop the local control plane", "err", err)
		}
	}()

	slog.Info("starting embedded Temporal")
	temporalLog := filepath.Join(*stateDir, "temporal.log")
	temporal, err := worker.StartTemporalServer(ctx, worker.TemporalServerOptions{
		DatabaseFile: filepath.Join(*stateDir, "temporal.db"),
		FrontendPort: *temporalPort,
		UI:           true,
		UIPort:       *uiPort,
		LogFile:      temporalLog,
		LogLevel:     "warn",
	})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, temporalLog)
	}
	defer func() {
		slog.Info("stopping embedded Temporal")
		temporal.Stop()
	}()

	fmt.Printf(`
slotplane dev is up (ready in %.1fs)

  kubeconfig   %s
               export KUBECONFIG=%s; kubectl get nodes,testbeds,batchjobs,schedulings
  nodes        %d fake nodes (kwok), labelled %s=00..%02d
  Temporal     %s  namespace %s
  Temporal UI  %s
  metrics      %s
  logs         %s/*.log, %s

Press Ctrl-C to stop; everything stops with it. State is kept in %s (-reset starts empty).
`, time.Since(started).Seconds(), cluster.Kubeconfig, cluster.Kubeconfig, *nodes, *nodeLabel, max(*nodes-1, 0),
		temporal.FrontendAddress, temporal.Namespace, temporal.UIAddress, temporal.MetricsAddress,
		cluster.Dir, temporalLog, *stateDir)

	<-ctx.Done()
	fmt.Println()
	return nil
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(envOr(key, strconv.Itoa(def))); err == nil {
		return v
	}
	return def
}
