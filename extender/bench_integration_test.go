//go:build integration

package extender_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/extender"
	"slotplane/internal/freeport"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/testobjects"
)

// BenchmarkEndToEnd_500SlotPods schedules 500 pods on 100 fake nodes, three times in one
// cluster: as plain pods through the default profile (no extender, no ghosts); as slot pods
// into a 100 x 5 test bed whose nodes are full of ghosts, so every pod goes through /preempt,
// the eviction of its ghost, and /filter (what the scheduler does for a slot pod nobody
// granted its slot); and as slot pods of granted slots, whose ghosts the grant cleared, so
// they take /filter alone (a job's pods). It reports the rates, creation to Running, and
// the API server's writes per pod. Run it with `make bench`.
func BenchmarkEndToEnd_500SlotPods(b *testing.B) {
	const nodes, perNode = 100, 5
	ctrllog.SetLogger(logr.Discard())
	ports, err := freeport.Get(1)
	if err != nil {
		b.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	c := localcluster.New(b, localcluster.Options{
		Nodes:       nodes,
		ExtenderURL: "https://" + addr + "/",
		NodeResources: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(strconv.Itoa(perNode)),
			corev1.ResourceMemory: resource.MustParse(strconv.Itoa(perNode) + "Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	})
	cfg := *c.Config
	cfg.QPS, cfg.Burst = 2000, 4000
	cl, err := kubeclient.Live(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	certs := c.ExtenderCerts
	serverTLS, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	if err != nil {
		b.Fatal(err)
	}
	ext, err := extender.Start(context.Background(), c.Config, addr, slog.New(slog.DiscardHandler), extender.WithTLS(serverTLS))
	if err != nil {
		b.Fatal(err)
	}
	clientTLS, err := certs.ClientTLS()
	if err != nil {
		b.Fatal(err)
	}
	scrape := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	defer ext.Stop()
	ctx := context.Background()
	total := nodes * perNode

	for range b.N {
		plain := func(i int) *corev1.Pod {
			p := slotPod(fmt.Sprintf("plain-%d", i), "")
			p.Labels, p.Annotations = nil, nil
			p.Spec.SchedulerName, p.Spec.PriorityClassName = "default-scheduler", ""
			req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: req}
			return p
		}
		writesBefore := apiWrites(b, &cfg)
		plainRate := schedule(b, &cfg, cl, total, plain)
		plainWrites := diffWrites(writesBefore, apiWrites(b, &cfg))
		b.ReportMetric(plainRate, "plain-pods/s")
		deleteAll(b, cl)

		tb := testobjects.TestBed("bed").Slots(perNode, "1", "1Gi").Obj()
		if err := cl.Create(ctx, tb); err != nil {
			b.Fatal(err)
		}
		if err := grantAll(ctx, cl, "bed", total); err != nil {
			b.Fatal(err)
		}
		acts := &activities.Activities{Client: cl}
		settleStart := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			res, err := acts.ReconcileTestBed(ctx, activities.TestBedRef{Namespace: "default", Name: "bed"})
			return err == nil && res.Settled && runningGhosts(b, cl) == total, nil
		})
		if err != nil {
			b.Fatalf("ghosts never settled: %v", err)
		}
		b.ReportMetric(time.Since(settleStart).Seconds(), "ghost-setup-s")

		slotted := func(i int) *corev1.Pod {
			p := slotPod(fmt.Sprintf("slot-%d", i), strconv.Itoa(i))
			req := corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				corev1.ResourceName(v1alpha1.SlotResource): resource.MustParse("1"),
			}
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: req, Limits: req}
			return p
		}
		// The ghost reconciler runs alongside, as the TestBed workflow does: it removes the
		// ghost of a slot whose pod was placed beside it (when another pod's eviction made
		// room on the node first).
		stop := make(chan struct{})
		reconciled := make(chan struct{})
		go func() {
			defer close(reconciled)
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second): // the TestBed workflow's debounce
				}
				_, _ = acts.ReconcileTestBed(ctx, activities.TestBedRef{Namespace: "default", Name: "bed"})
			}
		}()
		writesBefore = apiWrites(b, &cfg)
		slotRate := schedule(b, &cfg, cl, total, slotted)
		slotWrites := diffWrites(writesBefore, apiWrites(b, &cfg))
		close(stop)
		<-reconciled
		fmt.Printf("extender, preemption path:\n%s\n", metricLines(b, scrape, ext.URL))

		// The grant path, the one a job's pods take: the worker clears the granted slots'
		// ghosts as part of the grant (activities.ClearGhosts, as RequestCreation does), so
		// the pods fit their nodes and go through /filter alone. Every slot is granted at
		// once; the clearing's deletes count with the pods' writes. The pods are created once
		// the ghosts are gone, as a job's executors come after its grant by the time its
		// application and driver take to start: the clearing is timed on its own.
		deleteAll(b, cl)
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			res, err := acts.ReconcileTestBed(ctx, activities.TestBedRef{Namespace: "default", Name: "bed"})
			return err == nil && res.Settled && runningGhosts(b, cl) == total, nil
		})
		if err != nil {
			b.Fatalf("ghosts never settled again: %v", err)
		}
		granted := func(i int) *corev1.Pod {
			p := slotted(i)
			p.Name = fmt.Sprintf("granted-%d", i)
			return p
		}
		all := make([]int32, total)
		for i := range all {
			all[i] = int32(i)
		}
		writesBefore = apiWrites(b, &cfg)
		clearStart := time.Now()
		if err := acts.ClearGhosts(ctx, activities.TestBedRef{Namespace: "default", Name: "bed"}, all); err != nil {
			b.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return ghostPods(b, cl) == 0, nil
		})
		if err != nil {
			b.Fatalf("the granted slots' ghosts never went: %v", err)
		}
		b.ReportMetric(time.Since(clearStart).Seconds(), "grant-clear-s")
		grantedRate := schedule(b, &cfg, cl, total, granted)
		grantedWrites := diffWrites(writesBefore, apiWrites(b, &cfg))
		// Printed, not logged: the testing package cuts a benchmark's log to a few lines.
		fmt.Printf("extender, both paths:\n%s\n", metricLines(b, scrape, ext.URL))
		fmt.Printf("API server writes per pod, creation to Running (granted: the grant's ghost deletes included):\n%s\n",
			writesTable([]string{"plain", "preempt", "granted"}, []map[string]float64{plainWrites, slotWrites, grantedWrites}, total))
		b.ReportMetric(slotRate, "slot-pods/s")
		b.ReportMetric(slotRate/plainRate, "slot/plain")
		b.ReportMetric(grantedRate, "granted-pods/s")
		b.ReportMetric(grantedRate/plainRate, "granted/plain")
		b.ReportMetric(sumWrites(plainWrites)/float64(total), "plain-writes/pod")
		b.ReportMetric(sumWrites(slotWrites)/float64(total), "preempt-writes/pod")
		b.ReportMetric(sumWrites(grantedWrites)/float64(total), "granted-writes/pod")
	}
}

