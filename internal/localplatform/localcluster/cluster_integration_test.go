//go:build integration

package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/freeport"
)

func TestCluster_NodesAreReadyAndLabelled(t *testing.T) {
	c := New(t, Options{Nodes: 3, NodeLabel: "example.com/rack"})
	nodes, err := c.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "example.com/rack"})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 3)
	for i, node := range nodes.Items {
		require.Equal(t, []string{"00", "01", "02"}[i], node.Labels["example.com/rack"])
		require.True(t, nodeReady(&node), "node %s not Ready", node.Name)
	}

	// The kubeconfig file reaches the same cluster.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Nodes().Get(context.Background(), "node-02", metav1.GetOptions{})
	require.NoError(t, err)
}

func TestCluster_SlotSchedulerBindsPodAndKwokRunsIt(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	started := time.Now()
	c := New(t, Options{Nodes: 2, AuditLog: audit})
	ctx := context.Background()
	pod := testPod("plain", nil)
	_, err := c.Client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	got := waitPodRunning(t, c, "plain")
	require.NotEmpty(t, got.Spec.NodeName, "pod was not bound")
	events, err := c.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=plain,reason=Scheduled"})
	require.NoError(t, err)
	require.NotEmpty(t, events.Items)
	ev := events.Items[0]
	require.Contains(t, []string{ev.ReportingController, ev.Source.Component}, "slot-scheduler",
		"the Scheduled event should come from the slot-scheduler profile: %+v", ev)

	// The audit log names who asked: the scheduler bound the pod, kwok wrote its status.
	counts, err := ReadAudit(audit, started)
	require.NoError(t, err)
	require.Equal(t, 1, counts[AuditKey{Agent: "kube-scheduler", Verb: "create", Resource: "pods/binding"}], "%v", counts)
	kwokStatus := 0
	for k, n := range counts {
		if strings.HasPrefix(k.Agent, "kwok") && k.Verb == "patch" && k.Resource == "pods/status" { // kwok names itself by its binary
			kwokStatus += n
		}
	}
	require.Positive(t, kwokStatus, "%v", counts)
	later, err := ReadAudit(audit, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, later, "nothing is counted before since")
}

// A pod that requests the slot resource goes through the extender, which the scheduler
// obeys and lets bind the pod (bindVerb); a pod that does not is never shown to it.
func TestCluster_ExtenderSeesOnlySlotPodsAndDecidesTheirNode(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var c *Cluster
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bind" {
			var args extenderv1.ExtenderBindingArgs
			if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			seen = append(seen, r.URL.Path+" "+args.PodName)
			mu.Unlock()
			var result extenderv1.ExtenderBindingResult
			err := c.Client().CoreV1().Pods(args.PodNamespace).Bind(r.Context(), &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: args.PodNamespace, Name: args.PodName, UID: args.PodUID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: args.Node},
			}, metav1.CreateOptions{})
			if err != nil {
				result.Error = err.Error()
			}
			_ = json.NewEncoder(w).Encode(result)
			return
		}
		var args extenderv1.ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+args.Pod.Name)
		mu.Unlock()
		result := extenderv1.ExtenderFilterResult{FailedNodes: extenderv1.FailedNodesMap{}}
		for _, name := range *args.NodeNames {
			if name == "node-02" {
				result.NodeNames = &[]string{name}
			} else {
				result.FailedNodes[name] = "not the chosen node"
			}
		}
		_ = json.NewEncoder(w).Encode(result)
	}))
	defer ext.Close()

	c = New(t, Options{Nodes: 3, ExtenderURL: ext.URL + "/", ExtenderPlainHTTP: true})
	ctx := context.Background()
	slot := corev1.ResourceList{corev1.ResourceName(v1alpha1.SlotResource): resource.MustParse("1")}
	_, err := c.Client().CoreV1().Pods("default").Create(ctx, testPod("slot-pod", slot), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Client().CoreV1().Pods("default").Create(ctx, testPod("plain-pod", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	require.Equal(t, "node-02", waitPodRunning(t, c, "slot-pod").Spec.NodeName)
	waitPodRunning(t, c, "plain-pod")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"/filter slot-pod", "/bind slot-pod"}, seen)
}

func TestCluster_CloseStopsEveryProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Nodes: 1})
	require.NoError(t, err)
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	require.Len(t, pids, 4)
	dir := c.Dir
	require.NoError(t, c.Close())
	for _, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d still exists", pid)
	}
	require.NoDirExists(t, dir)
}

func TestStart_WithoutBinariesSaysHowToGetThem(t *testing.T) {
	// A failed start keeps its folder for the logs: the test's own goes with the test.
	_, err := Start(context.Background(), Options{KubeBinDir: t.TempDir(), Kwok: "/nonexistent/kwok", Dir: t.TempDir()})
	require.ErrorContains(t, err, "make tools")
}

func testPod(name string, requests corev1.ResourceList) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	for k, v := range requests {
		res[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			SchedulerName: v1alpha1.SlotSchedulerName,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "busybox",
				Resources: corev1.ResourceRequirements{Requests: res, Limits: requests},
			}},
		},
	}
}

func waitPodRunning(t *testing.T, c *Cluster, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = c.Client().CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pod %s not Running: phase %s, node %q, conditions %v", name, pod.Status.Phase, pod.Spec.NodeName, pod.Status.Conditions)
	}
	require.NoError(t, err)
	return pod
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// A port taken between the search and the bind (by a parallel test package's platform) costs
// the component a try on other ports, not the cluster's start: etcd's, the API server's, the
// scheduler's and kwok's first ports are each taken here.
func TestStart_TriesOtherPortsWhenOneIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freeport.Get(n)
		if err == nil && calls%2 == 1 && calls <= 7 { // each component's first try
			ports[0] = taken
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freeport.Get })
	c := New(t, Options{Nodes: 1})
	require.GreaterOrEqual(t, calls, 7, "etcd, the API server and the scheduler should each have tried twice")
	nodes, err := c.Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 1)
	require.True(t, nodeReady(&nodes.Items[0]))
}
