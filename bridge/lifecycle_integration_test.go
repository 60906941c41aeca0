//go:build integration

package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	temporalclient "go.temporal.io/sdk/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/testobjects"
)

// platform is everything `slotplane dev` runs, started for one test.
type platform struct {
	cluster  *localcluster.Cluster
	client   client.Client
	temporal temporalclient.Client
	restart  func() // stops the worker and starts a new one
}

// bedShape is the test bed a platform starts with: slots per node (of 4 nodes) and their size.
type bedShape struct {
	slotsPerNode int32
	cpu, memory  string
}

// startPlatform starts the platform with a bed of 8 slots of 2 cpu and 8Gi.
func startPlatform(t *testing.T) *platform {
	t.Helper()
	return startPlatformWith(t, bedShape{slotsPerNode: 2, cpu: "2", memory: "8Gi"})
}

func startPlatformWith(t *testing.T, bed bedShape) *platform {
	t.Helper()
	p := platformtest.Start(t, platformtest.Bed{SlotsPerNode: bed.slotsPerNode, CPU: bed.cpu, Memory: bed.memory})
	return &platform{cluster: p.Cluster, client: p.Client, temporal: p.Temporal, restart: p.Restart}
}

func (p *platform) scheduling(t *testing.T, name string) *v1alpha1.Scheduling {
	t.Helper()
	var s v1alpha1.Scheduling
	require.NoError(t, p.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &s))
	return &s
}