func sumWrites(w map[string]float64) float64 {
	n := 0.0
	for _, v := range w {
		n += v
	}
	return n
}

// schedule creates n pods at once and returns the rate at which they reached Running. It
// counts from an informer, not by listing: listing a thousand pods twenty times a second
// would load the API server more than the scheduling it measures.
func schedule(b *testing.B, cfg *rest.Config, cl client.Client, n int, pod func(int) *corev1.Pod) float64 {
	b.Helper()
	prefix := strings.TrimSuffix(pod(0).Name, "0") // "slot-0" -> "slot-"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	informers, err := cache.New(cfg, cache.Options{Scheme: kubeclient.Scheme(), DefaultNamespaces: map[string]cache.Config{"default": {}}})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	running := map[string]bool{}
	done := make(chan struct{})
	see := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !strings.HasPrefix(p.Name, prefix) || p.Status.Phase != corev1.PodRunning {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !running[p.Name] {
			running[p.Name] = true
			if len(running) == n {
				close(done)
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		b.Fatal("pod informer did not sync")
	}

	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := cl.Create(context.Background(), pod(i)); err != nil {
				b.Error(err)
			}
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		b.Fatalf("%d of %d pods Running after 5 minutes", len(running), n)
	}
	elapsed := time.Since(start)
	wg.Wait()
	return float64(n) / elapsed.Seconds()
}

func runningGhosts(b *testing.B, cl client.Client) int {
	var pods corev1.PodList
	if err := cl.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{v1alpha1.GhostLabel: "true"}); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// ghostPods counts the ghost pods that exist, terminating ones included.
func ghostPods(b *testing.B, cl client.Client) int {
	var pods corev1.PodList
	if err := cl.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{v1alpha1.GhostLabel: "true"}); err != nil {
		b.Fatal(err)
	}
	return len(pods.Items)
}

func deleteAll(b *testing.B, cl client.Client) {
	b.Helper()
	if err := cl.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
		b.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		err := cl.List(ctx, &pods, client.InNamespace("default"))
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		b.Fatal("pods not deleted")
	}
}

func metricLines(b *testing.B, hc *http.Client, url string) string {
	resp, err := hc.Get(url + "metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "slotplane_extender_requests_total") || strings.HasPrefix(line, "slotplane_extender_slice_writes_total") || strings.HasPrefix(line, "slotplane_extender_request_seconds_sum") || strings.HasPrefix(line, "slotplane_extender_request_seconds_count") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// apiWrites reads the API server's count of mutating requests by verb, resource and
// subresource.
func apiWrites(b *testing.B, cfg *rest.Config) map[string]float64 {
	b.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY":
		default:
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += n
	}
	return out
}

func diffWrites(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writesTable lists each kind of write per pod, one column per run.
func writesTable(names []string, runs []map[string]float64, pods int) string {
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range r {
			keys[k] = true
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-36s", "request")
	for _, n := range names {
		fmt.Fprintf(&sb, " %8s", n)
	}
	sb.WriteString("\n")
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(&sb, "%-36s", k)
		for _, r := range runs {
			fmt.Fprintf(&sb, " %8.2f", r[k]/float64(pods))
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "%-36s", "total")
	for _, r := range runs {
		fmt.Fprintf(&sb, " %8.2f", sumWrites(r)/float64(pods))
	}
	return sb.String()
}
