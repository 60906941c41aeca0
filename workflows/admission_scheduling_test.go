package workflows

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
)

// With Admission, a Scheduling claims its jobs but not the test bed, sends each job to the
// test bed's Admission workflow, starts a job in the slots a grant names, fails a job whose
// request is refused, and tells Admission when a job ends.
func TestSchedulingWorkflow_WithAdmission(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SchedulingWorkflow)
	env.RegisterActivity(&activities.Activities{})
	spec := v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "analytics", Jobs: []v1alpha1.SchedulingJob{
		{Name: "a", Replication: 2}, {Name: "b", Replication: 1},
	}}
	var mu sync.Mutex
	var admissionNudges int
	var created []v1alpha1.CreationRequest
	var released []string
	var statuses []v1alpha1.SchedulingStatus
	env.OnActivity(acts.ReadScheduling, mock.Anything, mock.Anything).Return(activities.SchedulingObservation{Exists: true, UID: "uid-nightly", Spec: spec}, nil)
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(activities.TestBedSlots{Exists: true}, nil)
	env.OnActivity(acts.ClaimJobs, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
		return activities.ClaimResult{Claimed: in.Names}, nil
	})
	env.OnActivity(acts.ReadJobs, mock.Anything, mock.Anything).Return([]activities.JobInfo{{Name: "a", Exists: true, User: "u"}, {Name: "b", Exists: true, User: "u"}}, nil)
	env.OnActivity(acts.NudgeWorkflows, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.SignalWithStartInput) error {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range in.Signals {
			reqs, err := admissionRequestsIn(n)
			if err != nil {
				return err
			}
			if n.WorkflowID == installation.Default.AdmissionID("ns", "bed") {
				admissionNudges += len(reqs)
			}
		}
		return nil
	})
	env.OnActivity(acts.RequestCreation, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RequestCreationInput) error {
		mu.Lock()
		defer mu.Unlock()
		created = append(created, in.Request)
		return nil
	})
	env.OnActivity(acts.WriteSchedulingStatus, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.WriteSchedulingStatusInput) error {
		// As the object would hold it: a delta write merged into the last status.
		var last v1alpha1.SchedulingStatus
		if n := len(statuses); n > 0 {
			last = statuses[n-1]
		}
		st, ok := activities.ApplyStatus(last, in)
		if !ok {
			return fmt.Errorf("a delta write of %d jobs does not fit a status of %d, for %d in all", len(in.Status.Jobs), len(last.Jobs), in.Status.TotalJobs)
		}
		statuses = append(statuses, st)
		return nil
	})
	env.OnActivity(acts.ReleaseJobs, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.RemoveSchedulingFinalizer, mock.Anything, mock.Anything).Return(nil)
	var started []string
	onSignals(env, map[string]func(string, any) error{
		AdmissionReleaseUpdate: func(id string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, installation.Default.AdmissionID("ns", "bed"), id)
			released = append(released, arg.(AdmissionKey).String())
			return nil
		},
		AdmissionEndedUpdate: func(id string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, installation.Default.AdmissionID("ns", "bed"), id)
			released = append(released, arg.(AdmissionKey).String())
			return nil
		},
		AdmissionStartedUpdate: func(id string, arg any) error {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, installation.Default.AdmissionID("ns", "bed"), id)
			started = append(started, arg.(AdmissionKey).Job)
			return nil
		},
	})

	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{AdmissionGrant{JobKey: jk("nightly", "b"), Refused: `user "u" may not submit to queue root.analytics`}})
		env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{AdmissionGrant{JobKey: jk("nightly", "a"), Queue: "root.analytics", Slots: []int32{4, 7}}})
		// A repeat of a's grant changes nothing; a grant of an older Scheduling of the same
		// name, and one for a job that is not waiting, are given back.
		env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{AdmissionGrant{JobKey: jk("nightly", "a"), Queue: "root.analytics", Slots: []int32{4, 7}}})
		stale := jk("nightly", "a")
		stale.SchedulingUID = "uid-of-an-older-nightly"
		env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{AdmissionGrant{JobKey: stale, Queue: "root.analytics", Slots: []int32{1}}})
		env.SignalWorkflow(AdmittedBatchSignal, []AdmissionGrant{AdmissionGrant{JobKey: jk("nightly", "b"), Queue: "root.analytics", Slots: []int32{2}}})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "a", Run: 1, State: v1alpha1.JobSubmitted, Started: true})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "a", Run: 1, State: v1alpha1.JobRunning})
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(JobProgressSignal, JobProgress{Job: "a", Run: 1, State: v1alpha1.JobCompleted})
	}, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Hour)
	env.ExecuteWorkflow(SchedulingWorkflow, SchedulingInput{Namespace: "ns", Name: "nightly"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 2, admissionNudges, "each job is sent to Admission")
	require.Len(t, created, 1)
	require.NotNil(t, created[0].GrantedAt, "the request says when the grant was taken")
	created[0].GrantedAt = nil
	require.Equal(t, []v1alpha1.CreationRequest{{Scheduling: "nightly", SchedulingUID: "uid-nightly", TestBed: "bed", Slots: []int32{4, 7}, Run: 1, Queue: "root.analytics"}}, created,
		"the request names the queue the grant placed the job in")
	require.Equal(t, []string{"nightly/uid-of-an-older-nightly/a#1", "nightly/uid-nightly/b#1", "nightly/uid-nightly/a#1"}, released,
		"the unwanted grants are given back at once, and Admission hears that a ended")
	require.Equal(t, []string{"a"}, started, "Admission hears once that a left Starting")
	var completed *v1alpha1.SchedulingStatus
	for i := range statuses {
		if statuses[i].State == v1alpha1.SchedulingCompleted {
			completed = &statuses[i]
			break
		}
	}
	require.NotNil(t, completed)
	require.Equal(t, v1alpha1.JobFailed, jobStatus(*completed, "b").State)
	require.Contains(t, jobStatus(*completed, "b").Message, "not admitted: user")
	require.Equal(t, []int32{4, 7}, jobStatus(*completed, "a").Slots)
}
