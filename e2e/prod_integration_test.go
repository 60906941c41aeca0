//go:build integration

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apiclient"
	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/freeport"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/balancer"
	"slotplane/internal/localplatform/standin"
	"slotplane/internal/localplatform/temporalcluster"
)

// prodNamespace is the Temporal namespace of the production-shaped platform, set up by
// `slotplane temporal-namespace` as an operator would.
const prodNamespace = "slotplane"

// prodPlatform is the platform in the shape a cluster runs it: Temporal as a server of its
// own on PostgreSQL over mutual TLS, two replicas of every slotplane component behind
// balancers where a Service would be (the API, the extender, the bridge's webhook), the
// bridges and the extenders electing their leader, and two kube-schedulers electing theirs.
type prodPlatform struct {
	*e2ePlatform
	temporalCluster *temporalcluster.Cluster
	infra           *localplatform.Platform
	// replicas are slotplane's processes, by name (worker-0, bridge-1, ...).
	replicas map[string]*supervised
	// healthAt and metricsAt are each replica's probes and metrics, host:port.
	healthAt map[string]string
}

// prodReplicas is how many replicas each slotplane component runs.
const prodReplicas = 2

// startProduction starts the production-shaped platform with the default bed and queues.
func startProduction(t *testing.T, queues string, extra ...string) *prodPlatform {
	t.Helper()
	logs := keepLogs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Its folder is kept for a failed test's logs, removed otherwise.
	tcl, err := temporalcluster.Start(ctx, temporalcluster.Options{MutualTLS: true, Namespace: prodNamespace, KeepDir: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, tcl.Stop())
		if t.Failed() {
			t.Logf("the Temporal cluster's logs are kept in %s", tcl.Dir)
			return
		}
		require.NoError(t, os.RemoveAll(tcl.Dir))
	})
	temporalFlags := []string{"-temporal-address", tcl.FrontendAddress, "-temporal-namespace", prodNamespace,
		"-temporal-tls-ca", tcl.CAFile, "-temporal-tls-cert", tcl.ClientCertFile, "-temporal-tls-key", tcl.ClientKeyFile,
		"-temporal-tls-server-name", tcl.ServerName}
	// The operator's set-up of the namespace, with the command the docs give.
	out, err := exec.Command(binary, append([]string{"temporal-namespace", "-retention", "24h"}, temporalFlags...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "namespace "+prodNamespace+" registered")
	opts := tcl.ClientOptions()
	opts.Namespace = prodNamespace
	tc, err := temporalclient.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	shape := defaultBed
	dp, err := localplatform.Start(ctx, localplatform.Options{InfraOnly: true, Temporal: tc, Schedulers: 2,
		Nodes: shape.nodeCount(), PlainNodes: shape.plainNodeCount(), NodeResources: shape.nodeResources()})
	require.NoError(t, err)
	t.Cleanup(func() {
		dp.KeepDir = t.Failed()
		require.NoError(t, dp.Stop())
	})
	cluster := dp.Cluster

	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte(token+",alice,analysts\n"), 0o600))
	p := &prodPlatform{temporalCluster: tcl, infra: dp, healthAt: map[string]string{}, replicas: map[string]*supervised{}, e2ePlatform: &e2ePlatform{
		slots: int32(shape.nodeCount()) * shape.slotsPerNode, beds: shape.bedNames(), temporal: tc, cluster: cluster,
		parts: map[string]*component{}, metricsAt: map[string]string{}, pprofAt: map[string]string{},
	}}
	conn := append(append([]string{"-kubeconfig", cluster.Kubeconfig}, temporalFlags...), extra...)
	lease := []string{"-leader-elect", "-lease-namespace", "default"}
	var apis, extenders, webhooks []balancer.Backend
	for i := range prodReplicas {
		ports, err := freeport.Get(11)
		require.NoError(t, err)
		at := func(k int) string { return "127.0.0.1:" + strconv.Itoa(ports[k]) }
		name := func(c string) string { return fmt.Sprintf("%s-%d", c, i) }
		add := func(c, command string, args ...string) {
			n := name(c)
			p.replicas[n] = &supervised{name: n, args: append([]string{command}, args...), logs: logs}
		}
		p.metricsAt[name("worker")], p.healthAt[name("worker")] = at(0), at(1)
		add("worker", "worker", append(slices.Clone(conn), "-metrics-listen", at(0), "-health-listen", at(1))...)
		p.metricsAt[name("bridge")], p.healthAt[name("bridge")] = at(2), at(3)
		add("bridge", "bridge", append(append(slices.Clone(conn), lease...), "-metrics-listen", at(2), "-health-listen", at(3),
			"-webhook-listen", at(4), "-webhook-cert-dir", dp.WebhookCerts.Dir, "-workflow-check-every", "2s")...)
		webhooks = append(webhooks, balancer.Backend{Addr: at(4), Ready: "http://" + at(3) + "/readyz"})
		p.metricsAt[name("api")] = at(5)
		add("api", "api", append(slices.Clone(conn), "-listen", at(6), "-token-file", tokens, "-metrics-listen", at(5))...)
		apis = append(apis, balancer.Backend{Addr: at(6), Ready: "http://" + at(6) + "/api/v1/readyz"})
		p.metricsAt[name("extender")], p.healthAt[name("extender")] = at(7), at(8)
		add("extender", "extender", append([]string{"-kubeconfig", cluster.Kubeconfig, "-listen", at(9), "-metrics-listen", at(7), "-health-listen", at(8),
			"-tls-cert-file", cluster.ExtenderCerts.CertFile, "-tls-key-file", cluster.ExtenderCerts.KeyFile, "-client-ca-file", cluster.ExtenderCerts.ClientCAFile,
			"-log-format", "json"}, lease...)...)
		extenders = append(extenders, balancer.Backend{Addr: at(9), Ready: "http://" + at(8) + "/readyz"})
	}
	for _, r := range p.replicas {
		r.run()
		t.Cleanup(r.stop)
	}
	// Where a Service would be: the scheduler calls the extender, and the API server the
	// webhook, at the addresses the platform gave them.
	apiPorts, err := freeport.Get(1)
	require.NoError(t, err)
	apiAddr := "127.0.0.1:" + strconv.Itoa(apiPorts[0])
	for _, b := range []struct {
		addr     string
		backends []balancer.Backend
	}{{apiAddr, apis}, {dp.ExtenderAddr, extenders}, {dp.WebhookAddr, webhooks}} {
		lb, err := balancer.Listen(b.addr, b.backends...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = lb.Close() })
	}
	p.config = cluster.Config
	p.kube = dp.Kube
	p.setUp(t, shape, queues, "", apiAddr)
	return p
}

