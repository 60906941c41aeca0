//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/localplatform/standin"
)

// BenchmarkOrchestration_16JobsOn8Slots measures what slotplane adds around each job, on the
// real platform, from the phase times the worker writes into each BatchJob's status
// (status.phases, to the microsecond). Schedulings of one-slot Spark jobs that each run 1 s
// go through a QueueBased Scheduling on 8 free slots, one after the other:
//   - 16 jobs, whose ideal makespan is 2 s: makespan-s, from creating the Scheduling to its
//     Completed; create-to-running-p50-ms, for the first 8 jobs, from creating the
//     Scheduling (which claims them) to their pods running in their slots; cpu-ms/job, the
//     CPU time the whole machine spent over the makespan, per job, against the same of the
//     16 runs without slotplane that follow (bare-cpu-ms/job, cpu/bare): what slotplane
//     costs on top of the platform, a ratio taken in one run that moves far less between
//     runs than the times do;
//   - 64 jobs, for the spread of the hand-over: end-to-start-p50-ms and -p99-ms, for every job
//     that followed another in its slot, from the end of the one before (the application seen
//     ended) to its own pods running; admitted-to-running-p50-ms, from the grant to running;
//   - 16 jobs again, created right before their Scheduling: makespan-new-jobs-s;
//   - 16 one-slot Flink jobs, made ahead as the first 16: flink-makespan-s and
//     flink-end-to-start-p50-ms and -p99-ms. A FlinkDeployment's JobManager stands where a
//     Spark driver does and its TaskManagers in the slots: the hand-over is the same for
//     both frameworks, and this run shows it.
//
// Each run starts on a quiet platform: every slot of the bed holds its ghost again (the run
// before is over), and, but in the last, the jobs exist and their workflows are idle before
// the Scheduling is made, as BatchJobs are made ahead of the Schedulings that run them. A
// BatchJob made costs its workflow's start (about 50 ms of CPU on this platform); sixteen
// made in the same second as their Scheduling compete with its first wave, which the last
// run shows.
//
// The breakdown of every phase is printed, for where the time goes, with the path of each
// run's makespan (the jobs of the slot that finished last); with SLOTPLANE_BENCH_TRACE
// set, also the timeline of the first wave and of each run's slowest hand-over, the
// worker's Temporal latencies per run, the CPU per job of each process over the 16 jobs and
// the API server's requests (TraceEnv).
// The bench watches rather than polls while it measures: it must not load the API server.
func BenchmarkOrchestration_16JobsOn8Slots(b *testing.B) {
	p := platformtest.Start(b, platformtest.DefaultBed)
	trace := startTrace(b, p)
	for i := range b.N {
		cpuFrom, cpuErr := sampleCPU()
		first := runJobs(b, p, fmt.Sprintf("bench-%d-a", i), 16, true, v1alpha1.FrameworkSpark)
		if cpuTo, err := sampleCPU(); trace != nil && cpuErr == nil && err == nil {
			logCPUPerJob(b, "16 jobs through slotplane", cpuFrom, cpuTo, len(first.jobs))
		}
		b.ReportMetric(first.makespan.Seconds(), "makespan-s")
		b.ReportMetric(ms(percentile(first.createToRunning, 50)), "create-to-running-p50-ms")
		trace.firstWave(b, first, fmt.Sprintf("bench-%d-a", i))
		trace.ownSecond(b, first)
		trace.slowestHandOver(b, first, fmt.Sprintf("bench-%d-a", i))
		trace.temporalLatencies(b, "16 jobs")
		trace.serverWork(b, "16 jobs", len(first.jobs))

		// The same 16 one-second runs with no slotplane in the way, right after: the floor
		// the platform itself puts under them this minute, so a run's figures can be read
		// against this machine's speed, not only against the absolute targets.
		cpuFrom, cpuErr = sampleCPU()
		bare := runBare(b, p, fmt.Sprintf("bench-%d-bare", i), 16, 8)
		if cpuTo, err := sampleCPU(); trace != nil && cpuErr == nil && err == nil {
			logCPUPerJob(b, "the same 16 runs without slotplane", cpuFrom, cpuTo, 16)
		}
		b.ReportMetric(bare.makespan.Seconds(), "bare-makespan-s")
		b.ReportMetric(first.makespan.Seconds()/bare.makespan.Seconds(), "makespan/bare")
		cpuPerJob, bareCPUPerRun := ms(first.cpu)/float64(len(first.jobs)), ms(bare.cpu)/float64(bare.n)
		b.ReportMetric(cpuPerJob, "cpu-ms/job")
		b.ReportMetric(bareCPUPerRun, "bare-cpu-ms/job")
		b.ReportMetric(cpuPerJob/bareCPUPerRun, "cpu/bare")
		b.ReportMetric(ms(percentile(bare.endToStart, 50)), "bare-end-to-start-p50-ms")
		b.ReportMetric(ms(percentile(bare.endToStart, 99)), "bare-end-to-start-p99-ms")

		profiled := apiServerProfile(b, p, 12*time.Second)
		many := runJobs(b, p, fmt.Sprintf("bench-%d-b", i), 64, true, v1alpha1.FrameworkSpark)
		profiled()
		b.ReportMetric(ms(percentile(many.endToStart, 50)), "end-to-start-p50-ms")
		b.ReportMetric(ms(percentile(many.endToStart, 99)), "end-to-start-p99-ms")
		b.ReportMetric(ms(percentile(many.admittedToRunning, 50)), "admitted-to-running-p50-ms")
		b.ReportMetric(float64(len(many.jobs))/many.makespan.Seconds(), "jobs/s")
		trace.slowestHandOver(b, many, fmt.Sprintf("bench-%d-b", i))
		trace.temporalLatencies(b, "64 jobs")
		trace.serverWork(b, "64 jobs", len(many.jobs))

		fresh := runJobs(b, p, fmt.Sprintf("bench-%d-c", i), 16, false, v1alpha1.FrameworkSpark)
		b.ReportMetric(fresh.makespan.Seconds(), "makespan-new-jobs-s")
		trace.firstWave(b, fresh, fmt.Sprintf("bench-%d-c", i))
		trace.apiRequests(b)
		fmt.Printf("16 jobs on 8 slots: makespan %s\n%s\n%s\n64 jobs on 8 slots: makespan %s\n%s\n16 jobs made with their Scheduling: makespan %s\n%s\n",
			first.makespan.Round(time.Millisecond), first.breakdown(), bare.summary(), many.makespan.Round(time.Millisecond), many.breakdown(),
			fresh.makespan.Round(time.Millisecond), fresh.breakdown())

		flink := runJobs(b, p, fmt.Sprintf("bench-%d-f", i), 16, true, v1alpha1.FrameworkFlink)
		b.ReportMetric(flink.makespan.Seconds(), "flink-makespan-s")
		b.ReportMetric(ms(percentile(flink.endToStart, 50)), "flink-end-to-start-p50-ms")
		b.ReportMetric(ms(percentile(flink.endToStart, 99)), "flink-end-to-start-p99-ms")
		fmt.Printf("16 Flink jobs on 8 slots: makespan %s\n%s\n", flink.makespan.Round(time.Millisecond), flink.breakdown())
	}
}

