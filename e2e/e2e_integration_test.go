//go:build integration

// Package e2e runs slotplane as a real cluster runs it: the worker, the extender, the
// bridge and the API as processes of the slotplane binary, against a real control plane
// (API server, the scheduler with the extender, kwok nodes) and the real Temporal server.
// The tests act only through the REST API and its websocket feed, as an external scheduler
// would, and read the cluster only to check the end state.
package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"slotplane/apiclient"
	"slotplane/apitypes"
	flinkv1beta1 "slotplane/crds/flink/v1beta1"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/freeport"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/standin"
)

// binary is the slotplane binary, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(envOrphanHelper) != "" {
		orphanHelper()
		return
	}
	dir, err := os.MkdirTemp("", "slotplane-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "slotplane")
	if out, err := exec.Command("go", "build", "-o", binary, "slotplane/cmd/slotplane").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build slotplane: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// component is one slotplane process; start runs it (again). Its output goes to
// <logs>/<name>.log, across restarts.
type component struct {
	t    *testing.T
	name string
	// command is the binary's subcommand it runs ("": name); bin the binary ("": the one
	// TestMain built).
	command, bin string
	args         []string
	// nice, when not 0, is the niceness the process runs at (nice(1)): a higher weight
	// for the kernel's scheduler, as a CPU request gives a pod on a busy node.
	nice int
	logs string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (c *component) start() {
	c.t.Helper()
	bin, args := cmp.Or(c.bin, binary), append([]string{cmp.Or(c.command, c.name)}, c.args...)
	if c.nice != 0 {
		bin, args = "nice", append([]string{"-n", strconv.Itoa(c.nice), bin}, args...)
	}
	cmd, err := startChild(filepath.Join(c.logs, c.name+".log"), bin, args...)
	require.NoError(c.t, err, c.name)
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
}

// startChild starts a process of the test, its output appended to logPath. A test binary
// that panics or is killed takes its children with it (TestStartChild_DiesWithTheTestBinary):
// without the parent-death signal a panicking test left its platform's worker, bridge, API
// and extender running, into the runs that followed.
func startChild(logPath, bin string, args ...string) (*exec.Cmd, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, cmd.Start()
}

// envOrphanHelper makes the test binary, instead of running tests, start a long child with
// startChild (its log at the variable's value), print the child's pid and wait to be killed.
const envOrphanHelper = "SLOTPLANE_E2E_ORPHAN_HELPER"

func orphanHelper() {
	cmd, err := startChild(os.Getenv(envOrphanHelper), "sleep", "300")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}

func TestStartChild_DiesWithTheTestBinary(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), envOrphanHelper+"="+filepath.Join(t.TempDir(), "child.log"))
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	var pid int
	_, err = fmt.Fscan(stdout, &pid)
	require.NoError(t, err, "the helper's child pid")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // should the test fail
	require.True(t, alive(pid), "the child runs while its parent does")

	require.NoError(t, helper.Process.Signal(syscall.SIGKILL)) // a crash: no clean-up runs
	_ = helper.Wait()
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond,
		"the child of a killed test binary still runs")
}

// alive: the process exists and is not a zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// kill ends the process at once, as a crash or an evicted pod would.
func (c *component) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

func (c *component) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

const token = "e2e-token"

// opsToken is olga's, of group admins; bobToken is bob's, of group analysts like alice.
const (
	opsToken = "e2e-ops-token"
	bobToken = "e2e-bob-token"
)

// experimenterToken may submit jobs as anyone, as `slotplane experiment` does for a
// trace's users.
const experimenterToken = "e2e-experimenter-token"

