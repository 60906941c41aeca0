//go:build integration

package extender_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
	"slotplane/internal/testobjects"
)

// env is a local control plane whose scheduler calls a real extender, and a 4 x 2 test bed
// with its ghosts in place: node-0 holds slots 0,4; node-1 1,5; node-2 2,6; node-3 3,7.
type env struct {
	cluster  *localcluster.Cluster
	client   client.Client
	acts     *activities.Activities
	extender *extender.Server
	addr     string
	// held keeps addr bound until the extender first starts: the cluster takes seconds to
	// come up, and another test process's free-port search would otherwise take the port
	// the scheduler was told to call.
	held net.Listener
	logs *syncBuffer
	// https calls the extender as kube-scheduler does: trusting its CA, presenting the
	// scheduler's client certificate.
	https *http.Client
}

// syncBuffer collects the extender's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newEnv(t *testing.T, nodeCPU string, tweaks ...func(*localcluster.Options)) *env {
	t.Helper()
	ports, err := freeport.Get(1)
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	held, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	opts := localcluster.Options{
		Nodes:       4,
		ExtenderURL: "https://" + addr + "/",
		NodeResources: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(nodeCPU),
			corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	c := localcluster.New(t, opts)
	cl, err := kubeclient.Live(c.Config)
	require.NoError(t, err)
	e := &env{cluster: c, client: cl, acts: &activities.Activities{Client: cl}, addr: addr, held: held, logs: &syncBuffer{}}
	clientTLS, err := c.ExtenderCerts.ClientTLS()
	require.NoError(t, err)
	e.https = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	t.Cleanup(e.https.CloseIdleConnections)
	e.startExtender(t)

	tb := testobjects.TestBed("bed").Slots(2, "2", "4Gi").Obj()
	require.NoError(t, cl.Create(context.Background(), tb))
	require.NoError(t, grantAll(context.Background(), cl, "bed", 64))
	e.settle(t)
	return e
}

// grantedJob is the BatchJob of every pod slotPod makes.
const grantedJob = "granted"

// grantAll makes the BatchJob grantedJob, granted slots 0 to n-1 of test bed bed, as a
// Scheduling's creation request does: the extender gives a pod only slots granted to its job.
func grantAll(ctx context.Context, cl client.Client, bed string, n int) error {
	return grant(ctx, cl, grantedJob, bed, n)
}

// grant makes the BatchJob job, granted slots 0 to n-1 of test bed bed by the Scheduling
// "s". The grant is long past the bed's grantedSlotTimeout: the test bed's pass keeps the
// grant, and gives each slot no pod of the job holds its ghost, which the tests' pods evict.
func grant(ctx context.Context, cl client.Client, job, bed string, n int) error {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	at := metav1.NewMicroTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	raw, err := json.Marshal(v1alpha1.CreationRequest{Scheduling: "s", TestBed: bed, Slots: ids, Run: 1, GrantedAt: &at})
	if err != nil {
		return err
	}
	err = cl.Create(ctx, &v1alpha1.BatchJob{
		ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: "default",
			Labels:      map[string]string{v1alpha1.ActiveSchedulingLabel: "s", v1alpha1.GrantedTestBedLabel: bed},
			Annotations: map[string]string{v1alpha1.CreationRequestAnnotation: string(raw)}},
		Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark,
			Application: v1alpha1.Application{Image: "registry.example/a:1", MainApplicationFile: "local:///a.jar"}},
	})
	if apierrors.IsAlreadyExists(err) {
		return nil // a benchmark's earlier round made it
	}
	return err
}

func (e *env) startExtender(t *testing.T) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, e.logs), &slog.HandlerOptions{Level: slog.LevelWarn}))
	if e.held != nil {
		_ = e.held.Close() // the extender binds the address next
		e.held = nil
	}
	s, err := extender.Start(context.Background(), e.cluster.Config, e.addr, log, extender.WithTLS(e.serverTLS(t)))
	require.NoError(t, err)
	e.extender = s
	t.Cleanup(func() {
		if e.extender == s {
			require.NoError(t, s.Stop())
		}
	})
}

// serverTLS is the extender's TLS configuration on the local platform: its certificate and
// the scheduler's CA as client CA.
func (e *env) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	certs := e.cluster.ExtenderCerts
	conf, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	require.NoError(t, err)
	return conf
}

