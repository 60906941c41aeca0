//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/standin"
	"slotplane/queue"
)

// envelopeSize is one probe of the scale envelope: nodes x slotsPerNode slots in beds test
// beds (0 or 1: one), jobs of jobSlots slots (executors) that run jobFor each, over queues
// leaf queues (five teams), in schedulings Schedulings, QueueBased and SlotBased in turn,
// Scheduling i on bed i%beds.
type envelopeSize struct {
	nodes, slotsPerNode, jobs, jobSlots, queues, schedulings, beds int
	// measure is how many jobs' ends the probe follows: all of them when 0 or jobs. The
	// cost is taken over the middle half of those ends, when the bed runs at its pace
	// rather than filling or draining; with fewer than jobs, the probe stops at the last end
	// of that half.
	measure int
	jobFor  time.Duration
	// admissionNice is the niceness of Admission's worker (0: as every other process).
	admissionNice int
}

func (s envelopeSize) slots() int { return s.nodes * s.slotsPerNode }

// fileName starts the names of the probe's files: "8000-slots", "8000-slots-as-10-beds".
func (s envelopeSize) fileName() string {
	if s.beds > 1 {
		return fmt.Sprintf("%d-slots-as-%d-beds", s.slots(), s.beds)
	}
	return fmt.Sprintf("%d-slots", s.slots())
}

// partial: the probe stops before every job ended.
func (s envelopeSize) partial() bool { return s.measure > 0 && s.measure < s.jobs }

// window is the ends the cost is taken over: from the from-th job's end to the to-th's.
func (s envelopeSize) window() (from, to int) {
	m := s.jobs
	if s.partial() {
		m = s.measure
	}
	return m / 4, m * 3 / 4
}

// envelopeSizeFromEnv is the envelope's size: 1,000 nodes of 8 slots, 10,000 jobs of one
// slot over 50 queues in 10 Schedulings, unless SLOTPLANE_ENVELOPE_NODES, _SLOTS_PER_NODE,
// _JOBS, _JOB_SLOTS, _QUEUES, _SCHEDULINGS or _JOB_SECONDS say otherwise; the same nodes
// are probed again as 10 beds unless _BEDS says how many (1: not again); _MEASURE stops each
// probe of them after so many jobs' ends (envelopeSize.measure). Unless told, a job runs a
// third of a second per job the bed holds at once, at least 30 s: this machine starts and
// ends about three jobs a second, so shorter jobs on a large bed measure a backlog rather
// than the platform.
func envelopeSizeFromEnv(t *testing.T) envelopeSize {
	s := envelopeSize{nodes: 1000, slotsPerNode: 8, jobs: 10_000, jobSlots: 1, queues: 50, schedulings: 10, beds: 10}
	seconds := 0
	for name, v := range map[string]*int{"NODES": &s.nodes, "SLOTS_PER_NODE": &s.slotsPerNode, "JOBS": &s.jobs, "JOB_SLOTS": &s.jobSlots, "QUEUES": &s.queues,
		"SCHEDULINGS": &s.schedulings, "JOB_SECONDS": &seconds, "BEDS": &s.beds, "MEASURE": &s.measure} {
		if e := os.Getenv("SLOTPLANE_ENVELOPE_" + name); e != "" {
			n, err := strconv.Atoi(e)
			require.NoError(t, err, "SLOTPLANE_ENVELOPE_"+name)
			require.Positive(t, n, "SLOTPLANE_ENVELOPE_"+name)
			*v = n
		}
	}
	if e := os.Getenv("SLOTPLANE_ENVELOPE_ADMISSION_NICE"); e != "" {
		n, err := strconv.Atoi(e)
		require.NoError(t, err, "SLOTPLANE_ENVELOPE_ADMISSION_NICE")
		require.True(t, n >= -20 && n <= 19, "SLOTPLANE_ENVELOPE_ADMISSION_NICE is a niceness, -20 to 19: %d", n)
		s.admissionNice = n
	}
	require.LessOrEqual(t, s.jobSlots*max(1, s.beds), s.slots(), "SLOTPLANE_ENVELOPE_JOB_SLOTS: a job fits in each bed")
	require.LessOrEqual(t, s.jobSlots, 8, "SLOTPLANE_ENVELOPE_JOB_SLOTS: a job fits in the 8-slot bed")
	if seconds == 0 {
		seconds = max(30, s.slots()/s.jobSlots/3)
	}
	s.jobFor = time.Duration(seconds) * time.Second
	s.queues = max(5, s.queues/5*5)
	return s
}

