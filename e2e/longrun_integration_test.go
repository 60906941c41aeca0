//go:build integration

package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apiclient"
	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/standin"
	"slotplane/operatorapp"
	"slotplane/workflows"
)

// longRunJobs is how many jobs the long run submits: 200 in `make test`, more with
// SLOTPLANE_LONGRUN_JOBS (`make test-long` runs 1,000).
func longRunJobs(t *testing.T) int {
	n := 200
	if v := os.Getenv("SLOTPLANE_LONGRUN_JOBS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "SLOTPLANE_LONGRUN_JOBS")
	}
	return n
}

// One QueueBased Scheduling of many one-slot Spark jobs of about a second, with tiny
// StepsPerRun so that the Scheduling and Admission workflows continue as new again and
// again, while the worker is killed (SIGKILL) at three random moments and started again.
// Checked as the jobs run: no slot is held by two running jobs at once. Checked at the end:
// every job Completed exactly once, in run 1, with exactly one application; the Scheduling
// Completed; Admission holds nothing; every slot free with its ghost back.
//
// SLOTPLANE_LONGRUN_STEPS sets the steps per run (default 10; 0 keeps the workflows' own
// defaults, for the rate of a Scheduling that is not made to continue as new all the time).
func TestE2E_LongRunThroughWorkerKills(t *testing.T) {
	// Its checks are invariants, not timings: in make test it shares the machine with
	// another such test. The rate it logs is a figure only when it runs alone (make
	// test-long, or -run naming it).
	t.Parallel()
	jobs := longRunJobs(t)
	steps := "10"
	if v := os.Getenv("SLOTPLANE_LONGRUN_STEPS"); v != "" {
		steps = v
	}
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`,
		"-scheduling-steps-per-run", steps, "-admission-steps-per-run", steps)
	parts, kube, c := p.parts, p.kube, p.api
	ctx := context.Background()

	names := make([]string, jobs)
	var entries []v1alpha1.SchedulingJob
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
		_, err := c.CreateJob(ctx, apitypes.JobRequest{Name: names[i], Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
			Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: "1s"}})
		require.NoError(t, err, names[i])
		entries = append(entries, v1alpha1.SchedulingJob{Name: names[i], Replication: 1})
	}

	// The feed: who holds which slot while running, and how many jobs ended.
	w, err := c.Watch(ctx, []string{apiclient.WatchSchedulings, apiclient.WatchJobs}, apiclient.Position{})
	require.NoError(t, err)
	defer w.Close()
	ledger := followFeed(w)

	cpuFrom, err := sampleCPU()
	require.NoError(t, err)
	start := time.Now()
	_, err = c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "long", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch", Jobs: entries})
	require.NoError(t, err)

	// The rate of each hundred jobs, to see whether it falls as the Scheduling grows.
	stop, logged := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-logged }() // no log after the test ends
	go func() {
		defer close(logged)
		last, lastAt := 0, start
		// With SLOTPLANE_LONGRUN_DUMP, the API requests made since the last look.
		var before requestSums
		dumpRequests := func() {
			if os.Getenv("SLOTPLANE_LONGRUN_DUMP") == "" {
				return
			}
			sums, err := apiServerRequests(p.cluster)
			if err != nil {
				t.Logf("API server metrics: %v", err)
				return
			}
			t.Logf("%s", sums.since(before, 25))
			before = sums
		}
		var state v1alpha1.SchedulingState
		first := false
		for ledger.endedCount() < jobs {
			if st := ledger.schedulingState("long"); st != state {
				state = st
				t.Logf("the Scheduling is %s at %5.1f s", st, time.Since(start).Seconds())
				dumpRequests()
			}
			if !first && ledger.seenRunningCount() > 0 {
				first = true
				t.Logf("the first job runs at %5.1f s", time.Since(start).Seconds())
				if os.Getenv("SLOTPLANE_LONGRUN_DUMP") != "" {
					dumpHistory(t, p, "scheduling/default/long", start, 120)
					dumpHistory(t, p, "admission/default/bed", start, 60)
					dumpRequests()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if n := ledger.endedCount(); n >= last+100 || n == jobs {
				t.Logf("%4d jobs ended at %5.1f s: %.2f jobs/s over the last %d", n, time.Since(start).Seconds(), float64(n-last)/time.Since(lastAt).Seconds(), n-last)
				last, lastAt = n, time.Now()
				dumpRequests()
				if os.Getenv("SLOTPLANE_LONGRUN_DUMP") != "" && n >= jobs/2 && n < jobs/2+100 {
					// Half-way: the last 2 s of the Scheduling's and Admission's histories.
					for _, id := range []string{installation.Default.SchedulingID("default", "long"), installation.Default.AdmissionID("default", "bed")} {
						dumpHistoryWindow(t, p, id, time.Now().Add(-2*time.Second), time.Now())
					}
				}
			}
		}
	}()

	// Three kills of the worker, at random points of the run.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var at []int
	for range 3 {
		at = append(at, jobs/10+rng.IntN(jobs*8/10))
	}
	slices.Sort(at)
	t.Logf("killing the worker after %v jobs ended", at)
	// The kills' own reports end before the test does (no log after it), or at its end.
	var reports sync.WaitGroup
	testOver := make(chan struct{})
	defer func() { close(testOver); reports.Wait() }()
	var unwatched []timeSpan
	for _, n := range at {
		require.Eventually(t, func() bool { return ledger.endedCount() >= n }, 30*time.Minute, 100*time.Millisecond)
		parts["worker"].kill()
		killed, ended, holders := time.Now(), ledger.endedCount(), ledger.holders()
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		parts["worker"].start()
		back := time.Since(killed)
		unwatched = append(unwatched, timeSpan{killed, killed.Add(back + watchBackWithin)})
		// What a kill costs: how long until as many jobs ended as there are slots, which
		// takes about 2 s between kills.
		reports.Go(func() {
			for ledger.endedCount() < min(ended+int(p.slots), jobs) {
				select {
				case <-testOver:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			t.Logf("the worker, killed after %d jobs, was back %.1f s later; %d more jobs ended %.1f s after the kill", ended, back.Seconds(), p.slots, time.Since(killed).Seconds())
			if os.Getenv("SLOTPLANE_LONGRUN_DUMP") != "" {
				dumpHistoryWindow(t, p, installation.Default.AdmissionID("default", "bed"), killed.Add(-time.Second), time.Now())
				for _, job := range holders[:min(2, len(holders))] {
					dumpHistoryWindow(t, p, installation.Default.BatchJobID("default", job), killed.Add(-time.Second), time.Now())
				}
			}
		})
	}
	require.Eventually(t, func() bool { return ledger.schedulingEnded("long") }, 60*time.Minute, 250*time.Millisecond, "the Scheduling never ended")
	took := time.Since(start)
	t.Logf("%d one-second jobs on 8 slots in %s: %.2f jobs/s (ideal 8)", jobs, took.Round(time.Second), float64(jobs)/took.Seconds())
	if cpuTo, err := sampleCPU(); err == nil {
		logCPUPerJob(t, "the long run", cpuFrom, cpuTo, jobs)
	}

	s, err := c.GetScheduling(ctx, "long")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, s.Status.Message)
	require.Equal(t, int32(jobs), s.Status.FinishedJobs)
	var apps sparkv1beta2.SparkApplicationList
	require.NoError(t, kube.List(ctx, &apps, client.InNamespace("default")))
	perJob := map[string]int{}
	for _, a := range apps.Items {
		perJob[a.Labels[v1alpha1.BatchJobLabel]]++
	}
	var runs []v1alpha1.RunRecord
	var execs []string // each run's executor, by the name Spark gives it
	for _, name := range names {
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, int32(1), j.Status.Run, name)
		require.Equal(t, 1, perJob[name], "%s has exactly one application", name)
		for _, r := range j.Status.History {
			runs = append(runs, r)
			execs = append(execs, operatorapp.Name(name, r.Scheduling, r.Run)+"-exec-1")
		}
	}
	logPhases(t, runs)
	bound, err := scheduledAt(ctx, kube)
	require.NoError(t, err, "the kube-scheduler's Scheduled events")
	checkPhases(t, runs, execs, bound, unwatched)
	logPlacementLags(t, runs, execs, bound, unwatched)
	if os.Getenv("SLOTPLANE_LONGRUN_DUMP") != "" {
		// One job's whole workflow, from the middle of the run: the hops of a run.
		job := names[len(names)/2]
		j, err := c.GetJob(ctx, job)
		require.NoError(t, err)
		dumpHistory(t, p, installation.Default.BatchJobID("default", job), j.Status.History[0].AdmittedAt.Time, 200)
		// What the run cost Temporal per job: the Scheduling's, Admission's and the test
		// bed's events over all their runs, and two jobs' own.
		logEventsPerJob(t, p, installation.Default.SchedulingID("default", "long"), jobs)
		logEventsPerJob(t, p, installation.Default.AdmissionID("default", "bed"), jobs)
		logEventsPerJob(t, p, installation.Default.TestBedID("default", "bed"), jobs)
		logEventsPerJob(t, p, installation.Default.BatchJobID("default", names[len(names)/3]), 1)
		logEventsPerJob(t, p, installation.Default.BatchJobID("default", job), 1)
	}
	ledger.check(t)
	// A worker's death stalls a workflow for its task timeout: every workflow has slotplane's,
	// in its last run too (continue-as-new keeps it).
	for _, id := range []string{installation.Default.SchedulingID("default", "long"), installation.Default.AdmissionID("default", "bed"),
		installation.Default.BatchJobID("default", names[0])} {
		d, err := p.temporal.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err, id)
		require.Equal(t, workflows.TaskTimeout, d.GetExecutionConfig().GetDefaultWorkflowTaskTimeout().AsDuration(), id)
	}
	require.Eventually(t, func() bool {
		q, err := c.Queues(ctx, "bed")
		return err == nil && len(q.Running) == 0 && len(q.Waiting) == 0
	}, time.Minute, 500*time.Millisecond, "Admission still holds jobs")
	p.waitSlotsFree(t, 2*time.Minute)
}

// logEventsPerJob prints how many events of each kind a workflow's history holds, over every
// run of its chain of continue-as-new, per job of the run's jobs (diagnosis).
func logEventsPerJob(t *testing.T, p *e2ePlatform, id string, jobs int) {
	counts := map[string]int{}
	runs := 0
	eachRunEvent(t, p, id, func(ev *historypb.HistoryEvent) {
		counts[describeEvent(ev)]++
		if ev.GetWorkflowExecutionStartedEventAttributes() != nil {
			runs++
		}
	})
	kinds := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(kinds, func(a, b string) int { return counts[b] - counts[a] })
	t.Logf("%s: events per job over %d runs", id, runs)
	for _, k := range kinds {
		t.Logf("  %8.2f %s", float64(counts[k])/float64(jobs), k)
	}
}

// eachRunEvent calls fn with every event of every run of a workflow's chain of
// continue-as-new, the latest run first.
func eachRunEvent(t *testing.T, p *e2ePlatform, id string, fn func(*historypb.HistoryEvent)) {
	t.Helper()
	for run := ""; ; {
		it := p.temporal.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		previous := ""
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err, "history of %s", id)
			fn(ev)
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				previous = a.GetContinuedExecutionRunId()
			}
		}
		if previous == "" {
			return
		}
		run = previous
	}
}

// dumpHistory prints a workflow's first events with their times from start (diagnosis).
func dumpHistory(t *testing.T, p *e2ePlatform, id string, start time.Time, n int) {
	it := p.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for i := 0; i < n && it.HasNext(); i++ {
		ev, err := it.Next()
		if err != nil {
			t.Logf("history of %s: %v", id, err)
			return
		}
		t.Logf("%s %7.3f s %s", id, ev.GetEventTime().AsTime().Sub(start).Seconds(), describeEvent(ev))
	}
}

// dumpHistoryWindow prints the events of a workflow's current run between from and to, with
// their times from from (diagnosis of a kill).
func dumpHistoryWindow(t *testing.T, p *e2ePlatform, id string, from, to time.Time) {
	it := p.temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Logf("history of %s: %v", id, err)
			return
		}
		if at := ev.GetEventTime().AsTime(); !at.Before(from) && !at.After(to) {
			t.Logf("%s %7.3f s %s", id, at.Sub(from).Seconds(), describeEvent(ev))
		}
	}
}

// scheduledAt is when the kube-scheduler bound each pod of the namespace default, by name
// (its first Scheduled event).
func scheduledAt(ctx context.Context, kube client.Client) (map[string]time.Time, error) {
	var events corev1.EventList
	if err := kube.List(ctx, &events, client.InNamespace("default"), client.MatchingFields{"reason": "Scheduled"}); err != nil {
		return nil, err
	}
	bound := map[string]time.Time{}
	for _, e := range events.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.FirstTimestamp.Time
		}
		if was, ok := bound[e.InvolvedObject.Name]; !ok || at.Before(was) {
			bound[e.InvolvedObject.Name] = at
		}
	}
	return bound, nil
}

// logPlacementLags prints how much later each run's running time is than the moment the
// kube-scheduler bound its executor (its Scheduled event): over every run, and over the
// runs whose executor was bound while no worker watched (from a kill until the worker was
// back), whose times a worker had to learn after the fact.
func logPlacementLags(t *testing.T, runs []v1alpha1.RunRecord, execs []string, bound map[string]time.Time, unwatched []timeSpan) {
	t.Helper()
	var all, away []time.Duration
	for i := range runs {
		r := &runs[i]
		at, ok := bound[execs[i]]
		if !ok || r.RunningAt == nil {
			continue
		}
		lag := r.RunningAt.Sub(at)
		all = append(all, lag)
		if slices.ContainsFunc(unwatched, func(s timeSpan) bool { return s.overlaps(at, at.Add(time.Microsecond)) }) {
			away = append(away, lag)
		}
	}
	for _, set := range []struct {
		what string
		lags []time.Duration
	}{{"every run", all}, {"executor bound while no worker watched", away}} {
		if len(set.lags) == 0 {
			t.Logf("running time after the executor's binding, %s: no run", set.what)
			continue
		}
		slices.Sort(set.lags)
		q := func(pct int) time.Duration { return set.lags[min(len(set.lags)-1, len(set.lags)*pct/100)] }
		t.Logf("running time after the executor's binding, %s (%d runs): p50 %s  p99 %s  max %s", set.what, len(set.lags),
			q(50).Round(time.Millisecond), q(99).Round(time.Millisecond), set.lags[len(set.lags)-1].Round(time.Millisecond))
	}
}

// timeSpan is a stretch of the run's wall-clock time.
type timeSpan struct{ from, to time.Time }

func (s timeSpan) overlaps(from, to time.Time) bool { return from.Before(s.to) && to.After(s.from) }

func (s timeSpan) String() string {
	return s.from.Format(time.StampMilli) + " to " + s.to.Format(time.StampMilli)
}

// watchBackWithin bounds how long a restarted worker takes to watch pods again: its process
// starting, its connections and its informers' first lists. A generous bound, on a machine
// the run keeps busy; it only widens the spans in which checkPhases excuses a record.
const watchBackWithin = 10 * time.Second

// checkPhases holds every run record to the phases the job's workflow writes (phaseGaps).
func checkPhases(t *testing.T, runs []v1alpha1.RunRecord, execs []string, bound map[string]time.Time, unwatched []timeSpan) {
	t.Helper()
	unseen, neverBound, err := phaseGaps(runs, execs, bound, unwatched)
	require.NoError(t, err)
	t.Logf("of %d run records, %d lack a running time as their run was alive while no worker watched, %d as their executor was never bound",
		len(runs), unseen, neverBound)
}

// phaseGaps checks that every record has its grant, its application's creation and its end;
// and its running time, with two excuses. A run alive while no worker watched pods (from a
// kill until the worker was back: unwatched) may have had its executors come and go unseen
// by any watch, and then nothing on the cluster tells when they were placed (unseen counts
// them). A run whose executor (execs, by run) the kube-scheduler never bound (bound, by pod
// name) never ran in its slot: an application whose driver ends before its executor is
// placed, as a one-second simulated job may on a busy machine, ends without running
// (neverBound counts them). Any other record without a running time is a placement that a
// watching worker failed to record.
func phaseGaps(runs []v1alpha1.RunRecord, execs []string, bound map[string]time.Time, unwatched []timeSpan) (unseen, neverBound int, _ error) {
	for i, r := range runs {
		if r.AdmittedAt == nil || r.ApplicationCreatedAt == nil || r.EndedAt == nil {
			return unseen, neverBound, fmt.Errorf("the record of run %d of %s on slots %v lacks its grant, its application's creation or its end", r.Run, r.Scheduling, r.Slots)
		}
		if r.RunningAt != nil {
			continue
		}
		alive := func(s timeSpan) bool { return s.overlaps(r.ApplicationCreatedAt.Time, r.EndedAt.Time) }
		switch _, placed := bound[execs[i]]; {
		case slices.ContainsFunc(unwatched, alive):
			unseen++
		case !placed:
			neverBound++
		default:
			return unseen, neverBound, fmt.Errorf("a run on slots %v, alive from %s to %s, has no running time, though its executor %s was bound and a worker watched it throughout (unwatched: %v)",
				r.Slots, r.ApplicationCreatedAt.Format(time.StampMicro), r.EndedAt.Format(time.StampMicro), execs[i], unwatched)
		}
	}
	return unseen, neverBound, nil
}

func TestPhaseGaps_ExcuseOnlyRunsUnwatchedOrNeverBound(t *testing.T) {
	at := func(s float64) *metav1.MicroTime {
		m := metav1.NewMicroTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second))))
		return &m
	}
	run := func(created, running, ended float64) v1alpha1.RunRecord {
		r := v1alpha1.RunRecord{Run: 1, Scheduling: "long", Slots: []int32{3}, AdmittedAt: at(created - 0.1), ApplicationCreatedAt: at(created), EndedAt: at(ended)}
		if running > 0 {
			r.RunningAt = at(running)
		}
		return r
	}
	down := []timeSpan{{at(10).Time, at(20).Time}}
	check := func(runs ...v1alpha1.RunRecord) (unseen, neverBound int, _ error) {
		execs, bound := make([]string, len(runs)), map[string]time.Time{}
		for i := range runs {
			execs[i] = fmt.Sprintf("job-%d-exec-1", i)
			bound[execs[i]] = runs[i].ApplicationCreatedAt.Add(time.Second)
		}
		return phaseGaps(runs, execs, bound, down)
	}
	unseen, neverBound, err := check(run(1, 1.5, 2.5), run(9, 0, 10.5), run(19, 0, 21), run(12, 0, 13))
	require.NoError(t, err)
	require.Equal(t, 3, unseen, "runs alive in the unwatched span, at either end or within")
	require.Zero(t, neverBound)

	_, _, err = check(run(21, 0, 22.5))
	require.ErrorContains(t, err, "though its executor job-0-exec-1 was bound and a worker watched it throughout")
	_, _, err = check(run(8, 0, 9.9))
	require.Error(t, err, "a run that ended before the kill was watched")
	noEnd := run(1, 1.5, 2.5)
	noEnd.EndedAt = nil
	_, _, err = check(noEnd)
	require.ErrorContains(t, err, "lacks its grant, its application's creation or its end")

	// A watched run whose executor was never bound ran nothing: it has no running time to lack.
	unseen, neverBound, err = phaseGaps([]v1alpha1.RunRecord{run(21, 0, 22.5), run(23, 23.5, 24)},
		[]string{"job-0-exec-1", "job-1-exec-1"}, map[string]time.Time{"job-1-exec-1": at(23.4).Time}, down)
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 1}, [2]int{unseen, neverBound})
}

// logPhases prints where a run's time went, from the runs' recorded phases: the grant to
// the application, the application to every pod running, running to the seen end, and a
// slot's idle time from one run's end to the next run's grant in it.
func logPhases(t *testing.T, runs []v1alpha1.RunRecord) {
	t.Helper()
	var toApp, toRunning, toEnd, idle []time.Duration
	bySlot := map[int32][]v1alpha1.RunRecord{}
	lacking := 0
	for _, r := range runs {
		if r.AdmittedAt == nil || r.ApplicationCreatedAt == nil || r.RunningAt == nil || r.EndedAt == nil {
			if lacking++; lacking <= 5 {
				t.Logf("  a record of scheduling %s lacks a time: admitted %v, created %v, running %v, ended %v", r.Scheduling,
					r.AdmittedAt != nil, r.ApplicationCreatedAt != nil, r.RunningAt != nil, r.EndedAt != nil)
			}
			continue
		}
		toApp = append(toApp, r.ApplicationCreatedAt.Sub(r.AdmittedAt.Time))
		toRunning = append(toRunning, r.RunningAt.Sub(r.ApplicationCreatedAt.Time))
		toEnd = append(toEnd, r.EndedAt.Sub(r.RunningAt.Time))
		for _, s := range r.Slots {
			bySlot[s] = append(bySlot[s], r)
		}
	}
	for _, rs := range bySlot {
		slices.SortFunc(rs, func(a, b v1alpha1.RunRecord) int { return a.AdmittedAt.Compare(b.AdmittedAt.Time) })
		for i := 1; i < len(rs); i++ {
			idle = append(idle, rs[i].AdmittedAt.Sub(rs[i-1].EndedAt.Time))
		}
	}
	row := func(what string, ds []time.Duration) {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		mean := time.Duration(0)
		if len(ds) > 0 {
			mean = sum / time.Duration(len(ds))
		}
		t.Logf("  %-34s p50 %6.3f s  p90 %6.3f s  p99 %6.3f s  mean %6.3f s", what, percentile(ds, 50).Seconds(), percentile(ds, 90).Seconds(), percentile(ds, 99).Seconds(), mean.Seconds())
	}
	t.Logf("where the runs' time went (%d runs; %d records lack a phase's time):", len(toApp), lacking)
	row("granted -> application created", toApp)
	row("application created -> running", toRunning)
	row("running -> end seen", toEnd)
	row("slot idle: end seen -> next grant", idle)
}