// orchestration is one Scheduling's jobs as they ran.
type orchestration struct {
	jobs     []v1alpha1.BatchJob
	makespan time.Duration
	// cpu is the CPU time the whole machine spent over the makespan, all processes: what
	// the run cost, slotplane's part and the platform's under it.
	cpu                                            time.Duration
	createToRunning, endToStart, admittedToRunning []time.Duration
	// endToAdmitted is, per hand-over, slotplane's own part: from the end of a job to the
	// grant of its slot to the next.
	endToAdmitted []time.Duration
	// createToAdmitted is, for the first wave, the Scheduling's creation to each grant;
	// lastEndToCompleted is the last job's end to the Scheduling seen Completed.
	createToAdmitted   []time.Duration
	lastEndToCompleted time.Duration
	// chain is the makespan's path: the jobs that ran, one after another, in the slot of
	// the job that ended last, each with its phases measured from the Scheduling's creation.
	chain     []v1alpha1.BatchJob
	start     time.Time
	handOvers []handOver
}

// handOver is a slot going from one job to the next.
type handOver struct{ prev, next *v1alpha1.BatchJob }

// runJobs runs n one-slot, one-second jobs of the framework through one QueueBased
// Scheduling on the platform's 8-slot bed and reads their phases. It starts once the bed is
// quiet (settle); ahead: the jobs are made, and their workflows idle, before the Scheduling
// is made.
func runJobs(b *testing.B, p *platformtest.Platform, name string, n int, ahead bool, framework v1alpha1.Framework) orchestration {
	b.Helper()
	ctx := context.Background()
	settle(b, p, nil)
	var entries []v1alpha1.SchedulingJob
	for k := range n {
		jn := fmt.Sprintf("%s-%02d", name, k)
		j := &v1alpha1.BatchJob{
			ObjectMeta: metav1.ObjectMeta{Name: jn, Namespace: "default", Annotations: map[string]string{standin.SimDurationAnnotation: "1s"}},
			Spec: v1alpha1.BatchJobSpec{Framework: framework,
				Application:     v1alpha1.Application{Image: "registry.example/bench:1", MainClass: "org.example.Bench", MainApplicationFile: "local:///opt/bench.jar"},
				DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}},
		}
		if err := p.Client.Create(ctx, j); err != nil {
			b.Fatal(err)
		}
		entries = append(entries, v1alpha1.SchedulingJob{Name: jn, Replication: 1})
	}
	if ahead {
		settle(b, p, entries)
	}
	s := &v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: entries}}
	busyFrom, busyErr := machineBusy()
	start := time.Now()
	if err := p.Client.Create(ctx, s); err != nil {
		b.Fatal(err)
	}
	end, err := waitCompleted(ctx, p, s, 10*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	busyTo, err := machineBusy()
	if err = errors.Join(busyErr, err); err != nil {
		b.Fatal(err)
	}
	o := orchestration{makespan: end.Sub(start), start: start, cpu: busyTo - busyFrom}
	var lastEnd time.Time
	for _, e := range entries {
		var j v1alpha1.BatchJob
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: e.Name}, &j); err != nil {
			b.Fatal(err)
		}
		ph := j.Status.Phases
		if j.Status.State != v1alpha1.JobCompleted || ph == nil || ph.AdmittedAt == nil || ph.RunningAt == nil || ph.EndedAt == nil || len(j.Status.Slots) != 1 {
			b.Fatalf("job %s: %s %s, phases %+v", j.Name, j.Status.State, j.Status.Message, ph)
		}
		o.jobs = append(o.jobs, j)
		o.admittedToRunning = append(o.admittedToRunning, ph.RunningAt.Sub(ph.AdmittedAt.Time))
		if ph.EndedAt.After(lastEnd) {
			lastEnd = ph.EndedAt.Time
		}
	}
	o.lastEndToCompleted = end.Sub(lastEnd)
	// The first wave: the 8 jobs that started first, each in a slot free from the start.
	byStart := slices.Clone(o.jobs)
	slices.SortFunc(byStart, func(x, y v1alpha1.BatchJob) int {
		return x.Status.Phases.RunningAt.Compare(y.Status.Phases.RunningAt.Time)
	})
	for _, j := range byStart[:min(8, len(byStart))] {
		o.createToRunning = append(o.createToRunning, j.Status.Phases.RunningAt.Sub(start))
		o.createToAdmitted = append(o.createToAdmitted, j.Status.Phases.AdmittedAt.Sub(start))
	}
	// Every later job follows the one that ran before it in its slot.
	last := map[int32]*v1alpha1.BatchJob{}
	bySlot := map[int32][]v1alpha1.BatchJob{}
	for i := range byStart {
		j := &byStart[i]
		slot := j.Status.Slots[0]
		if prev, ok := last[slot]; ok {
			o.endToStart = append(o.endToStart, j.Status.Phases.RunningAt.Sub(prev.Status.Phases.EndedAt.Time))
			o.endToAdmitted = append(o.endToAdmitted, j.Status.Phases.AdmittedAt.Sub(prev.Status.Phases.EndedAt.Time))
			o.handOvers = append(o.handOvers, handOver{prev, j})
		}
		last[slot] = j
		bySlot[slot] = append(bySlot[slot], *j)
	}
	final := slices.MaxFunc(o.jobs, func(x, y v1alpha1.BatchJob) int {
		return x.Status.Phases.EndedAt.Compare(y.Status.Phases.EndedAt.Time)
	})
	o.chain = bySlot[final.Status.Slots[0]]
	return o
}