// envelopeFigures is what one probe measured.
type envelopeFigures struct {
	size envelopeSize
	// fill is the bed's creation to every ghost running; plainFill the creation of as many
	// plain pods, by the default scheduler on the plain nodes, to all running.
	fill, plainFill time.Duration
	// decisions are Admission's decision times, as the worker's histogram bounds them.
	decisionP50, decisionP99 float64
	decisions                float64
	// decisionCPU are the same decisions' CPU times (p50, p99): the decisions' own cost,
	// without the time the worker waited for a core.
	decisionCPUP50, decisionCPUP99 float64
	// handOver is a freed slot's wait for its next grant, in a full bed while jobs waited.
	handOverP50, handOverP99 time.Duration
	handOvers                int
	// fullest is the most slots one bed had granted at once.
	fullest int
	// elapsed is the Schedulings' creation to every job's end, or to the probe's stop when
	// it stopped before; ended is how many jobs had ended then.
	elapsed time.Duration
	ended   int
	// In the window of size.window, which took windowTook, windowStarts jobs started
	// (Running) and windowEnds ended; windowJobs is their mean. A window of a bed that fills
	// holds more starts, one of a bed that drains more ends: a job is half its start and half
	// its end.
	windowStarts, windowEnds int
	windowJobs               float64
	windowTook               time.Duration
	// cpuPerJob is the platform's CPU over the window less its floor (the cores it keeps
	// busy at rest, measured before the jobs), per job of the window. The platform is the
	// machine less kwok, which stands for the nodes' kubelets: on a cluster each runs on its
	// own node, and kwok's cost grows with the pods of all nodes. The test process counts:
	// it runs the Temporal server and the operators' stand-in, besides its feeds. cpuBy is
	// the machine's by process (the floor not taken off), the largest first.
	cpuPerJob time.Duration
	cpuBy     []processCPU
	// workCost is the median CPU time of a fixed piece of work (workCost) taken every 5 s
	// of the window: the machine's speed in it, to tell a slower hour from a higher cost.
	workCost     time.Duration
	floor        float64
	writesPerJob float64
	// admissionTask is the longest workflow task of Admission (started to completed, as
	// the server recorded them); failedTasks those that failed or timed out, other than
	// Temporal's hand-overs (admissionTasks).
	admissionTask time.Duration
	// admissionTaskLocal names the local activities that longest task ran (their time is
	// in it), with their attempts; admissionTaskSDK bounds Admission's longest task as the worker's SDK measured
	// it (temporal_workflow_task_execution_latency_seconds, the bucket of the slowest).
	admissionTaskLocal []string
	// admissionLongestRun are the events of Admission's run that holds its longest task;
	// the probe saves them next to its profiles.
	admissionLongestRun []*historypb.HistoryEvent
	admissionTaskSDK    float64
	failedTasks         []string
	// stickyWaits are Admission's tasks that no poll took from the worker's sticky queue in
	// time, so another poll took them after a replay. refusedEnds are its tasks the server
	// refused because they ended the run (continue-as-new) while a signal had come: the SDK
	// drops the run from its cache, and the next task replays it.
	stickyWaits, refusedEnds int
	// admissionSched is the time the threads of Admission's worker spent on a core and
	// waiting for one over the window, admissionNiceness the niceness it ran at; pressure
	// is the share of the window some task of the machine waited for a core (NaN: unknown).
	admissionSched    schedTimes
	admissionNiceness int
	pressure          float64
	// startingPerBed is each bed's slotplane.max-starting-apps (0: the default).
	startingPerBed int
	// objects are the largest of each kind of object, in bytes of JSON.
	objects map[string]int
	// histories are, by workflow kind, the most events of one run and the largest event.
	histories map[string][2]int
	// carried is Admission's largest run input (the state it carries across continue-as-new).
	carried int
	// feed is the largest message the feed sent, by kind.
	feed map[string]int
	// memory is the peak resident memory of each process, in bytes.
	memory map[string]uint64
}

// The scale envelope (make test-scale): the bed of the envelope and, in the same run, the
// 8-slot bed of the long run with the same mix of queues, modes and jobs, each on its own
// platform, and a table of what each cost, how long its parts took, and how large its
// objects, payloads and histories grew against their limits. Every job must run once and
// no slot be held by two jobs at once; the figures themselves are printed, not asserted:
// docs/scale.md records them.
func TestE2E_ScaleEnvelope(t *testing.T) {
	if os.Getenv("SLOTPLANE_ENVELOPE") == "" {
		t.Skip("the scale envelope runs on its own: make test-scale")
	}
	size := envelopeSizeFromEnv(t)
	// The 8-slot bed runs 8/jobSlots jobs at once: at least 24 jobs, so that its window
	// holds a dozen.
	sizes := []envelopeSize{{nodes: 4, slotsPerNode: 2, jobs: max(24, 48/size.jobSlots), jobSlots: size.jobSlots, queues: size.queues, schedulings: 2,
		jobFor: min(size.jobFor, 30*time.Second), admissionNice: size.admissionNice}}
	if split := size.beds; split > 1 {
		require.Zero(t, size.nodes%split, "SLOTPLANE_ENVELOPE_BEDS divides the nodes")
		require.GreaterOrEqual(t, size.schedulings, split, "at least a Scheduling per bed")
		size.beds = 1
		sizes = append(sizes, size)
		size.beds = split
	}
	sizes = append(sizes, size)
	probes := make([]envelopeFigures, len(sizes))
	for i, z := range sizes {
		name := fmt.Sprintf("%d slots", z.slots())
		if z.beds > 1 {
			name += fmt.Sprintf(" as %d beds", z.beds)
		}
		t.Run(name, func(t *testing.T) { probes[i] = probeEnvelope(t, z) })
		if probes[i].elapsed == 0 {
			break
		}
		// Each probe's column as soon as it is known: a later probe that fails loses
		// only its own.
		done := probes[:i+1]
		table := envelopeTable(done...)
		t.Log("\n" + table)
		if len(done) == len(probes) {
			fmt.Print(table)
		}
	}
}

