package workflows

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/metrics"
	"slotplane/operatorapp"
)

var completed = activities.AppProgress{Outcome: operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true},
	Nodes: []string{"node-a", "node-b"}, SharedWith: []string{"pagerank"}, SharedWithMore: 2}

// Each ended run goes into the job's history with where it ran, whom it ran beside, its
// phases and its outcome; the next run of another request adds its own, and a release keeps
// them. The history is the workflow's own: an observation that lags behind the record it
// wrote last (a watch cache) does not lose it.
func TestBatchJobWorkflow_RecordsEveryRunInTheHistory(t *testing.T) {
	granted := metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	req := *request
	req.GrantedAt, req.Queue = &granted, "root.a"
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: &req}}
	recorded := metrics.NewTemporal()
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, completed, nil, recorded)
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) {
			o.Status.History = nil // a copy from before the first record
			second := req
			second.Run, second.Slots = 2, []int32{5}
			later := metav1.NewMicroTime(granted.Add(10 * time.Minute))
			second.GrantedAt = &later
			o.Request = &second
		})
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 10*time.Minute)
	env.RegisterDelayedCallback(func() {
		w.set(func(o *activities.JobObservation) { o.Holder, o.Request, o.Status.History = "", nil, nil })
		env.SignalWorkflow(BatchJobChangedSignal, nil)
	}, 20*time.Minute)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})
	require.NoError(t, env.GetWorkflowError())

	final := w.written[len(w.written)-1]
	require.Equal(t, v1alpha1.JobReady, final.State)
	require.Len(t, final.History, 2, "%+v", final.History)
	first, second := final.History[0], final.History[1]
	require.Equal(t, int32(1), first.Run)
	require.Equal(t, "nightly", first.Scheduling)
	require.Equal(t, "bed", first.TestBed)
	require.Equal(t, []int32{1, 2}, first.Slots)
	require.Equal(t, []string{"node-a", "node-b"}, first.Nodes)
	require.Equal(t, []string{"pagerank"}, first.SharedWith)
	require.Equal(t, int32(2), first.SharedWithMore)
	require.Equal(t, v1alpha1.RunCompleted, first.Outcome)
	require.True(t, first.AdmittedAt.Equal(&granted))
	require.NotNil(t, first.ApplicationCreatedAt)
	require.NotNil(t, first.RunningAt)
	require.NotNil(t, first.EndedAt)
	require.Equal(t, 30*time.Second, first.EndedAt.Sub(first.RunningAt.Time))
	require.NotNil(t, first.Wait)
	require.Equal(t, int32(2), second.Run)
	require.Equal(t, []int32{5}, second.Slots)
	require.Equal(t, 10*time.Minute, second.AdmittedAt.Sub(first.AdmittedAt.Time))
	// The metrics count each run once: its admission, its start-up, its end.
	place := map[string]string{"namespace": "ns", "testbed": "bed", "queue": "root.a"}
	require.Equal(t, 2.0, counted(t, recorded, "slotplane_admitted_jobs_total", place))
	require.Equal(t, 2.0, counted(t, recorded, "slotplane_job_startup_time_seconds", place))
	require.Equal(t, 2.0, counted(t, recorded, "slotplane_finished_jobs_total", map[string]string{"namespace": "ns", "testbed": "bed", "outcome": "Completed"}))
	// Each write of the first run's end and after carries its record once.
	for _, st := range w.written {
		seen := map[string]bool{}
		for _, r := range st.History {
			k := fmt.Sprint(r.Scheduling, r.Run)
			require.False(t, seen[k], "run %s twice in %+v", k, st.History)
			seen[k] = true
		}
	}
}

// A run its Scheduling lets go of before it ended is recorded as Released, ending when it
// was let go of.
func TestBatchJobWorkflow_AReleasedRunIsRecorded(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	recorded := metrics.NewTemporal()
	env := newJobEnv(t, w, activities.AppProgress{Placed: 2}, completed, nil, recorded)
	releaseJobAfter(env, w, 10*time.Second)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})
	require.NoError(t, env.GetWorkflowError())

	final := w.written[len(w.written)-1]
	require.Equal(t, v1alpha1.JobReady, final.State)
	require.Len(t, final.History, 1)
	r := final.History[0]
	require.Equal(t, v1alpha1.RunReleased, r.Outcome)
	require.NotNil(t, r.EndedAt)
	require.Equal(t, 10*time.Second, r.EndedAt.Sub(r.ApplicationCreatedAt.Time).Round(time.Second))
	require.Equal(t, 1.0, counted(t, recorded, "slotplane_finished_jobs_total", map[string]string{"namespace": "ns", "testbed": "bed", "outcome": "Released"}),
		"the released run is counted as such")
	require.Contains(t, r.Message, "released")
}

// An application that cannot be made is a failed run in the history.
func TestBatchJobWorkflow_AnInvalidJobsRunIsRecordedFailed(t *testing.T) {
	w := &jobWorld{obs: activities.JobObservation{Exists: true, Holder: "nightly", Request: request}}
	bad := errInvalid("test bed bed has no slot 9")
	env := newJobEnv(t, w, activities.AppProgress{}, activities.AppProgress{}, bad)
	deleteJobAfter(env, w, time.Hour)
	env.ExecuteWorkflow(BatchJobWorkflow, BatchJobInput{Namespace: "ns", Name: "wordcount"})
	require.NoError(t, env.GetWorkflowError())
	h := w.written[len(w.written)-1].History
	require.Len(t, h, 1)
	require.Equal(t, v1alpha1.RunFailed, h[0].Outcome)
	require.Contains(t, h[0].Message, "has no slot 9")
}

func errInvalid(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, activities.ErrInvalidJob, nil)
}