// keepLogs makes a directory for one test's logs: the components' and the in-process
// parts' (the operators' stand-in, through slog's default logger). A test's own output
// then holds only what it says, so a failure is the last thing a run prints. When the
// test fails, the end of each log is printed and the directory kept; otherwise it goes.
// Tests that run in parallel share the process's default logger: each one's in-process.log
// then has the in-process lines of both.
func keepLogs(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "slotplane-e2e-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	require.NoError(t, err)
	own, err := os.Create(filepath.Join(dir, "in-process.log"))
	require.NoError(t, err)
	inProcess.add(own)
	// controller-runtime's own logger (the client's informers) writes there too; it is set
	// once per process, and slog's default follows the tests' files.
	ctrlLogOnce.Do(func() { ctrllog.SetLogger(logr.FromSlogHandler(defaultHandler{})) })
	t.Cleanup(func() {
		inProcess.remove(own)
		_ = own.Close()
		if !t.Failed() {
			_ = os.RemoveAll(dir)
			return
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, f := range files {
			t.Logf("the last lines of %s:\n%s", filepath.Base(f), lastLines(f, 25))
		}
		t.Logf("the whole logs are kept in %s", dir)
	})
	return dir
}

// inProcess writes every line of slog's default logger to each running test's
// in-process.log, while at least one test runs; otherwise the default is the process's own.
var inProcess = &logFanout{files: map[*os.File]bool{}}

type logFanout struct {
	mu    sync.Mutex
	files map[*os.File]bool
	was   *slog.Logger
}

func (f *logFanout) add(file *os.File) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.files) == 0 {
		f.was = slog.Default()
		slog.SetDefault(slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})))
	}
	f.files[file] = true
}

func (f *logFanout) remove(file *os.File) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, file)
	if len(f.files) == 0 {
		slog.SetDefault(f.was)
	}
}

// Write hands one record (slog writes each in one call) to every file.
func (f *logFanout) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for file := range f.files {
		_, _ = file.Write(p)
	}
	return len(p), nil
}

var ctrlLogOnce sync.Once

// defaultHandler hands each record to whatever slog's default handler is at the time.
type defaultHandler struct{}

func (defaultHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return slog.Default().Handler().Enabled(ctx, l)
}
func (defaultHandler) Handle(ctx context.Context, r slog.Record) error {
	return slog.Default().Handler().Handle(ctx, r)
}
func (h defaultHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return slog.Default().Handler().WithAttrs(as)
}
func (h defaultHandler) WithGroup(name string) slog.Handler {
	return slog.Default().Handler().WithGroup(name)
}

// lastLines is the end of a file, n lines at most, each cut to 300 characters.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "..."
		}
	}
	return strings.Join(lines, "\n")
}

// e2ePlatform is the whole system as the end-to-end tests run it: a control plane with 4
// kwok nodes (and 2 plain ones), Temporal, the operators' stand-in, and the four components
// as processes; a test bed "bed" of 8 slots and the given allocation file in the cluster; and
// a client of the API.
type e2ePlatform struct {
	slots int32 // the test beds', all together
	// beds are the test beds' names ("bed", unless the shape asks for several), each of
	// slots/len(beds) slots.
	beds   []string
	parts  map[string]*component
	kube   client.Client
	config *rest.Config // the cluster's, for watches the client above does not do
	api    *apiclient.Client
	// temporal reaches the platform's Temporal server (histories, for diagnosis).
	temporal temporalclient.Client
	// cluster is the platform's API server (its metrics, for diagnosis).
	cluster *localcluster.Cluster
	// metricsAt is each component's Prometheus endpoint, host:port; pprofAt its Go
	// profiles (/debug/pprof/).
	metricsAt, pprofAt map[string]string
	// apiAddr is the REST API's host:port.
	apiAddr string
	// bedFilled is how long the test bed took from its creation until the API showed every
	// slot free, each with its ghost.
	bedFilled time.Duration
}

// admission is the part that runs the beds' Admission workflows, whose metrics they are.
func (p *e2ePlatform) admission() string {
	if _, apart := p.parts["admission"]; apart {
		return "admission"
	}
	return "worker"
}

// pid is the process id of component name, as it runs now.
func (p *e2ePlatform) pid(name string) int {
	c := p.parts[name]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd.Process.Pid
}

