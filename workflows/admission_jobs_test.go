package workflows

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"slotplane/activities"
	"slotplane/installation"
)

const twoQueues = `<allocations>
  <queue name="root">
    <aclSubmitApps> nobody</aclSubmitApps>
    <aclAdministerApps> ops</aclAdministerApps>
    <queue name="a"><aclSubmitApps>alice</aclSubmitApps></queue>
    <queue name="b"><aclSubmitApps>alice</aclSubmitApps></queue>
  </queue>
</allocations>`

// Each job's queue is written to its status once Admission placed it, and again after a move.
func TestAdmissionWorkflow_WritesEachJobsQueueAndItsMoves(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "x"), Queue: "a", User: "alice", Slots: 1},
			{JobKey: jk("s", "y"), Queue: "b", User: "alice", Slots: 1},
			{JobKey: jk("s", "refused"), Queue: "a", User: "mallory", Slots: 1},
		})
	}, time.Second)
	var before string
	env.RegisterDelayedCallback(func() {
		before = w.queueOf("s", "x")
		env.UpdateWorkflow(AdmissionMoveUpdate, "move", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("move refused: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, AdmissionMove{Scheduling: "s", Job: "x", Queue: "b", By: "alice"})
	}, time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 20})
	require.Equal(t, "root.a", before, "placement's choice is written")
	require.Equal(t, "root.b", w.queueOf("s", "x"), "the move is written")
	require.Equal(t, "root.b", w.queueOf("s", "y"))
	require.Empty(t, w.queueOf("s", "refused"), "a refused job is in no queue")
}

// runningAndWaiting is a batch of two requests of Scheduling s: "running" in queue a and
// "waiting" in queue b.
func runningAndWaiting() []AdmissionRequest {
	return []AdmissionRequest{
		{JobKey: jk("s", "running"), Queue: "a", User: "alice", Slots: 1},
		{JobKey: jk("s", "waiting"), Queue: "b", User: "alice", Slots: 1},
	}
}

// A request sent again for a job Admission holds (a Scheduling's new run asks again for all
// its waiting jobs, at most every reaskEvery) leaves the job's queue as written: no second
// write. A job asked for anew after its run ended is written again.
func TestAdmissionWorkflow_ARequestSentAgainWritesNoQueue(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}}
	env := newAdmissionEnv(t, w, 1)
	batch := runningAndWaiting()
	env.RegisterDelayedCallback(func() { env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, batch) }, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, batch)
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, batch[1])
	}, time.Minute)
	var between map[string]int
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		between = maps.Clone(w.written)
		w.mu.Unlock()
		env.UpdateWorkflowNoRejection(AdmissionEndedUpdate, "", t, jk("s", "running"))
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "running"), Queue: "b", User: "alice", Slots: 1})
	}, 3*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 40})
	require.Equal(t, map[string]int{"s/running": 1, "s/waiting": 1}, between, "requests sent again wrote the queues again")
	require.Equal(t, 2, w.written["s/running"], "a request after the run ended is a new placement")
	require.Equal(t, "root.b", w.queueOf("s", "running"))
	require.Equal(t, 1, w.written["s/waiting"])
}

// Across a continue-as-new the same holds: the next run, asked again for the jobs the last
// one placed and wrote (as a Scheduling's new run may ask), writes nothing.
func TestAdmissionWorkflow_ARequestSentAgainAfterContinueAsNewWritesNoQueue(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}}
	env := newAdmissionEnv(t, w, 1)
	batch := runningAndWaiting()
	env.RegisterDelayedCallback(func() { env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, batch) }, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 4})
	in := continuedWith[AdmissionInput](t, env)
	require.Empty(t, in.Unrecorded)
	require.Equal(t, map[string]int{"s/running": 1, "s/waiting": 1}, w.written)

	env2 := newAdmissionEnv(t, w, 1)
	env2.RegisterDelayedCallback(func() { env2.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, batch) }, time.Second)
	in.StepsPerRun = 4
	env2.ExecuteWorkflow(AdmissionWorkflow, in)
	continuedWith[AdmissionInput](t, env2)
	require.Equal(t, map[string]int{"s/running": 1, "s/waiting": 1}, w.written, "the next run wrote the queues again")
}