// probeEnvelope runs one probe on a platform of its own and returns its figures.
func probeEnvelope(t *testing.T, size envelopeSize) envelopeFigures {
	audit := filepath.Join(t.TempDir(), "audit.log")
	t.Setenv(localcluster.EnvAuditLog, audit)
	if os.Getenv(envEnvelopeProfile) != "" {
		t.Setenv(localcluster.EnvAPIServerProfile, "on") // its /debug/pprof
	}
	slots := size.slots()
	f := envelopeFigures{size: size, objects: map[string]int{}, histories: map[string][2]int{}, feed: map[string]int{}, memory: map[string]uint64{}}

	queues := `<allocations>`
	for team := range 5 {
		queues += fmt.Sprintf(`<queue name="team%d"><weight>%d</weight>`, team, 1+team%3)
		for q := range size.queues / 5 {
			queues += fmt.Sprintf(`<queue name="q%d"><schedulingPolicy>%s</schedulingPolicy></queue>`, q, []string{"fifo", "fair", "drf"}[q%3])
		}
		queues += `</queue>`
	}
	queues += `</allocations>`
	// Every running job's driver (100m) runs outside the bed: a plain node of 4 CPUs and 110
	// pods takes 30, and as many plain pods as slots fit at 100 a node.
	// The split's beds share the starting room of the one bed: ten beds of the default
	// would let ten times as many jobs start at once, and the cost per job would then
	// measure that wave of starts rather than the split.
	settings := ""
	if size.beds > 1 {
		f.startingPerBed = max(1, queue.DefaultMaxStartingApps/size.beds)
		settings = fmt.Sprintf("<configuration><property><name>%s</name><value>%d</value></property></configuration>",
			queue.PropMaxStartingApps, f.startingPerBed)
	}
	p := startE2EFiles(t, bedShape{nodes: size.nodes, plainNodes: 2 + max(slots/30, slots/100), slotsPerNode: int32(size.slotsPerNode), cpu: "900m", memory: "3Gi", beds: size.beds,
		admissionApart: true, admissionNice: size.admissionNice}, queues, settings)
	admissionPid := p.pid(p.admission())
	f.admissionNiceness = niceness(t, admissionPid)
	perBed := slots / len(p.beds)
	f.fill = p.bedFilled
	p.waitSlotsFree(t, 5*time.Minute)
	f.plainFill = fillPlainPods(t, p, slots)
	c := p.api
	ctx := context.Background()

	// The ledger follows the jobs; the Schedulings' states are read when needed. A feed of
	// the Schedulings would carry each whole Scheduling, its jobs' list included, at every
	// change of one of them: the test's own CPU would grow with the square of the jobs per
	// Scheduling.
	w, err := c.Watch(ctx, []string{apiclient.WatchJobs}, apiclient.Position{})
	require.NoError(t, err)
	defer w.Close()
	ledger := followFeed(w)
	sizes, err := c.Watch(ctx, nil, apiclient.Position{})
	require.NoError(t, err)
	defer sizes.Close()
	var feedMu sync.Mutex
	feedMax := map[string]int{}
	go func() {
		for ev := range sizes.Events() {
			feedMu.Lock()
			for _, item := range append(ev.Items, ev) {
				feedMax[item.Kind] = max(feedMax[item.Kind], len(item.Object))
			}
			feedMu.Unlock()
		}
	}()

	// The platform's floor: what it costs at rest (timers, resyncs, leases, kwok's
	// heartbeats), taken from the run's CPU so that a bed that runs few jobs at a time is not
	// charged for the time it stands. The least of six windows of 5 s: the settling of
	// what came before (the plain pods' deletion, a resync) must not pass for the floor; one
	// 20 s window on the 8-slot bed once read 0.86 cores, more than its whole run's cost.
	f.floor = math.Inf(1)
	for range 6 {
		restFrom, err := sampleCPU()
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		restTo, err := sampleCPU()
		require.NoError(t, err)
		f.floor = min(f.floor, platformBusy(restFrom, restTo).Seconds()/restTo.at.Sub(restFrom.at).Seconds())
	}

	perTeam := size.queues / 5
	names := makeSimJobs(t, c, size.jobs, "env", func(i int) string { return fmt.Sprintf("root.team%d.q%d", i%5, (i/5)%perTeam) }, size.jobFor)
	started := time.Now()
	var schedulings []string
	for s := range size.schedulings {
		req := apitypes.SchedulingRequest{Name: fmt.Sprintf("envelope-%d", s), TestBed: p.beds[s%len(p.beds)], Mode: v1alpha1.QueueBased}
		if s%2 == 1 {
			req.Mode = v1alpha1.SlotBased
		}
		for i := s; i < size.jobs; i += size.schedulings {
			j := v1alpha1.SchedulingJob{Name: names[i], Replication: int32(size.jobSlots)}
			if req.Mode == v1alpha1.SlotBased {
				// Job i is the (i/beds)th of its bed's: spread over the bed's slots.
				for k := range size.jobSlots {
					j.SlotIDs = append(j.SlotIDs, int32((i/len(p.beds)*size.jobSlots+k)%perBed))
				}
			}
			req.Jobs = append(req.Jobs, j)
		}
		_, err := c.CreateScheduling(ctx, req)
		require.NoError(t, err)
		schedulings = append(schedulings, req.Name)
	}
	within := 30*time.Minute + time.Duration(size.jobs)*time.Second

	// The window: the cost of the jobs that end in it.
	from, to := size.window()
	require.Eventually(t, func() bool { return ledger.endedCount() >= from }, within, 100*time.Millisecond,
		"%d jobs ended (%d did)", from, ledger.endedCount())
	cpuFrom, err := sampleCPU()
	require.NoError(t, err)
	schedFrom, err := readSchedTimes(admissionPid)
	require.NoError(t, err)
	pressureFrom, pressureErr := cpuPressure()
	endedFrom, startedFrom := ledger.endedCount(), ledger.seenRunningCount()
	profiled := startProfiles(t, p, size.fileName())
	gauged := gaugeSpeed(5 * time.Second)
	require.Eventually(t, func() bool { return ledger.endedCount() >= to }, within, 100*time.Millisecond,
		"%d jobs ended (%d did)", to, ledger.endedCount())
	cpuTo, err := sampleCPU()
	require.NoError(t, err)
	schedTo, err := readSchedTimes(admissionPid)
	require.NoError(t, err, "Admission's worker ran through the window")
	f.admissionSched = schedTimes{onCPU: schedTo.onCPU - schedFrom.onCPU, waited: schedTo.waited - schedFrom.waited}
	f.pressure = math.NaN() // where the kernel keeps no pressure stall information
	if pressureTo, err := cpuPressure(); err == nil && pressureErr == nil {
		f.pressure = (pressureTo - pressureFrom).Seconds() / cpuTo.at.Sub(cpuFrom.at).Seconds()
	}
	f.workCost = gauged()
	writes := apiWriteCounts(t, audit, cpuFrom.at)
	profiled()
	f.windowEnds, f.windowStarts, f.windowTook = ledger.endedCount()-endedFrom, ledger.seenRunningCount()-startedFrom, cpuTo.at.Sub(cpuFrom.at)
	f.windowJobs = float64(f.windowStarts+f.windowEnds) / 2
	spent := platformBusy(cpuFrom, cpuTo).Seconds() - f.floor*f.windowTook.Seconds()
	f.cpuPerJob = time.Duration(max(0, spent) / f.windowJobs * float64(time.Second))
	f.cpuBy = cpuByProcess(p, cpuFrom, cpuTo, f.windowJobs)
	logCPUPerJob(t, fmt.Sprintf("%d slots, the window's %d starts and %d ends", slots, f.windowStarts, f.windowEnds), cpuFrom, cpuTo, int(f.windowJobs))
	f.writesPerJob = float64(writes.total) / f.windowJobs
	writes.log(t, f.windowJobs)

	if !size.partial() {
		ended := func(name string) v1alpha1.SchedulingState {
			s, err := c.GetScheduling(ctx, name)
			if err != nil {
				return ""
			}
			return s.Status.State
		}
		require.Eventually(t, func() bool {
			for _, s := range schedulings {
				if st := ended(s); st != v1alpha1.SchedulingCompleted && st != v1alpha1.SchedulingFailed {
					return false
				}
			}
			return true
		}, within, time.Second, "every Scheduling ended (%d of %d jobs ended)", ledger.endedCount(), size.jobs)
		for _, s := range schedulings {
			require.Equal(t, v1alpha1.SchedulingCompleted, ended(s), s)
		}
	}
	f.elapsed, f.ended = time.Since(started), ledger.endedCount()

	// Every job that ended ran once, to its end, and no slot was held twice; without a stop
	// before the end, that is every job.
	ledger.check(t)
	var jobs v1alpha1.BatchJobList
	require.NoError(t, p.kube.List(ctx, &jobs, client.InNamespace("default")))
	require.Len(t, jobs.Items, size.jobs)
	done := 0
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if size.partial() && j.Status.State != v1alpha1.JobCompleted && j.Status.State != v1alpha1.JobFailed {
			continue
		}
		done++
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, j.Name)
		require.Len(t, j.Status.History, 1, "%s ran once", j.Name)
	}
	require.GreaterOrEqual(t, done, to, "jobs ended")
	f.handOverP50, f.handOverP99, f.handOvers = handOvers(jobs.Items, perBed)
	f.fullest = fullest(jobs.Items)

	m := p.scrape(t, p.admission())
	f.decisionP50 = histogramQuantile(m["slotplane_admission_decision_seconds"], 0.5)
	f.decisionP99 = histogramQuantile(m["slotplane_admission_decision_seconds"], 0.99)
	f.decisions, _ = m.sum("slotplane_admission_decision_seconds", nil)
	f.decisionCPUP50 = histogramQuantile(m["slotplane_admission_decision_cpu_seconds"], 0.5)
	f.decisionCPUP99 = histogramQuantile(m["slotplane_admission_decision_cpu_seconds"], 0.99)
	f.admissionTaskSDK = histogramMax(m["temporal_workflow_task_execution_latency_seconds"], map[string]string{"workflow_type": "AdmissionWorkflow"})

	largestObjects(t, p, f.objects, jobs.Items)
	largestHistories(t, p, &f, schedulings, names)
	peakMemory(p, f.memory)
	feedMu.Lock()
	f.feed = maps.Clone(feedMax)
	feedMu.Unlock()
	// A failure here still returns the figures for the table; the probe's logs are kept.
	assert.Empty(t, f.failedTasks, "no workflow task of Admission failed on %d slots in %d beds", f.size.slots(), max(1, f.size.beds))
	return f
}

