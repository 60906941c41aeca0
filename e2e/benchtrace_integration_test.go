//go:build integration

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/localplatform/standin"
	"slotplane/slots"
)

// TraceEnv, set to anything, makes the orchestration bench print where a slow hand-over's
// time went: every change of the two jobs' pods, applications and BatchJobs as a watch saw
// it, with the history events of the four workflows involved, in one timeline; and the API
// server's requests during the bench by verb and resource, and also by component when
// localcluster.EnvAuditLog names a file for the API server's audit log.
const TraceEnv = "SLOTPLANE_BENCH_TRACE"

// benchTrace records what watches of the default namespace see, with the time they saw it.
type benchTrace struct {
	p      *platformtest.Platform
	mu     sync.Mutex
	events []traceEvent
	// latencies are the Temporal SDK's timers as temporalLatencies last read them.
	latencies map[string]latency
	// serverCounts are the embedded Temporal server's request counters as serverWork last
	// read them.
	serverCounts map[string]float64
}

// latency is a timer's count and sum of seconds.
type latency struct {
	n   uint64
	sum float64
}

type traceEvent struct {
	at   time.Time
	what string
}

// startTrace starts the watches when TraceEnv is set; nil otherwise.
func startTrace(b *testing.B, p *platformtest.Platform) *benchTrace {
	if os.Getenv(TraceEnv) == "" {
		return nil
	}
	t := &benchTrace{p: p}
	wc, err := client.NewWithWatch(p.Cluster.Config, client.Options{Scheme: p.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	follow := func(list client.ObjectList, describe func(obj any) string) {
		w, err := wc.Watch(ctx, list, client.InNamespace("default"))
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
					t.add(time.Now(), fmt.Sprintf("%s %s", strings.ToLower(string(ev.Type)), describe(ev.Object)))
				}
			}
		}()
	}
	follow(&corev1.PodList{}, func(o any) string {
		pod := o.(*corev1.Pod)
		s := fmt.Sprintf("pod %s node=%q phase=%s", pod.Name, pod.Spec.NodeName, pod.Status.Phase)
		if slot, ok := slots.ProvenSlot(pod); ok {
			s += fmt.Sprintf(" slot=%d", slot)
		}
		if _, ok := pod.Annotations[standin.WorkersRunningAnnotation]; ok {
			s += " workers-running"
		}
		if pod.DeletionTimestamp != nil {
			s += " deleting"
		}
		return s
	})
	follow(&sparkv1beta2.SparkApplicationList{}, func(o any) string {
		a := o.(*sparkv1beta2.SparkApplication)
		return fmt.Sprintf("sparkapplication %s state=%q", a.Name, a.Status.AppState.State)
	})
	follow(&v1alpha1.BatchJobList{}, func(o any) string {
		j := o.(*v1alpha1.BatchJob)
		s := fmt.Sprintf("batchjob %s state=%s", j.Name, j.Status.State)
		if _, ok := j.Annotations[v1alpha1.CreationRequestAnnotation]; ok {
			s += " (creation request)"
		}
		return s
	})
	return t
}

func (t *benchTrace) add(at time.Time, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, traceEvent{at, what})
}

// slowestHandOver prints the timeline of the hand-over of o whose next job took longest from
// the end of the one before to running.
func (t *benchTrace) slowestHandOver(b *testing.B, o orchestration, scheduling string) {
	if t == nil || len(o.handOvers) == 0 {
		return
	}
	h := slices.MaxFunc(o.handOvers, func(x, y handOver) int {
		return cmp.Compare(x.next.Status.Phases.RunningAt.Sub(x.prev.Status.Phases.EndedAt.Time), y.next.Status.Phases.RunningAt.Sub(y.prev.Status.Phases.EndedAt.Time))
	})
	ended := h.prev.Status.Phases.EndedAt.Time
	ph := h.next.Status.Phases
	fmt.Printf("the slowest hand-over: %s ended at %s; %s admitted %+d ms, running %+d ms\n", h.prev.Name, ended.Format("15:04:05.000"),
		h.next.Name, ph.AdmittedAt.Sub(ended).Milliseconds(), ph.RunningAt.Sub(ended).Milliseconds())
	t.printTimeline(b, ended, ended.Add(-200*time.Millisecond), ph.RunningAt.Add(100*time.Millisecond), []string{h.prev.Name, h.next.Name},
		installation.Default.BatchJobID("default", h.prev.Name), installation.Default.AdmissionID("default", "bed"),
		installation.Default.SchedulingID("default", scheduling), installation.Default.BatchJobID("default", h.next.Name))
}