// as is the REST API as the user of tok.
func (p *e2ePlatform) as(t *testing.T, tok string) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New("http://"+p.apiAddr, tok)
	require.NoError(t, err)
	return c
}

// bedShape is the test bed's slots per node (of the 4 nodes) and each slot's size.
type bedShape struct {
	slotsPerNode int32
	cpu, memory  string
	// nodes is how many nodes the bed has (0: 4), plainNodes how many outside it, for the
	// drivers (0: 2).
	nodes, plainNodes int
	// beds splits the nodes into as many test beds, "bed-0" onwards, node i in bed i%beds,
	// each bed on a node label of its own (0 or 1: one bed, "bed").
	beds int
	// admissionApart runs the beds' Admission in a worker process of its own, "admission"
	// (-task-queues slotplane-admission), beside the worker of the rest, as a large bed
	// runs; else one worker polls both task queues. admissionNice, when not 0, runs that
	// process at that niceness (component.nice).
	admissionApart bool
	admissionNice  int
}

// nodeResources are what each node offers: 4 CPUs and 16 GiB, or more where the node's
// slots need more. Ghosts are bound by node name, past the scheduler's fit check, and a
// fake node runs them all the same: on a node too small for its slots the executors,
// which the scheduler places, would find the room taken.
func (s bedShape) nodeResources() corev1.ResourceList {
	cpu, memory := resource.MustParse("4"), resource.MustParse("16Gi")
	if s.cpu != "" && s.memory != "" {
		slotCPU, slotMemory := resource.MustParse(s.cpu), resource.MustParse(s.memory)
		n := int64(s.slotsPerNode)
		if need := resource.NewMilliQuantity(slotCPU.MilliValue()*n+500, resource.DecimalSI); need.Cmp(cpu) > 0 {
			cpu = *need
		}
		if need := resource.NewQuantity(slotMemory.Value()*n+(1<<30), resource.BinarySI); need.Cmp(memory) > 0 {
			memory = *need
		}
	}
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory, corev1.ResourcePods: resource.MustParse("110")}
}

// bedNames are the names of the test beds.
func (s bedShape) bedNames() []string {
	if s.beds <= 1 {
		return []string{"bed"}
	}
	names := make([]string, s.beds)
	for i := range names {
		names[i] = fmt.Sprintf("bed-%d", i)
	}
	return names
}

// nodeLabel is the node label of bed i.
func (s bedShape) nodeLabel(i int) string {
	if s.beds <= 1 {
		return localcluster.DefaultNodeLabel
	}
	return fmt.Sprintf("e2e.test/bed-%d", i)
}

func (s bedShape) nodeCount() int {
	if s.nodes == 0 {
		return 4
	}
	return s.nodes
}

func (s bedShape) plainNodeCount() int {
	if s.plainNodes == 0 {
		return 2
	}
	return s.plainNodes
}

// defaultBed is 8 slots of 2 CPUs and 8 GiB.
var defaultBed = bedShape{slotsPerNode: 2, cpu: "2", memory: "8Gi"}

// startE2E starts the platform with the default bed. extra are flags for the worker, the
// bridge and the API.
func startE2E(t *testing.T, queues string, extra ...string) *e2ePlatform {
	t.Helper()
	return startE2EWith(t, defaultBed, queues, extra...)
}

// startE2EWith starts the platform with a bed of the given shape.
func startE2EWith(t *testing.T, shape bedShape, queues string, extra ...string) *e2ePlatform {
	t.Helper()
	return startE2EFiles(t, shape, queues, "", extra...)
}

