package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slotplane/internal/temporalserver"
	"strconv"
	"strings"
	"time"

	"slotplane/activities"
	"slotplane/api"
	"slotplane/bridge"
	"slotplane/extender"
	"slotplane/internal/appsim"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testcluster"
	"slotplane/worker"
)

func runDev(ctx context.Context, args []string) error {
	home, _ := os.UserHomeDir()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	stateDir := fs.String("state-dir", envOr("SLOTPLANE_STATE_DIR", filepath.Join(home, ".local", "state", "slotplane", "dev")),
		"folder for the cluster's etcd data, the Temporal database and all logs; kept across runs")
	reset := fs.Bool("reset", false, "delete the state folder first and start from an empty platform")
	nodes := fs.Int("nodes", 4, "number of fake test bed nodes, labelled with -node-label (env SLOTPLANE_NODES)")
	plainNodes := fs.Int("plain-nodes", 2, "number of fake nodes outside the test bed, where drivers and JobManagers run (env SLOTPLANE_PLAIN_NODES)")
	nodeLabel := fs.String("node-label", envOr("SLOTPLANE_NODE_LABEL", testcluster.DefaultNodeLabel), "label key put on every fake node")
	temporalPort := fs.Int("temporal-port", 7233, "Temporal frontend gRPC port (env SLOTPLANE_TEMPORAL_PORT)")
	uiPort := fs.Int("ui-port", 8233, "Temporal Web UI port (env SLOTPLANE_UI_PORT)")
	apiPort := fs.Int("api-port", 8088, "REST API port (env SLOTPLANE_API_PORT)")
	defaults := fs.Bool("defaults", true, "on the first start, create the test bed \"bed\" (2 slots per test bed node) and open queues (examples/dev-queues.xml)")
	verbose := fs.Bool("v", false, "print the components' log lines (info level) on the console too; without it they go to slotplane.log in the state folder")
	demo := fs.Bool("demo", false, "submit a sample Scheduling of Spark and Flink jobs through the API and follow it live (once: a restart follows the same one)")
	if err := intsFromEnv(map[string]*int{"SLOTPLANE_NODES": nodes, "SLOTPLANE_PLAIN_NODES": plainNodes, "SLOTPLANE_TEMPORAL_PORT": temporalPort,
		"SLOTPLANE_UI_PORT": uiPort, "SLOTPLANE_API_PORT": apiPort}); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nodes < 0 {
		return fmt.Errorf("-nodes must not be negative, got %d", *nodes)
	}
	if *plainNodes < 0 {
		return fmt.Errorf("-plain-nodes must not be negative, got %d", *plainNodes)
	}
	// Fail before starting anything: a busy port found later would leave a half-started
	// platform to tear down.
	for name, port := range map[string]int{"-temporal-port": *temporalPort, "-ui-port": *uiPort, "-api-port": *apiPort} {
		if err := portFree(port); err != nil {
			return fmt.Errorf("%s %d: %w; pick another port or stop what uses it", name, port, err)
		}
	}
	if *reset {
		if err := os.RemoveAll(*stateDir); err != nil {
			return err
		}
	}
	// The folder holds the API token, the cluster's keys and Temporal's database: its
	// owner's only (an older folder made with 0755 is narrowed too).
	if err := os.MkdirAll(*stateDir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(*stateDir, 0o700); err != nil {
		return err
	}
	// The console is for the steps and the banner; the components log to a file.
	componentLog := filepath.Join(*stateDir, "slotplane.log")
	logFile, err := os.OpenFile(componentLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if *verbose {
		logOut.set(io.MultiWriter(os.Stderr, logFile))
	} else {
		logOut.set(logFile)
	}
	defer logOut.set(os.Stderr)
	started := time.Now()
	steps := &startup{total: 8}
	apiListener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*apiPort)))
	if err != nil {
		return fmt.Errorf("-api-port %d: %w", *apiPort, err)
	}
	defer apiListener.Close() // a no-op once the API serves on it
	// The extender's port too is taken now; the scheduler is told its address at start.
	extenderListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer extenderListener.Close() // a no-op once the extender serves on it
	extenderAddr := extenderListener.Addr().String()
	// Temporal first, and the API's port taken at once: the ports were found free a moment
	// ago, and the longer they wait, the likelier another process takes one.
	steps.begin("embedded Temporal server and Web UI")
	temporalLog := filepath.Join(*stateDir, "temporal.log")
	temporal, err := temporalserver.Start(ctx, temporalserver.Options{
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

	steps.begin(fmt.Sprintf("control plane: etcd, kube-apiserver, kube-scheduler, %d+%d kwok nodes", *nodes, *plainNodes))
	cluster, err := testcluster.Start(ctx, testcluster.Options{
		Nodes:       *nodes,
		PlainNodes:  *plainNodes,
		NodeLabel:   *nodeLabel,
		Dir:         filepath.Join(*stateDir, "cluster"),
		ExtenderURL: "https://" + extenderAddr + "/",
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

	steps.begin("scheduler extender")
	// HTTPS both ways: the cluster made a CA, the extender's certificate and the scheduler's
	// client certificate for this start.
	certs := cluster.ExtenderCerts
	extenderTLS, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	if err != nil {
		return err
	}
	ext, err := extender.Serve(ctx, cluster.Config, extenderListener, slog.Default(), extender.WithTLS(extenderTLS))
	if err != nil {
		return err
	}
	defer func() {
		slog.Info("stopping the extender")
		if err := ext.Stop(); err != nil {
			slog.Error("stop the extender", "err", err)
		}
	}()

	// The real Spark and Flink operators cannot run here; their stand-in plays them.
	steps.begin("Spark and Flink operator stand-in")
	sim, err := appsim.Start(ctx, cluster.Config, slog.Default(), appsim.Options{})
	if err != nil {
		return err
	}
	defer func() {
		slog.Info("stopping the Spark/Flink operator stand-in")
		if err := sim.Stop(); err != nil {
			slog.Error("stop the operator stand-in", "err", err)
		}
	}()

	tc, err := temporal.Dial()
	if err != nil {
		return err
	}
	defer tc.Close()
	steps.begin("worker and bridge")
	// The bridge serves the spec check of BatchJobs (kubectl's door), over TLS.
	hookCerts, err := testcluster.NewWebhookCerts(cluster.Dir, "bridge-webhook")
	if err != nil {
		return err
	}
	hookPort, err := freeport.Get(1)
	if err != nil {
		return err
	}
	mgr, err := bridge.New(cluster.Config, tc, bridge.Options{Webhook: bridge.WebhookOptions{
		Addr: "127.0.0.1:" + strconv.Itoa(hookPort[0]), CertDir: hookCerts.Dir, CertName: hookCerts.CertName, KeyName: hookCerts.KeyName}})
	if err != nil {
		return err
	}
	if err := testcluster.RegisterWebhook(ctx, cluster.Client(), bridge.SpecWebhookConfiguration(hookCerts.ClientConfig(hookPort[0], bridge.SpecWebhookPath))); err != nil {
		return err
	}
	// Activities read the API server directly, not the bridge's cache: a reconcile pass
	// must see the pods as they are now.
	live, err := kubeclient.Live(cluster.Config)
	if err != nil {
		return err
	}
	w := worker.New(tc, &activities.Activities{Client: live})
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	bridgeCtx, stopBridge := context.WithCancel(ctx)
	bridgeDone := make(chan error, 1)
	go func() { bridgeDone <- mgr.Start(bridgeCtx) }()
	defer func() {
		stopBridge()
		if err := <-bridgeDone; err != nil {
			slog.Error("bridge", "err", err)
		}
	}()

	steps.begin("REST API, change feed and dashboard")
	token, err := devToken(filepath.Join(*stateDir, "api-token"))
	if err != nil {
		return err
	}
	apiServer, err := api.Serve(api.Options{Client: live, Temporal: tc, Config: cluster.Config, Auth: api.StaticTokens{token: {Name: "dev", Groups: []string{"developers"}}}},
		apiListener)
	if err != nil {
		return err
	}
	defer func() {
		slog.Info("stopping the API")
		if err := apiServer.Stop(); err != nil {
			slog.Error("stop the API", "err", err)
		}
	}()

	steps.begin("default test bed and queues")
	if *defaults {
		if err := devDefaults(ctx, live, *stateDir, *nodeLabel); err != nil {
			return err
		}
	}
	steps.begin("waiting for the test bed's ghosts")
	waitBeds(ctx, live, 90*time.Second)
	steps.end()

	fmt.Printf(`
slotplane dev is up (ready in %.1fs)

  kubeconfig   %s
               export KUBECONFIG=%s
               %s apply -f examples/testbed.yaml -f examples/batchjobs.yaml -f examples/scheduling-queue.yaml
               %s get nodes,testbeds,batchjobs,schedulings
  nodes        %d fake nodes (kwok), labelled %s=00..%02d, and %d plain nodes for drivers
  extender     %s  (kube-scheduler profile slot-scheduler; mutual TLS, CA %s)
  operators    a stand-in for the Spark and Flink operators (run time: annotation slotplane.io/sim-duration)
  Temporal     %s  namespace %s, worker and bridge running
  Temporal UI  %s
  dashboard    %s/#token=%s
  API          %s/api/v1  (user "dev"; OpenAPI at /api/v1/openapi.json, websocket feed at /api/v1/watch)
               export SLOTPLANE_TOKEN=%s
               curl -H "Authorization: Bearer $SLOTPLANE_TOKEN" %s/api/v1/testbeds/bed
  metrics      %s
  logs         %s, %s/*.log, %s

Press Ctrl-C to stop; everything stops with it. State is kept in %s (-reset starts empty).
`, time.Since(started).Seconds(), cluster.Kubeconfig, cluster.Kubeconfig, cluster.Kubectl(), cluster.Kubectl(), *nodes, *nodeLabel, max(*nodes-1, 0), *plainNodes, ext.URL, certs.ClientCAFile,
		temporal.FrontendAddress, temporal.Namespace, temporal.UIAddress, apiServer.URL, token, apiServer.URL, token, apiServer.URL, temporal.MetricsAddress,
		componentLog, cluster.Dir, temporalLog, *stateDir)

	if *demo {
		if err := runDemo(ctx, apiServer.URL, token); err != nil && ctx.Err() == nil {
			slog.Error("demo", "err", err)
		}
	}
	<-ctx.Done()
	fmt.Println()
	return nil
}

// devToken reads the local platform's API token from path, making and saving one on the
// first run: a restarted platform keeps the token its clients know.
func devToken(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	token := api.NewToken()
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save the API token: %w", err)
	}
	return token, nil
}

// portFree reports an error when nothing can listen on 127.0.0.1:port.
func portFree(port int) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("not a TCP port")
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return errors.New("port is in use")
	}
	return l.Close()
}

// intsFromEnv sets each int from its environment variable, if set; flags parsed afterwards
// still win. A value that is not a number is an error, not a silent default.
func intsFromEnv(vars map[string]*int) error {
	for key, dst := range vars {
		v, ok := os.LookupEnv(key)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not a number", key, v)
		}
		*dst = n
	}
	return nil
}