// makeSimJobs creates n Spark jobs through the API, eight at a time, named prefix-00000
// onwards, job i in queueOf(i), each running for runFor on the simulated operator, and
// returns their names.
func makeSimJobs(t *testing.T, c *apiclient.Client, n int, prefix string, queueOf func(int) string, runFor time.Duration) []string {
	names := make([]string, n)
	errs := make(chan error, n)
	next := make(chan int)
	var made sync.WaitGroup
	for range 8 {
		made.Go(func() {
			for i := range next {
				names[i] = fmt.Sprintf("%s-%05d", prefix, i)
				_, err := c.CreateJob(context.Background(), apitypes.JobRequest{Name: names[i], Framework: v1alpha1.FrameworkSpark, Queue: queueOf(i),
					Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
					DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
					Annotations:     map[string]string{standin.SimDurationAnnotation: runFor.String()}})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", names[i], err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	made.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return names
}

// fillPlainPods creates n plain pods (no slot, the default scheduler) on the plain nodes,
// eight at a time as the ghosts are made, waits for all to run, deletes them, and returns
// the time from the first creation to the last one running.
func fillPlainPods(t *testing.T, p *e2ePlatform, n int) time.Duration {
	ctx := context.Background()
	label := map[string]string{"e2e-plain": "true"}
	start := time.Now()
	next := make(chan int)
	var made sync.WaitGroup
	for range 8 {
		made.Go(func() {
			for i := range next {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%05d", i), Namespace: "default", Labels: label},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}}}}}}
				require.NoError(t, p.kube.Create(ctx, pod))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	made.Wait()
	running := func() int {
		var pods corev1.PodList
		require.NoError(t, p.kube.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(label)))
		up := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				up++
			}
		}
		return up
	}
	require.Eventually(t, func() bool { return running() == n }, 10*time.Minute, 250*time.Millisecond, "every plain pod runs")
	took := time.Since(start)
	// One delete of thousands of pods runs the API server past its request timeout or
	// breaks its stream: they go one by one, eight at a time, as they came.
	gone := make(chan int)
	var deleted sync.WaitGroup
	for range 8 {
		deleted.Go(func() {
			for i := range gone {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%05d", i), Namespace: "default"}}
				err := p.kube.Delete(ctx, pod, client.GracePeriodSeconds(0))
				require.True(t, err == nil || apierrors.IsNotFound(err), "delete %s: %v", pod.Name, err)
			}
		})
	}
	for i := range n {
		gone <- i
	}
	close(gone)
	deleted.Wait()
	require.Eventually(t, func() bool {
		var pods corev1.PodList
		require.NoError(t, p.kube.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(label)))
		return len(pods.Items) == 0
	}, 10*time.Minute, time.Second, "the plain pods are gone")
	return took
}

// auditWrites are the API server's write requests (create, update, patch, delete) answered
// since a time, by its audit log: all of them, and by verb, resource and client.
type auditWrites struct {
	total int
	by    map[localcluster.AuditKey]int
}

func apiWriteCounts(t *testing.T, audit string, since time.Time) auditWrites {
	counts, err := localcluster.ReadAudit(audit, since)
	require.NoError(t, err)
	w := auditWrites{by: map[localcluster.AuditKey]int{}}
	for k, c := range counts {
		switch k.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
			w.total += c
			w.by[k] += c
		}
	}
	return w
}

// log prints the writes per job, the most frequent first.
func (w auditWrites) log(t *testing.T, jobs float64) {
	keys := slices.Collect(maps.Keys(w.by))
	slices.SortFunc(keys, func(a, b localcluster.AuditKey) int { return cmp.Compare(w.by[b], w.by[a]) })
	t.Logf("API writes per job: %.1f", float64(w.total)/jobs)
	for _, k := range keys[:min(len(keys), 16)] {
		t.Logf("  %-8s %-28s %-24s %d %5.2f", k.Verb, k.Resource, k.Agent, k.Code, float64(w.by[k])/jobs)
	}
}

// platformBusy is the CPU the machine spent between two samples less kwok's (the nodes'
// stand-in: envelopeFigures.cpuPerJob).
func platformBusy(from, to cpuUse) time.Duration {
	busy := to.busy - from.busy
	for pid, u := range to.procs {
		if strings.HasPrefix(u.comm, "kwok") {
			busy -= to.spentSince(from, pid)
		}
	}
	return busy
}

// processCPU is one process's CPU time per job.
type processCPU struct {
	name   string
	perJob time.Duration
}

// cpuByProcess is the CPU time each process spent between two samples, per job, the
// largest first: slotplane's components by name, the test process (the Temporal server,
// the operators' stand-in and the test's feeds) as e2e.test, others by command name, the
// smallest together as "other".
func cpuByProcess(p *e2ePlatform, from, to cpuUse, jobs float64) []processCPU {
	component := map[int]string{os.Getpid(): "e2e.test"}
	for name, c := range p.parts {
		c.mu.Lock()
		if c.cmd != nil && c.cmd.Process != nil {
			component[c.cmd.Process.Pid] = name
		}
		c.mu.Unlock()
	}
	by := map[string]time.Duration{}
	for pid, u := range to.procs {
		name := component[pid]
		if name == "" {
			name = u.comm
		}
		by[name] += to.spentSince(from, pid)
	}
	var out []processCPU
	var other time.Duration
	for name, d := range by {
		if d*20 < to.busy-from.busy { // under 5% of the machine's
			other += d
			continue
		}
		out = append(out, processCPU{name, time.Duration(float64(d) / max(1, jobs))})
	}
	slices.SortFunc(out, func(a, b processCPU) int { return cmp.Compare(b.perJob, a.perJob) })
	return append(out, processCPU{"other", time.Duration(float64(other) / max(1, jobs))})
}

// envEnvelopeProfile names a directory for the probe's CPU profiles (startProfiles).
const envEnvelopeProfile = "SLOTPLANE_ENVELOPE_PROFILE"

// envelopeProfileFor is how long the probe profiles its processes, from the window's start.
const envelopeProfileFor = 90 * time.Second

// startProfiles profiles the CPU of slotplane's components, the API server and the test
// process itself for envelopeProfileFor, when SLOTPLANE_ENVELOPE_PROFILE names a
// directory: it writes <dir>/<prefix>-<process>.pprof (`go tool pprof` reads them with the
// binaries the run used: the slotplane binary and the kube-apiserver of the tool cache).
// The function it returns waits for the profiles.
func startProfiles(t *testing.T, p *e2ePlatform, prefix string) (wait func()) {
	dir := os.Getenv(envEnvelopeProfile)
	if dir == "" {
		return func() {}
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	secs := strconv.Itoa(int(envelopeProfileFor.Seconds()))
	var wg sync.WaitGroup
	save := func(process string, get func() ([]byte, error)) {
		wg.Go(func() {
			raw, err := get()
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, prefix+"-"+process+".pprof"), raw, 0o644)
			}
			if err != nil {
				t.Errorf("the CPU profile of %s: %v", process, err)
			}
		})
	}
	for name, at := range p.pprofAt {
		save(name, func() ([]byte, error) {
			hc := &http.Client{Timeout: envelopeProfileFor + time.Minute}
			resp, err := hc.Get("http://" + at + "/debug/pprof/profile?seconds=" + secs)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s", resp.Status)
			}
			return io.ReadAll(resp.Body)
		})
	}
	rc := p.cluster.Client().CoreV1().RESTClient()
	save("kube-apiserver", func() ([]byte, error) {
		return rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Timeout(envelopeProfileFor + time.Minute).DoRaw(context.Background())
	})
	save("e2e.test", func() ([]byte, error) {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return nil, err
		}
		time.Sleep(envelopeProfileFor)
		pprof.StopCPUProfile()
		return buf.Bytes(), nil
	})
	return func() {
		wg.Wait()
		t.Logf("CPU profiles over %s: %s/%s-*.pprof", envelopeProfileFor, dir, prefix)
	}
}

