package worker

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/kubeclient"
	"slotplane/internal/testobjects"
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
	admissions := []string{installation.Default.AdmissionID("a", "bed"), installation.Default.AdmissionID("b", "other")}
	others := []string{
		installation.Default.TestBedID("a", "bed"), installation.Default.TestBedID("b", "other"),
		installation.Default.SchedulingID("a", "acquiring"), installation.Default.SchedulingID("b", "scheduling"), installation.Default.SchedulingID("a", "new"),
		installation.Default.BatchJobID("a", "running"), installation.Default.BatchJobID("b", "submitted"),
		installation.Default.BatchJobID("a", "granted"), installation.Default.BatchJobID("a", "created"),
	}
	for _, c := range []struct {
		queues []string
		want   []string
	}{
		{nil, append(slices.Clone(admissions), others...)},
		{installation.Default.Queues(), append(slices.Clone(admissions), others...)},
		{[]string{installation.Default.AdmissionQueue()}, admissions},
		{[]string{installation.Default.Queue()}, others},
	} {
		ids, err := ActiveWorkflows(context.Background(), kube, installation.Default, c.queues)
		require.NoError(t, err)
		require.ElementsMatch(t, c.want, ids, "a worker of %v", c.queues)
	}
}

// A worker polls the task queues it is told, each once, and every one of them when told none.
func TestParseQueues(t *testing.T) {
	for list, want := range map[string][]string{
		"":                               installation.Default.Queues(),
		" ":                              installation.Default.Queues(),
		"slotplane":                      {installation.Default.Queue()},
		"slotplane-admission":            {installation.Default.AdmissionQueue()},
		"slotplane-admission, slotplane": {installation.Default.AdmissionQueue(), installation.Default.Queue()},
		"slotplane,slotplane-admission":  {installation.Default.Queue(), installation.Default.AdmissionQueue()},
	} {
		got, err := ParseQueues(installation.Default, list)
		require.NoError(t, err, list)
		require.Equal(t, want, got, list)
	}
	for list, msg := range map[string]string{
		"slotplane,slotplane": `task queue "slotplane" is named twice`,
		"admission":           `task queue "admission": a slotplane worker polls slotplane and slotplane-admission`,
		"slotplane,":          `task queue "": a slotplane worker polls`,
	} {
		_, err := ParseQueues(installation.Default, list)
		require.ErrorContains(t, err, msg, list)
	}
	// Another installation's worker polls its own queues, never the default ones.
	eu := installation.Names{TaskQueue: "eu"}
	got, err := ParseQueues(eu, "eu-admission")
	require.NoError(t, err)
	require.Equal(t, []string{"eu-admission"}, got)
	_, err = ParseQueues(eu, "slotplane")
	require.ErrorContains(t, err, `task queue "slotplane": a slotplane worker polls eu and eu-admission`)
}
