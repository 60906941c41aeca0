package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/operatorapp"
)

func killBy(scheduling string) *v1alpha1.KillRequest {
	return &v1alpha1.KillRequest{Scheduling: scheduling, By: "carol", As: "an administrator of root.a", Reason: "runaway"}
}

// A kill of a running job deletes its application and ends it Failed, reason Killed; the run
// is recorded; Admission hears of the end (after the status says so) and the Scheduling hears
// a failure. Later nudges change nothing.
func TestBatchJobWorkflow_AKillEndsTheRunningJobKilled(t *testing.T) {
	req := *request
	req.SchedulingUID = "uid-nightly"
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Kill = killBy("nightly") })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(BatchJobChangedSignal, nil) }, 20*time.Second)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobSubmitted, v1alpha1.JobRunning, v1alpha1.JobFailed}, states(w))
	final := w.written[2]
	require.Equal(t, v1alpha1.ReasonKilled, final.Reason)
	require.Equal(t, "killed by carol (an administrator of root.a): runaway", final.Message)
	require.NotNil(t, final.FinishedAt)
	require.Len(t, final.History, 1)
	require.Equal(t, v1alpha1.RunFailed, final.History[0].Outcome)
	require.Equal(t, []string{operatorapp.Name("wordcount", "nightly", 1)}, w.deleted[:1], "the kill deletes the application")
	require.Len(t, w.reported, 3)
	require.Equal(t, JobProgress{Job: "wordcount", Run: 1, State: v1alpha1.JobFailed, Message: final.Message,
		SubmittedAt: final.SubmittedAt.Time, RunningAt: final.RunningAt.Time, FinishedAt: final.FinishedAt.Time, AdmissionTold: true}, w.reported[2],
		"Admission heard of the end from the job: the Scheduling need not tell it")
	require.Equal(t, []string{installation.Default.AdmissionID("ns", "bed") + " nightly/uid-nightly/wordcount#1"}, w.admissionReleases)
}

// A kill of a job that still waits in its queue ends it Failed, reason Killed, with no run
// (the Scheduling withdraws it from Admission); a creation request that comes after all (the
// grant crossed the kill) is not carried out: that run is killed too and Admission hears its
// end, so its slots go on.
func TestBatchJobWorkflow_AKillOfAWaitingJobAlsoKillsAGrantThatCrossedIt(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Kill: killBy("nightly")}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}}, nil)
	req := *request
	req.SchedulingUID = "uid-nightly"
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Request = &req })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 10*time.Second)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobFailed, v1alpha1.JobFailed}, states(w))
	require.Equal(t, int32(0), w.written[0].Run)
	require.Equal(t, v1alpha1.ReasonKilled, w.written[0].Reason)
	require.Empty(t, w.written[0].History, "a job that never ran has no run to record")
	require.Equal(t, int32(1), w.written[1].Run)
	require.Len(t, w.written[1].History, 1)
	require.Empty(t, w.deleted, "no application was ever made")
	require.Len(t, w.reported, 2)
	require.Equal(t, int32(0), w.reported[0].Run)
	require.Equal(t, int32(1), w.reported[1].Run)
	require.Equal(t, []string{installation.Default.AdmissionID("ns", "bed") + " nightly/uid-nightly/wordcount#1"}, w.admissionReleases)
}

// A kill that names another Scheduling (an earlier holder's) does nothing, and a kill that
// comes in across a continue-as-new is carried out by the next run.
func TestBatchJobWorkflow_AKillOfAnotherSchedulingIsNoneAndOneAcrossContinueAsNewHolds(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly"}}
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, activities.AppProgress{}, nil)
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Kill = killBy("weekly") })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Kill = killBy("nightly") })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 20*time.Second)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount", StepsPerRun: 2})
	in := continuedWith[BatchJobInput](t, env)
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobInQueue}, states(w), "the other Scheduling's kill changed nothing")

	w2 := &jobWorld{obs: w.obs}
	env2 := newJobEnv(t, w2, activities.AppProgress{Placed: 2}, activities.AppProgress{}, nil)
	deleteJobAfter(env2, w2, time.Hour)
	in.StepsPerRun = 10
	env2.ExecuteWorkflow(BatchJobWorkflow, in)
	require.NoError(t, env2.GetWorkflowError())
	require.Equal(t, []v1alpha1.BatchJobState{v1alpha1.JobFailed}, states(w2))
	require.Equal(t, v1alpha1.ReasonKilled, w2.written[0].Reason)
}