// supervised is one replica of a slotplane component, run as a kubelet runs a container with
// restartPolicy Always: a replica that exits (a crash, a kill, a lost lease) is started again
// restartDelay later, its output appended to <logs>/<name>.log.
type supervised struct {
	name string
	args []string
	logs string

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	done     chan struct{}
	// restarts counts the starts after the first.
	restarts int
}

// restartDelay is how long an exited replica stays down: a kubelet's first back-off.
const restartDelay = 2 * time.Second

// run starts the replica and keeps it running until stop.
func (s *supervised) run() {
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		for {
			cmd, err := startChild(filepath.Join(s.logs, s.name+".log"), binary, s.args...)
			s.mu.Lock()
			if err == nil {
				s.cmd = cmd
				if s.stopping {
					_ = cmd.Process.Signal(syscall.SIGTERM)
				}
			}
			s.mu.Unlock()
			if err == nil {
				_ = cmd.Wait()
			}
			s.mu.Lock()
			stopping := s.stopping
			s.mu.Unlock()
			if stopping {
				return
			}
			time.Sleep(restartDelay)
			s.mu.Lock()
			s.restarts++
			s.mu.Unlock()
		}
	}()
}

// kill ends the replica at once (SIGKILL), as a crash would; it is started again.
func (s *supervised) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// stop ends the replica (SIGTERM, then SIGKILL after 15 s) for good.
func (s *supervised) stop() {
	s.mu.Lock()
	s.stopping = true
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.kill()
		<-s.done
	}
}

// leader is the replica of component (bridge, extender) that leads now, "" when none does:
// the extender's readiness says so, the bridge's metric leader_election_master_status.
// feedReplica is the API replica whose metrics count an open change feed connection: the
// test's own feed is the only one.
func (p *prodPlatform) feedReplica() string {
	for i := range prodReplicas {
		name := fmt.Sprintf("api-%d", i)
		resp, err := http.Get("http://" + p.metricsAt[name] + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		serves := false
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "slotplane_api_feed_connections "); ok && v != "0" {
				serves = true
			}
		}
		_ = resp.Body.Close()
		if serves {
			return name
		}
	}
	return ""
}

