package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"slotplane/activities"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/health"
	"slotplane/internal/kubeclient"
	"slotplane/internal/lifecycle"
	"slotplane/metrics"
	"slotplane/worker"
)

// temporalFlags are the flags of every command that talks to Temporal: where it is, how to
// reach it, and the installation's names in its namespace.
type temporalFlags struct {
	temporal, namespace *string
	// TLS to an external Temporal cluster: a CA to trust, a client certificate and key for
	// mutual TLS, and the server name to expect. Any of them turns TLS on.
	tlsCA, tlsCert, tlsKey, tlsServerName *string
	// apiKeyFile holds an API key sent as a bearer token on every request (Temporal Cloud's
	// API keys, or a self-hosted cluster's JWT authorization); it turns TLS on.
	apiKeyFile *string
	// compression is the gRPC compression of requests to Temporal: gzip or none.
	compression *string
	// taskQueue and idPrefix name this installation's task queue and workflow ids
	// (installation.Names).
	taskQueue, idPrefix *string
	// temporalMetrics, when set, records the Temporal client's (and its worker's) metrics.
	temporalMetrics client.MetricsHandler
}

// connections are the flags every cluster-and-Temporal command shares.
type connections struct {
	temporalFlags
	// component is the command that runs (worker, bridge, api, ...): its requests to the API
	// server say so (kubeclient.ForComponent).
	component  string
	kubeconfig *string
	// schedulingSteps and admissionSteps set lifecycle.Steps for the workflows this process
	// starts.
	schedulingSteps, admissionSteps *int
	// kubeRates bound this process's requests to the API server (-kube-qps, -kube-burst).
	kubeRates *kubeclient.Rates
	// logs are the component's -log-format and -log-level, applied after parsing.
	logs logFlags
}

// metricsFlag is -metrics-listen of the long-running components: where Prometheus scrapes
// them.
func metricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics-listen", envOr("SLOTPLANE_METRICS_LISTEN", ":8080"), "address of the Prometheus /metrics endpoint (plain HTTP); 0 turns it off")
}

// serveMetrics starts the component's metrics endpoint unless turned off; it stops with ctx.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry) error {
	if metrics.Off(addr) {
		return nil
	}
	at, errc, err := metrics.Serve(ctx, addr, reg)
	if err != nil {
		return err
	}
	go func() {
		if err := <-errc; err != nil {
			slog.Error("metrics endpoint stopped", "err", err)
		}
	}()
	slog.Info("metrics serving", "url", "http://"+at.String()+"/metrics")
	return nil
}

// temporalRegistry is a component's registry with a Temporal metrics handler registered in
// it, set on conn for the client dial makes.
func temporalRegistry(component string, conn *connections) *prometheus.Registry {
	reg := metrics.NewRegistry(component)
	tm := metrics.NewTemporal()
	reg.MustRegister(tm)
	conn.temporalMetrics = tm.Handler()
	return reg
}

func connectionFlags(fs *flag.FlagSet) connections {
	return connections{
		temporalFlags:   addTemporalFlags(fs),
		component:       fs.Name(),
		kubeconfig:      fs.String("kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account"),
		schedulingSteps: fs.Int("scheduling-steps-per-run", 0, "decisions of a Scheduling workflow before it continues as new (0: its default, 500)"),
		admissionSteps:  fs.Int("admission-steps-per-run", 0, "decisions of an Admission workflow before it continues as new (0: its default, 300)"),
		kubeRates:       kubeclient.RateFlags(fs),
		logs:            addLogFlags(fs),
	}
}

