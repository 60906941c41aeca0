// Package bridge turns cluster changes into workflow starts and signals: TestBeds, nodes and
// the pods of test beds go to the workflow of each test bed concerned; a BatchJob's changes
// to its workflow; a Scheduling starts, extends or cancels its workflow (so `kubectl apply`
// and the API lead to the same workflow). It decides nothing; the workflows read the cluster themselves. Its work queue
// merges repeated changes of one test bed, and the workflow debounces the rest. The one thing
// it writes besides a Scheduling's finalizer is the test beds' QueuesConfigured condition,
// which says whether the namespace's allocation file loads.
package bridge

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	temporal "go.temporal.io/sdk/client"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/health"
	"slotplane/internal/kubeclient"
	"slotplane/workflows"
)

// TestBedSignaller signals a test bed's workflow for the changes that concern it: at once
// for the first change after a quiet spell, then at most once every SignalEvery, the last
// one after the last change. The workflow gathers a burst for a second before its pass
// anyway (workflows.TestBedInput.Debounce), and reads the cluster itself: what a signal
// carries is only that something changed. Every signal costs the workflow a task, and a
// job's pods changing five times each made most of the workflow tasks of a run.
type TestBedSignaller struct {
	Reader   client.Reader
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
	// SignalEvery is the least time between two signals to one test bed's workflow (0:
	// DefaultSignalEvery).
	SignalEvery time.Duration
	// Now is the signaller's clock (nil: the wall clock).
	Now func() time.Time

	mu   sync.Mutex
	sent map[types.NamespacedName]time.Time
	// known holds the test beds seen to exist. Only the deletion of one of them concerns the
	// other beds: a pod naming a bed that never existed (any pod may carry any bed label)
	// signals nothing.
	known map[types.NamespacedName]bool
}

// DefaultSignalEvery is TestBedSignaller's SignalEvery: half the workflow's debounce, so a
// change that comes during a gathering is told before it ends, or with the next pass's.
const DefaultSignalEvery = 500 * time.Millisecond

// due tells whether the test bed's workflow may be signalled now, and if not, in how long.
// A yes counts as the signal sent.
func (s *TestBedSignaller) due(bed types.NamespacedName) (time.Duration, bool) {
	every := s.SignalEvery
	if every <= 0 {
		every = DefaultSignalEvery
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	if last, ok := s.sent[bed]; ok && now.Sub(last) < every {
		return every - now.Sub(last), false
	}
	if s.sent == nil {
		s.sent = map[types.NamespacedName]time.Time{}
	}
	s.sent[bed] = now
	return 0, true
}

// forget lets the next change of bed be told at once: its signal failed, or it is gone.
func (s *TestBedSignaller) forget(bed types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sent, bed)
}

// seen records that bed exists.
func (s *TestBedSignaller) seen(bed types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[types.NamespacedName]bool{}
	}
	s.known[bed] = true
}

// gone forgets bed, and says whether it was seen to exist.
func (s *TestBedSignaller) gone(bed types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sent, bed)
	was := s.known[bed]
	delete(s.known, bed)
	return was
}

var _ reconcile.Reconciler = (*TestBedSignaller)(nil)

