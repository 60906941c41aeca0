//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
)

// scaleSize is the scale step's size: nodes of slots per node, and jobs over Schedulings.
// make test runs the defaults; SLOTPLANE_SCALE_NODES, _SLOTS_PER_NODE, _JOBS and
// _SCHEDULINGS change them (500, 2, 4000 and 4 are the 1,000-slot bed with four Schedulings
// of 1,000 jobs each that once stopped admitting within a minute).
type scaleSize struct {
	nodes, slotsPerNode, jobs, schedulings int
}

func scaleSizeFromEnv(t *testing.T) scaleSize {
	s := scaleSize{nodes: 50, slotsPerNode: 4, jobs: 1200, schedulings: 4}
	for name, v := range map[string]*int{"NODES": &s.nodes, "SLOTS_PER_NODE": &s.slotsPerNode, "JOBS": &s.jobs, "SCHEDULINGS": &s.schedulings} {
		if e := os.Getenv("SLOTPLANE_SCALE_" + name); e != "" {
			n, err := strconv.Atoi(e)
			require.NoError(t, err, "SLOTPLANE_SCALE_"+name)
			*v = n
		}
	}
	return s
}

// The scale step: a bed of 200 slots on 50 nodes, 1,200 jobs that run for an hour, in
// four QueueBased Schedulings over ten queues of a nested allocation file, the Admission
// workflow continuing as new every 5 steps. Every slot is granted and runs a job while a
// thousand wait; the queues answer stays bounded and counts them all; no workflow task of
// Admission fails. Then the Schedulings are deleted: every job that ran ends once, no slot
// was held twice, Admission holds nothing, every ghost is back.
func TestE2E_ScaleStep(t *testing.T) {
	t.Parallel() // its checks are invariants and Admission's tasks within their timeout, not timings
	size := scaleSizeFromEnv(t)
	slots := size.nodes * size.slotsPerNode
	queues := `<allocations>`
	for i := range 2 {
		queues += fmt.Sprintf(`<queue name="team%d"><weight>%d</weight>`, i, 1+i)
		for j := range 5 {
			queues += fmt.Sprintf(`<queue name="q%d"><schedulingPolicy>%s</schedulingPolicy></queue>`, j, []string{"fifo", "fair", "drf", "fair", "fifo"}[j])
		}
		queues += `</queue>`
	}
	queues += `</allocations>`
	// Every running job's driver (100m) runs outside the bed: a plain node of 4 CPUs takes 30.
	p := startE2EWith(t, bedShape{nodes: size.nodes, plainNodes: 2 + slots/30, slotsPerNode: int32(size.slotsPerNode), cpu: "900m", memory: "3Gi",
		admissionApart: true}, queues,
		"-admission-steps-per-run", "5")
	c := p.api
	ctx := context.Background()
	p.waitSlotsFree(t, 5*time.Minute)

	w, err := c.Watch(ctx, []string{apiclient.WatchJobs}, apiclient.Position{}) // the Schedulings' states are not needed
	require.NoError(t, err)
	defer w.Close()
	ledger := followFeed(w)

	// The jobs, made eight at a time, each in a queue of its own Scheduling's team.
	start := time.Now()
	names := makeSimJobs(t, c, size.jobs, "scale", func(i int) string {
		return fmt.Sprintf("root.team%d.q%d", i%size.schedulings%2, (i/size.schedulings)%5)
	}, time.Hour)
	t.Logf("%d jobs made in %.1f s", size.jobs, time.Since(start).Seconds())

	start = time.Now()
	cpuFrom, err := sampleCPU()
	require.NoError(t, err)
	for s := range size.schedulings {
		var entries []v1alpha1.SchedulingJob
		for i := s; i < size.jobs; i += size.schedulings {
			entries = append(entries, v1alpha1.SchedulingJob{Name: names[i], Replication: 1})
		}
		_, err := c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: fmt.Sprintf("scale-%d", s), TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: entries})
		require.NoError(t, err)
	}

	// Every slot runs a job, while the rest wait in the queues.
	require.Eventually(t, func() bool { return ledger.seenRunningCount() >= slots }, 20*time.Minute, 250*time.Millisecond,
		"every slot runs a job (%d of %d seen running)", ledger.seenRunningCount(), slots)
	took := time.Since(start)
	t.Logf("%d slots running jobs %.1f s after %d Schedulings of %d jobs were made: %.1f jobs started a second",
		slots, took.Seconds(), size.schedulings, size.jobs, float64(slots)/took.Seconds())
	if cpuTo, err := sampleCPU(); err == nil {
		logCPUPerJob(t, "the scale step, to a full bed", cpuFrom, cpuTo, slots)
	}
	waiting := size.jobs - slots
	require.Eventually(t, func() bool {
		q, err := c.Queues(ctx, "bed")
		if err != nil || len(q.Queues) == 0 {
			return false
		}
		root := q.Queues[0]
		return root.RunningJobs == slots && root.WaitingJobs == waiting &&
			len(q.Waiting) == min(waiting, 500) && len(q.Waiting)+q.MoreWaiting == waiting && len(q.Running)+q.MoreRunning == slots
	}, 2*time.Minute, 500*time.Millisecond, "the queues count every job and list the first 500 of each list")

	// Admission continues as new with the jobs in hand (a resync is a step), and none of
	// its tasks fails.
	var runs, unhandled, stickyWaits int
	var failed []string
	require.Eventually(t, func() bool {
		runs, failed, unhandled, stickyWaits = admissionTasks(t, p)
		return runs > 2
	}, 5*time.Minute, 5*time.Second, "Admission continued as new")
	t.Logf("Admission ran %d runs; %d tasks took signals that came in as they completed, %d waited out the sticky timeout", runs, unhandled, stickyWaits)
	require.Empty(t, failed, "no workflow task of Admission failed")
	q, err := c.Queues(ctx, "bed")
	require.NoError(t, err)
	require.Equal(t, waiting, q.Queues[0].WaitingJobs, "the jobs waiting went across continue-as-new")
	require.Equal(t, slots, q.Queues[0].RunningJobs, "the jobs running went across continue-as-new")

	// The Schedulings go: their running jobs are stopped, the waiting ones withdrawn.
	for s := range size.schedulings {
		_, err := c.DeleteScheduling(ctx, fmt.Sprintf("scale-%d", s), "")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		q, err := c.Queues(ctx, "bed")
		return err == nil && len(q.Queues) > 0 && q.Queues[0].RunningJobs == 0 && q.Queues[0].WaitingJobs == 0
	}, 10*time.Minute, time.Second, "Admission still holds jobs")
	p.waitSlotsFree(t, 10*time.Minute)
	ledger.check(t)
	for _, name := range names {
		if !ledger.seenRunning(name) {
			continue
		}
		j, err := c.GetJob(ctx, name)
		require.NoError(t, err)
		require.NotEqual(t, v1alpha1.JobRunning, j.Status.State, name)
		require.Len(t, j.Status.History, 1, "%s ran once", name)
	}
	_, failed, _, _ = admissionTasks(t, p)
	require.Empty(t, failed, "no workflow task of Admission failed")
}

