// Package localplatform starts the whole of slotplane on one machine: a real control plane with
// the slot scheduler and kwok nodes (localcluster), the embedded Temporal server, the Spark and
// Flink operators' stand-in, and slotplane's extender, worker, bridge (with its spec webhook)
// and, when asked, the REST API, in this process. `slotplane dev` and the integration tests
// start it here; the end-to-end tests, which run slotplane's components as processes of the
// binary, start the same platform without them (Options.InfraOnly).
package localplatform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	temporalclient "go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/api"
	"slotplane/bridge"
	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/installation"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/standin"
	"slotplane/internal/localplatform/temporalserver"
	"slotplane/metrics"
	"slotplane/worker"
	"slotplane/workflows"
)

// Options shape a platform. The zero value is a control plane without nodes, Temporal in
// memory, and every component, in a temporary folder.
type Options struct {
	// Dir keeps the cluster's data, Temporal's database and the logs across starts. Empty
	// means a temporary folder with Temporal in memory, removed by Stop unless KeepDir.
	Dir string
	// Nodes test bed nodes labelled NodeLabel (default localcluster.DefaultNodeLabel), and
	// PlainNodes outside every bed; NodeResources is each node's capacity (nil:
	// localcluster's default).
	Nodes, PlainNodes int
	NodeLabel         string
	NodeResources     corev1.ResourceList
	// TemporalPort and UIPort are the Temporal frontend's and Web UI's ports (0: free ones);
	// UI serves the Web UI.
	TemporalPort, UIPort int
	UI                   bool
	// Temporal, when set, is the Temporal client of the namespace the platform runs in, in
	// place of an embedded server (TemporalServer stays nil): another platform's, or a
	// standalone server. The caller closes it.
	Temporal temporalclient.Client
	// Installation names the platform's task queues and workflow ids in that namespace.
	Installation installation.Names
	// WorkflowCheckEvery is the bridge's pace of workflow checks (0: the bridge's default).
	WorkflowCheckEvery time.Duration
	// Schedulers is how many kube-scheduler replicas run (localcluster.Options.Schedulers).
	Schedulers int
	// InfraOnly starts the control plane, Temporal and the operators' stand-in only, and
	// registers the spec webhook: the caller runs the extender at ExtenderAddr and the
	// bridge's webhook at WebhookAddr with WebhookCerts, and the worker and API as it likes.
	InfraOnly bool
	// API serves the REST API on this listener with Auth (without InfraOnly); nil: no API.
	API  net.Listener
	Auth api.Authenticator
	// Metrics, when set, gets the metrics of the components that run in process: their
	// Temporal client's, the worker's queue and test bed gauges, the API's and the
	// extender's (docs/metrics.md). slotplane dev serves it.
	Metrics *prometheus.Registry
	// Log gets the components' log lines; nil is slog.Default().
	Log *slog.Logger
	// Step is told the name of each step of the start as it begins.
	Step func(name string)
}

// Steps is how many steps Start tells Options.Step about, at most.
const Steps = 6

// Platform is what Start started. Stop stops all of it.
type Platform struct {
	Dir     string
	Cluster *localcluster.Cluster
	// TemporalServer is the embedded server; Temporal a client of its namespace.
	TemporalServer *temporalserver.Server
	Temporal       temporalclient.Client
	// Kube reads and writes the API server directly (no cache), as the activities do.
	Kube client.Client
	// ExtenderAddr is where the scheduler calls the extender (host:port, HTTPS with the
	// cluster's ExtenderCerts); Extender serves it unless InfraOnly.
	ExtenderAddr string
	Extender     *extender.Server
	// WebhookAddr and WebhookCerts: where the API server calls the bridge's spec webhook.
	WebhookAddr  string
	WebhookCerts *localcluster.WebhookCerts
	// API is the REST API when Options.API was set.
	API *api.Server
	// MetricsURL is where its caller serves Options.Metrics, for the banner.
	MetricsURL string
	// KeepDir keeps a temporary Dir at Stop (a failed test's logs).
	KeepDir bool

	opts             Options
	log              *slog.Logger
	extenderListener net.Listener
	tempDir          bool
	worker           sdkworker.Worker
	// changes wakes the worker's waiting activities; it outlives worker restarts.
	changes *activities.Changes
	stops   []stop
}

