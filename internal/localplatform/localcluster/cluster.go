// Package localcluster starts a real Kubernetes control plane on loopback for tests and for
// `slotplane dev`: etcd, kube-apiserver, kube-scheduler (with a slot-scheduler profile and,
// optionally, slotplane's extender, called over mutual TLS with certificates made for each
// start: ExtenderCerts) and kwok, which plays the kubelet of N labelled fake nodes. It installs slotplane's CRDs, the operator CRDs slotplane creates, and slotplane's
// PriorityClasses.
//
// The binaries are built by `make tools` from pinned module versions (tools/kube) into a
// cache outside the work tree, and found there by FindTools.
package localcluster

import (
	"cmp"
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"slotplane/crds"
	"slotplane/crds/v1alpha1"
	"slotplane/deploy"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
)

const (
	// EnvKubeBin names the folder holding kube-apiserver, kube-scheduler, etcd and kubectl.
	EnvKubeBin = "SLOTPLANE_KUBE_BIN"
	// EnvKwok names the kwok binary.
	EnvKwok = "SLOTPLANE_KWOK"

	// DefaultNodeLabel is the label key every fake node carries, valued by its index.
	DefaultNodeLabel = "slotplane.io/node"
	// FakeNodeLabel marks the nodes kwok manages (value "kwok").
	FakeNodeLabel = "slotplane.io/fake-node"

	adminToken = "slotplane-admin-token"
)

// Options shape a cluster. The zero value is a cluster without nodes or extender.
type Options struct {
	// Nodes is the number of fake nodes created at start, named node-00, node-01, ...
	Nodes int
	// NodeLabel is the label key put on every node, valued "00", "01", ...; empty means
	// DefaultNodeLabel.
	NodeLabel string
	// NodeResources is every node's capacity; nil means 16 cpu, 64Gi memory, 110 pods.
	NodeResources corev1.ResourceList
	// ExtenderURL is the scheduler extender's URL prefix (https://127.0.0.1:PORT/); empty
	// configures no extender. For an https URL the cluster makes the extender's
	// certificates (Cluster.ExtenderCerts) and kube-scheduler calls it with them; an
	// http:// URL needs ExtenderPlainHTTP.
	ExtenderURL string
	// ExtenderPlainHTTP lets kube-scheduler call the extender over plain HTTP.
	ExtenderPlainHTTP bool
	// PlainNodes is the number of further nodes, named plain-00, plain-01, ..., without
	// NodeLabel (so outside every test bed that selects it) and never tainted: where
	// drivers, JobManagers and other ordinary pods run.
	PlainNodes int
	// DedicateNodes taints every labelled node with the test bed taint (NoSchedule), as a cluster
	// that dedicates its test bed nodes does: only pods that tolerate it (ghosts, slot pods)
	// land there.
	DedicateNodes bool
	// Dir keeps data and logs; empty makes a temporary folder that Close removes unless
	// KeepDir is set. A cluster started again on the same Dir finds its objects again.
	Dir     string
	KeepDir bool
	// KubeBinDir and Kwok locate the binaries; empty asks FindTools.
	KubeBinDir string
	Kwok       string
	// Schedulers is how many kube-scheduler replicas run (0 and 1: one). Several elect
	// their leader through the Lease SchedulerLease in kube-system, as a highly available
	// control plane's do: one schedules, the others stand by.
	Schedulers int
	// AuditLog, when set, is a file the API server appends a line of JSON to for every
	// request it answered: who asked (user and User-Agent), the verb, the object and the
	// answer's code (audit level Metadata). Empty means the value of EnvAuditLog; both empty,
	// no audit. For finding out which component asks what (ReadAudit); it costs the API
	// server CPU, so benchmarks' figures are not taken with it.
	AuditLog string
}

// EnvAuditLog is the environment variable that sets Options.AuditLog when the test or
// benchmark that starts the cluster does not.
const EnvAuditLog = "SLOTPLANE_APISERVER_AUDIT_LOG"

// EnvAPIServerProfile, when set, starts the API server with its profiling endpoints
// (/debug/pprof) on, for a benchmark that profiles it; it names the file the benchmark
// writes the profile to. Off, the API server serves no profiling, as a cluster's often does.
const EnvAPIServerProfile = "SLOTPLANE_BENCH_APISERVER_PROFILE"