// handOvers is how long a freed slot waited for its next grant, over the slots freed in a
// full bed (every one of its perBed slots granted just before) while a job waited for them:
// a run whose job was queued before the slot's previous run ended. In a bed that is not
// full, a waiting job's grant waits for the bed's starting room, not for a slot, and says
// nothing of the hand-over. The runs are each job's ended ones (its history) and its
// current one: with long jobs, a probe that stops early finds most next runs still going.
func handOvers(jobs []v1alpha1.BatchJob, perBed int) (p50, p99 time.Duration, n int) {
	type run struct {
		queued, admitted, ended time.Time
	}
	bySlot := map[bedSlot][]run{}
	// grantsOf and endsOf are each bed's grant and end times, a slot each.
	grantsOf, endsOf := map[string][]time.Time{}, map[string][]time.Time{}
	add := func(bed string, slots []int32, queued *metav1.Time, admitted, ended *metav1.MicroTime) {
		if admitted == nil || queued == nil {
			return
		}
		r := run{queued: queued.Time, admitted: admitted.Time} // a run still going hands nothing on
		if ended != nil {
			r.ended = ended.Time
		}
		for _, s := range slots {
			bySlot[bedSlot{bed, s}] = append(bySlot[bedSlot{bed, s}], r)
			grantsOf[bed] = append(grantsOf[bed], r.admitted)
			if ended != nil {
				endsOf[bed] = append(endsOf[bed], r.ended)
			}
		}
	}
	eachRun(jobs, add)
	for bed := range grantsOf {
		slices.SortFunc(grantsOf[bed], time.Time.Compare)
		slices.SortFunc(endsOf[bed], time.Time.Compare)
	}
	// heldAt is how many of bed's slots were granted just before t: grants before t less
	// ends before it.
	heldAt := func(bed string, t time.Time) int {
		before := func(ts []time.Time) int {
			i, _ := slices.BinarySearchFunc(ts, t, time.Time.Compare)
			return i
		}
		return before(grantsOf[bed]) - before(endsOf[bed])
	}
	var waits []time.Duration
	for at, runs := range bySlot {
		slices.SortFunc(runs, func(a, b run) int { return a.admitted.Compare(b.admitted) })
		for i := 1; i < len(runs); i++ {
			prev, next := runs[i-1], runs[i]
			if !prev.ended.IsZero() && next.queued.Before(prev.ended) && !next.admitted.Before(prev.ended) &&
				heldAt(at.bed, prev.ended) >= perBed {
				waits = append(waits, next.admitted.Sub(prev.ended))
			}
		}
	}
	if len(waits) == 0 {
		return 0, 0, 0
	}
	slices.Sort(waits)
	at := func(q float64) time.Duration {
		return waits[min(len(waits)-1, int(math.Ceil(q*float64(len(waits))))-1)]
	}
	return at(0.5), at(0.99), len(waits)
}