// startE2EFiles starts the platform with a bed of the given shape, the allocation file
// queues and the settings (a yarn-site.xml; "": none) in the queues ConfigMap.
func startE2EFiles(t *testing.T, shape bedShape, queues, settings string, extra ...string) *e2ePlatform {
	t.Helper()
	logs := keepLogs(t) // first, so that its clean-up runs after every process stopped
	// The platform `slotplane dev` runs, less slotplane's own components: this test runs
	// them as processes of the binary, as a cluster would.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dp, err := localplatform.Start(ctx, localplatform.Options{InfraOnly: true, Nodes: shape.nodeCount(), PlainNodes: shape.plainNodeCount(),
		NodeResources: shape.nodeResources()})
	require.NoError(t, err)
	t.Cleanup(func() {
		dp.KeepDir = t.Failed()
		require.NoError(t, dp.Stop())
		if dp.KeepDir {
			t.Logf("control plane and Temporal logs kept in %s", dp.Dir)
		}
	})
	cluster := dp.Cluster

	// The components' own ports, taken now that the platform is up, just before they bind.
	ports, err := freeport.Get(14)
	require.NoError(t, err)
	apiAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	// Each component's Prometheus endpoint (the bridge's is ports[1]).
	metricsAt := map[string]string{"bridge": "127.0.0.1:" + strconv.Itoa(ports[1]), "worker": "127.0.0.1:" + strconv.Itoa(ports[3]),
		"api": "127.0.0.1:" + strconv.Itoa(ports[4]), "extender": "127.0.0.1:" + strconv.Itoa(ports[5])}
	pprofAt := map[string]string{"bridge": "127.0.0.1:" + strconv.Itoa(ports[6]), "worker": "127.0.0.1:" + strconv.Itoa(ports[7]),
		"api": "127.0.0.1:" + strconv.Itoa(ports[8]), "extender": "127.0.0.1:" + strconv.Itoa(ports[9])}

	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte(token+",alice,analysts\n"+experimenterToken+",experimenter,act-as=*,act-as-groups=*\n"+
		opsToken+",olga,admins\n"+bobToken+",bob,analysts\n"), 0o600))
	conn := append([]string{"-kubeconfig", cluster.Kubeconfig, "-temporal-address", dp.TemporalServer.FrontendAddress}, extra...)
	p := &e2ePlatform{slots: int32(shape.nodeCount()) * shape.slotsPerNode, beds: shape.bedNames(), temporal: dp.Temporal, cluster: cluster, metricsAt: metricsAt, pprofAt: pprofAt, parts: map[string]*component{
		"worker": {name: "worker", args: append(slices.Clone(conn), "-metrics-listen", metricsAt["worker"], "-health-listen", "127.0.0.1:"+strconv.Itoa(ports[12]))},
		"extender": {name: "extender", args: []string{"-kubeconfig", cluster.Kubeconfig, "-listen", dp.ExtenderAddr, "-metrics-listen", metricsAt["extender"],
			"-tls-cert-file", cluster.ExtenderCerts.CertFile, "-tls-key-file", cluster.ExtenderCerts.KeyFile, "-client-ca-file", cluster.ExtenderCerts.ClientCAFile}},
		"bridge": {name: "bridge", args: append(slices.Clone(conn), "-metrics-listen", metricsAt["bridge"], "-workflow-check-every", "2s",
			"-health-listen", "127.0.0.1:"+strconv.Itoa(ports[2]), "-webhook-listen", dp.WebhookAddr, "-webhook-cert-dir", dp.WebhookCerts.Dir)},
		"api": {name: "api", args: append(slices.Clone(conn), "-listen", apiAddr, "-token-file", tokens, "-metrics-listen", metricsAt["api"])},
	}}
	if shape.admissionApart {
		metricsAt["admission"], pprofAt["admission"] = "127.0.0.1:"+strconv.Itoa(ports[10]), "127.0.0.1:"+strconv.Itoa(ports[11])
		p.parts["worker"].args = append(p.parts["worker"].args, "-task-queues", installation.Default.Queue())
		p.parts["admission"] = &component{name: "admission", command: "worker", args: append(slices.Clone(conn), "-metrics-listen", metricsAt["admission"], "-health-listen", "127.0.0.1:"+strconv.Itoa(ports[13]),
			"-task-queues", installation.Default.AdmissionQueue()), nice: shape.admissionNice}
	}
	for _, c := range p.parts {
		c.t, c.logs = t, logs
		c.args = append(c.args, "-pprof-listen", pprofAt[c.name])
		c.start()
		t.Cleanup(c.stop)
	}

	p.config = cluster.Config
	p.kube = dp.Kube
	p.setUp(t, shape, queues, settings, apiAddr)
	return p
}

