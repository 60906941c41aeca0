//go:build integration

package extender_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/slotslices"
)

// The extender's cases of the attack suite (issue 14): whoever reaches it, with whatever
// request, gets a clear refusal, changes nothing, and leaves the process no bigger.

// post sends an extender call and decodes its answer, which must be JSON.
func (e *env) post(t *testing.T, verb string, body any) (int, string) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := e.https.Post(e.extender.URL+verb, "application/json", strings.NewReader(string(data)))
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer struct{ Error string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer), "the answer must be JSON")
	return resp.StatusCode, answer.Error
}

// snapshot is what a refused call must leave as it was: the pods' resource versions, the
// test bed's and its slot slices'.
func (e *env) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out, err := e.versions()
	require.NoError(t, err)
	return out
}

// versions is snapshot, with the error of a read that failed.
func (e *env) versions() (map[string]string, error) {
	ctx := context.Background()
	var tb v1alpha1.TestBed
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &tb); err != nil {
		return nil, err
	}
	out := map[string]string{"testbed": tb.ResourceVersion}
	have, err := slotslices.List(ctx, e.client, &tb)
	if err != nil {
		return nil, err
	}
	for _, s := range have {
		out["slice "+s.Name] = s.ResourceVersion
	}
	var pods corev1.PodList
	if err := e.client.List(ctx, &pods, client.InNamespace("default")); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		out["pod "+p.Name] = p.ResourceVersion
	}
	return out, nil
}

// changedFrom: the pods, the test bed or its slot slices are not as in before (or cannot be
// read). It calls no require, so that a condition of require.Never may call it.
func (e *env) changedFrom(before map[string]string) bool {
	now, err := e.versions()
	return err != nil || !maps.Equal(before, now)
}

// A call naming a pod under a UID it does not have (made up, or that of a pod deleted and
// created again under the same name), or a pod that does not exist, is refused on every verb
// and writes nothing; and the claim and the binding are themselves conditional on the UID on
// the real API server, so a decision taken just before a pod was replaced cannot land on its
// successor.
func TestAttack_ACallNamingAnotherPodOrAFakeUIDChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "4")
	ctx := context.Background()
	victim := parkedPod("victim", "3,5")
	require.NoError(t, e.client.Create(ctx, victim))
	reborn := parkedPod("reborn", "3,5")
	require.NoError(t, e.client.Create(ctx, reborn))
	oldReborn := reborn.DeepCopy()
	require.NoError(t, e.client.Delete(ctx, reborn, client.GracePeriodSeconds(0)))
	reborn = parkedPod("reborn", "3,5")
	require.Eventually(t, func() bool { return e.client.Create(ctx, reborn) == nil }, 10*time.Second, 50*time.Millisecond)
	require.NotEqual(t, oldReborn.UID, reborn.UID)

	fake := victim.DeepCopy()
	fake.UID = "00000000-0000-0000-0000-000000000000"
	nobody := parkedPod("nobody", "3,5")
	nobody.UID = "11111111-1111-1111-1111-111111111111"
	cases := map[string]struct {
		named *corev1.Pod
		want  string
	}{
		"a made-up uid":                       {fake, fmt.Sprintf("pod default/victim has uid %s, the request names uid %s", victim.UID, fake.UID)},
		"the uid of the pod deleted before":   {oldReborn, fmt.Sprintf("pod default/reborn has uid %s, the request names uid %s", reborn.UID, oldReborn.UID)},
		"a pod that does not exist":           {nobody, "pod default/nobody does not exist"},
		"another namespace's pod of the name": {func() *corev1.Pod { p := victim.DeepCopy(); p.Namespace = "kube-system"; return p }(), "pod kube-system/victim does not exist"},
	}
	before := e.snapshot(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, verb := range []string{"filter", "preempt", "bind"} {
				var body any = extenderv1.ExtenderArgs{Pod: tc.named, NodeNames: &[]string{"node-00", "node-01", "node-02", "node-03"}}
				switch verb {
				case "preempt":
					body = extenderv1.ExtenderPreemptionArgs{Pod: tc.named}
				case "bind":
					body = extenderv1.ExtenderBindingArgs{PodName: tc.named.Name, PodNamespace: tc.named.Namespace, PodUID: tc.named.UID, Node: "node-01"}
				}
				code, answer := e.post(t, verb, body)
				require.Equal(t, http.StatusOK, code)
				require.Contains(t, answer, extender.ErrNotThePod.Error(), verb)
				require.Contains(t, answer, tc.want, verb)
			}
		})
	}
	// A flush would come within 250 ms of a reservation; nothing changes for four times that.
	require.Never(t, func() bool { return e.changedFrom(before) }, time.Second, 100*time.Millisecond,
		"a refused call changed a pod or the test bed")
	require.EqualValues(t, 8, e.testBed(t).Status.Free)

	// The writes themselves: a claim or a binding decided for the old pod is refused by the
	// API server.
	r := extender.NewReserver(ctx, e.client, e.client, slog.New(slog.DiscardHandler))
	err := r.ClaimSlot(ctx, oldReborn, 3)
	require.ErrorIs(t, err, extender.ErrNotThePod)
	t.Logf("the API server on a claim for the old pod: %v", err)
	var slot3 v1alpha1.SlotStatus
	for _, s := range e.slots(t) {
		if s.Position == 3 {
			slot3 = s
		}
	}
	require.NotEmpty(t, slot3.NodeName)
	err = r.BindPod(ctx, oldReborn, slot3)
	require.ErrorIs(t, err, extender.ErrNotThePod)
	t.Logf("the API server on a binding for the old pod: %v", err)
	var got corev1.Pod
	require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(reborn), &got))
	require.NotContains(t, got.Annotations, v1alpha1.SlotClaimAnnotation, "the new pod was claimed for the old one")
	require.Empty(t, got.Spec.NodeName, "the new pod was bound for the old one")
	require.NoError(t, r.ClaimSlot(ctx, reborn, 3), "the same claim for the live pod goes through")
	require.NoError(t, r.BindPod(ctx, reborn, slot3), "the same binding for the live pod goes through")
	require.NoError(t, e.client.Get(ctx, client.ObjectKeyFromObject(reborn), &got))
	require.Equal(t, slot3.NodeName, got.Spec.NodeName)
}