// eachRun calls f with each job's ended runs (its history) and its current one (ended
// nil).
func eachRun(jobs []v1alpha1.BatchJob, f func(bed string, slots []int32, queued *metav1.Time, admitted, ended *metav1.MicroTime)) {
	for i := range jobs {
		st := &jobs[i].Status
		for _, r := range st.History {
			f(r.TestBed, r.Slots, r.QueuedAt, r.AdmittedAt, r.EndedAt)
		}
		if st.Phases != nil && !st.State.Ended() {
			f(st.TestBed, st.Slots, st.QueuedAt, st.Phases.AdmittedAt, nil)
		}
	}
}

// fullest is the most slots one bed had granted at once, over each job's ended runs and
// its current one.
func fullest(jobs []v1alpha1.BatchJob) int {
	type change struct {
		at    time.Time
		slots int
	}
	byBed := map[string][]change{}
	add := func(bed string, slots []int32, admitted, ended *metav1.MicroTime) {
		if admitted == nil {
			return
		}
		byBed[bed] = append(byBed[bed], change{admitted.Time, len(slots)})
		if ended != nil {
			byBed[bed] = append(byBed[bed], change{ended.Time, -len(slots)})
		}
	}
	eachRun(jobs, func(bed string, slots []int32, _ *metav1.Time, admitted, ended *metav1.MicroTime) {
		add(bed, slots, admitted, ended)
	})
	most := 0
	for _, changes := range byBed {
		// At the same instant an end comes first: its slots are free for a grant then.
		slices.SortFunc(changes, func(a, b change) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.slots, b.slots)) })
		held := 0
		for _, c := range changes {
			held += c.slots
			most = max(most, held)
		}
	}
	return most
}

// histogramQuantile is the upper bound of the bucket that holds the q-quantile of a
// histogram family's series, all added up (seconds; +Inf past the last bucket; 0 when
// empty).
func histogramQuantile(mf *dto.MetricFamily, q float64) float64 {
	counts := map[float64]uint64{}
	var total uint64
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		total += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			counts[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if total == 0 {
		return 0
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	for _, b := range bounds {
		if float64(counts[b]) >= q*float64(total) {
			return b
		}
	}
	return math.Inf(1)
}

// histogramMax is the upper bound of the highest bucket that holds an observation, over the
// series of a histogram family whose labels include match (seconds; 0 when none).
func histogramMax(mf *dto.MetricFamily, match map[string]string) float64 {
	top := 0.0
series:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue series
			}
		}
		h := m.GetHistogram()
		below := uint64(0)
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() > below {
				top = max(top, b.GetUpperBound())
			}
			below = b.GetCumulativeCount()
		}
		if h.GetSampleCount() > below {
			return math.Inf(1)
		}
	}
	return top
}

// largestObjects records the largest TestBed, SlotSlice, Scheduling and BatchJob, as JSON.
func largestObjects(t *testing.T, p *e2ePlatform, out map[string]int, jobs []v1alpha1.BatchJob) {
	ctx := context.Background()
	size := func(kind string, o any) {
		data, err := json.Marshal(o)
		require.NoError(t, err)
		out[kind] = max(out[kind], len(data))
	}
	var beds v1alpha1.TestBedList
	require.NoError(t, p.kube.List(ctx, &beds, client.InNamespace("default")))
	for i := range beds.Items {
		size("TestBed", &beds.Items[i])
	}
	var sl v1alpha1.SlotSliceList
	require.NoError(t, p.kube.List(ctx, &sl, client.InNamespace("default")))
	for i := range sl.Items {
		size("SlotSlice", &sl.Items[i])
	}
	var ss v1alpha1.SchedulingList
	require.NoError(t, p.kube.List(ctx, &ss, client.InNamespace("default")))
	for i := range ss.Items {
		size("Scheduling", &ss.Items[i])
	}
	for i := range jobs {
		size("BatchJob", &jobs[i])
	}
}

// localActivityOf names the local activity a marker event records, with its attempt past
// the first ("ReadSlots#2"), or is empty for any other event.
func localActivityOf(ev *historypb.HistoryEvent) string {
	m := ev.GetMarkerRecordedEventAttributes()
	if m.GetMarkerName() != "LocalActivity" {
		return ""
	}
	var data struct {
		ActivityType string
		Attempt      int32
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &data); err != nil || data.ActivityType == "" {
		return "a local activity"
	}
	if data.Attempt > 1 {
		return fmt.Sprintf("%s#%d", data.ActivityType, data.Attempt)
	}
	return data.ActivityType
}