// setUp is the operator's part, as kubectl would do it: the test bed and the queues. It
// returns once the API at apiAddr shows every bed's slots free.
func (p *e2ePlatform) setUp(t *testing.T, shape bedShape, queues, settings, apiAddr string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.kube.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
		Data:       queuesData(queues, settings),
	}))
	if len(p.beds) > 1 {
		require.Zero(t, shape.nodeCount()%len(p.beds), "the nodes split evenly into the beds")
		var nodes corev1.NodeList
		require.NoError(t, p.kube.List(ctx, &nodes, client.HasLabels{localcluster.DefaultNodeLabel}))
		slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
		for i := range nodes.Items {
			n := &nodes.Items[i]
			patch := client.MergeFrom(n.DeepCopy())
			n.Labels[shape.nodeLabel(i%len(p.beds))] = fmt.Sprintf("n%05d", i)
			require.NoError(t, p.kube.Patch(ctx, n, patch))
		}
	}
	bedCreated := time.Now()
	for i, name := range p.beds {
		require.NoError(t, p.kube.Create(ctx, &v1alpha1.TestBed{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.TestBedSpec{NodeLabel: shape.nodeLabel(i), SlotsPerNode: shape.slotsPerNode, ResourcesPerSlot: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(shape.cpu), corev1.ResourceMemory: resource.MustParse(shape.memory)}},
		}))
	}

	// From here on, only the API.
	var err error
	p.api, err = apiclient.New("http://"+apiAddr, token)
	require.NoError(t, err)
	p.apiAddr = apiAddr
	require.Eventually(t, func() bool {
		total, free := p.bedSlots(ctx)
		return total == p.slots && free == p.slots
	}, 90*time.Second+time.Duration(p.slots)*25*time.Millisecond, 250*time.Millisecond, "the API never showed the test beds with all their slots free")
	p.bedFilled = time.Since(bedCreated)
}

// bedSlots adds up the slots of the test beds, and their free ones, as the API shows them
// (-1 when a bed cannot be read).
func (p *e2ePlatform) bedSlots(ctx context.Context) (total, free int32) {
	for _, b := range p.beds {
		tb, err := p.api.GetTestBed(ctx, b)
		if err != nil {
			return -1, -1
		}
		total += tb.Status.Total
		free += tb.Status.Free
	}
	return total, free
}

// waitJob waits until the API shows the job in state.
func (p *e2ePlatform) waitJob(t *testing.T, name string, state v1alpha1.BatchJobState, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		j, err := p.api.GetJob(context.Background(), name)
		return err == nil && j.Status.State == state
	}, within, 250*time.Millisecond, "job %s never %s", name, state)
}

// waitScheduling waits until the API shows the Scheduling in state.
func (p *e2ePlatform) waitScheduling(t *testing.T, name string, state v1alpha1.SchedulingState, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, err := p.api.GetScheduling(context.Background(), name)
		return err == nil && s.Status.State == state
	}, within, 250*time.Millisecond, "scheduling %s never %s", name, state)
}

// waitSlotsFree waits until every slot is free with its ghost running again.
func (p *e2ePlatform) waitSlotsFree(t *testing.T, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		if _, free := p.bedSlots(ctx); free != p.slots {
			return false
		}
		var pods corev1.PodList
		if err := p.kube.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{v1alpha1.GhostLabel: "true"}); err != nil {
			return false
		}
		up := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				up++
			}
		}
		return up == int(p.slots)
	}, within, 250*time.Millisecond, "every slot free, with its ghost running again")
}