// firstWave prints the timeline of the first job on the path of o's makespan, from the
// Scheduling's creation to that job running.
func (t *benchTrace) firstWave(b *testing.B, o orchestration, scheduling string) {
	if t == nil || len(o.chain) == 0 {
		return
	}
	j := o.chain[0]
	ph := j.Status.Phases
	fmt.Printf("the first wave: %s created at %s; %s admitted %+d ms, running %+d ms\n", scheduling, o.start.Format("15:04:05.000"),
		j.Name, ph.AdmittedAt.Sub(o.start).Milliseconds(), ph.RunningAt.Sub(o.start).Milliseconds())
	t.printTimeline(b, o.start, o.start, ph.RunningAt.Add(100*time.Millisecond), []string{j.Name},
		installation.Default.SchedulingID("default", scheduling), installation.Default.AdmissionID("default", "bed"), installation.Default.BatchJobID("default", j.Name),
		installation.Default.TestBedID("default", "bed"))
}

// ownSecond prints the timeline of the first wave's path job from its pods running to its
// end seen: what the job's own second costs beyond the second.
func (t *benchTrace) ownSecond(b *testing.B, o orchestration) {
	if t == nil || len(o.chain) == 0 {
		return
	}
	j := o.chain[0]
	ph := j.Status.Phases
	fmt.Printf("the own second of %s: running at %s, ended %+d ms\n", j.Name, ph.RunningAt.Format("15:04:05.000"), ph.EndedAt.Sub(ph.RunningAt.Time).Milliseconds())
	t.printTimeline(b, ph.RunningAt.Time, ph.RunningAt.Add(-50*time.Millisecond), ph.EndedAt.Add(100*time.Millisecond), []string{j.Name},
		installation.Default.BatchJobID("default", j.Name))
}

// printTimeline prints, in time order and in milliseconds from zero, the traced events
// between from and to that name one of jobs, and the history events of the workflows ids.
func (t *benchTrace) printTimeline(b *testing.B, zero, from, to time.Time, jobs []string, ids ...string) {
	var evs []traceEvent
	t.mu.Lock()
	for _, e := range t.events {
		if e.at.After(from) && e.at.Before(to) && slices.ContainsFunc(jobs, func(j string) bool { return strings.Contains(e.what, j) }) {
			evs = append(evs, e)
		}
	}
	t.mu.Unlock()
	for _, id := range ids {
		evs = append(evs, t.history(b, id, from, to)...)
	}
	slices.SortStableFunc(evs, func(x, y traceEvent) int { return x.at.Compare(y.at) })
	for _, e := range evs {
		fmt.Printf("  %+6d ms  %s\n", e.at.Sub(zero).Milliseconds(), e.what)
	}
}

// history is a workflow's history events between from and to, but for the bookkeeping ones
// (scheduled tasks, timers).
func (t *benchTrace) history(b *testing.B, id string, from, to time.Time) []traceEvent {
	var out []traceEvent
	it := t.p.Temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Logf("history of %s: %v", id, err)
			break
		}
		at := ev.GetEventTime().AsTime()
		kind := ev.GetEventType()
		if at.Before(from) || at.After(to) || kind == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED ||
			kind == enumspb.EVENT_TYPE_TIMER_STARTED || kind == enumspb.EVENT_TYPE_TIMER_CANCELED || kind == enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES {
			continue
		}
		out = append(out, traceEvent{at, fmt.Sprintf("workflow %s: %s", id, strings.ToLower(describeEvent(ev)))})
	}
	return out
}