// largestHistories walks the chains of runs of Admission, the TestBed's workflow, every
// Scheduling's and a hundred jobs' (spread over the names): for each kind the most events
// of one run and the largest event; for Admission also its longest workflow task, its
// failed ones and its largest run input.
func largestHistories(t *testing.T, p *e2ePlatform, f *envelopeFigures, schedulings, jobs []string) {
	walk := func(kind, id string) {
		for run := ""; ; {
			history := readRun(t, p, id, run)
			previous, events, largest := "", 0, 0
			started := map[int64]time.Time{}
			counting := false // markers after the longest task so far are its local activities
			// replayed are the tasks scheduled after one failed or timed out: the worker
			// took them with the run's whole history and replayed it.
			replayed, lastFailed := map[int64]bool{}, false
			// runEvents is Admission's run, kept while it holds the longest task so far.
			var runEvents []*historypb.HistoryEvent
			holdsLongest := false
			for _, ev := range history {
				events++
				if kind == "Admission" {
					runEvents = append(runEvents, ev)
				}
				largest = max(largest, proto.Size(ev))
				if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
					previous = a.GetContinuedExecutionRunId()
					if kind == "Admission" {
						f.carried = max(f.carried, proto.Size(a.GetInput()))
					}
				}
				if kind != "Admission" {
					continue
				}
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
					started[ev.GetEventId()] = ev.GetEventTime().AsTime()
					replayed[ev.GetEventId()] = lastFailed
					lastFailed = false
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
					counting = false
					id := ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()
					if at, ok := started[id]; ok {
						if took := ev.GetEventTime().AsTime().Sub(at); took > f.admissionTask {
							f.admissionTask, f.admissionTaskLocal, counting, holdsLongest = took, nil, true, true
							if replayed[id] {
								f.admissionTaskLocal = append(f.admissionTaskLocal, "a replay of the run")
							}
						}
					}
				case enumspb.EVENT_TYPE_MARKER_RECORDED:
					if name := localActivityOf(ev); counting && name != "" {
						f.admissionTaskLocal = append(f.admissionTaskLocal, name)
					}
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
					counting = false
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
					lastFailed = true
					if failure, unhandled, sticky := taskOutcome(ev); sticky {
						f.stickyWaits++
					} else if unhandled {
						f.refusedEnds++
					} else if failure != "" {
						f.failedTasks = append(f.failedTasks, failure)
					}
				}
			}
			if holdsLongest {
				f.admissionLongestRun = runEvents
			}
			h := f.histories[kind]
			f.histories[kind] = [2]int{max(h[0], events), max(h[1], largest)}
			if previous == "" {
				return
			}
			run = previous
		}
	}
	for _, bed := range p.beds {
		walk("Admission", installation.Default.AdmissionID("default", bed))
		walk("TestBed", installation.Default.TestBedID("default", bed))
	}
	if dir := os.Getenv(envEnvelopeProfile); dir != "" && len(f.admissionLongestRun) > 0 {
		// For a replay of it under a profile (BenchmarkReplay_AdmissionRun).
		data, err := protojson.Marshal(&historypb.History{Events: f.admissionLongestRun})
		require.NoError(t, err)
		file := filepath.Join(dir, f.size.fileName()+"-admission-longest-run.json")
		require.NoError(t, os.WriteFile(file, data, 0o644))
	}
	for _, s := range schedulings {
		walk("Scheduling", installation.Default.SchedulingID("default", s))
	}
	step := max(1, len(jobs)/100)
	for i := 0; i < len(jobs); i += step {
		walk("BatchJob", installation.Default.BatchJobID("default", jobs[i]))
	}
}

// readRun reads the events of one run of workflow id (run "": the latest). The probe reads
// while the platform still runs its jobs (a partial probe stops following them, not the
// platform): a page of history can take longer than a call's 10 s, so a read that fails is
// made again from the start, a few times, before the test fails.
func readRun(t *testing.T, p *e2ePlatform, id, run string) []*historypb.HistoryEvent {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			t.Logf("reading the history of %s again (attempt %d): %v", id, attempt+1, err)
			time.Sleep(time.Duration(attempt) * 5 * time.Second)
		}
		var events []*historypb.HistoryEvent
		it := p.temporal.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for err = nil; err == nil && it.HasNext(); {
			var ev *historypb.HistoryEvent
			if ev, err = it.Next(); err == nil {
				events = append(events, ev)
			}
		}
		if err == nil {
			return events
		}
	}
	require.NoError(t, err, "reading the history of %s", id)
	return nil
}

// peakMemory records the peak resident memory (VmHWM) of slotplane's components, by name,
// and of the platform's other processes, by command name (the test binary runs Temporal).
func peakMemory(p *e2ePlatform, out map[string]uint64) {
	hwm := func(pid int) uint64 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10
			}
		}
		return 0
	}
	mine := map[int]bool{}
	for name, c := range p.parts {
		c.mu.Lock()
		if c.cmd != nil && c.cmd.Process != nil {
			out["slotplane "+name] = hwm(c.cmd.Process.Pid)
			mine[c.cmd.Process.Pid] = true
		}
		c.mu.Unlock()
	}
	out["e2e.test (with Temporal)"] = hwm(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || mine[pid] {
			continue
		}
		comm, _, ok := procStat(d)
		if !ok {
			continue
		}
		for _, want := range []string{"kube-apiserver", "etcd", "kube-scheduler", "kwok"} {
			if strings.HasPrefix(comm, want) {
				out[want] = max(out[want], hwm(pid))
			}
		}
	}
}