// Cluster is a running control plane.
type Cluster struct {
	// Config reaches the API server as a member of system:masters.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same credentials.
	Kubeconfig string
	// Dir holds the logs (<component>.log) and data.
	Dir string
	// AuditLog is the file of the API server's audit log (Options.AuditLog); empty: none.
	AuditLog string
	// APIServerURL is the API server's https URL.
	APIServerURL string
	// ExtenderCerts are what the extender serves with and kube-scheduler calls it with;
	// nil without an https ExtenderURL.
	ExtenderCerts *ExtenderCerts

	opts      Options
	client    kubernetes.Interface
	procs     []*process // in start order; stopped in reverse, so etcd last
	removeDir bool
	// kwok, to start it again if it dies at start-up.
	kwok *process
	// schedulers are the kube-scheduler replicas, each with its secure port. mu guards
	// their processes and procs, which the replicas' supervisors change.
	schedulers []scheduler
	mu         sync.Mutex
	// closing ends the supervisors, which Close waits for; closeOnce lets Close run twice.
	closing     chan struct{}
	closeOnce   sync.Once
	supervisors sync.WaitGroup
}

// scheduler is one kube-scheduler replica.
type scheduler struct {
	proc *process
	port int
}

// Start brings up the control plane and returns when the API server is ready, the CRDs are
// established, the scheduler is ready and every node is Ready. On error, whatever started
// is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	extenderHost, err := extenderHost(opts)
	if err != nil {
		return nil, err
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.removeDir = false // keep the logs that explain the failure
			_ = c.Close()
			err = fmt.Errorf("%w (logs in %s)", err, c.Dir)
		}
	}()
	if err := c.startControlPlane(ctx, extenderHost); err != nil {
		return nil, err
	}
	if err := c.createNodes(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// withDefaults fills in the options left unset: the node label and size, and the tools
// FindTools finds.
func (opts Options) withDefaults() (Options, error) {
	if opts.NodeLabel == "" {
		opts.NodeLabel = DefaultNodeLabel
	}
	if opts.NodeResources == nil {
		opts.NodeResources = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("16"),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	if opts.KubeBinDir == "" || opts.Kwok == "" {
		kubeBin, kwok, err := FindTools()
		if err != nil {
			return opts, err
		}
		opts.KubeBinDir, opts.Kwok = cmp.Or(opts.KubeBinDir, kubeBin), cmp.Or(opts.Kwok, kwok)
	}
	return opts, nil
}

// newCluster makes a cluster of nothing yet but its directory: opts.Dir, or a temporary one
// removed on Close unless opts.KeepDir.
func newCluster(opts Options) (*Cluster, error) {
	c := &Cluster{opts: opts, Dir: opts.Dir, closing: make(chan struct{})}
	if c.Dir == "" {
		var err error
		if c.Dir, err = os.MkdirTemp("", "slotplane-cluster-"); err != nil {
			return nil, err
		}
		c.removeDir = !opts.KeepDir
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	return c, nil
}

// startControlPlane makes the extender's certificates (when it has a host), starts etcd and
// the API server, installs the CRDs, priority classes and admission policies, and starts
// the scheduler and kwok.
func (c *Cluster) startControlPlane(ctx context.Context, extenderHost string) error {
	if extenderHost != "" {
		var err error
		if c.ExtenderCerts, err = NewExtenderCerts(c.Dir, extenderHost); err != nil {
			return err
		}
	}
	var etcdClient int
	if err := c.onFreePorts(2, func(ports []int) error {
		etcdClient = ports[0]
		return c.startEtcd(ctx, ports[0], ports[1])
	}); err != nil {
		return err
	}
	if err := c.onFreePorts(1, func(ports []int) error { return c.startAPIServer(ctx, ports[0], etcdClient) }); err != nil {
		return err
	}
	if err := InstallCRDs(ctx, c.Config, crds.All()); err != nil {
		return err
	}
	if err := InstallPriorityClasses(ctx, c.client, deploy.PriorityClasses); err != nil {
		return err
	}
	if err := InstallAdmissionPolicies(ctx, c.client, deploy.AdmissionPolicies); err != nil {
		return err
	}
	for i := range max(1, c.opts.Schedulers) {
		if err := c.onFreePorts(1, func(ports []int) error { return c.startScheduler(ctx, i, ports[0]) }); err != nil {
			return err
		}
		if c.opts.Schedulers > 1 {
			c.supervisors.Go(func() { c.superviseScheduler(i) })
		}
	}
	return c.startKwok()
}

// onFreePorts runs start, which starts one process of the control plane and waits for it,
// on n free ports. A port found free can be taken by another process (a parallel test
// package's platform) before the component binds it; the component then exits saying so,
// and start is run again on other free ports (freeport.Retry).
func (c *Cluster) onFreePorts(n int, start func(ports []int) error) error {
	return freeport.Retry(func() error {
		ports, err := pickPorts(n)
		if err != nil {
			return err
		}
		return start(ports)
	}, func(error) bool {
		if !c.lastLostItsPort() {
			return false
		}
		c.procs = c.procs[:len(c.procs)-1] // it has exited
		return true
	})
}

// pickPorts finds free ports; a test replaces it to hand out taken ones.
var pickPorts = freeport.Get

// lastLostItsPort tells whether the process started last has exited because a port it was
// to listen on was in use.
func (c *Cluster) lastLostItsPort() bool {
	if len(c.procs) == 0 {
		return false
	}
	p := c.procs[len(c.procs)-1]
	if ended, _ := p.exited(); !ended {
		return false
	}
	out, err := os.ReadFile(p.log.Name())
	return err == nil && freeport.InUse(string(out))
}

// createNodes creates the options' slot nodes and plain nodes and waits until all are Ready.
func (c *Cluster) createNodes(ctx context.Context) error {
	opts := c.opts
	for i := range opts.Nodes {
		if err := c.CreateNode(ctx, fmt.Sprintf("node-%02d", i), map[string]string{opts.NodeLabel: fmt.Sprintf("%02d", i)}); err != nil {
			return err
		}
	}
	for i := range opts.PlainNodes {
		if err := c.createNode(ctx, fmt.Sprintf("plain-%02d", i), nil, false); err != nil {
			return err
		}
	}
	return c.WaitNodesReady(ctx, opts.Nodes+opts.PlainNodes)
}

// Kubectl returns the path of the kubectl built with the control plane, or "kubectl" (the
// one on PATH) if there is none.
func (c *Cluster) Kubectl() string {
	path := filepath.Join(c.opts.KubeBinDir, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "kubectl"
	}
	return path
}

// Client returns a clientset of the cluster.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Close stops kwok, the scheduler, the API server and etcd, in that order, and removes the
// folder if Start made it. It waits for every process to exit.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { close(c.closing) })
	c.supervisors.Wait()
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	if c.removeDir && len(errs) == 0 {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// CreateNode creates a node that kwok manages, with the cluster's node resources and the
// given labels (added to the fake-node marker and the hostname label), tainted when the
// cluster dedicates its nodes. A node that exists already gets the labels added.
func (c *Cluster) CreateNode(ctx context.Context, name string, labels map[string]string) error {
	return c.createNode(ctx, name, labels, c.opts.DedicateNodes)
}

func (c *Cluster) createNode(ctx context.Context, name string, labels map[string]string, dedicate bool) error {
	all := map[string]string{FakeNodeLabel: "kwok", corev1.LabelHostname: name}
	for k, v := range labels {
		all[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Status: corev1.NodeStatus{
			Capacity:    c.opts.NodeResources.DeepCopy(),
			Allocatable: c.opts.NodeResources.DeepCopy(),
		},
	}
	if dedicate {
		node.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TestBedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	_, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A restart on the same data: the node is there; make sure it still carries the labels.
		current, getErr := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("get node %s: %w", name, getErr)
		}
		if current.Labels == nil {
			current.Labels = map[string]string{}
		}
		for k, v := range all {
			current.Labels[k] = v
		}
		_, err = c.client.CoreV1().Nodes().Update(ctx, current, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// WaitNodesReady waits until at least n fake nodes report Ready. kwok v0.7.0 now and then
// dies at start-up on a race of its own ("concurrent map writes" while it sets up its CEL
// environments); a kwok found dead while waiting is started again, up to three times.
func (c *Cluster) WaitNodesReady(ctx context.Context, n int) error {
	restarts := 0
	return c.poll(ctx, "nodes Ready", func(ctx context.Context) error {
		if c.kwok != nil {
			if dead, why := c.kwok.exited(); dead {
				if restarts == 3 {
					return stopPolling{why}
				}
				restarts++
				c.procs = slices.DeleteFunc(c.procs, func(p *process) bool { return p == c.kwok })
				if err := c.startKwok(); err != nil {
					return err
				}
				return fmt.Errorf("kwok restarted after: %w", why)
			}
		}
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FakeNodeLabel + "=kwok"})
		if err != nil {
			return err
		}
		ready := 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < n {
			return fmt.Errorf("%d of %d nodes Ready", ready, n)
		}
		return nil
	})
}

func (c *Cluster) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := c.start("etcd", filepath.Join(c.opts.KubeBinDir, "etcd"),
		"--name=default",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", // throwaway data: durability costs seconds per test
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	return c.waitHTTP(ctx, p, clientURL+"/health", nil, "", `"health":"true"`)
}

func (c *Cluster) startAPIServer(ctx context.Context, port, etcdPort int) error {
	certs, err := newPKI(c.Dir)
	if err != nil {
		return err
	}
	tokens := filepath.Join(c.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",slotplane-admin,slotplane-admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	c.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(port)
	audit, err := c.auditFlags()
	if err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + certs.servingCert,
		"--tls-private-key-file=" + certs.servingKey,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + certs.serviceAccount,
		"--service-account-signing-key-file=" + certs.serviceAccount,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		// There is no kube-controller-manager: nobody creates the "default" service account
		// or lifts the not-ready taint of new nodes, so these two would block every pod.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=" + strconv.FormatBool(os.Getenv(EnvAPIServerProfile) != ""),
		"--v=1",
	}
	p, err := c.start("kube-apiserver", filepath.Join(c.opts.KubeBinDir, "kube-apiserver"), append(args, audit...)...)
	if err != nil {
		return err
	}
	c.Config = &rest.Config{
		Host:            c.APIServerURL,
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: certs.caPEM},
		// The components' own rates, so what runs here (the local platform, the benchmarks)
		// meets the limits a cluster's components have. A harness that must outpace them
		// raises its own copy.
		QPS:   kubeclient.DefaultQPS,
		Burst: kubeclient.DefaultBurst,
	}
	if c.client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if err := c.writeKubeconfig(certs.caPEM); err != nil {
		return err
	}
	tlsConf := &tls.Config{RootCAs: mustPool(certs.caPEM)}
	return c.waitHTTP(ctx, p, c.APIServerURL+"/readyz", tlsConf, adminToken, "ok")
}

func (c *Cluster) writeKubeconfig(ca []byte) error {
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	conf := clientcmdapi.NewConfig()
	conf.Clusters["slotplane"] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthorityData: ca}
	conf.AuthInfos["slotplane-admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	conf.Contexts["slotplane"] = &clientcmdapi.Context{Cluster: "slotplane", AuthInfo: "slotplane-admin", Namespace: "default"}
	conf.CurrentContext = "slotplane"
	return clientcmd.WriteToFile(*conf, c.Kubeconfig)
}

// startScheduler starts replica i of kube-scheduler on port.
func (c *Cluster) startScheduler(ctx context.Context, i, port int) error {
	configFile := filepath.Join(c.Dir, "kube-scheduler.yaml")
	conf, err := schedulerConfig(c.Kubeconfig, c.opts.ExtenderURL, c.ExtenderCerts, c.opts.Schedulers > 1)
	if err != nil {
		return err
	}
	if err := os.WriteFile(configFile, []byte(conf), 0o600); err != nil {
		return err
	}
	name := "kube-scheduler"
	if i > 0 {
		name += "-" + strconv.Itoa(i)
	}
	p, err := c.start(name, filepath.Join(c.opts.KubeBinDir, "kube-scheduler"),
		"--config="+configFile,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "scheduler-certs"),
		// A slot pod turned away while the extender was unreachable waits in the
		// unschedulable queue for a cluster event that may never come; bound that wait (the
		// default is 5 minutes). The scheduler checks every 30 s.
		"--pod-max-in-unschedulable-pods-duration=10s",
		"--v=2",
	)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if i < len(c.schedulers) {
		c.schedulers[i] = scheduler{proc: p, port: port}
	} else {
		c.schedulers = append(c.schedulers, scheduler{proc: p, port: port})
	}
	c.mu.Unlock()
	// The scheduler serves a self-signed certificate; only its readiness is read here.
	tlsConf := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback health probe
	return c.waitHTTP(ctx, p, "https://127.0.0.1:"+strconv.Itoa(port)+"/readyz", tlsConf, "", "ok")
}

// extenderHost is the host the extender's serving certificate must name: that of an https
// ExtenderURL, or "" for none or a plain one (which must be asked for).
func extenderHost(opts Options) (string, error) {
	if opts.ExtenderURL == "" {
		return "", nil
	}
	u, err := url.Parse(opts.ExtenderURL)
	if err != nil {
		return "", fmt.Errorf("ExtenderURL: %w", err)
	}
	switch {
	case u.Scheme == "https" && u.Hostname() != "":
		return u.Hostname(), nil
	case u.Scheme == "http" && opts.ExtenderPlainHTTP:
		return "", nil
	case u.Scheme == "http":
		return "", fmt.Errorf("ExtenderURL %s: kube-scheduler calls the extender over HTTPS; plain HTTP needs ExtenderPlainHTTP", opts.ExtenderURL)
	}
	return "", fmt.Errorf("ExtenderURL %s is no http(s) URL with a host", opts.ExtenderURL)
}

// SchedulerConfig is the KubeSchedulerConfiguration of the local scheduler: the one in
// deploy/ (default and slot-scheduler profiles, slotplane's extender managing the slot
// resource), with this cluster's kubeconfig, no leader election, and the extender at
// extenderURL (none when empty), called with certs when they are given: it checks the
// extender's certificate against their CA and presents their client certificate.
func SchedulerConfig(kubeconfig, extenderURL string, certs *ExtenderCerts) (string, error) {
	return schedulerConfig(kubeconfig, extenderURL, certs, false)
}

// SchedulerLease is the Lease in kube-system through which several scheduler replicas
// elect their leader (Options.Schedulers).
const SchedulerLease = "slot-scheduler"

// schedulerConfig is SchedulerConfig, with leader election through SchedulerLease when
// elect is set: a standby takes over 8 s after the leader's last renewal.
func schedulerConfig(kubeconfig, extenderURL string, certs *ExtenderCerts, elect bool) (string, error) {
	var conf schedulerv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(deploy.SchedulerConfig, &conf); err != nil {
		return "", fmt.Errorf("deploy/kube-scheduler-config.yaml: %w", err)
	}
	conf.ClientConnection.Kubeconfig = kubeconfig
	conf.LeaderElection.LeaderElect = &elect
	if elect {
		conf.LeaderElection.ResourceLock = "leases"
		conf.LeaderElection.ResourceNamespace = "kube-system"
		conf.LeaderElection.ResourceName = SchedulerLease
		conf.LeaderElection.LeaseDuration = metav1.Duration{Duration: 8 * time.Second}
		conf.LeaderElection.RenewDeadline = metav1.Duration{Duration: 5 * time.Second}
		conf.LeaderElection.RetryPeriod = metav1.Duration{Duration: time.Second}
	}
	if extenderURL == "" {
		conf.Extenders = nil
	}
	for i := range conf.Extenders {
		e := &conf.Extenders[i]
		e.URLPrefix = extenderURL
		e.EnableHTTPS, e.TLSConfig = false, nil
		if certs != nil {
			e.EnableHTTPS = true
			e.TLSConfig = &schedulerv1.ExtenderTLSConfig{CAData: certs.CA, CertData: certs.ClientCert, KeyData: certs.ClientKey}
		}
	}
	out, err := yaml.Marshal(&conf)
	return string(out), err
}

// kwokStages are the pod lifecycles kwok plays: start, finish after a simulated run time,
// delete.
//
//go:embed kwok-stages.yaml
var kwokStages string

// kwokConfig is kwok's --config file: its options, then the pod stages.
func kwokConfig() string {
	// A /16 of pod IPs: the default /24 runs out near 254 pods.
	options := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  cidr: 10.128.0.0/16\n"
	return options + "---\n" + kwokStages
}

// startKwok starts kwok on a free port, a new one on every start: a kwok that died because
// its port was taken meanwhile gets another.
func (c *Cluster) startKwok() error {
	configFile := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(configFile, []byte(kwokConfig()), 0o600); err != nil {
		return fmt.Errorf("write kwok config: %w", err)
	}
	ports, err := pickPorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	p, err := c.start("kwok", c.opts.Kwok,
		"--kubeconfig="+c.Kubeconfig,
		"--config="+configFile,
		"--manage-nodes-with-label-selector="+FakeNodeLabel+"=kwok",
		"--node-ip=127.0.0.1",
		"--server-address=127.0.0.1:"+strconv.Itoa(port),
	)
	c.kwok = p
	return err
}

func (c *Cluster) start(name, bin string, args ...string) (*process, error) {
	p, err := startProcess(c.Dir, name, bin, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitHTTP polls url (with the bearer token, if any) until it answers 200 with a body
// containing want, failing early if p exits.
func (c *Cluster) waitHTTP(ctx context.Context, p *process, url string, tlsConf *tls.Config, token, want string) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	defer hc.CloseIdleConnections()
	return c.poll(ctx, p.name+" ready", func(ctx context.Context) error {
		if ended, err := p.exited(); ended {
			return stopPolling{err}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return stopPolling{err}
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	})
}

type stopPolling struct{ error }

// poll runs check every 50ms until it succeeds, returns stopPolling, or ctx ends; a check
// never waits longer than the poll's own deadline of one minute.
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		var stop stopPolling
		if errors.As(err, &stop) {
			return fmt.Errorf("waiting for %s: %w", what, stop.error)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
