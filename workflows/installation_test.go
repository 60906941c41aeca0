package workflows

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
)

// A Scheduling that runs in an installation of its own names that installation's workflows
// only, and starts them on its task queues: its Admission, its jobs' workflows.
func TestSchedulingWorkflow_StaysInItsInstallation(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SchedulingWorkflow)
	env.RegisterActivity(&activities.Activities{})
	eu := installation.Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: eu.SchedulingID("ns", "nightly"), TaskQueue: eu.Queue()})
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "analytics", Jobs: []v1alpha1.SchedulingJob{{Name: "a", Replication: 1}}}
	env.OnActivity(acts.ReadScheduling, mock.Anything, mock.Anything).Return(activities.SchedulingObservation{Exists: true, UID: "uid", Spec: spec}, nil)
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(activities.TestBedSlots{Exists: true}, nil)
	env.OnActivity(acts.ClaimJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
		return activities.ClaimResult{Claimed: in.Names}, nil
	})
	env.OnActivity(acts.ReadJobs, mock.Anything, mock.Anything).Return([]activities.JobInfo{{Name: "a", Exists: true, User: "u"}}, nil)
	var mu sync.Mutex
	started := map[string]string{} // workflow id: the task queue it would start on
	env.OnActivity(acts.NudgeWorkflows, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SignalWithStartInput) error {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range in.Signals {
			started[n.WorkflowID] = n.TaskQueue
			if n.TaskQueue == "" {
				started[n.WorkflowID] = in.TaskQueue
			}
		}
		return nil
	})
	env.OnActivity(acts.RequestCreation, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.WriteSchedulingStatus, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.ReleaseJobs, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.RemoveSchedulingFinalizer, mock.Anything, mock.Anything).Return(nil)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, "eu-admission", started["eu-1/admission/ns/bed"], "Admission of the installation, on its queue: %v", started)
	require.Equal(t, "eu", started["eu-1/batchjob/ns/a"], "the job's workflow, on the installation's queue: %v", started)
	for id, queue := range started {
		require.True(t, strings.HasPrefix(id, "eu-1/"), "%s is not the installation's", id)
		require.True(t, strings.HasPrefix(queue, "eu"), "%s would start on %s", id, queue)
	}
}

// Each kind of workflow reads its installation off its own run: the Admission from its
// queue with the suffix off, every kind from the id its front door gave it.
func TestInstallationOf_ReadsTheRun(t *testing.T) {
	eu := installation.Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	for _, c := range []struct {
		id, queue string
		own       string
		admission bool
	}{
		{eu.AdmissionID("ns", "bed"), eu.AdmissionQueue(), installation.Default.AdmissionID("ns", "bed"), true},
		{eu.BatchJobID("ns", "a"), eu.Queue(), installation.Default.BatchJobID("ns", "a"), false},
		{installation.Default.TestBedID("ns", "bed"), installation.Default.Queue(), installation.Default.TestBedID("ns", "bed"), false},
		{installation.Default.AdmissionID("ns", "bed"), installation.Default.AdmissionQueue(), installation.Default.AdmissionID("ns", "bed"), true},
	} {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (installation.Names, error) {
			return installationOf(ctx, c.own, c.admission), nil
		}, workflow.RegisterOptions{Name: "probe"})
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: c.id, TaskQueue: c.queue})
		env.ExecuteWorkflow("probe")
		require.NoError(t, env.GetWorkflowError())
		var got installation.Names
		require.NoError(t, env.GetWorkflowResult(&got))
		want := eu
		if !strings.HasPrefix(c.id, "eu-1/") {
			want = installation.Names{TaskQueue: installation.DefaultTaskQueue}
		}
		require.Equal(t, want, got, c.id)
	}
}
