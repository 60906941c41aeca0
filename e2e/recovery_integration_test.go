//go:build integration

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/standin"
)

// An operator terminates, through the Temporal client as the Web UI does, the workflow of a
// running job and that of its test bed. The bridge starts both again; the job's fresh run
// finds its application and goes on: the job ends Completed once, its Scheduling completes,
// and every slot is free with its ghost again.
func TestE2E_TerminatedJobAndTestBedWorkflowsComeBack(t *testing.T) {
	t.Parallel() // no timing it asserts on
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	ctx := context.Background()
	p.createBatchJob(t, "steady", "20s")
	_, err := p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "steady", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch",
		Jobs: []v1alpha1.SchedulingJob{{Name: "steady", Replication: 2}}})
	require.NoError(t, err)
	p.waitJob(t, "steady", v1alpha1.JobRunning, 2*time.Minute)

	p.terminateAndAwaitNewRuns(t, installation.Default.BatchJobID("default", "steady"), installation.Default.TestBedID("default", "bed"))

	p.waitScheduling(t, "steady", v1alpha1.SchedulingCompleted, 2*time.Minute)
	j, err := p.api.GetJob(ctx, "steady")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s", j.Status.Message)
	require.EqualValues(t, 1, j.Status.Run, "the job ran more than once")
	ended := 0
	for _, h := range j.Status.History {
		if h.Outcome != "" {
			ended++
		}
	}
	require.LessOrEqual(t, ended, 1, "the run ended more than once: %+v", j.Status.History)
	p.waitSlotsFree(t, time.Minute)
}

// An operator terminates a running Scheduling's workflow and its test bed's Admission
// workflow while two jobs run in all eight slots and a third waits. The bridge starts both
// again: Admission takes in the two grants from the jobs' creation requests, so the third
// starts only once one of them ends; the Scheduling takes up its jobs' runs rather than
// asking for them again. Every job ends Completed once, no slot is held twice or stays held,
// and a Scheduling made again under the deleted one's name starts fresh and runs its job.
func TestE2E_TerminatedSchedulingAndAdmissionWorkflowsComeBack(t *testing.T) {
	t.Parallel() // no timing it asserts on
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`)
	ctx := context.Background()
	p.createBatchJob(t, "first", "25s")
	p.createBatchJob(t, "second", "30s")
	p.createBatchJob(t, "third", "4s")
	_, err := p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "nightly", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch",
		Jobs: []v1alpha1.SchedulingJob{{Name: "first", Replication: 4}, {Name: "second", Replication: 4}, {Name: "third", Replication: 4}}})
	require.NoError(t, err)
	p.waitJob(t, "first", v1alpha1.JobRunning, 2*time.Minute)
	p.waitJob(t, "second", v1alpha1.JobRunning, time.Minute)
	third, err := p.api.GetJob(ctx, "third")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobInQueue, third.Status.State, "third waits: the bed is full")

	p.terminateAndAwaitNewRuns(t, installation.Default.SchedulingID("default", "nightly"), installation.Default.AdmissionID("default", "bed"))

	p.waitScheduling(t, "nightly", v1alpha1.SchedulingCompleted, 3*time.Minute)
	ended := map[string]v1alpha1.BatchJobStatus{}
	for _, name := range []string{"first", "second", "third"} {
		j, err := p.api.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.EqualValues(t, 1, j.Status.Run, "%s ran more than once", name)
		require.NotNil(t, j.Status.SubmittedAt, name)
		require.NotNil(t, j.Status.FinishedAt, name)
		require.Len(t, j.Status.History, 1, "%s has ended runs besides its own: %+v", name, j.Status.History)
		ended[name] = j.Status
	}
	firstEnd := ended["first"].FinishedAt.Time
	if e := ended["second"].FinishedAt.Time; e.Before(firstEnd) {
		firstEnd = e
	}
	require.False(t, ended["third"].SubmittedAt.Time.Before(firstEnd.Truncate(time.Second)),
		"third was started at %s, before a slot came free at %s: a slot was granted twice", ended["third"].SubmittedAt, firstEnd)
	p.waitSlotsFree(t, time.Minute)

	// Made again under its name, the Scheduling is a new one: it runs its job again.
	s, err := p.api.GetScheduling(ctx, "nightly")
	require.NoError(t, err)
	_, err = p.api.DeleteScheduling(ctx, "nightly", s.ResourceVersion)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := p.api.GetScheduling(ctx, "nightly")
		return err != nil
	}, time.Minute, 250*time.Millisecond, "the scheduling was never deleted")
	p.waitJob(t, "third", v1alpha1.JobReady, time.Minute)
	_, err = p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "nightly", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch",
		Jobs: []v1alpha1.SchedulingJob{{Name: "third", Replication: 2}}})
	require.NoError(t, err)
	p.waitScheduling(t, "nightly", v1alpha1.SchedulingCompleted, 2*time.Minute)
	again, err := p.api.GetJob(ctx, "third")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobCompleted, again.Status.State, again.Status.Message)
	require.Len(t, again.Status.Slots, 2, "the run of the new Scheduling, not the old one's")
	p.waitSlotsFree(t, time.Minute)
}

// createBatchJob submits, through the API, a Spark job in root.batch with a small driver
// that the operators' stand-in runs for runFor.
func (p *e2ePlatform) createBatchJob(t *testing.T, name, runFor string) {
	t.Helper()
	_, err := p.api.CreateJob(context.Background(), apitypes.JobRequest{Name: name, Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
		Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
		DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Annotations:     map[string]string{standin.SimDurationAnnotation: runFor}})
	require.NoError(t, err)
}

// terminateAndAwaitNewRuns terminates the workflows ids through the Temporal client, as an
// operator does from the Web UI, and waits until each runs again in a new run.
func (p *e2ePlatform) terminateAndAwaitNewRuns(t *testing.T, ids ...string) {
	t.Helper()
	ctx := context.Background()
	before := map[string]string{}
	for _, id := range ids {
		d, err := p.temporal.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		before[id] = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		require.NoError(t, p.temporal.TerminateWorkflow(ctx, id, "", "an operator, from the Web UI"))
	}
	for _, id := range ids {
		require.Eventually(t, func() bool {
			d, err := p.temporal.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return false
			}
			info := d.GetWorkflowExecutionInfo()
			return info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && info.GetExecution().GetRunId() != before[id]
		}, 30*time.Second, 250*time.Millisecond, "%s did not come back", id)
	}
}
