//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/standin"
)

// traceQueues is the allocation file of the trace test: two FIFO leaves of weights 2 and 1
// under a fair root, and a gate queue for the job that holds the bed while the others are
// submitted. maxAMShare keeps its default.
const traceQueues = `<allocations>
  <queue name="a"><weight>2</weight><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="b"><weight>1</weight><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queue name="gate"><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`

// traceJob is one job of the trace: its queue, its slots and how long it runs.
type traceJob struct {
	name, queue string
	slots       int
	runtime     time.Duration
}

// The same 50-job trace, with fixed durations, through `slotplane simulate` and through the
// live platform starts its jobs in the same order.
//
// The trace: a gate job holds all 32 slots while the 50 are submitted, so both see all of
// them waiting when the slots free up (live, requests reach Admission one signal at a time).
// Then jobs of one to three slots, of 16 s each, in two weighted FIFO queues, in one
// Scheduling. Every job runs as long, so the jobs go in waves, and in the simulator the jobs
// of a wave start at the same instant. Live, a wave's jobs start within a few seconds of each
// other, in an order the simulator leaves open; what must hold is that no job starts before a
// job the simulator started earlier.
//
// The bed is 32 small slots, so the 50 jobs take about four waves. Each hand-over between
// jobs costs the live platform a few seconds, give or take one or two, and those add up
// along each slot: on 8 slots (eight waves) the last waves blurred into each other and a
// strict head's slots came free in another order than the simulator's. On 32 slots with
// 12 s jobs, a wave's starts spread over 6 to 14 s (the platform creates a wave's
// applications one after another) and the last two waves were 3 s apart; 16 s jobs leave
// about 7 s.
func TestE2E_TraceStartsInTheSimulatorsOrder(t *testing.T) {
	const runtime = 16 * time.Second
	var jobs []traceJob
	for i := range 50 {
		q, slots := "root.a", 1+i%3
		if i%3 == 1 {
			q = "root.b"
		}
		jobs = append(jobs, traceJob{name: fmt.Sprintf("t-%02d", i), queue: q, slots: slots, runtime: runtime})
	}
	gate := traceJob{name: "gate", queue: "root.gate", slots: 32, runtime: 20 * time.Second}

	predicted := simulateTrace(t, gate, jobs)

	p := startE2EWith(t, bedShape{slotsPerNode: 8, cpu: "500m", memory: "2Gi"}, traceQueues)
	c := p.api
	ctx := context.Background()
	for _, j := range append([]traceJob{gate}, jobs...) {
		_, err := c.CreateJob(ctx, apitypes.JobRequest{Name: j.name, Framework: v1alpha1.FrameworkSpark, Queue: j.queue,
			Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: j.runtime.String()}})
		require.NoError(t, err, j.name)
	}
	_, err := c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "gate", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.gate",
		Jobs: []v1alpha1.SchedulingJob{{Name: gate.name, Replication: int32(gate.slots)}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, err := c.GetJob(ctx, gate.name)
		return err == nil && (j.Status.State == v1alpha1.JobSubmitted || j.Status.State == v1alpha1.JobRunning)
	}, time.Minute, 100*time.Millisecond, "the gate job never started")

	var entries []v1alpha1.SchedulingJob
	for _, j := range jobs {
		entries = append(entries, v1alpha1.SchedulingJob{Name: j.name, Replication: int32(j.slots)})
	}
	_, err = c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "trace", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.a", Jobs: entries})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		q, err := c.Queues(ctx, "bed")
		return err == nil && len(q.Waiting) == len(jobs)
	}, 15*time.Second, 100*time.Millisecond, "the trace's jobs did not all reach Admission while the gate job held the bed")
	// What a Prometheus sees of it: the waiting jobs by queue, the gate holding the bed.
	w := p.scrape(t, "worker")
	pending := map[string]float64{}
	for _, q := range []string{"root.a", "root.b", "root.gate"} {
		pending[q] = w.need(t, "worker", "slotplane_queue_pending_jobs", map[string]string{"testbed": "bed", "queue": q})
	}
	require.Equal(t, map[string]float64{"root.a": 33, "root.b": 17, "root.gate": 0}, pending, "slotplane_queue_pending_jobs while the gate job holds the bed")
	require.Equal(t, 1.0, w.need(t, "worker", "slotplane_queue_admitted_jobs", map[string]string{"testbed": "bed", "queue": "root.gate"}))
	require.Eventually(t, func() bool {
		u, _ := p.scrape(t, "worker").sum("slotplane_testbed_slot_utilization", map[string]string{"testbed": "bed"})
		return u == 1
	}, 30*time.Second, 500*time.Millisecond, "slotplane_testbed_slot_utilization never showed the gate job's 32 slots taken")
	gateJob, err := c.GetJob(ctx, gate.name)
	require.NoError(t, err)
	require.NotContains(t, []v1alpha1.BatchJobState{v1alpha1.JobCompleted, v1alpha1.JobFailed}, gateJob.Status.State,
		"the gate job ended before every job was waiting: the live run would not start from the simulator's state")

	var s apitypes.Scheduling
	require.Eventually(t, func() bool {
		s, err = c.GetScheduling(ctx, "trace")
		return err == nil && (s.Status.State == v1alpha1.SchedulingCompleted || s.Status.State == v1alpha1.SchedulingFailed)
	}, 10*time.Minute, time.Second, "the trace's Scheduling never ended")
	require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, s.Status.Message)

	// Live, a job starts when its Scheduling gets its grant: its wait time (whole seconds).
	started := map[string]time.Duration{}
	for _, js := range s.Status.Jobs {
		require.Equal(t, v1alpha1.JobCompleted, js.State, "%s: %s", js.Name, js.Message)
		require.NotNil(t, js.WaitTime, js.Name)
		started[js.Name] = js.WaitTime.Duration
	}
	var wrong []string
	for _, x := range jobs {
		for _, y := range jobs {
			if predicted[x.name] < predicted[y.name] && started[x.name] > started[y.name] {
				wrong = append(wrong, fmt.Sprintf("%s (simulated %s, live %s) before %s (simulated %s, live %s)",
					y.name, predicted[y.name], started[y.name], x.name, predicted[x.name], started[x.name]))
			}
		}
	}
	t.Logf("start of each job, simulated / live:\n%s", startTable(jobs, predicted, started))
	require.Empty(t, wrong, "live, these jobs started before jobs the simulator started first")

	// Every component's metrics tell the same run.
	requireMetricsAfterRun(t, p, len(jobs)+1, 32)
}