type stop struct {
	name string
	fn   func() error
}

// Start starts the platform, step by step. On an error it stops what it started.
func Start(ctx context.Context, opts Options) (_ *Platform, err error) {
	p := &Platform{opts: opts, Dir: opts.Dir, log: opts.Log}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.Dir == "" {
		if p.Dir, err = os.MkdirTemp("", "slotplane-platform-"); err != nil {
			return nil, err
		}
		p.tempDir = true
	} else if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return nil, err
	} else if err := checkHistoryForm(p.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.KeepDir = true // the logs say why
			_ = p.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, p.Dir)
		}
	}()
	// The extender's port is taken first, so no other process takes it while the control
	// plane starts; the scheduler is told its address.
	if err := p.listenForExtender(); err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{p.startTemporal, p.startCluster, p.startExtender, p.startStandIn, p.startWorkerAndBridge, p.startAPI} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// step tells Options.Step that a step begins.
func (p *Platform) step(name string) {
	if p.opts.Step != nil {
		p.opts.Step(name)
	}
}

// onStop adds what Stop undoes, last started first stopped.
func (p *Platform) onStop(name string, fn func() error) {
	p.stops = append(p.stops, stop{name, fn})
}

// listenForExtender takes the extender's address: a listener the extender will serve on,
// or with InfraOnly a free port for the caller's extender. Stop closes the listener if the
// extender never took it.
func (p *Platform) listenForExtender() error {
	if p.opts.InfraOnly {
		ports, err := freeport.Get(1)
		if err != nil {
			return err
		}
		p.ExtenderAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	p.ExtenderAddr, p.extenderListener = l.Addr().String(), l
	p.onStop("the extender's port", func() error {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	return nil
}

func (p *Platform) startTemporal(ctx context.Context) error {
	if p.opts.Temporal != nil {
		p.Temporal = p.opts.Temporal
		return nil
	}
	p.step("embedded Temporal server and Web UI")
	o := temporalserver.Options{FrontendPort: p.opts.TemporalPort, UI: p.opts.UI, UIPort: p.opts.UIPort,
		LogFile: filepath.Join(p.Dir, "temporal.log"), LogLevel: "warn"}
	if !p.tempDir {
		o.DatabaseFile = filepath.Join(p.Dir, "temporal.db")
	}
	srv, err := temporalserver.Start(ctx, o)
	if err != nil {
		return fmt.Errorf("embedded Temporal: %w (log: %s)", err, o.LogFile)
	}
	p.TemporalServer = srv
	p.onStop("embedded Temporal", func() error { srv.Stop(); return nil })
	var handler temporalclient.MetricsHandler
	if p.opts.Metrics != nil {
		tm := metrics.NewTemporal()
		p.opts.Metrics.MustRegister(tm)
		handler = tm.Handler()
	}
	if p.Temporal, err = srv.DialWithMetrics(handler); err != nil {
		return err
	}
	tc := p.Temporal
	p.onStop("the Temporal client", func() error { tc.Close(); return nil })
	return nil
}

func (p *Platform) startCluster(ctx context.Context) error {
	p.step(fmt.Sprintf("control plane: etcd, kube-apiserver, kube-scheduler, %d+%d kwok nodes", p.opts.Nodes, p.opts.PlainNodes))
	c, err := localcluster.Start(ctx, localcluster.Options{
		Nodes: p.opts.Nodes, PlainNodes: p.opts.PlainNodes, NodeLabel: p.opts.NodeLabel, NodeResources: p.opts.NodeResources, Schedulers: p.opts.Schedulers,
		Dir: filepath.Join(p.Dir, "cluster"), ExtenderURL: "https://" + p.ExtenderAddr + "/",
		// The test bed's nodes are dedicated, as slotplane asks of a cluster, whenever drivers
		// and JobManagers have plain nodes to go to: a grant clears its slots' ghosts before
		// the job's pods come, and on a shared node an ordinary pod would take that room.
		DedicateNodes: p.opts.PlainNodes > 0,
	})
	if err != nil {
		return err
	}
	p.Cluster = c
	p.onStop("the local control plane", c.Close)
	if p.Kube, err = kubeclient.Live(kubeclient.ForComponent(c.Config, "dev")); err != nil {
		return err
	}
	// The bridge serves the spec check of BatchJobs (kubectl's door), over TLS; the API
	// server calls it from now on, and lets a job through while it does not answer.
	if p.WebhookCerts, err = localcluster.NewWebhookCerts(c.Dir, "bridge-webhook"); err != nil {
		return err
	}
	port, err := freeport.Get(1)
	if err != nil {
		return err
	}
	p.WebhookAddr = "127.0.0.1:" + strconv.Itoa(port[0])
	return localcluster.RegisterWebhook(ctx, c.Client(), bridge.SpecWebhookConfiguration(p.WebhookCerts.ClientConfig(port[0], bridge.SpecWebhookPath)))
}

func (p *Platform) startExtender(ctx context.Context) error {
	if p.opts.InfraOnly {
		return nil
	}
	p.step("scheduler extender")
	// HTTPS both ways: the cluster made a CA, the extender's certificate and the scheduler's
	// client certificate for this start.
	certs := p.Cluster.ExtenderCerts
	tlsConf, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	if err != nil {
		return err
	}
	ext, err := extender.Serve(ctx, kubeclient.ForComponent(p.Cluster.Config, "extender"), p.extenderListener, p.log, extender.WithTLS(tlsConf))
	if err != nil {
		return err
	}
	p.Extender = ext
	p.onStop("the extender", ext.Stop)
	return nil
}

// startStandIn starts the Spark and Flink operators' stand-in: the real operators cannot run
// here.
func (p *Platform) startStandIn(ctx context.Context) error {
	p.step("Spark and Flink operator stand-in")
	sim, err := standin.Start(ctx, kubeclient.ForComponent(p.Cluster.Config, "standin"), p.log, standin.Options{})
	if err != nil {
		return err
	}
	p.onStop("the Spark/Flink operator stand-in", sim.Stop)
	return nil
}

func (p *Platform) startWorkerAndBridge(_ context.Context) error {
	if p.opts.InfraOnly {
		return nil
	}
	p.step("worker and bridge")
	watchCtx, stopWatch := context.WithCancel(context.Background())
	waker := &worker.AdmissionWaker{Temporal: p.Temporal, IDs: p.opts.Installation, Log: p.log, Ctx: watchCtx}
	changes, err := activities.WatchChanges(watchCtx, kubeclient.ForComponent(p.Cluster.Config, "worker"), p.log, waker.Wake)
	if err != nil {
		stopWatch()
		return err
	}
	p.changes = changes
	p.onStop("the worker's watches", func() error { stopWatch(); return nil })
	if p.opts.Metrics != nil {
		p.opts.Metrics.MustRegister(&worker.Collector{Temporal: p.Temporal, IDs: p.opts.Installation, Log: p.log,
			Beds: func(ctx context.Context) ([]v1alpha1.TestBed, error) { return changes.TestBeds(ctx, p.Kube) }})
	}
	mgr, err := bridge.New(kubeclient.ForComponent(p.Cluster.Config, "bridge"), p.Temporal, bridge.Options{Log: p.log, Installation: p.opts.Installation, WorkflowCheckEvery: p.opts.WorkflowCheckEvery, Webhook: bridge.WebhookOptions{
		Addr: p.WebhookAddr, CertDir: p.WebhookCerts.Dir, CertName: p.WebhookCerts.CertName, KeyName: p.WebhookCerts.KeyName}})
	if err != nil {
		return err
	}
	if err := p.StartWorker(); err != nil {
		return err
	}
	p.onStop("the worker", func() error { p.StopWorker(); return nil })
	// The bridge runs until Stop; its own context, so that a caller's cancelled context
	// (Ctrl-C) stops it in order with the rest.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	p.onStop("the bridge", func() error { cancel(); return <-done })
	return nil
}

// StartWorker starts the worker (every workflow and activity of slotplane), after
// StopWorker: a worker's crash and restart, for tests.
func (p *Platform) StartWorker() error {
	// Activities read the API server directly, not a cache: a reconcile pass must see the
	// pods as they are now. Their client is the worker's own, as in a cluster, where the
	// worker is a process of its own.
	wk, err := kubeclient.Live(kubeclient.ForComponent(p.Cluster.Config, "worker"))
	if err != nil {
		return err
	}
	w := worker.New(p.Temporal, &activities.Activities{Client: wk, Changes: p.changes}, p.opts.Installation, nil)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	p.worker = w
	return nil
}

// StopWorker stops the worker.
func (p *Platform) StopWorker() {
	if p.worker != nil {
		p.worker.Stop()
		p.worker = nil
	}
}

func (p *Platform) startAPI(_ context.Context) error {
	if p.opts.InfraOnly || p.opts.API == nil {
		return nil
	}
	p.step("REST API, change feed and dashboard")
	o := api.Options{Client: p.Kube, Temporal: p.Temporal, IDs: p.opts.Installation, Config: kubeclient.ForComponent(p.Cluster.Config, "api"), Auth: p.opts.Auth}
	if p.opts.Metrics != nil {
		o.Metrics = p.opts.Metrics
	}
	srv, err := api.Serve(o, p.opts.API)
	if err != nil {
		return err
	}
	p.API = srv
	p.onStop("the API", srv.Stop)
	return nil
}

// Stop stops everything Start started, the last first, and removes a temporary folder
// unless KeepDir. It returns every error met on the way.
func (p *Platform) Stop() error {
	var errs []error
	for i := len(p.stops) - 1; i >= 0; i-- {
		s := p.stops[i]
		p.log.Info("stopping " + s.name)
		if err := s.fn(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.name, err))
		}
	}
	p.stops = nil
	if p.tempDir && !p.KeepDir {
		if err := os.RemoveAll(p.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// historyFormFile, in a kept Dir, names the form of the workflows in its Temporal database
// (workflows.HistoryForm).
const historyFormFile = "workflows-form"

// ErrOtherHistoryForm: the kept Dir's Temporal database holds workflows of another form than
// this build's, whose histories this build cannot replay.
var ErrOtherHistoryForm = errors.New("the state folder holds workflows of another build")

// checkHistoryForm refuses a kept dir whose Temporal database was made by workflows of
// another form: their runs would fail on this build with nondeterminism errors, over and
// over. A dir without a database takes this build's form.
func checkHistoryForm(dir string) error {
	formPath := filepath.Join(dir, historyFormFile)
	_, dbErr := os.Stat(filepath.Join(dir, "temporal.db"))
	if errors.Is(dbErr, os.ErrNotExist) {
		return os.WriteFile(formPath, []byte(workflows.HistoryForm+"\n"), 0o600)
	}
	raw, err := os.ReadFile(formPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if have := strings.TrimSpace(string(raw)); have != workflows.HistoryForm {
		if have == "" {
			have = "unknown (older than the check)"
		}
		return fmt.Errorf("%w: its workflows are of form %s, this build's are of form %s, and their histories would not replay. "+
			"Start anew with `slotplane dev -reset` (it deletes %s), or keep the folder and give another with -state-dir",
			ErrOtherHistoryForm, have, workflows.HistoryForm, dir)
	}
	return nil
}