// A request whose job's status shows the queue placement chooses (the claim wrote the
// queue asked for) writes nothing; one whose status shows another queue, or none, is
// written. So is one shown right while an earlier placement of the job waits to be
// written, so that the last write says the queue the job is in.
func TestAdmissionWorkflow_AQueueTheStatusShowsIsNotWrittenAgain(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}}
	env := newAdmissionEnv(t, w, 1)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "shown"), Queue: "root.a", User: "alice", Slots: 1, Shown: "root.a"},
			{JobKey: jk("s", "other"), Queue: "root.a", User: "alice", Slots: 1, Shown: "root.b"},
			{JobKey: jk("s", "none"), Queue: "b", User: "alice", Slots: 1},
			{JobKey: jk("s", "short"), Queue: "b", User: "alice", Slots: 1, Shown: "b"},
		})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 4})
	continuedWith[AdmissionInput](t, env)
	require.Equal(t, map[string]int{"s/other": 1, "s/none": 1, "s/short": 1}, w.written)
	require.Equal(t, "root.a", w.queueOf("s", "other"))
	require.Equal(t, "root.b", w.queueOf("s", "short"), "a queue named short of its path is written in full")

	// A placement waiting to be written (the writes fail) is followed by a write of the
	// queue the status shows: a later request does not drop it.
	w2 := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}, recordFails: 1000}
	env2 := newAdmissionEnv(t, w2, 1)
	env2.RegisterDelayedCallback(func() {
		env2.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{{JobKey: jk("s", "x"), Queue: "root.a", User: "alice", Slots: 1, Shown: "root.b"}})
	}, time.Second)
	env2.RegisterDelayedCallback(func() { env2.UpdateWorkflowNoRejection(AdmissionEndedUpdate, "", t, jk("s", "x")) }, 3*time.Second)
	env2.RegisterDelayedCallback(func() {
		env2.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "x"), Queue: "root.a", User: "alice", Slots: 1, Shown: "root.a"})
	}, 5*time.Second)
	env2.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 6})
	in := continuedWith[AdmissionInput](t, env2)
	require.Len(t, in.Unrecorded, 2, "the second placement is written after the first")
	require.Equal(t, "root.a", in.Unrecorded[1].Queue)
}

// Queues not yet written when the run continues as new (the writes kept failing) are handed
// to the next run, which writes them.
func TestAdmissionWorkflow_UnwrittenQueuesCrossContinueAsNew(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}, recordFails: 1000}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "x"), Queue: "a", User: "alice", Slots: 1},
			{JobKey: jk("s", "y"), Queue: "b", User: "alice", Slots: 1},
		})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 4})
	in := continuedWith[AdmissionInput](t, env)
	require.ElementsMatch(t, []string{"x", "y"}, []string{in.Unrecorded[0].Job, in.Unrecorded[1].Job})
	require.Empty(t, w.queueOf("s", "x"))

	w2 := &admissionWorld{file: w.file}
	env2 := newAdmissionEnv(t, w2, 4)
	in.StepsPerRun = 3
	env2.ExecuteWorkflow(AdmissionWorkflow, in)
	require.Equal(t, "root.a", w2.queueOf("s", "x"))
	require.Equal(t, "root.b", w2.queueOf("s", "y"))
	next := continuedWith[AdmissionInput](t, env2)
	require.Empty(t, next.Unrecorded)
}

