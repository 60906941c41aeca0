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
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"slotplane/api"
	"slotplane/internal/cli"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/metrics"
)

// devFlags are slotplane dev's flags.
type devFlags struct {
	stateDir, nodeLabel                                       string
	reset, defaults, verbose, demo                            bool
	nodes, plainNodes, temporalPort, uiPort, api, metricsPort int
}

// parseDevFlags reads the flags (and their SLOTPLANE_* variables) and checks them, before
// anything starts.
func parseDevFlags(args []string) (devFlags, error) {
	var f devFlags
	home, _ := os.UserHomeDir()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.StringVar(&f.stateDir, "state-dir", envOr("SLOTPLANE_STATE_DIR", filepath.Join(home, ".local", "state", "slotplane", "dev")),
		"folder for the cluster's etcd data, the Temporal database and all logs; kept across runs")
	fs.BoolVar(&f.reset, "reset", false, "delete the state folder first and start from an empty platform")
	fs.IntVar(&f.nodes, "nodes", 4, "number of fake test bed nodes, labelled with -node-label (env SLOTPLANE_NODES)")
	fs.IntVar(&f.plainNodes, "plain-nodes", 2, "number of fake nodes outside the test bed, where drivers and JobManagers run (env SLOTPLANE_PLAIN_NODES)")
	fs.StringVar(&f.nodeLabel, "node-label", envOr("SLOTPLANE_NODE_LABEL", localcluster.DefaultNodeLabel), "label key put on every fake node")
	fs.IntVar(&f.temporalPort, "temporal-port", 7233, "Temporal frontend gRPC port (env SLOTPLANE_TEMPORAL_PORT)")
	fs.IntVar(&f.uiPort, "ui-port", 8233, "Temporal Web UI port (env SLOTPLANE_UI_PORT)")
	fs.IntVar(&f.api, "api-port", 8088, "REST API port (env SLOTPLANE_API_PORT)")
	fs.IntVar(&f.metricsPort, "metrics-port", 8090, "port of slotplane's Prometheus /metrics, the in-process components' together (env SLOTPLANE_METRICS_PORT)")
	fs.BoolVar(&f.defaults, "defaults", true, "on the first start, create the test bed \"bed\" (2 slots per test bed node) and open queues (examples/dev-queues.xml)")
	fs.BoolVar(&f.verbose, "v", false, "print the components' log lines (info level) on the console too; without it they go to slotplane.log in the state folder")
	fs.BoolVar(&f.demo, "demo", false, "submit a sample Scheduling of Spark and Flink jobs through the API and follow it live (once: a restart follows the same one)")
	if err := intsFromEnv(map[string]*int{"SLOTPLANE_NODES": &f.nodes, "SLOTPLANE_PLAIN_NODES": &f.plainNodes, "SLOTPLANE_TEMPORAL_PORT": &f.temporalPort,
		"SLOTPLANE_UI_PORT": &f.uiPort, "SLOTPLANE_API_PORT": &f.api, "SLOTPLANE_METRICS_PORT": &f.metricsPort}); err != nil {
		return f, err
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.nodes < 0 {
		return f, fmt.Errorf("-nodes must not be negative, got %d", f.nodes)
	}
	if f.plainNodes < 0 {
		return f, fmt.Errorf("-plain-nodes must not be negative, got %d", f.plainNodes)
	}
	// Fail before starting anything: a busy port found later would leave a half-started
	// platform to tear down.
	for name, port := range map[string]int{"-temporal-port": f.temporalPort, "-ui-port": f.uiPort, "-api-port": f.api, "-metrics-port": f.metricsPort} {
		if err := portFree(port); err != nil {
			return f, fmt.Errorf("%s %d: %w; pick another port or stop what uses it", name, port, err)
		}
	}
	return f, nil
}

// prepareState makes the state folder (emptied first with -reset) and points the
// components' logs at slotplane.log in it. The returned function puts the logs back.
func prepareState(f devFlags) (componentLog string, restore func(), err error) {
	if f.reset {
		if err := os.RemoveAll(f.stateDir); err != nil {
			return "", nil, err
		}
	}
	// The folder holds the API token, the cluster's keys and Temporal's database: its
	// owner's only (an older folder made with 0755 is narrowed too).
	if err := os.MkdirAll(f.stateDir, 0o700); err != nil {
		return "", nil, err
	}
	if err := os.Chmod(f.stateDir, 0o700); err != nil {
		return "", nil, err
	}
	// The console is for the steps and the banner; the components log to a file.
	componentLog = filepath.Join(f.stateDir, "slotplane.log")
	logFile, err := os.OpenFile(componentLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", nil, err
	}
	if f.verbose {
		logOut.set(io.MultiWriter(os.Stderr, logFile))
	} else {
		logOut.set(logFile)
	}
	return componentLog, func() {
		logOut.set(os.Stderr)
		_ = logFile.Close()
	}, nil
}

func runDev(ctx context.Context, args []string) error {
	f, err := parseDevFlags(args)
	if err != nil {
		return err
	}
	componentLog, restoreLogs, err := prepareState(f)
	if err != nil {
		return err
	}
	defer restoreLogs()
	started := time.Now()
	steps := &startup{total: localplatform.Steps + 2}
	// The API's port is taken at once: it was found free a moment ago, and the longer it
	// waits, the likelier another process takes it.
	apiListener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.api)))
	if err != nil {
		return fmt.Errorf("-api-port %d: %w", f.api, err)
	}
	defer apiListener.Close() // a no-op once the API serves on it
	token, err := devToken(filepath.Join(f.stateDir, "api-token"))
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry("dev")
	p, err := localplatform.Start(ctx, localplatform.Options{
		Dir: f.stateDir, Nodes: f.nodes, PlainNodes: f.plainNodes, NodeLabel: f.nodeLabel,
		TemporalPort: f.temporalPort, UI: true, UIPort: f.uiPort,
		API: apiListener, Auth: api.StaticTokens{token: {Name: "dev", Groups: []string{"developers"}}},
		Metrics: reg, Step: steps.begin,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := p.Stop(); err != nil {
			slog.Error("stop the local platform", "err", err)
		}
	}()
	// One endpoint for the components that run in this process; the extender's registry
	// has its own go_* and process_* metrics, so only its slotplane_extender_* join.
	metricsCtx, stopMetrics := context.WithCancel(context.Background())
	defer stopMetrics()
	metricsAt, _, err := metrics.Serve(metricsCtx, net.JoinHostPort("127.0.0.1", strconv.Itoa(f.metricsPort)),
		prometheus.Gatherers{reg, metrics.Only("slotplane_extender_", p.Extender.Metrics)})
	if err != nil {
		return fmt.Errorf("-metrics-port %d: %w", f.metricsPort, err)
	}
	p.MetricsURL = "http://" + metricsAt.String() + "/metrics"
	steps.begin("default test bed and queues")
	if f.defaults {
		if err := localplatform.CreateDefaults(ctx, p.Kube, f.stateDir, f.nodeLabel); err != nil {
			return err
		}
	}
	steps.begin("waiting for the test bed's ghosts")
	if !localplatform.WaitBedsReady(ctx, p.Kube, 90*time.Second) {
		fmt.Println("      (not all test beds are Ready yet; the dashboard shows them as they come)")
	}
	steps.end()
	printBanner(f, p, token, componentLog, time.Since(started))
	if f.demo {
		if err := cli.Demo(ctx, cli.Connection{Server: p.API.URL, Token: token}, os.Stdout); err != nil && ctx.Err() == nil {
			slog.Error("demo", "err", err)
		}
	}
	<-ctx.Done()
	fmt.Println()
	return nil
}

