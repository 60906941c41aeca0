// Package temporalserver embeds the real Temporal server (SQLite, with its Web UI) for local
// runs (`slotplane dev`) and tests. A production deployment talks to a Temporal cluster of its
// own and never links this package's server code through the worker.
package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"slotplane/internal/freeport"
)

const loopback = "127.0.0.1"

// DefaultNamespace is the namespace the server registers unless told otherwise: Temporal's
// own default, which slotplane's components use unless told otherwise too.
const DefaultNamespace = "default"

// Options configure an embedded Temporal server. The zero value is an
// in-memory server with no UI, logging nowhere.
type Options struct {
	// DatabaseFile keeps workflows in this SQLite file across restarts; empty keeps them in
	// memory for the life of the process.
	DatabaseFile string
	// Namespace is registered before the server starts; empty means DefaultNamespace.
	Namespace string
	// FrontendPort is the gRPC port clients dial; 0 picks a free one.
	FrontendPort int
	// UI serves the Temporal Web UI on UIPort (0 picks a free one).
	UI     bool
	UIPort int
	// LogFile receives the server's own logs (JSON lines); empty discards them.
	LogFile string
	// LogLevel is debug, info, warn or error; empty means warn.
	LogLevel string
}

// Server is a running embedded Temporal server.
type Server struct {
	// FrontendAddress is host:port of the gRPC frontend.
	FrontendAddress string
	// UIAddress is the Web UI's http URL, empty without UI.
	UIAddress string
	// MetricsAddress is the http URL of the server's Prometheus metrics.
	MetricsAddress string
	// Namespace is the registered namespace.
	Namespace string

	server temporal.Server
	ui     *uiserver.Server
	uiDone chan error
}

// Start starts the real Temporal server in this process and returns once a
// client can reach it and the namespace is usable. ctx bounds the wait.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	ports, server, err := startOnFreePorts(opts)
	if err != nil {
		return nil, err
	}
	frontend := hostPort(ports[0])
	ts := &Server{
		FrontendAddress: frontend,
		MetricsAddress:  "http://" + hostPort(ports[5]) + "/metrics",
		Namespace:       opts.Namespace,
		server:          server,
	}
	if opts.UI {
		ts.startUI(ports[6])
	}
	if err := ts.waitReady(ctx); err != nil {
		ts.Stop()
		return nil, err
	}
	return ts, nil
}

// startOnFreePorts makes and starts the server on free ports. A port found free can be
// taken by another process (a parallel test package's platform) before the server binds
// it; the server then fails to start with "address already in use", and another try on
// other free ports is made (freeport.Retry). A port opts names is kept on every try, so a
// taken -temporal-port fails after the last try with the bind error.
func startOnFreePorts(opts Options) ([]int, temporal.Server, error) {
	var ports []int
	var server temporal.Server
	err := freeport.Retry(func() error {
		var err error
		if ports, err = serverPorts(opts); err != nil {
			return err
		}
		server, err = startOn(opts, ports)
		return err
	}, portTaken)
	if err != nil {
		return nil, nil, err
	}
	return ports, server, nil
}

// startOn makes and starts the server on ports. A failure the server reports through its
// logger's Fatal while it is made (fatalPanics) comes back as the error.
func startOn(opts Options, ports []int) (server temporal.Server, err error) {
	defer recoverFatal(&err)
	if server, err = newServer(opts, ports); err != nil {
		return nil, err
	}
	if err := server.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	return server, nil
}

// portTaken tells whether err is a listener's bind failing on a port in use. The server's
// dependency injection does not always keep the error's chain, so its text is read too.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || freeport.InUse(err.Error())
}

// pickPorts finds free ports; a test replaces it to hand out a taken one.
var pickPorts = freeport.Get

// serverPorts are the server's ports, free ones unless opts names them: frontend gRPC and
// HTTP, history, matching, worker, metrics and UI, in that order.
func serverPorts(opts Options) ([]int, error) {
	ports, err := pickPorts(7)
	if err != nil {
		return nil, err
	}
	if opts.FrontendPort != 0 {
		ports[0] = opts.FrontendPort
	}
	if opts.UIPort != 0 {
		ports[6] = opts.UIPort
	}
	return ports, nil
}

// newServer makes the Temporal server, not started yet, on the ports of serverPorts: its
// SQLite store and namespace, its logger, authorization and dynamic configuration.
func newServer(opts Options, ports []int) (temporal.Server, error) {
	sqlConf, err := sqliteConfig(opts.DatabaseFile, opts.Namespace)
	if err != nil {
		return nil, err
	}
	conf := serverConfig(sqlConf, ports)

	var logger tlog.Logger = tlog.NewNoopLogger()
	if opts.LogFile != "" {
		logger = tlog.NewZapLogger(tlog.BuildZapLogger(tlog.Config{Level: opts.LogLevel, OutputFile: opts.LogFile}))
	}
	building := &atomic.Bool{}
	building.Store(true)
	defer building.Store(false)
	logger = fatalPanics{logger, building}
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("temporal claim mapper: %w", err)
	}
	server, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(hostPort(ports[0])),
			primitives.HistoryService:  static.SingleLocalHost(hostPort(ports[2])),
			primitives.MatchingService: static.SingleLocalHost(hostPort(ports[3])),
			primitives.WorkerService:   static.SingleLocalHost(hostPort(ports[4])),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// One SQLite connection serves everything: keep the history cache small and let
			// the UI list workflows often.
			dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8192,
			dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
			// A signal between workflows is delivered by a background task that must take the
			// target's lock. With every write going through one SQLite connection, a busy
			// Scheduling's lock is often held longer than the default 500 ms; the task then
			// backs off 3 s or more, and a job's end reached its Scheduling 4.8 s late.
			// Waiting for the lock instead keeps the delivery in the tens of milliseconds.
			dynamicconfig.HistoryCacheNonUserContextLockTimeout.Key(): 10 * time.Second,
			// One partition per task queue: the partitions spread the load of many matching
			// hosts, and here one host serves a handful of pollers. With the default four, a
			// task that lands on a partition with no poller waiting is forwarded to the root
			// partition, a hop more in the one process.
			dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
			dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	return server, nil
}