// A kill is allowed to the job's user and to an administrator of its queue, and refused to
// anyone else, for a job Admission does not hold, and before the first decision; an allowed
// kill is written on the job, naming the right it was made in, and the job's workflow is
// nudged. Admission keeps the job until its end comes through the job's workflow.
func TestAdmissionWorkflow_KillChecksTheRightAndWritesTheKill(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: twoQueues}}
	env := newAdmissionEnv(t, w, 1)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "running"), Queue: "a", User: "alice", Slots: 1},
			{JobKey: jk("s", "waiting"), Queue: "b", User: "alice", Slots: 1},
		})
	}, time.Second)
	refused := map[string]error{}
	answers := map[string]AdmissionKilled{}
	kill := func(name string, k AdmissionKill) {
		env.UpdateWorkflow(AdmissionKillUpdate, name, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { refused[name] = err }, OnAccept: func() {},
			OnComplete: func(v any, err error) {
				if err != nil {
					refused[name] = err
					return
				}
				answers[name] = v.(AdmissionKilled)
			},
		}, k)
	}
	env.RegisterDelayedCallback(func() {
		kill("stranger", AdmissionKill{Scheduling: "s", Job: "running", By: "mallory"})
		kill("nobody", AdmissionKill{Scheduling: "s", Job: "running"})
		kill("unknown", AdmissionKill{Scheduling: "s", Job: "ghost", By: "alice"})
		kill("other scheduling", AdmissionKill{Scheduling: "t", Job: "running", By: "alice"})
		kill("admin", AdmissionKill{Scheduling: "s", Job: "running", By: "carol", ByGroups: []string{"ops"}, Reason: "runaway"})
		kill("owner", AdmissionKill{Scheduling: "s", Job: "waiting", By: "alice"})
	}, time.Minute)
	report := reportAt(t, env, 2*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour, StepsPerRun: 6})

	kinds := map[string]string{"stranger": MoveForbidden, "nobody": MoveForbidden, "unknown": MoveNotFound, "other scheduling": MoveNotFound}
	for name, kind := range kinds {
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, refused[name], &appErr, name)
		require.Equal(t, kind, appErr.Type(), name)
	}
	require.ErrorContains(t, refused["stranger"], `user "mallory" may not kill job running`)
	require.Equal(t, AdmissionKilled{Job: "running", Scheduling: "s", Queue: "root.a", As: "an administrator of root.a", Running: true}, answers["admin"])
	require.Equal(t, AdmissionKilled{Job: "waiting", Scheduling: "s", Queue: "root.b", As: "the job's user"}, answers["owner"])
	require.Len(t, w.kills, 2)
	for _, k := range w.kills {
		require.Equal(t, "ns", k.Namespace)
		require.NotNil(t, k.Nudge)
		require.Equal(t, installation.Default.BatchJobID("ns", k.Job), k.Nudge.WorkflowID)
		require.Equal(t, BatchJobChangedSignal, k.Nudge.Signal)
		require.Equal(t, "s", k.Kill.Scheduling)
		if k.Job == "running" {
			require.Equal(t, "carol", k.Kill.By)
			require.Equal(t, "runaway", k.Kill.Reason)
		}
	}
	require.Len(t, report.Running, 1, "the killed run keeps its slot until its end comes")
	require.Len(t, report.Waiting, 1)
}

// With preemption on, a starving queue's timeout is acted on when it runs out (within the
// update interval), not at the next message or resync, however far off those are.
func TestAdmissionWorkflow_APreemptionTimeoutIsActedOnWhenItRunsOut(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="a"/><queue name="b"/>
  <defaultFairSharePreemptionTimeout>30</defaultFairSharePreemptionTimeout>
</allocations>`, Settings: `<configuration>
  <property><name>yarn.scheduler.fair.preemption</name><value>true</value></property>
  <property><name>yarn.scheduler.fair.update-interval-ms</name><value>2000</value></property>
</configuration>`}}
	env := newAdmissionEnv(t, w, 12)
	var revokedAt time.Time
	env.OnActivity(acts.AssignSlots, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.AssignSlotsInput) error {
		if len(in.Revoke) > 0 && revokedAt.IsZero() {
			revokedAt = env.Now()
		}
		return nil
	})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("sa", "big"), Queue: "a", User: "u", Slots: 12})
	}, time.Second)
	var starvedAt time.Time
	env.RegisterDelayedCallback(func() {
		starvedAt = env.Now()
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("sb", "small"), Queue: "b", User: "u", Slots: 6})
	}, 10*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour, StepsPerRun: 8})

	require.False(t, revokedAt.IsZero(), "the starving queue's timeout was acted on")
	wait := revokedAt.Sub(starvedAt)
	require.GreaterOrEqual(t, wait, 30*time.Second, "not before the fair-share preemption timeout")
	require.LessOrEqual(t, wait, 32*time.Second, "within the update interval of it, not at the hourly resync")
}