// slotLedger follows the feed: which job holds which slot while it runs, which jobs were
// seen Running, which ended, and each Scheduling as last seen. A slot held by two unfinished
// jobs at once is a violation.
type slotLedger struct {
	mu          sync.Mutex
	holder      map[bedSlot]string
	running     map[string]bool
	ended       map[string]bool
	schedulings map[string]apitypes.Scheduling
	violations  []string
	// resyncs counts the RESYNCs taken in, connections the feed's connections.
	resyncs, connections int
	// last is each job's state as last seen, and its object's resourceVersion: a violation
	// says whether the feed brought the changes in the order they were written.
	last map[string]seenJob
	// trail is each job's states as the feed brought them, in order: a violation shows both
	// jobs' trails.
	trail map[string][]string
	// involved are the jobs of the violations.
	involved [][2]string
}

type seenJob struct {
	state v1alpha1.BatchJobState
	rv    string
}

// bedSlot is a slot of a test bed.
type bedSlot struct {
	bed  string
	slot int32
}

func newLedger() *slotLedger {
	return &slotLedger{holder: map[bedSlot]string{}, running: map[string]bool{}, ended: map[string]bool{}, schedulings: map[string]apitypes.Scheduling{},
		last: map[string]seenJob{}, trail: map[string][]string{}}
}

// followFeed reads the watch's events into a new ledger until the watch closes.
func followFeed(w *apiclient.Watcher) *slotLedger {
	l := newLedger()
	go func() {
		for ev := range w.Events() {
			l.take(ev)
		}
	}()
	return l
}

// followResuming is followFeed as a client of a replicated API follows the feed: through
// its Service, each lost connection opened again from the last position (the same replica
// resumes, any other sends a RESYNC), until ctx ends.
func followResuming(ctx context.Context, c *apiclient.Client, kinds []string) *slotLedger {
	l := newLedger()
	go func() {
		var at apiclient.Position
		for ctx.Err() == nil {
			w, err := c.Watch(ctx, kinds, at)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			l.mu.Lock()
			l.connections++
			l.mu.Unlock()
			for ev := range w.Events() {
				at.Apply(ev)
				l.take(ev)
			}
			_ = w.Close()
		}
	}()
	return l
}

// take applies one message of the feed.
func (l *slotLedger) take(ev apiclient.Event) {
	if ev.Type == apitypes.Resync {
		l.replace(ev.Items)
		return
	}
	l.apply(ev)
}

// apply takes in one change.
func (l *slotLedger) apply(ev apiclient.Event) {
	switch ev.Kind {
	case apitypes.KindScheduling:
		if s, err := ev.Scheduling(); err == nil {
			l.mu.Lock()
			l.schedulings[s.Name] = s
			l.mu.Unlock()
		}
	case apitypes.KindBatchJob:
		if j, err := ev.Job(); err == nil {
			l.see(j)
		}
	}
}

// replace takes in a RESYNC, the whole picture at one moment (sent first, and again when
// the feed lost changes): the slots held are those its running jobs hold, and no two of
// them may hold one slot. Its items come in no order, so they are not taken as changes.
func (l *slotLedger) replace(items []apiclient.Event) {
	l.mu.Lock()
	l.holder = map[bedSlot]string{}
	l.resyncs++
	l.mu.Unlock()
	for _, ev := range items {
		l.apply(ev)
	}
}

// schedulingEnded: the feed showed the Scheduling Completed or Failed.
func (l *slotLedger) schedulingEnded(name string) bool {
	st := l.schedulingState(name)
	return st == v1alpha1.SchedulingCompleted || st == v1alpha1.SchedulingFailed
}

// schedulingState is the Scheduling's state the feed showed last.
func (l *slotLedger) schedulingState(name string) v1alpha1.SchedulingState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.schedulings[name].Status.State
}