// describeEvent names a history event: its type, and the signal, activity or marker it is
// about.
func describeEvent(ev *historypb.HistoryEvent) string {
	what := strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
	if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
		what += " " + a.GetSignalName()
	}
	if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
		what += " " + a.GetActivityType().GetName()
	}
	if a := ev.GetMarkerRecordedEventAttributes(); a != nil {
		what += " " + a.GetMarkerName()
		// A local activity's marker carries its type in its JSON data.
		var data struct{ ActivityType string }
		if ps := a.GetDetails()["data"].GetPayloads(); len(ps) > 0 && json.Unmarshal(ps[0].GetData(), &data) == nil && data.ActivityType != "" {
			what += " " + data.ActivityType
		}
	}
	return what
}

// apiRequests prints the API server's request counts since it started, by verb and
// resource, most first.
func (t *benchTrace) apiRequests(b *testing.B) {
	if t == nil {
		return
	}
	sums, err := apiServerRequests(t.p.Cluster)
	if err != nil {
		b.Logf("API server metrics: %v", err)
		return
	}
	fmt.Print("Since the cluster started: ", sums.since(nil, 20))
	if file := t.p.Cluster.AuditLog; file != "" {
		fmt.Print("The same by component, from the audit log (", localcluster.EnvAuditLog, "):\n", auditTable(file, 30))
	}
}

// auditTable renders the requests of an audit log by component, verb and resource, the n
// most made first.
func auditTable(file string, n int) string {
	counts, err := localcluster.ReadAudit(file, time.Time{})
	if err != nil {
		return fmt.Sprintf("  %v\n", err)
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b localcluster.AuditKey) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a.String(), b.String()))
	})
	var out strings.Builder
	for _, k := range keys[:min(n, len(keys))] {
		fmt.Fprintf(&out, "  %7d %s\n", counts[k], k)
	}
	return out.String()
}

// requestSums are the API server's request counts and their summed latency, by verb and
// resource; the key "" holds its admission webhook calls, and "<verb resource> → <code>"
// counts the requests that failed, by code.
type requestSums map[string]struct{ count, seconds float64 }

// apiServerRequests reads the API server's request counts since it started.
func apiServerRequests(c *localcluster.Cluster) (requestSums, error) {
	raw, err := c.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	sums := requestSums{}
	add := func(key string, count, seconds float64) {
		s := sums[key]
		s.count += count
		s.seconds += seconds
		sums[key] = s
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		label := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				label[k] = strings.Trim(v, `"`)
			}
		}
		var x float64
		if _, err := fmt.Sscan(value, &x); err != nil {
			continue
		}
		key := strings.TrimSuffix(label["verb"]+" "+label["resource"]+"/"+label["subresource"], "/")
		switch name {
		case "apiserver_request_total":
			add(key, x, 0)
			if code := label["code"]; code != "" && !strings.HasPrefix(code, "2") {
				add(key+" → "+code, x, 0) // the failed ones again, by code (no latency of their own)
			}
		case "apiserver_request_duration_seconds_sum":
			add(key, 0, x)
		case "apiserver_admission_webhook_admission_duration_seconds_sum":
			add("", 0, x)
		case "apiserver_admission_webhook_admission_duration_seconds_count":
			add("", x, 0)
		}
	}
	return sums, nil
}