func (p *prodPlatform) leader(component string) string {
	for i := range prodReplicas {
		name := fmt.Sprintf("%s-%d", component, i)
		if component == "extender" {
			resp, err := http.Get("http://" + p.healthAt[name] + "/readyz")
			if err != nil {
				continue
			}
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return name
			}
			continue
		}
		resp, err := http.Get("http://" + p.metricsAt[name] + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		leads := false
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "leader_election_master_status{") && strings.HasSuffix(line, " 1") {
				leads = true
			}
		}
		_ = resp.Body.Close()
		if leads {
			return name
		}
	}
	return ""
}

// endTimes records when each job end shows on the feed.
type endTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (e *endTimes) follow(l *slotLedger, stop <-chan struct{}) {
	seen := l.endedCount()
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if n := l.endedCount(); n > seen {
			e.mu.Lock()
			for ; seen < n; seen++ {
				e.times = append(e.times, time.Now())
			}
			e.mu.Unlock()
		}
	}
}

// longestGap is the longest time without a job end from the last end before from until
// until: how long the jobs stopped ending after a fault that began at from, until the next
// fault began (or the run ended).
func (e *endTimes) longestGap(from, until time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	i, _ := slices.BinarySearchFunc(e.times, from, func(a, b time.Time) int { return a.Compare(b) })
	last := from
	if i > 0 {
		last = e.times[i-1]
	}
	var longest time.Duration
	for _, at := range e.times[i:] {
		if at.After(until) {
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return longest
}

// runOneSecondJobs submits n one-second jobs and one Scheduling of them in queue root.batch, and
// returns the job names and the time they took until the feed showed the Scheduling ended.
func runOneSecondJobs(t *testing.T, c *apiclient.Client, ledger *slotLedger, prefix string, n int, during func()) ([]string, time.Duration) {
	t.Helper()
	ctx := context.Background()
	names := make([]string, n)
	var entries []v1alpha1.SchedulingJob
	for i := range names {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
		_, err := c.CreateJob(ctx, apitypes.JobRequest{Name: names[i], Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
			Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: "1s"}})
		require.NoError(t, err, names[i])
		entries = append(entries, v1alpha1.SchedulingJob{Name: names[i], Replication: 1})
	}
	start := time.Now()
	_, err := c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: prefix, TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch", Jobs: entries})
	require.NoError(t, err)
	if during != nil {
		during()
	}
	require.Eventually(t, func() bool { return ledger.schedulingEnded(prefix) }, 60*time.Minute, 250*time.Millisecond, "Scheduling %s never ended", prefix)
	return names, time.Since(start)
}

// checkRan checks what every job of a Scheduling left: Completed once, in run 1, with
// exactly one application; the Scheduling Completed; Admission empty; every slot free with
// its ghost back.
func checkRan(t *testing.T, p *e2ePlatform, c *apiclient.Client, scheduling string, names []string) {
	t.Helper()
	ctx := context.Background()
	s, err := c.GetScheduling(ctx, scheduling)
	require.NoError(t, err)
	require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, s.Status.Message)
	require.Equal(t, int32(len(names)), s.Status.FinishedJobs)
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, p.kube.List(ctx, &apps, client.InNamespace("default")))
	perJob := map[string]int{}
	for _, a := range apps.Items {
		perJob[a.Labels[v1alpha1.BatchJobLabel]]++
	}
	for _, name := range names {
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, int32(1), j.Status.Run, name)
		require.Len(t, j.Status.History, 1, "%s ended once", name)
		require.Equal(t, 1, perJob[name], "%s has exactly one application", name)
	}
	require.Eventually(t, func() bool {
		q, err := c.Queues(ctx, "bed")
		return err == nil && len(q.Running) == 0 && len(q.Waiting) == 0
	}, 2*time.Minute, 500*time.Millisecond, "Admission still holds jobs")
	p.waitSlotsFree(t, 2*time.Minute)
}

// prodQueues is one FIFO queue, as the long run has.
const prodQueues = `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`