// 10,000 calls for pods whose test bed label is random: some for pods that exist, most for
// pods that do not. Each is refused with the reason; the extender keeps state for no test bed
// that does not exist, and its goroutines and heap stay where they were.
func TestAttack_RandomTestBedLabelsStayBounded(t *testing.T) {
	// Not parallel: it counts the process's goroutines and heap.
	const calls, realPods, workers = 10_000, 100, 8
	e := newEnv(t, "4")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(14, 10_000))
	var pods []*corev1.Pod
	for i := range realPods {
		// Each pod's job is granted a slot in the pod's bed: the calls get past the grant
		// check to the test bed's.
		name, bed := fmt.Sprintf("random-%d", i), fmt.Sprintf("bed-%x", rng.Uint64())
		require.NoError(t, grant(ctx, e.client, name, bed, 1))
		p := parkedPod(name, "0")
		p.Labels[v1alpha1.TestBedLabel] = bed
		p.Labels[v1alpha1.BatchJobLabel] = name
		require.NoError(t, e.client.Create(ctx, p))
		pods = append(pods, p)
	}
	// The extender's cache must have the pods, or the calls measure live reads.
	require.Eventually(t, func() bool {
		_, answer := e.post(t, "filter", extenderv1.ExtenderArgs{Pod: pods[realPods-1], NodeNames: &[]string{"node-00"}})
		return strings.Contains(answer, extender.ErrUnknownTestBed.Error())
	}, 10*time.Second, 50*time.Millisecond)
	// One real placement, so the real bed's state is the one that may stay.
	require.NoError(t, e.client.Create(ctx, slotPod("exec", "3,5")))
	e.waitRunning(t, "exec")
	require.Equal(t, 1, e.extender.TestBeds())

	measure := func() (int, uint64) {
		runtime.GC()
		runtime.GC()
		time.Sleep(200 * time.Millisecond)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return runtime.NumGoroutine(), m.HeapAlloc
	}
	goroutines, heap := measure()

	var refused, unexpected atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 14))
			for i := next.Add(1); i <= calls; i = next.Add(1) {
				var p *corev1.Pod
				if i%10 == 0 { // a tenth name pods that do not exist: each costs a live read
					p = parkedPod(fmt.Sprintf("none-%d", i), "0")
					p.UID = types.UID(fmt.Sprintf("uid-%d", i))
					p.Labels[v1alpha1.TestBedLabel] = fmt.Sprintf("bed-%x", rng.Uint64())
				} else {
					p = pods[rng.IntN(len(pods))].DeepCopy()
					// What the call claims for the label counts for nothing: the live pod's does.
					p.Labels[v1alpha1.TestBedLabel] = fmt.Sprintf("claimed-%x", rng.Uint64())
				}
				var body any = extenderv1.ExtenderArgs{Pod: p, NodeNames: &[]string{"node-00"}}
				verb := "filter"
				if i%2 == 1 {
					verb, body = "preempt", extenderv1.ExtenderPreemptionArgs{Pod: p}
				}
				_, answer := e.post(t, verb, body)
				if strings.Contains(answer, extender.ErrUnknownTestBed.Error()) || strings.Contains(answer, extender.ErrNotThePod.Error()) {
					refused.Add(1)
				} else {
					unexpected.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	goroutinesAfter, heapAfter := measure()
	t.Logf("%d calls in %s (%.0f/s, %d workers over TLS): %d refused; test beds with state: %d; goroutines %d -> %d; heap %d KiB -> %d KiB",
		calls, took.Round(time.Millisecond), float64(calls)/took.Seconds(), workers, refused.Load(), e.extender.TestBeds(), goroutines, goroutinesAfter, heap>>10, heapAfter>>10)
	require.Zero(t, unexpected.Load(), "calls that were not refused")
	require.Equal(t, 1, e.extender.TestBeds(), "state was kept for test beds that do not exist")
	require.Contains(t, e.metrics(t), "slotplane_extender_testbeds 1")
	// Measured on the platform: goroutines move by a handful (HTTP keep-alive connections
	// of this test's client), the heap by a few MiB of informer and client buffers. A state
	// and a flusher per unknown bed would be thousands of goroutines.
	require.LessOrEqual(t, goroutinesAfter, goroutines+3*workers, "goroutines grew with the random test beds")
	require.Less(t, int64(heapAfter)-int64(heap), int64(16<<20), "the heap grew with the random test beds")

	// Still serving: a real slot pod is placed.
	require.NoError(t, e.client.Create(ctx, slotPod("exec-2", "3,5")))
	e.waitRunning(t, "exec-2")
}

// A client that dribbles its request is cut off after the header timeout, on the extender as
// it runs on the platform (default limits, TLS); the scheduler is served meanwhile.
func TestAttack_SlowLorisIsCutOff(t *testing.T) {
	// Not parallel: it counts the process's goroutines and heap.
	e := newEnv(t, "4")
	scheduler, err := e.cluster.ExtenderCerts.ClientTLS()
	require.NoError(t, err)
	goroutines := runtime.NumGoroutine()
	const lorises = 20
	type result struct {
		took time.Duration
		err  error
	}
	results := make(chan result, lorises)
	for i := range lorises {
		go func() {
			start := time.Now()
			var conn net.Conn
			var err error
			if i%2 == 0 { // half stall in the TLS handshake, half after it, in the headers
				conn, err = net.Dial("tcp", e.addr)
			} else {
				conn, err = tls.Dial("tcp", e.addr, scheduler)
			}
			if err != nil {
				results <- result{err: err}
				return
			}
			defer conn.Close()
			req := "POST /filter HTTP/1.1\r\nHost: extender\r\nX-Slow: " + strings.Repeat("a", 1000)
			if i%2 == 0 {
				req = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + strings.Repeat("\x00", 1000)
			}
			for j := range len(req) {
				if _, err := conn.Write([]byte{req[j]}); err != nil {
					results <- result{time.Since(start), err}
					return
				}
				_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := conn.Read(make([]byte, 256)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					results <- result{time.Since(start), err}
					return
				}
				if time.Since(start) > 30*time.Second {
					break
				}
			}
			results <- result{time.Since(start), nil}
		}()
	}
	// The scheduler's calls go through while the lorises hang on.
	require.NoError(t, e.client.Create(context.Background(), slotPod("exec", "3,5")))
	e.waitRunning(t, "exec")
	for range lorises {
		r := <-results
		require.Error(t, r.err, "a slow client was never cut off")
		require.Less(t, r.took, extender.DefaultLimits.ReadHeaderTimeout+3*time.Second, "cut off late: %v", r.err)
	}
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutines+10 }, 10*time.Second, 100*time.Millisecond,
		"goroutines of the cut connections stay")
}