// settle waits, before a run's clock starts, until the platform is quiet: the test bed is
// Ready with every slot free (each holds its ghost again), and the workflows of jobs, if
// any, run with no workflow task pending (made, and looked at once).
func settle(b *testing.B, p *platformtest.Platform, jobs []v1alpha1.SchedulingJob) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := func() bool {
		var tb v1alpha1.TestBed
		if err := p.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &tb); err != nil ||
			!localplatform.Ready(&tb) || tb.Status.Free != tb.Status.Total {
			return false
		}
		for _, j := range jobs {
			d, err := p.Temporal.DescribeWorkflowExecution(ctx, installation.Default.BatchJobID("default", j.Name), "")
			if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || d.GetPendingWorkflowTask() != nil {
				return false
			}
		}
		return true
	}
	for !quiet() {
		select {
		case <-ctx.Done():
			b.Fatal("the platform did not settle before the run")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitCompleted watches the Scheduling until its status says Completed, and returns when
// the watch saw it.
func waitCompleted(ctx context.Context, p *platformtest.Platform, s *v1alpha1.Scheduling, limit time.Duration) (time.Time, error) {
	wc, err := client.NewWithWatch(p.Cluster.Config, client.Options{Scheme: p.Client.Scheme()})
	if err != nil {
		return time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		w, err := wc.Watch(ctx, &v1alpha1.SchedulingList{}, client.InNamespace(s.Namespace), client.MatchingFields{"metadata.name": s.Name})
		if err != nil {
			return time.Time{}, err
		}
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*v1alpha1.Scheduling); ok {
				*s = *got
				if s.Status.State == v1alpha1.SchedulingCompleted {
					w.Stop()
					return time.Now(), nil
				}
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("the Scheduling did not complete: %s %s", s.Status.State, s.Status.Message)
		}
	}
}

// breakdown is the median of each phase of the jobs' starts, and of the hand-over.
func (o orchestration) breakdown() string {
	type step struct {
		name     string
		from, to func(*v1alpha1.RunPhases) *metav1.MicroTime
	}
	firstPlaced := func(ph *v1alpha1.RunPhases) *metav1.MicroTime {
		if len(ph.ExecutorsPlacedAt) == 0 {
			return nil
		}
		return &ph.ExecutorsPlacedAt[0]
	}
	steps := []step{
		{"admitted -> application created", func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.AdmittedAt }, func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.ApplicationCreatedAt }},
		{"application created -> driver running", func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.ApplicationCreatedAt }, func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.DriverRunningAt }},
		{"driver running -> executor placed", func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.DriverRunningAt }, firstPlaced},
		{"executor placed -> running", firstPlaced, func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.RunningAt }},
		{"running -> ended (the job's own second)", func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.RunningAt }, func(ph *v1alpha1.RunPhases) *metav1.MicroTime { return ph.EndedAt }},
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "  %-42s p50 %6.0f ms  p99 %6.0f ms  (%d jobs)\n", "Scheduling created -> admitted (first wave)", ms(percentile(o.createToAdmitted, 50)), ms(percentile(o.createToAdmitted, 99)), len(o.createToAdmitted))
	for _, s := range steps {
		var ds []time.Duration
		for _, j := range o.jobs {
			from, to := s.from(j.Status.Phases), s.to(j.Status.Phases)
			if from != nil && to != nil {
				ds = append(ds, to.Sub(from.Time))
			}
		}
		fmt.Fprintf(&sb, "  %-42s p50 %6.0f ms  p99 %6.0f ms  (%d jobs)\n", s.name, ms(percentile(ds, 50)), ms(percentile(ds, 99)), len(ds))
	}
	fmt.Fprintf(&sb, "  %-42s p50 %6.0f ms  p99 %6.0f ms  (%d hand-overs)\n", "one job's end -> the next one admitted", ms(percentile(o.endToAdmitted, 50)), ms(percentile(o.endToAdmitted, 99)), len(o.endToAdmitted))
	fmt.Fprintf(&sb, "  %-42s p50 %6.0f ms  p99 %6.0f ms  (%d hand-overs)\n", "one job's end -> the next one running", ms(percentile(o.endToStart, 50)), ms(percentile(o.endToStart, 99)), len(o.endToStart))
	fmt.Fprintf(&sb, "  %-42s %6.0f ms\n", "the last job's end -> Scheduling Completed", ms(o.lastEndToCompleted))
	fmt.Fprintf(&sb, "  %-42s %6.0f ms per job (%.2f cores busy)\n", "the machine's CPU over the makespan", ms(o.cpu)/float64(len(o.jobs)), o.cpu.Seconds()/o.makespan.Seconds())
	fmt.Fprintf(&sb, "  the path of the makespan, the jobs of slot %d, from the Scheduling's creation:\n", o.chain[0].Status.Slots[0])
	at := func(t *metav1.MicroTime) float64 {
		if t == nil {
			return -1
		}
		return ms(t.Sub(o.start))
	}
	for _, j := range o.chain {
		ph := j.Status.Phases
		fmt.Fprintf(&sb, "    %-16s admitted %5.0f  created %5.0f  driver %5.0f  running %5.0f  ended %5.0f ms\n",
			j.Name, at(ph.AdmittedAt), at(ph.ApplicationCreatedAt), at(ph.DriverRunningAt), at(ph.RunningAt), at(ph.EndedAt))
	}
	return sb.String()
}

// percentile is the nearest-rank percentile (0 for no values).
func percentile(ds []time.Duration, pct int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (pct*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
