//go:build integration

package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/testobjects"
	"slotplane/queue"
	"slotplane/workflows"
)

// limitQueues has a limit of each kind, and a placement policy of group rules. Slots are of
// 1 cpu and 4Gi, so small's maxResources are two slots; small orders its jobs by dominant
// resource fairness.
const limitQueues = `<?xml version="1.0"?>
<allocations>
  <queueMaxAppsDefault>2</queueMaxAppsDefault>
  <queue name="capped"><maxRunningApps>1</maxRunningApps></queue>
  <queue name="defaulted"/>
  <queue name="drivers"><maxAMShare>0.01</maxAMShare></queue>
  <queue name="small"><schedulingPolicy>drf</schedulingPolicy><maxResources>8192 mb, 2 vcores</maxResources></queue>
  <queue name="ops"/>
  <queue name="teams" type="parent"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="secondaryGroupExistingQueue"/>
    <rule name="nestedUserQueue"><rule name="primaryGroup" create="false"/></rule>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>
`

// entry is the job's entry in the bed's Admission report, waiting or running.
func entry(t *testing.T, p *platform, job string) (e queue.Entry, running bool) {
	t.Helper()
	r := p.queues(t)
	for _, e := range r.Running {
		if e.Request.Job == job {
			return e, true
		}
	}
	for _, e := range r.Waiting {
		if e.Request.Job == job {
			return e, false
		}
	}
	t.Fatalf("job %s is in no list of Admission's report", job)
	return queue.Entry{}, false
}

// waitsFor waits until the job waits in Admission for the reason given (a part of it). The
// bed's Admission may not run yet.
func waitsFor(t *testing.T, p *platform, job, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r, err := p.tryQueues()
		if err != nil {
			return false
		}
		for _, e := range r.Waiting {
			if e.Request.Job == job {
				return strings.Contains(e.Reason, reason)
			}
		}
		return false
	}, time.Minute, 250*time.Millisecond, "%s does not wait for %q", job, reason)
}