// printBanner says where everything is.
func printBanner(f devFlags, p *localplatform.Platform, token, componentLog string, ready time.Duration) {
	cluster, temporal, apiServer := p.Cluster, p.TemporalServer, p.API
	fmt.Printf(`
slotplane dev is up (ready in %.1fs)

  kubeconfig   %s
               export KUBECONFIG=%s
               %s apply -f examples/testbed.yaml -f examples/batchjobs.yaml -f examples/scheduling-queue.yaml
               %s get nodes,testbeds,batchjobs,schedulings
  nodes        %d fake nodes (kwok), labelled %s=00..%02d, and %d plain nodes for drivers
  extender     https://%s/  (kube-scheduler profile slot-scheduler; mutual TLS, CA %s)
  operators    a stand-in for the Spark and Flink operators (run time: annotation slotplane.io/sim-duration)
  Temporal     %s  namespace %s, worker and bridge running
  Temporal UI  %s
  dashboard    %s/#token=%s
  API          %s/api/v1  (user "dev"; OpenAPI at /api/v1/openapi.json, websocket feed at /api/v1/watch)
               export SLOTPLANE_TOKEN=%s
               curl -H "Authorization: Bearer $SLOTPLANE_TOKEN" %s/api/v1/testbeds/bed
  metrics      %s  (slotplane's: queues, slots, jobs, API, extender, Temporal SDK)
               %s  (the Temporal server's)
  logs         %s, %s/*.log, %s

Press Ctrl-C to stop; everything stops with it. State is kept in %s (-reset starts empty).
`, ready.Seconds(), cluster.Kubeconfig, cluster.Kubeconfig, cluster.Kubectl(), cluster.Kubectl(), f.nodes, f.nodeLabel, max(f.nodes-1, 0), f.plainNodes, p.ExtenderAddr, cluster.ExtenderCerts.ClientCAFile,
		temporal.FrontendAddress, temporal.Namespace, temporal.UIAddress, apiServer.URL, token, apiServer.URL, token, apiServer.URL, p.MetricsURL, temporal.MetricsAddress,
		componentLog, cluster.Dir, filepath.Join(f.stateDir, "temporal.log"), f.stateDir)
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

// startup prints `slotplane dev`'s progress: one numbered line per step, and how long the
// step before took.
type startup struct {
	total, n int
	name     string
	since    time.Time
}

func (s *startup) begin(name string) {
	s.end()
	s.n++
	s.name, s.since = name, time.Now()
	fmt.Printf("[%d/%d] %s ...\n", s.n, s.total, name)
}

func (s *startup) end() {
	if s.name != "" {
		fmt.Printf("      done in %.1fs\n", time.Since(s.since).Seconds())
		s.name = ""
	}
}