// The production shape, through every fault a cluster meets: the active replica of each
// component killed (a worker, an API replica, the bridge's leader, the extender's leader,
// the slot-scheduler's leader), the Temporal server and its PostgreSQL restarted, etcd and
// the API server down for 20 s each, one after the other during one long Scheduling.
// Checked as the jobs run: no slot held by two jobs. Checked at the end: every job
// Completed once with one application, Admission empty, every slot free with its ghost.
// Printed: for each fault, the longest time without a job end from its start until the
// next fault (what it cost), and the throughput against the embedded platform's, measured
// first in the same run.
//
// make test-prod runs it (SLOTPLANE_PROD=1); SLOTPLANE_PROD_JOBS sets the jobs of the
// faults' Scheduling (default 900) and SLOTPLANE_PROD_RATE_JOBS those of each throughput
// run (default 240).
func TestE2E_ProductionShapeThroughFaults(t *testing.T) {
	if os.Getenv("SLOTPLANE_PROD") == "" {
		t.Skip("make test-prod runs it: a production-shaped platform for minutes")
	}
	jobs, rateJobs := envInt(t, "SLOTPLANE_PROD_JOBS", 900), envInt(t, "SLOTPLANE_PROD_RATE_JOBS", 240)
	steps := []string{"-scheduling-steps-per-run", "50", "-admission-steps-per-run", "50"}

	var embedded float64
	t.Run("embedded", func(t *testing.T) {
		p := startE2E(t, prodQueues, steps...)
		w, err := p.api.Watch(context.Background(), []string{apiclient.WatchSchedulings, apiclient.WatchJobs}, apiclient.Position{})
		require.NoError(t, err)
		defer w.Close()
		ledger := followFeed(w)
		names, took := runOneSecondJobs(t, p.api, ledger, "rate", rateJobs, nil)
		embedded = float64(rateJobs) / took.Seconds()
		checkRan(t, p, p.api, "rate", names)
		ledger.check(t)
	})
	require.False(t, t.Failed())

	p := startProduction(t, prodQueues, steps...)
	feedCtx, stopFeed := context.WithCancel(context.Background())
	defer stopFeed()
	ledger := followResuming(feedCtx, p.api, []string{apiclient.WatchSchedulings, apiclient.WatchJobs})

	var ends endTimes
	stop := make(chan struct{})
	defer close(stop)
	go ends.follow(ledger, stop)
	names, rateTook := runOneSecondJobs(t, p.api, ledger, "rate", rateJobs, nil)
	rateEnded := time.Now()
	production := float64(rateJobs) / rateTook.Seconds()
	checkRan(t, p.e2ePlatform, p.api, "rate", names)
	ratio := production / embedded
	t.Logf("throughput of %d one-second jobs on 8 slots: embedded %.2f jobs/s, production shape %.2f jobs/s: %.2fx", rateJobs, embedded, production, ratio)
	require.GreaterOrEqual(t, ratio, 0.7, "the production shape runs at least 0.7x the embedded platform's rate")

	ctx := context.Background()
	type fault struct {
		name string
		do   func() error
	}
	restart := func(name string) error {
		p.replicas[name].kill()
		return nil
	}
	faults := []fault{
		{"a worker killed", func() error { return restart("worker-0") }},
		{"an API replica killed", func() error {
			// The one the test's feed reads from: its reader opens the feed again through the
			// balancer, on the other replica, which answers its resume with a RESYNC.
			r := p.feedReplica()
			if r == "" {
				return fmt.Errorf("no API replica serves the test's feed")
			}
			return restart(r)
		}},
		{"the bridge's leader killed", func() error {
			l := p.leader("bridge")
			if l == "" {
				return fmt.Errorf("no bridge leads")
			}
			return restart(l)
		}},
		{"the extender's leader killed", func() error {
			l := p.leader("extender")
			if l == "" {
				return fmt.Errorf("no extender leads")
			}
			return restart(l)
		}},
		{"the slot-scheduler's leader killed", func() error {
			i, err := p.cluster.SchedulerLeader()
			if err != nil {
				return err
			}
			p.cluster.KillScheduler(i)
			return nil
		}},
		{"the Temporal server restarted", func() error { return p.temporalCluster.RestartTemporal(ctx) }},
		{"PostgreSQL restarted", func() error { return p.temporalCluster.RestartPostgres(ctx) }},
		{"etcd down for 20 s", func() error { return p.cluster.Outage(ctx, "etcd", 20*time.Second) }},
		{"the API server down for 20 s", func() error { return p.cluster.Outage(ctx, "kube-apiserver", 20*time.Second) }},
	}
	type recovery struct {
		fault       string
		start, over time.Time // the fault began, and was over (the outage, the restart)
	}
	var recoveries []recovery
	names, took := runOneSecondJobs(t, p.api, ledger, "faults", jobs, func() {
		for _, f := range faults {
			// Each fault hits a platform in full swing: 40 jobs end between two.
			from := ledger.endedCount()
			require.Eventually(t, func() bool { return ledger.endedCount() >= from+40 }, 10*time.Minute, 50*time.Millisecond, "jobs stopped before %s", f.name)
			start := time.Now()
			require.NoError(t, f.do(), f.name)
			recoveries = append(recoveries, recovery{fault: f.name, start: start, over: time.Now()})
			t.Logf("%s after %d job ends, over in %.1f s", f.name, from+40, time.Since(start).Seconds())
		}
	})
	runEnded := time.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "%d one-second jobs on 8 slots through %d faults in %s (%.2f jobs/s):\n", jobs, len(faults), took.Round(time.Second), float64(jobs)/took.Seconds())
	fmt.Fprintf(&b, "  %-36s %10s %20s\n", "fault", "fault took", "longest gap in ends")
	fmt.Fprintf(&b, "  %-36s %10s %19.1fs\n", "none (the throughput run's second half)", "", ends.longestGap(rateEnded.Add(-rateTook/2), rateEnded).Seconds())
	for i, r := range recoveries {
		until := runEnded
		if i+1 < len(recoveries) {
			until = recoveries[i+1].start
		}
		fmt.Fprintf(&b, "  %-36s %9.1fs %19.1fs\n", r.fault, r.over.Sub(r.start).Seconds(), ends.longestGap(r.start, until).Seconds())
	}
	fmt.Fprintf(&b, "throughput: embedded %.2f jobs/s, production shape %.2f jobs/s (%.2fx)\n", embedded, production, ratio)
	var restarts []string
	for _, name := range slices.Sorted(maps.Keys(p.replicas)) {
		r := p.replicas[name]
		r.mu.Lock()
		restarts = append(restarts, fmt.Sprintf("%s %d", name, r.restarts))
		r.mu.Unlock()
	}
	fmt.Fprintf(&b, "restarts (killed, or exited on a lost lease): %s\n", strings.Join(restarts, ", "))
	ledger.mu.Lock()
	fmt.Fprintf(&b, "the test's change feed, through the balancer: %d connections, %d RESYNCs\n", ledger.connections, ledger.resyncs)
	ledger.mu.Unlock()
	t.Log("\n" + b.String())
	fmt.Print(b.String())
	checkRan(t, p.e2ePlatform, p.api, "faults", names)
	ledger.check(t)
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	require.GreaterOrEqual(t, ledger.connections, 2, "the test's feed was opened again on the other API replica")
}