// envelopeTable renders the probes side by side: the 8-slot bed first, and the ratios of the
// others to it where the targets compare them.
func envelopeTable(probes ...envelopeFigures) string {
	var b strings.Builder
	base := probes[0]
	row := func(what, target string, cell func(f envelopeFigures) string) {
		cells := make([]string, len(probes))
		for i, f := range probes {
			cells[i] = cell(f)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", what, strings.Join(cells, " | "), target)
	}
	ratio := func(a, b float64) string {
		if a == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", b/a)
	}
	// against is v with, past the first column, its ratio to the first column's.
	against := func(f envelopeFigures, v string, of func(envelopeFigures) float64) string {
		if f.size == base.size {
			return v
		}
		return fmt.Sprintf("%s (%s)", v, ratio(of(base), of(f)))
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	sec := func(s float64) string {
		if math.IsInf(s, 1) {
			return "over the last bucket"
		}
		return fmt.Sprintf("≤ %s", ms(time.Duration(s*float64(time.Second))))
	}
	kib := func(n int) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }
	b.WriteString("| measure |")
	for _, f := range probes {
		z := f.size
		beds := ""
		if z.beds > 1 {
			beds = fmt.Sprintf(" as %d beds", z.beds)
		}
		stop := ""
		if z.partial() {
			stop = fmt.Sprintf(", stopped after %d ends", f.ended)
		}
		fmt.Fprintf(&b, " %d slots (%d nodes)%s, %d jobs of %d slots and %s%s |", z.slots(), z.nodes, beds, z.jobs, z.jobSlots, z.jobFor, stop)
	}
	b.WriteString(" target or limit |\n|" + strings.Repeat(" --- |", len(probes)+2) + "\n")
	row("jobs each bed lets start at once (slotplane.max-starting-apps)", "", func(f envelopeFigures) string {
		return strconv.Itoa(cmp.Or(f.startingPerBed, queue.DefaultMaxStartingApps))
	})
	row("ghosts: the beds' creation to every ghost running", "", func(f envelopeFigures) string { return ms(f.fill) })
	row("as many plain pods, created to running", "", func(f envelopeFigures) string { return ms(f.plainFill) })
	row("ghosts against plain pods", "at most 2x", func(f envelopeFigures) string { return ratio(float64(f.plainFill), float64(f.fill)) })
	row("admission decisions: how many; p50 / p99 (the worker's histogram bucket)", "p99 under 50 ms", func(f envelopeFigures) string {
		return fmt.Sprintf("%.0f; %s / %s", f.decisions, sec(f.decisionP50), sec(f.decisionP99))
	})
	row("the same decisions' CPU time p50 / p99", "-", func(f envelopeFigures) string { return sec(f.decisionCPUP50) + " / " + sec(f.decisionCPUP99) })
	row("the fullest bed at its fullest: slots granted at once, of its slots", "", func(f envelopeFigures) string {
		return fmt.Sprintf("%d of %d", f.fullest, f.size.slots()/max(1, f.size.beds))
	})
	row("a slot freed in a full bed to its next grant: how many; p50 / p99", "", func(f envelopeFigures) string {
		if f.handOvers == 0 {
			return "none: the bed was never full"
		}
		return fmt.Sprintf("%d; %s / %s", f.handOvers, ms(f.handOverP50), ms(f.handOverP99))
	})
	row("Schedulings made to every job ended, or to the probe's stop: jobs ended", "", func(f envelopeFigures) string {
		return fmt.Sprintf("%s: %d", f.elapsed.Round(time.Second), f.ended)
	})
	row("the window: jobs started and ended in it, how long it took, jobs a second (half a start and half an end each)", "", func(f envelopeFigures) string {
		return fmt.Sprintf("%d and %d, %s, %.2f", f.windowStarts, f.windowEnds, f.windowTook.Round(time.Second), f.windowJobs/f.windowTook.Seconds())
	})
	row("the platform at rest (its floor)", "", func(f envelopeFigures) string { return fmt.Sprintf("%.2f cores", f.floor) })
	row("CPU per job in the window, the machine less kwok (the nodes' kubelets), less the floor", "at most 1.5x", func(f envelopeFigures) string {
		return against(f, ms(f.cpuPerJob), func(f envelopeFigures) float64 { return float64(f.cpuPerJob) })
	})
	row("the machine's speed in the window: the CPU time of a fixed piece of work (hashing 20 MiB, the median of one every 5 s)", "", func(f envelopeFigures) string {
		return against(f, fmt.Sprintf("%.1f ms", float64(f.workCost)/float64(time.Millisecond)), func(f envelopeFigures) float64 { return float64(f.workCost) })
	})
	// atBaseSpeed is f's CPU per job had its window run at the first column's speed.
	atBaseSpeed := func(f envelopeFigures) float64 {
		if f.workCost == 0 || base.workCost == 0 {
			return 0
		}
		return float64(f.cpuPerJob) * float64(base.workCost) / float64(f.workCost)
	}
	row("the same CPU per job at the first column's speed", "at most 1.5x", func(f envelopeFigures) string {
		if atBaseSpeed(f) == 0 {
			return "-"
		}
		return against(f, ms(time.Duration(atBaseSpeed(f))), atBaseSpeed)
	})
	row("the same by process, the floor not taken off (e2e.test: Temporal, the operators' stand-in, the test's feeds)", "", func(f envelopeFigures) string {
		parts := make([]string, len(f.cpuBy))
		for i, c := range f.cpuBy {
			parts[i] = fmt.Sprintf("%s %s", c.name, ms(c.perJob))
		}
		return strings.Join(parts, ", ")
	})
	row("API writes per job", "at most 1.5x", func(f envelopeFigures) string {
		return against(f, fmt.Sprintf("%.1f", f.writesPerJob), func(f envelopeFigures) float64 { return f.writesPerJob })
	})
	row("Admission's longest workflow task, as the server recorded it (its local activities)", "under 200 ms", func(f envelopeFigures) string {
		return fmt.Sprintf("%s (%s)", ms(f.admissionTask), strings.Join(f.admissionTaskLocal, ", "))
	})
	row("the same, as the worker's SDK measured it (bucket)", "", func(f envelopeFigures) string { return sec(f.admissionTaskSDK) })
	row("Admission's worker in the window: its niceness; its threads' time on a core; their time runnable, waiting for one", "", func(f envelopeFigures) string {
		return fmt.Sprintf("%d; %s; %s", f.admissionNiceness, ms(f.admissionSched.onCPU), ms(f.admissionSched.waited))
	})
	row("the window's time in which some task of the machine waited for a core (CPU pressure)", "", func(f envelopeFigures) string {
		if math.IsNaN(f.pressure) {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*f.pressure)
	})
	row("Admission's workflow tasks that failed or timed out", "none", func(f envelopeFigures) string { return strconv.Itoa(len(f.failedTasks)) })
	row("Admission's tasks that waited out the sticky timeout", "-", func(f envelopeFigures) string { return strconv.Itoa(f.stickyWaits) })
	row("Admission's continues-as-new refused for a signal that came meanwhile (each followed by a replay)", "-", func(f envelopeFigures) string {
		return strconv.Itoa(f.refusedEnds)
	})
	for _, kind := range []string{"TestBed", "SlotSlice", "Scheduling", "BatchJob"} {
		row("largest "+kind+" (etcd)", "1.5 MiB", func(f envelopeFigures) string { return kib(f.objects[kind]) })
	}
	row("Admission's carried state (its run input)", "2 MiB", func(f envelopeFigures) string { return kib(f.carried) })
	for _, kind := range []string{"Admission", "TestBed", "Scheduling", "BatchJob"} {
		row(kind+" workflow: most events in a run / largest event", "51,200 events / 2 MiB", func(f envelopeFigures) string {
			h := f.histories[kind]
			return fmt.Sprintf("%d / %s", h[0], kib(h[1]))
		})
	}
	kinds, procs := map[string]bool{}, map[string]uint64{}
	for _, f := range probes {
		for k := range f.feed {
			kinds[k] = k != ""
		}
		for k, v := range f.memory {
			procs[k] = max(procs[k], v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if kinds[k] {
			row("largest feed message, "+k, "", func(f envelopeFigures) string { return kib(f.feed[k]) })
		}
	}
	names := slices.Collect(maps.Keys(procs))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(procs[b], procs[a]) })
	for _, k := range names {
		row("peak memory, "+k, "", func(f envelopeFigures) string { return fmt.Sprintf("%d MiB", f.memory[k]>>20) })
	}
	return b.String()
}
