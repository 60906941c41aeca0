//go:build integration

package e2e

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apiclient"
	"slotplane/apitypes"
	sparkv1beta2 "slotplane/crds/spark/v1beta2"
	"slotplane/crds/v1alpha1"
	"slotplane/examples"
	"slotplane/internal/localplatform/standin"
)

// A queue administrator kills a running job that holds every slot, as a YARN admin kills an
// application: bob, who is neither the job's user nor an administrator, is refused with 403;
// olga, of group admins (aclAdministerApps of root), kills it. The job ends Failed with reason
// Killed and its application goes, its slots come free, and the job waiting behind it takes
// them and completes: the Scheduling goes on, and a job whose driver fails ends Failed with
// the driver's exit. Before that, alice moves her waiting job to
// another queue, and kubectl get batchjobs shows the queue each job is in.
//
// The queues are examples/fair-scheduler.xml with examples/yarn-site.xml (preemption on): the
// example files load on the platform as they are.
func TestE2E_AQueueAdminKillsARunningJobAndTheNextTakesItsSlots(t *testing.T) {
	t.Parallel() // no timing it asserts on: it may share the machine with another such test
	queues, err := examples.Files.ReadFile("fair-scheduler.xml")
	require.NoError(t, err)
	settings, err := examples.Files.ReadFile("yarn-site.xml")
	require.NoError(t, err)
	p := startE2EFiles(t, defaultBed, string(queues), string(settings))
	ctx := context.Background()
	alice := p.api
	// crash's driver fails after its second: the job fails with the driver's exit.
	for name, runFor := range map[string]string{"hog": "10m", "next": "3s", "idle": "1s", "crash": "1s"} {
		annotations := map[string]string{standin.SimDurationAnnotation: runFor}
		if name == "crash" {
			annotations[standin.SimOutcomeAnnotation] = standin.SimOutcomeFailed
		}
		_, err := alice.CreateJob(ctx, apitypes.JobRequest{Name: name, Framework: v1alpha1.FrameworkSpark, Queue: "root.analytics.adhoc",
			Application:     v1alpha1.Application{Image: "registry.example/" + name + ":1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     annotations})
		require.NoError(t, err, name)
	}
	_, err = alice.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "etl", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.analytics.adhoc",
		Jobs: []v1alpha1.SchedulingJob{{Name: "hog", Replication: p.slots}, {Name: "next", Replication: 2}, {Name: "crash", Replication: 1}}})
	require.NoError(t, err)

	var hog apitypes.Job
	require.Eventually(t, func() bool {
		hog, err = alice.GetJob(ctx, "hog")
		return err == nil && hog.Status.State == v1alpha1.JobRunning
	}, 2*time.Minute, 250*time.Millisecond, "the hog runs in every slot")
	require.Eventually(t, func() bool {
		j, err := alice.GetJob(ctx, "next")
		return err == nil && j.Status.State == v1alpha1.JobInQueue && j.Status.Queue == "root.analytics.adhoc"
	}, time.Minute, 250*time.Millisecond, "the waiting job shows placement's queue")
	require.Equal(t, "root.analytics.adhoc", hog.Status.Queue)

	// A move is written to the job, and kubectl shows it.
	moved, err := alice.MoveJob(ctx, "next", "root.analytics.daily")
	require.NoError(t, err)
	require.Equal(t, apitypes.MoveResult{Job: "next", From: "root.analytics.adhoc", To: "root.analytics.daily"}, moved)
	require.Eventually(t, func() bool {
		out := kubectl(t, p, "get", "batchjobs", "-n", "default")
		return queueColumn(out, "next") == "root.analytics.daily" && queueColumn(out, "hog") == "root.analytics.adhoc"
	}, 30*time.Second, 250*time.Millisecond, "kubectl get batchjobs shows each job's queue now")

	// Refusals that need no queue: a job that does not exist, a job in no Scheduling, a
	// reason that could forge a log line.
	for _, c := range []struct {
		job, reason string
		status      int
	}{{"no-such-job", "", 404}, {"idle", "", 409}, {"hog", "first line\nsecond line", 422}} {
		_, err = p.as(t, opsToken).KillJob(ctx, c.job, c.reason)
		var se *apiclient.StatusError
		require.True(t, errors.As(err, &se), "%s: %v", c.job, err)
		require.Equal(t, c.status, se.Status, "%s: %s", c.job, se.API.Message)
	}

	// Neither the job's user nor an administrator: refused, and nothing changes.
	_, err = p.as(t, bobToken).KillJob(ctx, "hog", "")
	var se *apiclient.StatusError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, 403, se.Status, se.API.Message)
	require.Contains(t, se.API.Message, `user "bob" may not kill job hog`)

	killed, err := p.as(t, opsToken).KillJob(ctx, "hog", "it holds the whole bed")
	require.NoError(t, err)
	require.Equal(t, apitypes.KillResult{Job: "hog", Scheduling: "etl", Queue: "root.analytics.adhoc", As: "an administrator of root.analytics.adhoc", Running: true}, killed)
	require.Eventually(t, func() bool {
		hog, err = alice.GetJob(ctx, "hog")
		return err == nil && hog.Status.State == v1alpha1.JobFailed
	}, time.Minute, 250*time.Millisecond, "the killed job ends")
	require.Equal(t, v1alpha1.ReasonKilled, hog.Status.Reason)
	require.Equal(t, "killed by olga (an administrator of root.analytics.adhoc): it holds the whole bed", hog.Status.Message)
	require.Len(t, hog.Status.History, 1)
	require.Equal(t, v1alpha1.RunFailed, hog.Status.History[0].Outcome)
	require.NotNil(t, hog.Status.Application)
	require.Eventually(t, func() bool {
		err := p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: hog.Status.Application.Name}, &sparkv1beta2.SparkApplication{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 250*time.Millisecond, "the killed job's SparkApplication is deleted")

	// The next job takes the freed slots, in its new queue, and the Scheduling completes.
	require.Eventually(t, func() bool {
		s, err := alice.GetScheduling(ctx, "etl")
		return err == nil && (s.Status.State == v1alpha1.SchedulingCompleted || s.Status.State == v1alpha1.SchedulingFailed)
	}, 2*time.Minute, 250*time.Millisecond, "the Scheduling goes on to its end")
	next, err := alice.GetJob(ctx, "next")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobCompleted, next.Status.State, next.Status.Message)
	require.Equal(t, "root.analytics.daily", next.Status.Queue)
	// The job ends when its driver does (FAILING, restart policy Never), with the driver's
	// exit; the operator's next pass writes FAILED.
	crash, err := alice.GetJob(ctx, "crash")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.JobFailed, crash.Status.State, crash.Status.Message)
	require.Contains(t, crash.Status.Message, "driver container failed with ExitCode: 1")
	require.Len(t, crash.Status.History, 1)
	require.Equal(t, v1alpha1.RunFailed, crash.Status.History[0].Outcome)
	require.NotNil(t, crash.Status.Application)
	require.Eventually(t, func() bool {
		var app sparkv1beta2.SparkApplication
		err := p.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: crash.Status.Application.Name}, &app)
		return err == nil && app.Status.AppState.State == sparkv1beta2.ApplicationStateFailed
	}, 30*time.Second, 250*time.Millisecond, "the failed job's SparkApplication ends FAILED")
	_, err = alice.KillJob(ctx, "hog", "")
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, 409, se.Status, "a run that ended cannot be killed: %s", se.API.Message)

	wide := kubectl(t, p, "get", "batchjobs", "-n", "default", "-o", "wide")
	require.Contains(t, lineOf(wide, "hog"), v1alpha1.ReasonKilled, wide)
	p.waitSlotsFree(t, time.Minute)
}

// kubectl runs the cluster's kubectl and returns what it printed.
func kubectl(t *testing.T, p *e2ePlatform, args ...string) string {
	t.Helper()
	out, err := exec.Command(p.cluster.Kubectl(), append([]string{"--kubeconfig", p.cluster.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// lineOf is the line of kubectl's table that starts with name.
func lineOf(table, name string) string {
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return line
		}
	}
	return ""
}

// queueColumn is the QUEUE column of name's row in kubectl's table ("" when absent).
func queueColumn(table, name string) string {
	lines := strings.Split(table, "\n")
	if len(lines) == 0 {
		return ""
	}
	col := slices.Index(strings.Fields(lines[0]), "QUEUE")
	f := strings.Fields(lineOf(table, name))
	if col < 0 || col >= len(f) {
		return ""
	}
	return f[col]
}