func addTemporalFlags(fs *flag.FlagSet) temporalFlags {
	return temporalFlags{
		temporal:  fs.String("temporal-address", envOr("SLOTPLANE_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port"),
		namespace: fs.String("temporal-namespace", envOr("SLOTPLANE_TEMPORAL_NAMESPACE", worker.DefaultNamespace), "Temporal namespace"),
		tlsCA:     fs.String("temporal-tls-ca", envOr("SLOTPLANE_TEMPORAL_TLS_CA", ""), "PEM file of the CA that signed the Temporal frontend's certificate (default: the system's roots, or the binary's own copy of Mozilla's where the system has none, as in the image); turns TLS on"),
		tlsCert:   fs.String("temporal-tls-cert", envOr("SLOTPLANE_TEMPORAL_TLS_CERT", ""), "PEM client certificate for mutual TLS with Temporal (with -temporal-tls-key)"),
		tlsKey:    fs.String("temporal-tls-key", envOr("SLOTPLANE_TEMPORAL_TLS_KEY", ""), "PEM private key of -temporal-tls-cert"),
		tlsServerName: fs.String("temporal-tls-server-name", envOr("SLOTPLANE_TEMPORAL_TLS_SERVER_NAME", ""),
			"the name the Temporal frontend's certificate must carry (default: the host of -temporal-address); turns TLS on"),
		apiKeyFile: fs.String("temporal-api-key-file", envOr("SLOTPLANE_TEMPORAL_API_KEY_FILE", ""),
			"file holding a Temporal API key, sent as a bearer token on every request and read again when the file changes; turns TLS on"),
		compression: fs.String("temporal-compression", envOr("SLOTPLANE_TEMPORAL_COMPRESSION", "none"),
			"gRPC compression of requests to Temporal, and so of its answers: none (CPU saved on both ends, for a frontend in or near the cluster) or gzip (fewer bytes, for a frontend across a WAN)"),
		taskQueue: fs.String("task-queue", envOr("SLOTPLANE_TASK_QUEUE", installation.DefaultTaskQueue),
			"this installation's task queue; its Admission workflows run on the same name with -admission after it. Two clusters that share a Temporal namespace each set their own, with -workflow-id-prefix"),
		idPrefix: fs.String("workflow-id-prefix", envOr("SLOTPLANE_WORKFLOW_ID_PREFIX", ""),
			"what starts every workflow id of this installation (e.g. eu-1/); two clusters that share a Temporal namespace each set their own"),
	}
}

// credentials are the API key credentials -temporal-api-key-file asks for, or nil.
func (c temporalFlags) credentials() (client.Credentials, error) {
	if *c.apiKeyFile == "" {
		return nil, nil
	}
	key, err := apiKey(*c.apiKeyFile)
	if err != nil {
		return nil, err
	}
	return client.NewAPIKeyDynamicCredentials(key), nil
}

// temporalTLS is the TLS configuration the flags ask for, or nil for plain connections. The
// client certificate is read again when its files change (clientCertificate).
func (c temporalFlags) temporalTLS() (*tls.Config, error) {
	if *c.tlsCA == "" && *c.tlsCert == "" && *c.tlsKey == "" && *c.tlsServerName == "" && *c.apiKeyFile == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: *c.tlsServerName}
	if *c.tlsCA != "" {
		pem, err := os.ReadFile(*c.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("-temporal-tls-ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("-temporal-tls-ca: %s holds no PEM certificate", *c.tlsCA)
		}
	}
	switch {
	case (*c.tlsCert == "") != (*c.tlsKey == ""):
		return nil, errors.New("-temporal-tls-cert and -temporal-tls-key go together")
	case *c.tlsCert != "":
		get, err := clientCertificate(*c.tlsCert, *c.tlsKey)
		if err != nil {
			return nil, err
		}
		conf.GetClientCertificate = get
	}
	return conf, nil
}

// temporalCompression is the Temporal client's gRPC compression that -temporal-compression
// names.
func (c temporalFlags) temporalCompression() (client.GrpcCompression, error) {
	switch *c.compression {
	case "none":
		return &client.GrpcCompressionNone{}, nil
	case "gzip":
		return &client.GrpcCompressionGzip{}, nil
	}
	return nil, fmt.Errorf("-temporal-compression is %q: it must be none or gzip", *c.compression)
}

// kubeConfig is the configuration of this process's Kubernetes clients, at the flags' rates.
func (c connections) kubeConfig() (*rest.Config, error) {
	return kubeclient.Config(*c.kubeconfig, c.component, *c.kubeRates)
}

// installation is the installation the flags name.
func (c temporalFlags) installation() installation.Names {
	return installation.Names{TaskQueue: *c.taskQueue, IDPrefix: *c.idPrefix}
}

// options are the Temporal client's options the flags ask for.
func (c temporalFlags) options() (client.Options, error) {
	if err := c.installation().Check(); err != nil {
		return client.Options{}, fmt.Errorf("-task-queue or -workflow-id-prefix: %w", err)
	}
	compression, err := c.temporalCompression()
	if err != nil {
		return client.Options{}, err
	}
	tlsConf, err := c.temporalTLS()
	if err != nil {
		return client.Options{}, err
	}
	creds, err := c.credentials()
	if err != nil {
		return client.Options{}, err
	}
	return client.Options{HostPort: *c.temporal, Namespace: *c.namespace, Logger: worker.ClientLogger(), Credentials: creds,
		ConnectionOptions: client.ConnectionOptions{TLS: tlsConf, GrpcCompression: compression}, MetricsHandler: c.temporalMetrics}, nil
}

// dial is the configuration of this process's Kubernetes clients and its Temporal client.
func (c connections) dial() (*rest.Config, client.Client, error) {
	if *c.schedulingSteps < 0 || *c.admissionSteps < 0 {
		return nil, nil, errors.New("-scheduling-steps-per-run and -admission-steps-per-run must not be negative")
	}
	lifecycle.Steps = lifecycle.StepsPerRun{Scheduling: *c.schedulingSteps, Admission: *c.admissionSteps}
	// Every flag is checked before anything connects.
	opts, err := c.options()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := c.kubeConfig()
	if err != nil {
		return nil, nil, err
	}
	tc, err := client.Dial(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("dial temporal at %s: %w", *c.temporal, err)
	}
	return cfg, tc, nil
}

func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	conn := connectionFlags(fs)
	metricsAddr := metricsFlag(fs)
	pprofAddr := pprofFlag(fs)
	healthAddr := fs.String("health-listen", envOr("SLOTPLANE_HEALTH_LISTEN", ":8081"),
		"/healthz (the worker polls) and /readyz (it reaches Temporal and the API server) address; 0 turns them off")
	queueList := fs.String("task-queues", envOr("SLOTPLANE_TASK_QUEUES", ""),
		"the task queues to poll, separated by commas (default: both): the installation's -task-queue (test beds, Schedulings, jobs) and the same name with -admission after it"+
			" (the beds' Admission); a large bed runs a worker of each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := conn.logs.apply(); err != nil {
		return err
	}
	ids := conn.installation()
	queues, err := worker.ParseQueues(ids, *queueList)
	if err != nil {
		return fmt.Errorf("-task-queues: %w", err)
	}
	if _, err := serveProfiles(ctx, *pprofAddr); err != nil {
		return err
	}
	reg := temporalRegistry("worker", &conn)
	cfg, tc, err := conn.dial()
	if err != nil {
		return err
	}
	defer tc.Close()
	cl, err := kubeclient.Live(cfg)
	if err != nil {
		return err
	}
	// The worker that runs Admission wakes it when slots free, and reports the queues. One
	// without the jobs' workflows keeps no copy of their pods and applications.
	var wake activities.SlotsWake
	admission := worker.Polls(queues, ids.AdmissionQueue())
	if admission {
		wake = (&worker.AdmissionWaker{Temporal: tc, IDs: ids, Log: slog.Default(), Ctx: ctx}).Wake
	}
	watch := activities.WatchChanges
	if !worker.Polls(queues, ids.Queue()) {
		watch = activities.WatchCopies
	}
	changes, err := watch(ctx, cfg, slog.Default(), wake)
	if err != nil {
		return err
	}
	if admission {
		reg.MustRegister(&worker.Collector{Temporal: tc, IDs: ids, Log: slog.Default(),
			Beds: func(ctx context.Context) ([]v1alpha1.TestBed, error) { return changes.TestBeds(ctx, cl) }})
	}
	if err := serveMetrics(ctx, *metricsAddr, reg); err != nil {
		return err
	}
	// A task queue's worker that stops for good ends the process, to be restarted: it would
	// otherwise poll no more while looking alive. Its liveness fails from that moment.
	fatal := make(chan error, 1)
	var stopped atomic.Pointer[error]
	w := worker.NewStopping(tc, &activities.Activities{Client: cl, Changes: changes}, ids, queues, func(err error) {
		stopped.CompareAndSwap(nil, &err)
		select {
		case fatal <- err:
		default:
		}
	})
	if err := serveHealth(ctx, *healthAddr, cfg, tc, func() error {
		if err := stopped.Load(); err != nil {
			return fmt.Errorf("the Temporal worker stopped: %w", *err)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	slog.Info("worker polling", "temporal", *conn.temporal, "namespace", *conn.namespace, "task-queues", queues)
	go func() {
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		worker.TakeOver(tctx, tc.WorkflowService(), *conn.namespace, cl, ids, queues, slog.Default())
	}()
	select {
	case <-ctx.Done():
	case err := <-fatal:
		w.Stop()
		return fmt.Errorf("the Temporal worker stopped: %w", err)
	}
	w.Stop()
	return nil
}

func runBridge(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	conn := connectionFlags(fs)
	metricsAddr := metricsFlag(fs)
	health := fs.String("health-listen", envOr("SLOTPLANE_HEALTH_LISTEN", ":8081"), "/healthz and /readyz address; 0 turns them off")
	hook := fs.String("webhook-listen", envOr("SLOTPLANE_WEBHOOK_LISTEN", ""), "address of the HTTPS admission webhook that checks BatchJobs' wrapped specs ("+bridge.SpecWebhookPath+"); empty turns it off")
	hookCerts := fs.String("webhook-cert-dir", envOr("SLOTPLANE_WEBHOOK_CERT_DIR", ""), "directory with the webhook's tls.crt and tls.key (reloaded when they change)")
	leaseFlags := addLeaseFlags(fs, "slotplane-bridge", "run as one of several replicas: only the one that holds the Lease reconciles; every one serves the webhook")
	checkEvery := fs.Duration("workflow-check-every", 30*time.Second, "how often the test beds' workflows are checked for a failing task, and the test beds and jobs for a workflow that is not running (started again)")
	pprofAddr := pprofFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := conn.logs.apply(); err != nil {
		return err
	}
	if _, err := serveProfiles(ctx, *pprofAddr); err != nil {
		return err
	}
	// The bridge's metrics are controller-runtime's registry (its reconcilers' and work
	// queues'), served by the manager; the Temporal client's and the build's join it.
	tm := metrics.NewTemporal()
	ctrlmetrics.Registry.MustRegister(tm, metrics.BuildInfo("bridge"))
	conn.temporalMetrics = tm.Handler()
	cfg, tc, err := conn.dial()
	if err != nil {
		return err
	}
	defer tc.Close()
	var leaseOpts bridge.LeaseOptions
	if *leaseFlags.elect {
		if *leaseFlags.namespace == "" {
			return errors.New("-leader-elect needs -lease-namespace outside a cluster")
		}
		leaseOpts = bridge.LeaseOptions{Namespace: *leaseFlags.namespace, Name: *leaseFlags.name}
	}
	mgr, err := bridge.New(cfg, tc, bridge.Options{MetricsAddr: *metricsAddr, HealthAddr: *health, Lease: leaseOpts,
		Webhook: bridge.WebhookOptions{Addr: *hook, CertDir: *hookCerts}, WorkflowCheckEvery: *checkEvery, Installation: conn.installation()})
	if err != nil {
		return err
	}
	slog.Info("bridge watching", "temporal", *conn.temporal)
	return mgr.Start(ctx)
}

// serveHealth serves a component's liveness (live) and readiness (it reaches Temporal and
// the API server) on addr unless turned off ("0"); it stops with ctx.
func serveHealth(ctx context.Context, addr string, cfg *rest.Config, tc client.Client, live func() error) error {
	if metrics.Off(addr) {
		return nil
	}
	kube, err := health.KubeAPI(cfg)
	if err != nil {
		return err
	}
	at, err := health.Serve(ctx, addr, live, health.Temporal(tc), kube)
	if err != nil {
		return err
	}
	slog.Info("health serving", "url", "http://"+at+"/healthz")
	return nil
}