func (l *slotLedger) see(j apitypes.Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() { l.last[j.Name] = seenJob{state: j.Status.State, rv: j.ResourceVersion} }()
	l.trail[j.Name] = append(l.trail[j.Name], fmt.Sprintf("%s@%s", j.Status.State, j.ResourceVersion))
	switch j.Status.State {
	case v1alpha1.JobSubmitted, v1alpha1.JobRunning:
		l.running[j.Name] = l.running[j.Name] || j.Status.State == v1alpha1.JobRunning
		for _, s := range j.Status.Slots {
			at := bedSlot{j.Status.TestBed, s}
			if other := l.holder[at]; other != "" && other != j.Name {
				l.violations = append(l.violations, fmt.Sprintf("slot %d of %s held by %s and %s (%s at resourceVersion %s; %s last seen %s at %s)",
					s, at.bed, other, j.Name, j.Name, j.ResourceVersion, other, l.last[other].state, l.last[other].rv))
				l.involved = append(l.involved, [2]string{other, j.Name})
			}
			l.holder[at] = j.Name
		}
	case v1alpha1.JobCompleted, v1alpha1.JobFailed:
		l.ended[j.Name] = true
		for s, h := range l.holder {
			if h == j.Name {
				delete(l.holder, s)
			}
		}
	}
}

// holders are the jobs that hold a slot now, by the feed.
func (l *slotLedger) holders() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, h := range l.holder {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

func (l *slotLedger) endedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ended)
}

// seenRunningCount is how many jobs the feed showed Running.
func (l *slotLedger) seenRunningCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, yes := range l.running {
		if yes {
			n++
		}
	}
	return n
}

func (l *slotLedger) seenRunning(job string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running[job]
}

func (l *slotLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.involved {
		t.Logf("the feed's states of %s: %v; of %s: %v", v[0], l.trail[v[0]], v[1], l.trail[v[1]])
	}
	require.Empty(t, l.violations, "no slot is held by two jobs at once")
}