// waitScheduling waits for a Scheduling state, logging its jobs when it does not come.
func (p *platform) waitScheduling(t *testing.T, name string, want v1alpha1.SchedulingState, within time.Duration) *v1alpha1.Scheduling {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := p.scheduling(t, name)
		if s.Status.State == want {
			return s
		}
		if time.Now().After(deadline) {
			for _, j := range s.Status.Jobs {
				t.Logf("job %s: %s %v %s", j.Name, j.State, j.Slots, j.Message)
			}
			t.Fatalf("scheduling %s is %s (%s), want %s", name, s.Status.State, s.Status.Message, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (p *platform) batchJob(t *testing.T, name string) *v1alpha1.BatchJob {
	t.Helper()
	var j v1alpha1.BatchJob
	require.NoError(t, p.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &j))
	return &j
}

// kubectl apply of BatchJobs and a QueueBased Scheduling runs every job in slots of the test
// bed, one Spark and one Flink job side by side and the third when slots free up, through a
// worker restart; deleting the Scheduling releases the jobs; a SlotBased Scheduling then
// runs them again in the slots it names.
func TestLifecycle_SchedulingsRunSparkAndFlinkJobsInTheirSlots(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	for _, j := range []*v1alpha1.BatchJob{
		testobjects.BatchJob("wordcount").RunFor("4s").Obj(),
		testobjects.BatchJob("clicks").Flink().RunFor("6s").Obj(),
		testobjects.BatchJob("report").RunFor("2s").Obj(),
	} {
		require.NoError(t, p.client.Create(ctx, j))
	}
	queue := testobjects.Scheduling("nightly").Job("wordcount", 3).Job("clicks", 2).Job("report", 4).Obj()
	require.NoError(t, p.client.Create(ctx, queue))

	// The first two fit in 8 slots together; report (4) waits for one of them.
	require.Eventually(t, func() bool {
		return p.batchJob(t, "wordcount").Status.State == v1alpha1.JobRunning && p.batchJob(t, "clicks").Status.State == v1alpha1.JobRunning
	}, time.Minute, 250*time.Millisecond, "wordcount and clicks run side by side")
	require.Equal(t, v1alpha1.JobInQueue, p.batchJob(t, "report").Status.State)
	p.restart()

	done := p.waitScheduling(t, "nightly", v1alpha1.SchedulingCompleted, 3*time.Minute)
	require.Equal(t, int32(3), done.Status.FinishedJobs)
	seen := map[int32]string{}
	for _, name := range []string{"wordcount", "clicks", "report"} {
		j := p.batchJob(t, name)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.NotNil(t, j.Status.SubmittedAt)
		require.NotNil(t, j.Status.FinishedAt)
		require.NotNil(t, j.Status.Application)
		if name != "report" {
			for _, s := range j.Status.Slots {
				require.NotContains(t, seen, s, "slot %d given to %s and %s at once", s, seen[s], name)
				seen[s] = name
			}
		}
	}
	report := jobStatusOf(done, "report")
	require.Len(t, report.Slots, 4)
	require.Positive(t, report.WaitTime.Duration, "report waited for slots")

	// Deleting the Scheduling releases its jobs: Ready again, applications gone.
	require.NoError(t, p.client.Delete(ctx, queue))
	require.Eventually(t, func() bool {
		var s v1alpha1.Scheduling
		gone := p.client.Get(ctx, client.ObjectKeyFromObject(queue), &s) != nil
		return gone && p.batchJob(t, "wordcount").Status.State == v1alpha1.JobReady && p.batchJob(t, "report").Status.State == v1alpha1.JobReady
	}, time.Minute, 250*time.Millisecond, "the scheduling goes and its jobs are Ready")
	require.NotContains(t, p.batchJob(t, "wordcount").Labels, v1alpha1.ActiveSchedulingLabel)

	// SlotBased: every job names its slots; clicks waits for slot 3, which wordcount holds.
	slotted := testobjects.Scheduling("pinned").SlotJob("wordcount", 3, 6).SlotJob("clicks", 3).SlotJob("report", 0, 1).Obj()
	require.NoError(t, p.client.Create(ctx, slotted))
	pinned := p.waitScheduling(t, "pinned", v1alpha1.SchedulingCompleted, 3*time.Minute)
	require.Equal(t, []int32{3, 6}, jobStatusOf(pinned, "wordcount").Slots)
	require.Greater(t, jobStatusOf(pinned, "clicks").WaitTime.Duration, jobStatusOf(pinned, "report").WaitTime.Duration)
	for _, name := range []string{"wordcount", "clicks", "report"} {
		require.Equal(t, v1alpha1.JobCompleted, p.batchJob(t, name).Status.State, name)
	}
}

// A second Scheduling that wants a job the first one holds fails at once, releases what it
// took (the deadlock rule), and says who holds the job. The test bed itself is shared.
func TestLifecycle_ASecondSchedulingCannotTakeAHeldJob(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	require.NoError(t, p.client.Create(ctx, testobjects.BatchJob("long").RunFor("10m").Obj()))
	require.NoError(t, p.client.Create(ctx, testobjects.BatchJob("other").RunFor("1s").Obj()))
	first := testobjects.Scheduling("first").Job("long", 1).Obj()
	require.NoError(t, p.client.Create(ctx, first))
	require.Eventually(t, func() bool { return p.batchJob(t, "long").Status.State == v1alpha1.JobRunning }, time.Minute, 250*time.Millisecond)

	second := testobjects.Scheduling("second").Job("other", 1).Job("long", 1).Obj()
	require.NoError(t, p.client.Create(ctx, second))
	failed := p.waitScheduling(t, "second", v1alpha1.SchedulingFailed, time.Minute)
	require.Contains(t, failed.Status.Message, "job long is held by scheduling first")
	require.NotContains(t, p.batchJob(t, "other").Labels, v1alpha1.ActiveSchedulingLabel, "nothing stays claimed")
	require.Equal(t, "first", p.batchJob(t, "long").Labels[v1alpha1.ActiveSchedulingLabel])
}

func jobStatusOf(s *v1alpha1.Scheduling, name string) v1alpha1.SchedulingJobStatus {
	for _, j := range s.Status.Jobs {
		if j.Name == name {
			return j
		}
	}
	return v1alpha1.SchedulingJobStatus{}
}

// A Scheduling's job list edited the kubectl way (an update of the object, no API call) is
// passed on by the bridge: a job another Scheduling holds is refused, and the refusal is
// noted on the object for that generation; the next edit's job runs, and the Scheduling
// completes having observed its last generation.
func TestLifecycle_KubectlEditExtendsARunningScheduling(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	ctx := context.Background()
	for _, j := range []*v1alpha1.BatchJob{
		testobjects.BatchJob("head").RunFor("20s").Obj(),
		testobjects.BatchJob("added").RunFor("1s").Obj(),
		testobjects.BatchJob("held").RunFor("10m").Obj(),
	} {
		require.NoError(t, p.client.Create(ctx, j))
	}
	one := func(name string) []v1alpha1.SchedulingJob {
		return []v1alpha1.SchedulingJob{{Name: name, Replication: 1}}
	}
	require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("holder").Job("held", 1).Obj()))
	require.NoError(t, p.client.Create(ctx, testobjects.Scheduling("grow").Job("head", 1).Obj()))
	require.Eventually(t, func() bool {
		return p.batchJob(t, "head").Status.State == v1alpha1.JobRunning && p.batchJob(t, "held").Status.State == v1alpha1.JobRunning
	}, time.Minute, 250*time.Millisecond)

	edit := func(jobs ...string) int64 {
		var gen int64
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := p.scheduling(t, "grow")
			s.Spec.Jobs = nil
			for _, j := range jobs {
				s.Spec.Jobs = append(s.Spec.Jobs, one(j)...)
			}
			err := p.client.Update(ctx, s)
			gen = s.Generation
			return err
		}))
		return gen
	}
	refused := edit("head", "held")
	require.Eventually(t, func() bool {
		note := p.scheduling(t, "grow").Annotations[v1alpha1.ExtendRefusedAnnotation]
		return strings.HasPrefix(note, fmt.Sprintf("%d: ", refused)) && strings.Contains(note, "held by scheduling holder")
	}, time.Minute, 250*time.Millisecond, "the refusal is noted for generation %d", refused)
	require.Equal(t, "holder", p.batchJob(t, "held").Labels[v1alpha1.ActiveSchedulingLabel], "the refused job stays with its holder")

	last := edit("head", "added")
	done := p.waitScheduling(t, "grow", v1alpha1.SchedulingCompleted, 2*time.Minute)
	require.Equal(t, int32(2), done.Status.FinishedJobs)
	require.Equal(t, v1alpha1.JobCompleted, jobStatusOf(done, "added").State)
	require.Equal(t, last, done.Status.ObservedGeneration)
}