// admissionTasks counts the Admission workflow's runs and lists its workflow tasks that
// failed or timed out, over its chain of continue-as-new. Two of Temporal's normal
// hand-overs are counted apart: a task the server refused to complete because signals came
// in meanwhile (cause UnhandledCommand: the worker takes them in and completes it on the
// next try), and a task no poll took from the worker's sticky queue within
// worker.StickyTimeout (a schedule-to-start timeout: the server gives it to any worker,
// which replays the run first). A task a worker started and did not complete within the
// task timeout is a failure.
func admissionTasks(t *testing.T, p *e2ePlatform) (runs int, failed []string, unhandled, stickyWaits int) {
	t.Helper()
	id := installation.Default.AdmissionID("default", "bed")
	for run := ""; ; {
		runs++
		it := p.temporal.GetWorkflowHistory(context.Background(), id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		previous := ""
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			switch failure, u, sticky := taskOutcome(ev); {
			case u:
				unhandled++
			case sticky:
				stickyWaits++
			case failure != "":
				failed = append(failed, failure)
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				previous = a.GetContinuedExecutionRunId()
			}
		}
		if previous == "" {
			return runs, failed, unhandled, stickyWaits
		}
		run = previous
	}
}

// taskOutcome reads one event of a workflow's history as admissionTasks counts it: failure
// describes a workflow task that failed or that a worker started and did not complete in
// time; unhandled and sticky are Temporal's two hand-overs. Any other event is none of them.
func taskOutcome(ev *historypb.HistoryEvent) (failure string, unhandled, sticky bool) {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
		a := ev.GetWorkflowTaskFailedEventAttributes()
		if a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND {
			return "", true, false
		}
		return fmt.Sprintf("%s: %s", a.GetCause(), a.GetFailure().GetMessage()), false, false
	case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
		if ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
			return "", false, true
		}
		return "timed out", false, false
	}
	return "", false, false
}