// Reconcile signals the workflow of one test bed, starting it if the TestBed exists and no
// workflow runs. The workflow id makes a second start a no-op.
func (s *TestBedSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := s.IDs.TestBedID(req.Namespace, req.Name)
	var tb v1alpha1.TestBed
	err := s.Reader.Get(ctx, req.NamespacedName, &tb)
	if apierrors.IsNotFound(err) {
		// Tell a running workflow, so it notices at once and ends; nothing to start. The
		// other beds hear it too: one that shares the deleted bed's nodeLabel owns its
		// nodes now. A bed never seen is only a pod's label.
		if !s.gone(req.NamespacedName) {
			return reconcile.Result{}, nil
		}
		if err := signalIfRunning(ctx, s.Temporal, id, workflows.TestBedChangedSignal); err != nil {
			return reconcile.Result{}, err
		}
		var beds v1alpha1.TestBedList
		if err := s.Reader.List(ctx, &beds); err != nil {
			return reconcile.Result{}, fmt.Errorf("list test beds: %w", err)
		}
		for _, b := range beds.Items {
			if err := signalIfRunning(ctx, s.Temporal, s.IDs.TestBedID(b.Namespace, b.Name), workflows.TestBedChangedSignal); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	s.seen(req.NamespacedName)
	if wait, ok := s.due(req.NamespacedName); !ok {
		// The work queue brings the bed back then, and merges every change until.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if err := nudgeTestBed(ctx, s.Temporal, s.IDs, req.NamespacedName); err != nil {
		s.forget(req.NamespacedName)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// nudgeTestBed signals a test bed's workflow that its bed changed, starting it if none runs.
func nudgeTestBed(ctx context.Context, tc temporal.Client, ids installation.Names, bed types.NamespacedName) error {
	return signalWithStart(ctx, tc, ids.Queue(), ids.TestBedID(bed.Namespace, bed.Name), workflows.TestBedChangedSignal,
		workflows.TestBedWorkflow, workflows.TestBedInput{Namespace: bed.Namespace, Name: bed.Name})
}

// signalWithStart sends signal to workflow id, starting wf with it on queue
// input when it does not run.
func signalWithStart(ctx context.Context, tc temporal.Client, queue, id, signal string, wf, input any) error {
	_, err := tc.SignalWithStartWorkflow(ctx, id, signal, nil,
		temporal.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowTaskTimeout: workflows.TaskTimeout}, wf, input)
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", id, err)
	}
	return nil
}

// Options configure the bridge's manager.
type Options struct {
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz; "0" turns them off.
	HealthAddr string
	// Webhook, when its Addr is set, serves the admission check of BatchJobs' wrapped specs
	// at SpecWebhookPath over HTTPS.
	Webhook WebhookOptions
	// Log receives the bridge's and controller-runtime's logs; nil leaves them to
	// controller-runtime's global logger (which the command line sets).
	Log *slog.Logger
	// WorkflowCheckEvery is how often each test bed's workflows are checked for a failing
	// task (WorkflowHealth), and the test beds and jobs for a workflow that is not running
	// (WorkflowKeeper); default 30 s.
	WorkflowCheckEvery time.Duration
	// Installation names the workflows and task queue the bridge starts and signals.
	Installation installation.Names
	// Lease, when its Name is set, makes the bridge one of several replicas: only the one
	// that holds the Lease reconciles and keeps workflows; every replica serves the webhook
	// and the probes.
	Lease LeaseOptions
	// KeepEvery, when set, is the keeper's own pace in place of WorkflowCheckEvery (a test
	// that watches a workflow stay ended keeps the keeper away).
	KeepEvery time.Duration
}

// LeaseOptions name the Lease the bridge's replicas campaign for.
type LeaseOptions struct {
	Namespace, Name string
}

// WebhookOptions say where the bridge serves its admission webhook: Addr (host:port), and
// the directory holding its certificate and key (CertName and KeyName in it, default
// tls.crt and tls.key; reloaded when they change).
type WebhookOptions struct {
	Addr              string
	CertDir           string
	CertName, KeyName string
}

// New builds the bridge: a controller-runtime manager whose caches hold TestBeds, nodes, only
// the pods of test beds and only the allocation-file ConfigMaps. Start it with Start(ctx).
func New(cfg *rest.Config, tc temporal.Client, opts Options) (ctrl.Manager, error) {
	mgrOpts, err := managerOptions(opts)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("bridge manager: %w", err)
	}
	if err := addProbes(mgr, cfg, tc, opts); err != nil {
		return nil, err
	}
	ctrlOpts := controllerOptions
	if err := addTestBedBridge(mgr, tc, opts.Installation, ctrlOpts); err != nil {
		return nil, err
	}
	if err := addSignallers(mgr, tc, ctrlOpts, opts); err != nil {
		return nil, err
	}
	if err := mgr.Add(&WorkflowKeeper{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Client: mgr.GetClient(), Temporal: tc, IDs: opts.Installation, Log: opts.Log, Every: cmp.Or(opts.KeepEvery, opts.WorkflowCheckEvery)}); err != nil {
		return nil, fmt.Errorf("bridge workflow keeper: %w", err)
	}
	policies, err := addJobPolicyBridge(cfg, mgr, tc, opts.Installation, ctrlOpts)
	if err != nil {
		return nil, err
	}
	if opts.Webhook.Addr != "" {
		// The manager's logger, not controller-runtime's global one, which only the command
		// line sets.
		base := mgr.GetLogger().WithName("admission")
		mgr.GetWebhookServer().Register(SpecWebhookPath, &webhook.Admission{Handler: newSpecWebhook(policies),
			LogConstructor: func(_ logr.Logger, req *admission.Request) logr.Logger {
				return admission.DefaultLogConstructor(base, req)
			}})
	}
	return mgr, nil
}

// managerOptions are the manager's options: the bridge's scheme and caches, the metrics and
// health addresses ("0", off, when not given), and the webhook server when one is asked for.
func managerOptions(opts Options) (ctrl.Options, error) {
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.HealthAddr == "" {
		opts.HealthAddr = "0"
	}
	mgrOpts := ctrl.Options{
		Scheme:                 kubeclient.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress: opts.HealthAddr,
		Cache:                  kubeclient.CacheOptions(),
	}
	if opts.Log != nil {
		mgrOpts.Logger = logr.FromSlogHandler(opts.Log.Handler())
	}
	if l := opts.Lease; l.Name != "" {
		mgrOpts.LeaderElection, mgrOpts.LeaderElectionID, mgrOpts.LeaderElectionNamespace = true, l.Name, l.Namespace
		mgrOpts.LeaderElectionResourceLock = "leases"
		// A standby takes over 8 s after the last renewal; a leader stops once it could not
		// renew for 5 s. The bridge's work is signals and starts that Temporal deduplicates,
		// so a brief overlap costs nothing but a repeated signal.
		duration, renew, retry := 8*time.Second, 5*time.Second, time.Second
		mgrOpts.LeaseDuration, mgrOpts.RenewDeadline, mgrOpts.RetryPeriod = &duration, &renew, &retry
		// Stopping (SIGTERM) gives the lease up: the standby takes over at once.
		mgrOpts.LeaderElectionReleaseOnCancel = true
	}
	if opts.Webhook.Addr != "" {
		host, port, err := net.SplitHostPort(opts.Webhook.Addr)
		if err != nil {
			return mgrOpts, fmt.Errorf("bridge webhook address %q: %w", opts.Webhook.Addr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return mgrOpts, fmt.Errorf("bridge webhook port %q: %w", port, err)
		}
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{Host: host, Port: p, CertDir: opts.Webhook.CertDir,
			CertName: opts.Webhook.CertName, KeyName: opts.Webhook.KeyName})
	}
	return mgrOpts, nil
}

// addTestBedBridge adds the controller that tells TestBed workflows of changes to their test
// bed, to any node, to their test bed's pods, and of the end of a run in their slots.
func addTestBedBridge(mgr ctrl.Manager, tc temporal.Client, ids installation.Names, ctrlOpts func() controller.Options) error {
	signaller := &TestBedSignaller{Reader: mgr.GetClient(), Temporal: tc, IDs: ids}
	// A node change may reshape any test bed: all of them are told.
	allBeds := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var beds v1alpha1.TestBedList
		if err := mgr.GetClient().List(ctx, &beds); err != nil {
			log.FromContext(ctx).Error(err, "list test beds for a node change")
			return nil
		}
		reqs := make([]reconcile.Request, len(beds.Items))
		for i, b := range beds.Items {
			reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}}
		}
		return reqs
	})
	podsBed := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[v1alpha1.TestBedLabel]}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("testbed-bridge").
		WithOptions(ctrlOpts()).
		For(&v1alpha1.TestBed{}).
		Watches(&corev1.Node{}, allBeds).
		Watches(&corev1.Pod{}, podsBed).
		Watches(&v1alpha1.BatchJob{}, handler.EnqueueRequestsFromMapFunc(endedRunsBed), builder.WithPredicates(runEnds())).
		Complete(signaller)
	if err != nil {
		return fmt.Errorf("bridge controller: %w", err)
	}
	return nil
}