// With TLS on, a plain-HTTP caller, one without a client certificate, one with a
// certificate of another CA and one that does not trust the extender's CA are all refused,
// and none of them changes anything; /healthz stays open for probes.
func TestAttack_OnlyTheSchedulersCertificateGetsIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "4")
	ctx := context.Background()
	victim := parkedPod("victim", "3,5")
	require.NoError(t, e.client.Create(ctx, victim))
	body, err := json.Marshal(extenderv1.ExtenderArgs{Pod: victim, NodeNames: &[]string{"node-00", "node-01", "node-02", "node-03"}})
	require.NoError(t, err)

	scheduler, err := e.cluster.ExtenderCerts.ClientTLS()
	require.NoError(t, err)
	strangers, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	stranger, err := strangers.ClientTLS()
	require.NoError(t, err)
	strangerTrustingUs := stranger.Clone()
	strangerTrustingUs.RootCAs = scheduler.RootCAs
	noCert := scheduler.Clone()
	noCert.Certificates = nil
	plainURL := "http://" + e.addr + "/"

	call := func(url string, c *tls.Config, path string) (int, string, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Post(url+path, "application/json", strings.NewReader(string(body)))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	before := e.snapshot(t)
	cases := map[string]struct {
		url     string
		client  *tls.Config
		code    int
		wantErr string
	}{
		"plain HTTP":                          {plainURL, nil, http.StatusBadRequest, ""},
		"no client certificate":               {e.extender.URL, noCert, http.StatusUnauthorized, ""},
		"a client certificate of another CA":  {e.extender.URL, strangerTrustingUs, 0, "tls: "},
		"a client that does not trust the CA": {e.extender.URL, stranger, 0, "certificate signed by unknown authority"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"filter", "preempt", "metrics"} {
				code, answer, err := call(tc.url, tc.client, path)
				if tc.wantErr != "" {
					require.Error(t, err, path)
					// A TLS 1.3 client learns that the server refused its certificate only
					// after its handshake ends, so it may see the alert or, when it is
					// already writing the request, the connection the server closed.
					refused := strings.Contains(err.Error(), tc.wantErr) ||
						(tc.wantErr == "tls: " && (strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")))
					require.True(t, refused, "%s: %v", path, err)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, tc.code, code, "%s: %s", path, answer)
			}
		})
	}
	code, _, err := call(e.extender.URL, noCert, "healthz")
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, code, "/healthz is open to a probe without certificate (GET only)")
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: noCert}}).Get(e.extender.URL + "healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.Never(t, func() bool { return e.changedFrom(before) }, time.Second, 100*time.Millisecond,
		"a refused caller changed a pod or the test bed")
	// The same call with the scheduler's certificate is the one that counts.
	code, answer, err := call(e.extender.URL, scheduler, "filter")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	var placed extenderv1.ExtenderFilterResult
	require.NoError(t, json.Unmarshal([]byte(answer), &placed))
	require.Empty(t, placed.Error)
	require.NotNil(t, placed.NodeNames)
	require.Len(t, *placed.NodeNames, 1, "the scheduler's call places the pod")
}