// startUI starts the Web UI on port, for the server's frontend and namespace; Stop ends it.
func (s *Server) startUI(port int) {
	s.ui = uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                loopback,
		Port:                port,
		TemporalGRPCAddress: s.FrontendAddress,
		EnableUI:            true,
		DefaultNamespace:    s.Namespace,
		DisableNewsFetch:    true, // the machine may have no internet
		HideLogs:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
	}))
	s.uiDone = make(chan error, 1)
	// Start blocks until Stop.
	go func() { s.uiDone <- s.ui.Start() }()
	s.UIAddress = "http://" + hostPort(port)
}

// Dial returns a client of the server's namespace.
func (s *Server) Dial() (client.Client, error) { return s.DialWithMetrics(nil) }

// DialWithMetrics is Dial with the client's (and its workers') metrics recorded by h.
func (s *Server) DialWithMetrics(h client.MetricsHandler) (client.Client, error) {
	// The frontend is on this machine: compressing would only cost CPU at both ends.
	return client.Dial(client.Options{HostPort: s.FrontendAddress, Namespace: s.Namespace, Logger: clientLogger(), MetricsHandler: h,
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}})
}

// Stop stops the UI and the server.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
		<-s.uiDone
		s.ui = nil
	}
	if s.server != nil {
		s.server.Stop()
		s.server = nil
	}
}

// waitReady returns when the frontend answers a health check and the namespace can be
// described. The frontend port accepts connections well before the server can serve, so a
// TCP dial proves nothing.
func (s *Server) waitReady(ctx context.Context) error {
	c, err := client.NewLazyClient(client.Options{HostPort: s.FrontendAddress, Namespace: s.Namespace, Logger: clientLogger()})
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	defer c.Close()
	var last error
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = c.CheckHealth(attempt, &client.CheckHealthRequest{})
		if last == nil {
			_, last = c.WorkflowService().DescribeNamespace(attempt, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace})
		}
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal server at %s not ready: %w", s.FrontendAddress, errors.Join(ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func sqliteConfig(file, namespace string) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	if file == "" {
		// A shared in-memory database lives as long as one connection to it: the name only
		// has to be unique within the process.
		conf.DatabaseName = "slotplane-" + strconv.FormatUint(rand.Uint64(), 36)
		conf.ConnectAttributes["mode"] = "memory"
		conf.ConnectAttributes["cache"] = "shared"
	} else {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		conf.DatabaseName = abs
		conf.ConnectAttributes["mode"] = "rwc"
		conf.ConnectAttributes["journal_mode"] = "wal"
		if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				return nil, fmt.Errorf("temporal database folder: %w", err)
			}
			if err := sqliteschema.SetupSchema(conf); err != nil {
				return nil, fmt.Errorf("create temporal schema in %s: %w", abs, err)
			}
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("temporal namespace %s: %w", namespace, err)
	}
	// Creating a namespace that exists is a no-op, so a restart on the same file is fine.
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("register temporal namespace %s: %w", namespace, err)
	}
	return conf, nil
}

const clusterName = "active"

func serverConfig(sqlConf *config.SQL, ports []int) *config.Config {
	service := func(grpc, http int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, HTTPPort: http, BindOnIP: loopback}}
	}
	conf := &config.Config{}
	conf.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: loopback}
	conf.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
		ListenAddress: hostPort(ports[5]),
		HandlerPath:   "/metrics",
	}}
	conf.Persistence = config.Persistence{
		DefaultStore:     "sqlite",
		VisibilityStore:  "sqlite",
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{"sqlite": {SQL: sqlConf}},
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: 1,
			RPCAddress:             hostPort(ports[0]),
			HTTPAddress:            hostPort(ports[1]),
		}},
	}
	conf.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	conf.Services = map[string]config.Service{
		"frontend": service(ports[0], ports[1]),
		"history":  service(ports[2], 0),
		"matching": service(ports[3], 0),
		"worker":   service(ports[4], 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The server's own system workers dial the frontend through this address.
	conf.PublicClient.HostPort = hostPort(ports[0])
	return conf
}

func hostPort(port int) string { return loopback + ":" + strconv.Itoa(port) }

// clientLogger is the SDK's logger for the clients made here: slog's default logger, at its
// level (the SDK's own default prints debug lines to stdout).
func clientLogger() sdklog.Logger { return sdklog.NewStructuredLogger(slog.Default()) }