// MaxRetryDelay is the longest a bridge controller waits before it tries an object again
// after a failure. controller-runtime's default grows to 1,000 s: after a Temporal outage of
// a few minutes, objects would wait a quarter of an hour for their workflows.
const MaxRetryDelay = 30 * time.Second

// controllerOptions are each controller's options, with a rate limiter of its own: retries
// back off from 5 ms to MaxRetryDelay, all of them at 10 a second (bursts of 100).
func controllerOptions() controller.Options {
	skip := true // tests run more than one bridge in a process; the controllers keep their names
	return controller.Options{SkipNameValidation: &skip, RateLimiter: workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)}
}

// addSignallers adds the controllers of the other workflows: a BatchJob's (signalled,
// started if needed), a Scheduling's (started, told of edits, cancelled), and Admission's
// (told of freed slots and of a changed allocation file, which also sets the test beds'
// QueuesConfigured condition), and the watch on the test beds' workflows (WorkflowHealth).
func addSignallers(mgr ctrl.Manager, tc temporal.Client, ctrlOpts func() controller.Options, opts Options) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("batchjob-bridge").
		WithOptions(ctrlOpts()).
		For(&v1alpha1.BatchJob{}, builder.WithPredicates(jobChanges())).
		Complete(&BatchJobSignaller{Reader: mgr.GetClient(), Temporal: tc, IDs: opts.Installation})
	if err != nil {
		return fmt.Errorf("batchjob bridge controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("scheduling-bridge").
		WithOptions(ctrlOpts()).
		For(&v1alpha1.Scheduling{}).
		Complete(&SchedulingStarter{Client: mgr.GetClient(), Temporal: tc, IDs: opts.Installation})
	if err != nil {
		return fmt.Errorf("scheduling bridge controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("admission-queues-bridge").
		WithOptions(ctrlOpts()).
		For(&corev1.ConfigMap{}, builder.WithPredicates(queuesConfigMaps())).
		Watches(&v1alpha1.TestBed{}, handler.EnqueueRequestsFromMapFunc(bedsQueuesFile), builder.WithPredicates(created())).
		Complete(&QueuesSignaller{Client: mgr.GetClient(), Temporal: tc, IDs: opts.Installation})
	if err != nil {
		return fmt.Errorf("admission queues bridge controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("workflow-health").
		WithOptions(ctrlOpts()).
		For(&v1alpha1.TestBed{}, builder.WithPredicates(created())).
		Complete(&WorkflowHealth{Client: mgr.GetClient(), Temporal: tc, IDs: opts.Installation, Log: opts.Log, CheckEvery: opts.WorkflowCheckEvery})
	if err != nil {
		return fmt.Errorf("workflow health controller: %w", err)
	}
	return nil
}

// addJobPolicyBridge adds the cache of the job-policy ConfigMaps and the controller that
// nudges a namespace's BatchJob workflows when its policy changes; the cache is returned for
// the spec webhook.
func addJobPolicyBridge(cfg *rest.Config, mgr ctrl.Manager, tc temporal.Client, ids installation.Names, ctrlOpts func() controller.Options) (cache.Cache, error) {
	// The job-policy ConfigMaps come through a cache of their own: the manager's holds only
	// the allocation files (one name per field selector), and RBAC names each ConfigMap.
	policies, err := cache.New(cfg, cache.Options{Scheme: kubeclient.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", v1alpha1.JobPolicyConfigMap)},
	}})
	if err != nil {
		return nil, fmt.Errorf("job policy cache: %w", err)
	}
	if err := mgr.Add(policies); err != nil {
		return nil, fmt.Errorf("job policy cache: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("job-policy-bridge").
		WithOptions(ctrlOpts()).
		WatchesRawSource(source.Kind(policies, &corev1.ConfigMap{}, &handler.TypedEnqueueRequestForObject[*corev1.ConfigMap]{})).
		Complete(&JobPolicySignaller{Reader: mgr.GetClient(), Temporal: tc, IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("job policy bridge controller: %w", err)
	}
	return policies, nil
}

// addProbes answers the manager's /healthz while the process runs, and its /readyz while the
// bridge reaches Temporal (which it signals) and the API server (which it watches), and its
// webhook serves, when it has one.
func addProbes(mgr ctrl.Manager, cfg *rest.Config, tc temporal.Client, opts Options) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("bridge liveness: %w", err)
	}
	kube, err := health.KubeAPI(cfg)
	if err != nil {
		return err
	}
	for _, c := range []health.Check{health.Temporal(tc), kube} {
		if err := mgr.AddReadyzCheck(c.Name, func(req *http.Request) error { return health.Run(req.Context(), c).Error() }); err != nil {
			return fmt.Errorf("bridge readiness: %w", err)
		}
	}
	if opts.Webhook.Addr != "" {
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("bridge readiness: %w", err)
		}
	}
	return nil
}