// settle runs ghost reconcile passes until one changes nothing and all ghosts run.
func (e *env) settle(t *testing.T) {
	t.Helper()
	in := activities.TestBedRef{Namespace: "default", Name: "bed"}
	require.Eventually(t, func() bool {
		res, err := e.acts.ReconcileTestBed(context.Background(), in)
		require.NoError(t, err)
		return res.Settled && e.podsPending(t) == 0
	}, 30*time.Second, 100*time.Millisecond)
}

func (e *env) podsPending(t *testing.T) int {
	var pods corev1.PodList
	require.NoError(t, e.client.List(context.Background(), &pods, client.InNamespace("default")))
	n := 0
	for _, p := range pods.Items {
		if p.Labels[v1alpha1.GhostLabel] == "true" && p.Status.Phase != corev1.PodRunning {
			n++
		}
	}
	return n
}

func (e *env) testBed(t *testing.T) *v1alpha1.TestBed {
	t.Helper()
	var tb v1alpha1.TestBed
	require.NoError(t, e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bed"}, &tb))
	return &tb
}

// slots is the bed's slots, read from its slot slices.
func (e *env) slots(t *testing.T) []v1alpha1.SlotStatus {
	t.Helper()
	got, err := slotslices.Read(context.Background(), e.client, e.testBed(t))
	require.NoError(t, err)
	return got
}

func slotPod(name, slotIDs string) *corev1.Pod {
	req := corev1.ResourceList{
		corev1.ResourceCPU:                         resource.MustParse("2"),
		corev1.ResourceMemory:                      resource.MustParse("4Gi"),
		corev1.ResourceName(v1alpha1.SlotResource): resource.MustParse("1"),
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default",
			Labels:      map[string]string{v1alpha1.TestBedLabel: "bed", v1alpha1.BatchJobLabel: grantedJob},
			Annotations: map[string]string{v1alpha1.SlotIDsAnnotation: slotIDs},
		},
		Spec: corev1.PodSpec{
			SchedulerName:     v1alpha1.SlotSchedulerName,
			PriorityClassName: v1alpha1.BatchPriorityClass,
			Tolerations:       []corev1.Toleration{{Key: v1alpha1.TestBedTaint, Operator: corev1.TolerationOpExists}},
			Containers:        []corev1.Container{{Name: "executor", Image: "spark", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}},
		},
	}
}

// parkedPod is a slot pod that no scheduler serves: it stays pending, and only the calls a
// test makes decide on it.
func parkedPod(name, slotIDs string) *corev1.Pod {
	p := slotPod(name, slotIDs)
	p.Spec.SchedulerName = "no-scheduler"
	return p
}

func (e *env) waitRunning(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	require.Eventually(t, func() bool {
		require.NoError(t, e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &pod))
		return pod.Status.Phase == corev1.PodRunning
	}, 30*time.Second, 50*time.Millisecond, "pod %s not Running", name)
	return &pod
}

// Both seed scenarios: the node is full of ghosts (the scheduler goes straight to /preempt),
// or it has room beside them (/filter answers).
func TestExtender_PlacesPodIntoOneOfItsSlots(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ nodeCPU, verb string }{
		"no node fits: preemption": {"4", "preempt"}, // 2 slots x 2 cpu fill a node
		"a node fits: filter":      {"16", "filter"}, // room beside the ghosts
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.nodeCPU)
			ctx := context.Background()
			before := ghostsBySlot(t, e)
			require.Len(t, before, 8)

			require.NoError(t, e.client.Create(ctx, slotPod("exec-1", "3,5")))
			pod := e.waitRunning(t, "exec-1")
			slotID := slotOf(pod)
			require.Contains(t, []string{"3", "5"}, slotID)
			tb := e.testBed(t)
			pos, _ := strconv.Atoi(slotID)
			slot := e.slots(t)[pos]
			require.Equal(t, slot.NodeName, pod.Spec.NodeName, "pod not on its slot's node")
			// Either way the slot's ghost is gone before any reconcile pass: the scheduler
			// evicted it (preempt), or /filter deleted it before answering, as the pod was
			// placed on room elsewhere on the node and must not share its slot with it.
			require.NotContains(t, ghostsBySlot(t, e), pos, "the slot's ghost outlived the pod's placement")
			cleared := map[string]string{"preempt": "0", "filter": "1"}[tc.verb]
			require.Contains(t, e.metrics(t), "slotplane_extender_ghosts_cleared_total "+cleared)

			e.settle(t)
			after := ghostsBySlot(t, e)
			require.Len(t, after, 7, "exactly one ghost goes")
			require.NotContains(t, after, pos, "the ghost of the pod's slot must be the one gone")
			for p, uid := range after {
				require.Equal(t, before[p], uid, "the ghost of slot %d was replaced", p)
			}
			tb = e.testBed(t)
			slot = e.slots(t)[pos]
			require.Equal(t, v1alpha1.SlotOccupied, slot.State)
			require.Equal(t, "exec-1", slot.PodName)
			require.Equal(t, pod.UID, slot.PodUID)
			require.EqualValues(t, 7, tb.Status.Free)
			require.Contains(t, e.metrics(t), `slotplane_extender_requests_total{result="placed",verb="`+tc.verb+`"} 1`,
				"the slot must have been reserved through /%s", tc.verb)
		})
	}
}