// envInt is the environment variable key as a number, def when unset.
func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, key)
	return n
}

// TestE2E_ProductionShapeByHand starts the production shape and keeps it up until Ctrl-C
// (or SIGTERM), printing where each part is, for trying it by hand: `make run-prod`.
func TestE2E_ProductionShapeByHand(t *testing.T) {
	if os.Getenv("SLOTPLANE_PROD_HOLD") == "" {
		t.Skip("make run-prod runs it")
	}
	p := startProduction(t, prodQueues)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tcl := p.temporalCluster
	fmt.Printf(`the production shape is up; Ctrl-C stops it.
  kubeconfig  %s
  API         http://%s/api/v1  (token %s; two replicas behind it)
  Temporal    %s  namespace %s, mutual TLS:
              -temporal-tls-ca %s -temporal-tls-cert %s -temporal-tls-key %s -temporal-tls-server-name %s
  PostgreSQL  %s
  logs        the components': %s; Temporal's: %s
`, p.cluster.Kubeconfig, p.apiAddr, token, tcl.FrontendAddress, prodNamespace, tcl.CAFile, tcl.ClientCertFile, tcl.ClientKeyFile, tcl.ServerName,
		tcl.PostgresDSN, p.replicas["worker-0"].logs, tcl.Dir)
	<-ctx.Done()
}