// Two Schedulings, one QueueBased in queue a and one SlotBased in queue b, of Spark and
// Flink jobs submitted through the API, run to the end while the worker and the extender
// are killed and started again mid-way. Every job ends Completed in the slots it was given,
// every application finished, and every slot is free again with its ghost back. Admission
// runs in a worker of its own, killed with the other.
func TestE2E_TwoQueuesBothModesThroughWorkerAndExtenderCrashes(t *testing.T) {
	t.Parallel() // no timing it asserts on: it may share the machine with another such test
	shape := defaultBed
	shape.admissionApart = true
	p := startE2EWith(t, shape, `<allocations>
  <queue name="root">
    <queue name="a"><weight>1</weight></queue>
    <queue name="b"><weight>1</weight></queue>
  </queue>
</allocations>`)
	parts, kube, c := p.parts, p.kube, p.api
	ctx := context.Background()

	type plan struct {
		framework v1alpha1.Framework
		runFor    string
	}
	jobs := map[string]plan{
		"a-etl": {v1alpha1.FrameworkSpark, "6s"}, "a-stream": {v1alpha1.FrameworkFlink, "8s"}, "a-report": {v1alpha1.FrameworkSpark, "4s"},
		"b-train": {v1alpha1.FrameworkSpark, "6s"}, "b-score": {v1alpha1.FrameworkFlink, "4s"}, "b-export": {v1alpha1.FrameworkSpark, "3s"},
	}
	for name, p := range jobs {
		queue := "root." + name[:1]
		_, err := c.CreateJob(ctx, apitypes.JobRequest{Name: name, Framework: p.framework, Queue: queue,
			Application:     v1alpha1.Application{Image: "registry.example/" + name + ":1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: p.runFor}})
		require.NoError(t, err, name)
	}

	// Watch everything from the start.
	w, err := c.Watch(ctx, []string{apiclient.WatchSchedulings, apiclient.WatchJobs, apiclient.WatchTestBeds}, apiclient.Position{})
	require.NoError(t, err)
	defer w.Close()
	ledger := followFeed(w)

	pinned := map[string][]int32{"b-train": {0, 1, 2}, "b-score": {2, 3}, "b-export": {7}}
	_, err = c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "queued", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.a",
		Jobs: []v1alpha1.SchedulingJob{{Name: "a-etl", Replication: 3}, {Name: "a-stream", Replication: 2}, {Name: "a-report", Replication: 4}}})
	require.NoError(t, err)
	_, err = c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "pinned", TestBed: "bed", Mode: v1alpha1.SlotBased, Queue: "root.b",
		Jobs: []v1alpha1.SchedulingJob{{Name: "b-train", Replication: 3, SlotIDs: pinned["b-train"]},
			{Name: "b-score", Replication: 2, SlotIDs: pinned["b-score"]}, {Name: "b-export", Replication: 1, SlotIDs: pinned["b-export"]}}})
	require.NoError(t, err)

	// Mid-way, with jobs running: the worker and the extender die and come back.
	require.Eventually(t, func() bool { return ledger.seenRunningCount() >= 2 }, 2*time.Minute, 100*time.Millisecond, "no two jobs ran")
	parts["worker"].kill()
	parts["admission"].kill()
	parts["extender"].kill()
	time.Sleep(2 * time.Second)
	parts["extender"].start()
	parts["admission"].start()
	parts["worker"].start()

	require.Eventually(t, func() bool {
		return ledger.schedulingEnded("queued") && ledger.schedulingEnded("pinned")
	}, 5*time.Minute, 250*time.Millisecond, "the Schedulings never ended")
	require.NoError(t, w.Err(), "the feed stayed up through the crashes")

	// The end state, read through the API, then checked against the cluster.
	for _, name := range []string{"queued", "pinned"} {
		s, err := c.GetScheduling(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, "%s: %s", name, s.Status.Message)
		require.Equal(t, int32(3), s.Status.FinishedJobs, name)
	}
	for name, p := range jobs {
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, "alice", j.User)
		require.NotNil(t, j.Status.SubmittedAt, name)
		require.NotNil(t, j.Status.FinishedAt, name)
		// A job that ran from start to end while the worker was down was never seen
		// running, so it has no RunningAt (noted as a gap of the job workflow); every job
		// the feed showed Running has one.
		if ledger.seenRunning(name) {
			require.NotNil(t, j.Status.RunningAt, name)
		} else if j.Status.RunningAt == nil {
			t.Logf("%s ran while the worker was down: it has no RunningAt", name)
		}
		if want, ok := pinned[name]; ok {
			require.Equal(t, want, j.Status.Slots, "%s ran in exactly its slots", name)
		} else {
			require.Len(t, j.Status.Slots, map[string]int{"a-etl": 3, "a-stream": 2, "a-report": 4}[name])
			for _, s := range j.Status.Slots {
				require.True(t, s >= 0 && s < 8, "%s got slot %d, outside the bed", name, s)
			}
			require.Len(t, slices.Compact(slices.Sorted(slices.Values(j.Status.Slots))), len(j.Status.Slots), "%s got distinct slots", name)
		}
		require.NotNil(t, j.Status.Application, name)
		key := client.ObjectKey{Namespace: "default", Name: j.Status.Application.Name}
		switch p.framework {
		case v1alpha1.FrameworkSpark:
			// The job ended at SUCCEEDING (restart policy Never); the operator's next pass
			// writes COMPLETED, maybe a moment after.
			var app sparkv1beta2.SparkApplication
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				require.NoError(c, kube.Get(ctx, key, &app))
				require.Equal(c, sparkv1beta2.ApplicationStateCompleted, app.Status.AppState.State, name)
			}, 10*time.Second, 50*time.Millisecond)
		case v1alpha1.FrameworkFlink:
			var app flinkv1beta1.FlinkDeployment
			require.NoError(t, kube.Get(ctx, key, &app))
			require.Equal(t, flinkv1beta1.FlinkJobFinished, app.Status.JobStatus.State, name)
		}
	}
	ledger.check(t)
	p.waitSlotsFree(t, time.Minute)
}

// queuesData is the queues ConfigMap's data: the allocation file, and the settings if any.
func queuesData(queues, settings string) map[string]string {
	data := map[string]string{v1alpha1.QueuesConfigMapKey: queues}
	if settings != "" {
		data[v1alpha1.QueuesSettingsKey] = settings
	}
	return data
}