// The limits and rules the Fair Scheduler document gives, each on the real platform (the
// bridge, Admission, the extender and the operators' stand-in): maxRunningApps of a queue and
// queueMaxAppsDefault, maxAMShare, maxResources, a move the target's limit refuses, the
// placement rules on users' groups, and a broken allocation file that leaves the last good
// one in force.
func TestQueues_LimitsOnTheRealPlatform(t *testing.T) {
	t.Parallel()
	p := startPlatformWith(t, bedShape{slotsPerNode: 3, cpu: "1", memory: "4Gi"})
	ctx := context.Background()
	p.setQueues(t, limitQueues, "")
	submit := func(sched, queueName, user string, groups []string, jobs map[string]int32, runFor string) {
		t.Helper()
		s := testobjects.Scheduling(sched)
		if queueName != "" {
			s = s.Queue(queueName)
		}
		for name, n := range jobs {
			j := queuedJob(name, user, runFor)
			j.Spec.Groups = groups
			require.NoError(t, p.client.Create(ctx, j))
			s = s.Job(name, n)
		}
		require.NoError(t, p.client.Create(ctx, s.Obj()))
	}
	running := func(job string) bool { return p.batchJob(t, job).Status.State == v1alpha1.JobRunning }

	t.Run("maxRunningApps and queueMaxAppsDefault", func(t *testing.T) {
		submit("capped", "capped", "ann", nil, map[string]int32{"capped-1": 1}, "2m")
		require.Eventually(t, func() bool { return running("capped-1") }, time.Minute, 250*time.Millisecond)
		submit("capped-more", "capped", "ann", nil, map[string]int32{"capped-2": 1}, "2s")
		waitsFor(t, p, "capped-2", "queue root.capped runs its maximum of 1 applications")
		submit("defaulted", "defaulted", "ann", nil, map[string]int32{"default-1": 1, "default-2": 1}, "2m")
		require.Eventually(t, func() bool { return running("default-1") && running("default-2") }, time.Minute, 250*time.Millisecond)
		submit("defaulted-more", "defaulted", "ann", nil, map[string]int32{"default-3": 1}, "2s")
		waitsFor(t, p, "default-3", "queue root.defaulted runs its maximum of 2 applications")
	})

	// default-1 runs in root.defaulted; root.capped runs its one application: moving
	// default-1 there is refused with the target's limit, and the job stays where it was.
	t.Run("a move the target's limit refuses", func(t *testing.T) {
		h, err := p.temporal.UpdateWorkflow(ctx, temporalclient.UpdateWorkflowOptions{
			WorkflowID: installation.Default.AdmissionID("default", "bed"), UpdateName: workflows.AdmissionMoveUpdate,
			Args:         []any{workflows.AdmissionMove{Scheduling: "defaulted", Job: "default-1", Queue: "root.capped", By: "ann"}},
			WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			var moved workflows.AdmissionMoved
			err = h.Get(ctx, &moved)
		}
		require.ErrorContains(t, err, "queue root.capped runs its maximum of 1 applications")
		e, running := entry(t, p, "default-1")
		require.True(t, running)
		require.Equal(t, "root.defaulted", e.Queue)
	})

	t.Run("maxAMShare", func(t *testing.T) {
		submit("drivers", "drivers", "ann", nil, map[string]int32{"drivers-1": 1}, "2m")
		require.Eventually(t, func() bool { return running("drivers-1") }, time.Minute, 250*time.Millisecond)
		submit("drivers-more", "drivers", "ann", nil, map[string]int32{"drivers-2": 1}, "2s")
		waitsFor(t, p, "drivers-2", "queue root.drivers's drivers would exceed maxAMShare 0.01")
	})

	// A job of 3 slots can never run in root.small (at most 2 slots); one of 2 behind it
	// runs: a drf leaf, like a fair one, is not strict.
	t.Run("maxResources", func(t *testing.T) {
		submit("small-wide", "small", "ann", nil, map[string]int32{"small-3": 3}, "2s")
		waitsFor(t, p, "small-3", "queue root.small would exceed its maxResources")
		submit("small-fits", "small", "ann", nil, map[string]int32{"small-2": 2}, "2m")
		require.Eventually(t, func() bool { return running("small-2") }, time.Minute, 250*time.Millisecond)
		require.False(t, running("small-3"))
	})

	// No queue asked for: the rules place by the users' groups. A user's secondary group
	// with a queue of its own; else a queue of the user under the primary group's parent
	// queue, periods becoming _dot_; else the job is refused.
	t.Run("placement by groups", func(t *testing.T) {
		submit("by-secondary", "", "ann", []string{"devs", "ops"}, map[string]int32{"placed-ops": 1}, "2m")
		submit("by-primary", "", "first.last", []string{"teams"}, map[string]int32{"placed-team": 1}, "2m")
		submit("by-nothing", "", "eve", []string{"nobody"}, map[string]int32{"placed-nowhere": 1}, "2s")
		require.Eventually(t, func() bool { return running("placed-ops") && running("placed-team") }, time.Minute, 250*time.Millisecond)
		e, _ := entry(t, p, "placed-ops")
		require.Equal(t, "root.ops", e.Queue)
		e, _ = entry(t, p, "placed-team")
		require.Equal(t, "root.teams.first_dot_last", e.Queue)
		s := p.waitScheduling(t, "by-nothing", v1alpha1.SchedulingCompleted, time.Minute)
		refused := jobStatusOf(s, "placed-nowhere")
		require.Equal(t, v1alpha1.JobFailed, refused.State)
		require.Contains(t, refused.Message, "the queue placement policy rejected the application")
	})

	// A broken file is refused, the bed says so, and the last good one stays in force:
	// root.capped still runs one application.
	t.Run("a broken file keeps the last good one", func(t *testing.T) {
		p.setQueues(t, strings.Replace(limitQueues, `<maxRunningApps>1</maxRunningApps>`, `<maxRunningApps>lots</maxRunningApps>`, 1), "")
		require.Eventually(t, func() bool {
			var tb v1alpha1.TestBed
			require.NoError(t, p.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "bed"}, &tb))
			c := meta.FindStatusCondition(tb.Status.Conditions, v1alpha1.ConditionQueuesConfigured)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Rejected" && strings.Contains(c.Message, "maxRunningApps")
		}, time.Minute, 250*time.Millisecond, "the bed does not say the file was refused")
		require.Eventually(t, func() bool { return strings.Contains(p.queues(t).ConfigError, "maxRunningApps") }, time.Minute, 250*time.Millisecond)
		submit("capped-after", "capped", "ann", nil, map[string]int32{"capped-3": 1}, "2s")
		waitsFor(t, p, "capped-3", "queue root.capped runs its maximum of 1 applications")
	})
}