// simulateTrace writes the trace as a CSV and runs `slotplane simulate` on it (gang mode, no
// start-up time, 4 nodes of 8 slots); it returns when each job started. The gate job is
// submitted first; the others a second later. The trace's drivers (512 mb and no whole
// vcore: the trace format counts whole vcores, the live ones take 100m) and slots (a vcore
// where the live ones have half) differ from the live ones only where no limit is near:
// the queues' shares are counted in slots either way, and the drivers stay far below
// maxAMShare.
func simulateTrace(t *testing.T, gate traceJob, jobs []traceJob) map[string]time.Duration {
	t.Helper()
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("submit,name,queue,user,groups,driver,executors,runtime\n")
	row := func(submit time.Duration, j traceJob) {
		fmt.Fprintf(&csv, "%s,%s,%s,alice,analysts,\"512 mb, 0 vcores\",%d,%s\n", submit, j.name, strings.TrimPrefix(j.queue, "root."), j.slots, j.runtime)
	}
	row(0, gate)
	for _, j := range jobs {
		row(time.Second, j)
	}
	trace, queues := filepath.Join(dir, "trace.csv"), filepath.Join(dir, "queues.xml")
	require.NoError(t, os.WriteFile(trace, []byte(csv.String()), 0o600))
	require.NoError(t, os.WriteFile(queues, []byte(traceQueues), 0o600))
	out, err := exec.Command(binary, "simulate", "-trace", trace, "-allocations", queues, "-nodes", "4", "-slots-per-node", "8",
		"-slot-size", "2048 mb, 1 vcores", "-startup", "0s", "-o", "json").Output()
	require.NoError(t, err, "slotplane simulate: %s", out)
	var res struct {
		Done        int `json:"done"`
		JobOutcomes []struct {
			Name         string   `json:"name"`
			StartSeconds *float64 `json:"startSeconds"`
		} `json:"jobOutcomes"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, len(jobs)+1, res.Done, "the simulator ran every job")
	started := map[string]time.Duration{}
	for _, o := range res.JobOutcomes {
		require.NotNil(t, o.StartSeconds, o.Name)
		started[o.Name] = time.Duration(*o.StartSeconds * float64(time.Second))
	}
	return started
}

func startTable(jobs []traceJob, predicted, started map[string]time.Duration) string {
	var b strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&b, "  %s %s %d slots: %6s / %6s\n", j.name, j.queue, j.slots, predicted[j.name], started[j.name])
	}
	return b.String()
}
