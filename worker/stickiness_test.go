package worker

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
	"slotplane/workflows"
)

// The workflows a dead worker may have held: every test bed's two (each on its own queue),
// the Schedulings that still run, and the jobs with a run under way, in every namespace; not
// the jobs that wait, rest or ended, nor the Schedulings that ended (completed, failed or
// cancelled).
func TestActiveWorkflows(t *testing.T) {
	job := func(ns, name string, st v1alpha1.BatchJobState, requested, app bool) client.Object {
		j := testobjects.BatchJob(name).Namespace(ns).Obj()
		j.Status.State = st
		if requested {
			j.Annotations = map[string]string{v1alpha1.CreationRequestAnnotation: "{}"}
		}
		if app {
			j.Status.Application = &v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: name + "-1"}
		}
		return j
	}
	scheduling := func(ns, name string, st v1alpha1.SchedulingState) client.Object {
		s := testobjects.Scheduling(name).Namespace(ns).Obj()
		s.Status.State = st
		return s
	}
	objs := []client.Object{
		testobjects.TestBed("bed").Namespace("a").Obj(),
		testobjects.TestBed("other").Namespace("b").Obj(),
		scheduling("a", "acquiring", v1alpha1.SchedulingAcquiring),
		scheduling("b", "scheduling", v1alpha1.SchedulingScheduling),
		scheduling("a", "new", ""),
		scheduling("a", "done", v1alpha1.SchedulingCompleted),
		scheduling("a", "failed", v1alpha1.SchedulingFailed),
		scheduling("b", "cancelled", v1alpha1.SchedulingCancelled),
		job("a", "running", v1alpha1.JobRunning, true, true),
		job("b", "submitted", v1alpha1.JobSubmitted, true, true),
		job("a", "granted", v1alpha1.JobInQueue, true, false),
		job("a", "created", v1alpha1.JobInQueue, false, true),
		job("a", "waiting", v1alpha1.JobInQueue, false, false),
		job("a", "resting", v1alpha1.JobReady, false, false),
		job("a", "completed", v1alpha1.JobCompleted, true, true),
		job("b", "failed", v1alpha1.JobFailed, false, true),
	}
	kube := fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).WithObjects(objs...).WithStatusSubresource().Build()
	admissions := []string{workflows.Default.AdmissionID("a", "bed"), workflows.Default.AdmissionID("b", "other")}
	others := []string{
		workflows.Default.TestBedID("a", "bed"), workflows.Default.TestBedID("b", "other"),
		workflows.Default.SchedulingID("a", "acquiring"), workflows.Default.SchedulingID("b", "scheduling"), workflows.Default.SchedulingID("a", "new"),
		workflows.Default.BatchJobID("a", "running"), workflows.Default.BatchJobID("b", "submitted"),
		workflows.Default.BatchJobID("a", "granted"), workflows.Default.BatchJobID("a", "created"),
	}
	for _, c := range []struct {
		queues []string
		want   []string
	}{
		{nil, append(slices.Clone(admissions), others...)},
		{workflows.Default.Queues(), append(slices.Clone(admissions), others...)},
		{[]string{workflows.Default.AdmissionQueue()}, admissions},
		{[]string{workflows.Default.Queue()}, others},
	} {
		ids, err := ActiveWorkflows(context.Background(), kube, workflows.Default, c.queues)
		require.NoError(t, err)
		require.ElementsMatch(t, c.want, ids, "a worker of %v", c.queues)
	}
}

// A worker polls the task queues it is told, each once, and every one of them when told none.
func TestParseQueues(t *testing.T) {
	for list, want := range map[string][]string{
		"":                               workflows.Default.Queues(),
		" ":                              workflows.Default.Queues(),
		"slotplane":                      {workflows.Default.Queue()},
		"slotplane-admission":            {workflows.Default.AdmissionQueue()},
		"slotplane-admission, slotplane": {workflows.Default.AdmissionQueue(), workflows.Default.Queue()},
		"slotplane,slotplane-admission":  {workflows.Default.Queue(), workflows.Default.AdmissionQueue()},
	} {
		got, err := ParseQueues(workflows.Default, list)
		require.NoError(t, err, list)
		require.Equal(t, want, got, list)
	}
	for list, msg := range map[string]string{
		"slotplane,slotplane": `task queue "slotplane" is named twice`,
		"admission":           `task queue "admission": a slotplane worker polls slotplane and slotplane-admission`,
		"slotplane,":          `task queue "": a slotplane worker polls`,
	} {
		_, err := ParseQueues(workflows.Default, list)
		require.ErrorContains(t, err, msg, list)
	}
	// Another installation's worker polls its own queues, never the default ones.
	eu := workflows.Installation{TaskQueue: "eu"}
	got, err := ParseQueues(eu, "eu-admission")
	require.NoError(t, err)
	require.Equal(t, []string{"eu-admission"}, got)
	_, err = ParseQueues(eu, "slotplane")
	require.ErrorContains(t, err, `task queue "slotplane": a slotplane worker polls eu and eu-admission`)
}