func (e *env) metrics(t *testing.T) string {
	t.Helper()
	resp, err := e.https.Get(e.extender.URL + "metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// ghostsBySlot maps each slot position to the uid of its live ghost.
func ghostsBySlot(t *testing.T, e *env) map[int]string {
	t.Helper()
	bed := e.slots(t)
	var pods corev1.PodList
	require.NoError(t, e.client.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{v1alpha1.GhostLabel: "true"}))
	out := map[int]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, s := range bed {
			if s.NodeName == p.Spec.NodeName && fmt.Sprint(s.PositionOnNode) == p.Labels[v1alpha1.PositionOnNodeLabel] {
				out[int(s.Position)] = string(p.UID)
			}
		}
	}
	return out
}

// Bad input gets a JSON answer with Error set and a log line, and the extender stays up.
func TestExtender_BadInputGetsAClearAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "16")
	// Each call names a pod of its own that exists, as the extender decides only on a live
	// pod; no scheduler serves them, so only these calls decide on them.
	var made []*corev1.Pod
	podJSON := func(mutate func(*corev1.Pod)) string {
		p := parkedPod(fmt.Sprintf("bad-%d", len(made)), "3,5")
		mutate(p)
		require.NoError(t, e.client.Create(context.Background(), p))
		made = append(made, p)
		b, err := json.Marshal(p)
		require.NoError(t, err)
		return string(b)
	}
	filterOf := func(pod string) string { return `{"Pod":` + pod + `,"NodeNames":["node-00","node-01"]}` }
	cases := map[string]struct {
		path, body, want string
	}{
		"malformed json":     {"filter", `{"Pod": [`, "malformed request"},
		"a 5 MiB body":       {"filter", `{"Pod":{"metadata":{"name":"` + strings.Repeat("x", 5<<20) + `"}}}`, "request body over 1048576 bytes"},
		"no pod":             {"filter", `{"NodeNames":["node-00"]}`, "the request has no pod"},
		"no slot ids":        {"filter", filterOf(podJSON(func(p *corev1.Pod) { p.Annotations = nil })), "has no slotplane.io/slot-ids annotation"},
		"invalid slot ids":   {"filter", filterOf(podJSON(func(p *corev1.Pod) { p.Annotations[v1alpha1.SlotIDsAnnotation] = "3,x" })), `"x" is not a slot position`},
		"slot the bed lacks": {"preempt", `{"Pod":` + podJSON(func(p *corev1.Pod) { p.Annotations[v1alpha1.SlotIDsAnnotation] = "42" }) + `}`, "the test bed has no slot [42]"},
		"unknown test bed":   {"filter", filterOf(podJSON(func(p *corev1.Pod) { p.Labels[v1alpha1.TestBedLabel] = "nope" })), "holds no grant in test bed nope"},
		"no batch job":       {"filter", filterOf(podJSON(func(p *corev1.Pod) { delete(p.Labels, v1alpha1.BatchJobLabel) })), "names no batch job"},
		"no test bed label":  {"preempt", `{"Pod":` + podJSON(func(p *corev1.Pod) { p.Labels = nil }) + `}`, "has no slotplane.io/testbed label"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := e.https.Post(e.extender.URL+tc.path, "application/json", strings.NewReader(tc.body))
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "the scheduler reads the Error field only on 200")
			var answer struct{ Error string }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer), "the answer must be JSON")
			require.Contains(t, answer.Error, tc.want)
			// The text log quotes the error, escaping its quotes.
			require.Contains(t, e.logs.String(), strings.ReplaceAll(tc.want, `"`, `\"`), "no log line for the failure")
		})
	}
	// A granted BatchJob whose slot record is broken: its pods are refused with the reason.
	require.NoError(t, grant(context.Background(), e.client, "broken", "bed", 8))
	broken := &v1alpha1.BatchJob{}
	require.NoError(t, e.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "broken"}, broken))
	broken.Annotations[v1alpha1.AssignedSlotsAnnotation] = "3,x"
	require.NoError(t, e.client.Update(context.Background(), broken))
	body := filterOf(podJSON(func(p *corev1.Pod) { p.Labels[v1alpha1.BatchJobLabel] = "broken" }))
	require.Eventually(t, func() bool {
		resp, err := e.https.Post(e.extender.URL+"filter", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var answer struct{ Error string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
		return strings.Contains(answer.Error, `batch job default/broken: slotplane.io/assigned-slots: invalid slot ids: "x" is not a slot position`)
	}, 10*time.Second, 100*time.Millisecond, "a broken assigned-slots annotation is a clear refusal")

	resp, err := e.https.Get(e.extender.URL + "healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the extender must stay up")
	// Nothing stays reserved by any of it. Until the extender's cache saw the broken job, a
	// filter could reserve the pod's own slot and label it; once the pods are gone, the
	// ghost reconciler frees such a slot, as the TestBed workflow does on the platform.
	for _, p := range made {
		require.NoError(t, e.client.Delete(context.Background(), p, client.GracePeriodSeconds(0)))
	}
	require.Eventually(t, func() bool {
		_, err := e.acts.ReconcileTestBed(context.Background(), activities.TestBedRef{Namespace: "default", Name: "bed"})
		require.NoError(t, err)
		return e.testBed(t).Status.Free == 8
	}, 10*time.Second, 100*time.Millisecond, "every slot is free again")
}

// Ordinary pods outrank ghosts (priority 0 against -1000), so on shared nodes they preempt a
// ghost and squat in its slot; dedicating the nodes with the test bed taint keeps them out,
// while slot pods, which tolerate it, are placed as before.
func TestExtender_DedicatedNodesKeepOrdinaryPodsOutOfSlots(t *testing.T) {
	t.Parallel()
	ordinary := func(name string) *corev1.Pod {
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: req, Limits: req},
			}}},
		}
	}
	ctx := context.Background()

	t.Run("shared nodes: an ordinary pod evicts a ghost", func(t *testing.T) {
		e := newEnv(t, "4")
		before := ghostsBySlot(t, e)
		require.NoError(t, e.client.Create(ctx, ordinary("squatter")))
		e.waitRunning(t, "squatter")
		require.Less(t, len(ghostsBySlot(t, e)), len(before), "a ghost made room for the ordinary pod")
	})

	t.Run("dedicated nodes: it waits, slot pods still land", func(t *testing.T) {
		e := newEnv(t, "4", func(o *localcluster.Options) { o.DedicateNodes = true })
		before := ghostsBySlot(t, e)
		require.Len(t, before, 8, "ghosts tolerate the taint")
		require.NoError(t, e.client.Create(ctx, ordinary("squatter")))
		require.NoError(t, e.client.Create(ctx, slotPod("exec", "3,5")))
		got := e.waitRunning(t, "exec")
		require.Contains(t, []string{"3", "5"}, slotOf(got))

		var squatter corev1.Pod
		require.Eventually(t, func() bool {
			require.NoError(t, e.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "squatter"}, &squatter))
			return strings.Contains(unschedulableMessage(&squatter), "untolerated taint")
		}, 30*time.Second, 100*time.Millisecond, "the ordinary pod waits for the taint")
		require.Empty(t, squatter.Spec.NodeName)
		require.Empty(t, squatter.Status.NominatedNodeName, "no preemption for the ordinary pod")
		after := ghostsBySlot(t, e)
		require.Len(t, after, 7, "only the slot pod's ghost left")
	})
}