// since renders the requests made after before (nil: since the start), the n most made
// first, with each one's mean latency, and the admission webhook calls.
func (s requestSums) since(before requestSums, n int) string {
	type row struct {
		key            string
		count, seconds float64
	}
	var rows []row
	var hook row
	for k, v := range s {
		r := row{k, v.count - before[k].count, v.seconds - before[k].seconds}
		switch {
		case k == "":
			hook = r
		case r.count > 0:
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(x, y row) int { return cmp.Compare(y.count, x.count) })
	var out strings.Builder
	fmt.Fprintln(&out, "API requests by verb and resource, with their mean latency:")
	for _, r := range rows[:min(n, len(rows))] {
		if strings.Contains(r.key, " → ") {
			fmt.Fprintf(&out, "  %7.0f %s\n", r.count, r.key)
			continue
		}
		fmt.Fprintf(&out, "  %7.0f %-40s %6.1f ms\n", r.count, r.key, 1000*r.seconds/r.count)
	}
	if hook.count > 0 {
		fmt.Fprintf(&out, "  admission webhook calls: %.0f, %.1f ms each\n", hook.count, 1000*hook.seconds/hook.count)
	}
	return out.String()
}

// temporalLatencies prints, since its last call, the Temporal SDK's timers of the worker:
// how long the workflow tasks of each workflow type waited to start and ran, and how long
// each kind of activity ran (a local one runs inside its workflow's task, which waits for
// it). Where a hop between two workflows goes, these say.
func (t *benchTrace) temporalLatencies(b *testing.B, what string) {
	if t == nil {
		return
	}
	families, err := t.p.Metrics.Gather()
	if err != nil {
		b.Fatal(err)
	}
	now := map[string]latency{}
	for _, f := range families {
		name := strings.TrimPrefix(strings.TrimSuffix(f.GetName(), "_seconds"), "temporal_")
		switch name {
		case "workflow_task_schedule_to_start_latency", "workflow_task_execution_latency", "local_activity_execution_latency",
			"activity_schedule_to_start_latency", "activity_execution_latency":
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			var by []string
			for _, l := range m.GetLabel() {
				if (l.GetName() == "workflow_type" || l.GetName() == "activity_type") && l.GetValue() != "" {
					by = append(by, l.GetValue())
				}
			}
			key := fmt.Sprintf("%-40s %s", name, strings.Join(by, " "))
			l := now[key]
			l.n += m.GetHistogram().GetSampleCount()
			l.sum += m.GetHistogram().GetSampleSum()
			now[key] = l
		}
	}
	// The total of a workflow type's task execution is how long its tasks held it, one after
	// another: what a message to it may wait behind. It includes the local activities run in
	// the tasks (the SDK times a task until its completion is ready), so theirs are not added.
	fmt.Printf("Temporal latencies over %s (count, mean, total):\n", what)
	for _, key := range slices.Sorted(maps.Keys(now)) {
		d := latency{now[key].n - t.latencies[key].n, now[key].sum - t.latencies[key].sum}
		if d.n > 0 {
			fmt.Printf("  %-70s %6d %8.1f ms %7.2f s\n", key, d.n, d.sum/float64(d.n)*1000, d.sum)
		}
	}
	t.latencies = now
}

// serverWork prints, since its last call, what the embedded Temporal server did per job: its
// requests by service and operation, and its persistence operations (each a transaction of
// its store). A hop between workflows costs the machine these; fewer hops, fewer of them.
func (t *benchTrace) serverWork(b *testing.B, what string, jobs int) {
	if t == nil || jobs == 0 {
		return
	}
	now := map[string]float64{}
	for name, f := range scrapeURL(b, "the Temporal server", t.p.TemporalMetrics) {
		if name != "persistence_requests" && name != "service_requests" {
			continue
		}
		for _, m := range f.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				if l.GetName() == "service_name" || l.GetName() == "operation" {
					key += " " + l.GetValue()
				}
			}
			now[key] += m.GetCounter().GetValue()
		}
	}
	type row struct {
		key string
		n   float64
	}
	var rows []row
	total := map[string]float64{}
	for key, v := range now {
		if d := v - t.serverCounts[key]; d > 0 {
			rows = append(rows, row{key, d})
			total[strings.Fields(key)[0]] += d
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.n, a.n) })
	fmt.Printf("The Temporal server's work over %s, per job: %.1f persistence operations, %.1f requests; the most frequent:\n",
		what, total["persistence_requests"]/float64(jobs), total["service_requests"]/float64(jobs))
	for _, r := range rows[:min(len(rows), 24)] {
		fmt.Printf("  %-80s %6.2f\n", r.key, r.n/float64(jobs))
	}
	t.serverCounts = now
}

// apiServerProfile starts a CPU profile of the API server for d when
// localcluster.EnvAPIServerProfile names a file (its /debug/pprof/profile, read with the
// test's admin credentials); the function it returns waits for the profile and writes it
// there. `go tool pprof` reads it with the kube-apiserver binary the run used.
func apiServerProfile(b *testing.B, p *platformtest.Platform, d time.Duration) (wait func()) {
	file := os.Getenv(localcluster.EnvAPIServerProfile)
	if file == "" {
		return func() {}
	}
	rc := p.Cluster.Client().CoreV1().RESTClient()
	done := make(chan error, 1)
	go func() {
		raw, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(file, raw, 0o644)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			b.Errorf("the API server's CPU profile: %v", err)
			return
		}
		b.Logf("the API server's CPU profile over %s: %s", d, file)
	}
}
