//go:build integration

package worker_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/internal/localplatform/temporaltest"
	"slotplane/worker"
)

// pokeable takes signals for ever, one workflow task each.
func pokeable(ctx workflow.Context) error {
	ch := workflow.GetSignalChannel(ctx, "poke")
	for {
		ch.Receive(ctx, nil)
	}
}

// cutProxy forwards TCP connections to a target until cut, which closes them all at once:
// to the server, a worker behind it dies without a goodbye, as a killed process does.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// taskLog is what a workflow's history says of its workflow tasks.
type taskLog struct {
	completed int
	// waitedSticky counts tasks that timed out before any worker took them: a task sent to
	// a dead worker's own queue waits there for the sticky timeout.
	waitedSticky int
	// lostToDeadPoll counts tasks that a worker's poll took and that then timed out: the
	// server handed the task to a poll of a worker whose connection had just been cut.
	lostToDeadPoll int
	lastScheduled  time.Time
	lastStarted    time.Time
	events         []string
}

func workflowTasks(t *testing.T, c client.Client, id string) taskLog {
	var l taskLog
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		at := ev.GetEventTime().AsTime()
		l.events = append(l.events, at.Format("15:04:05.000")+" "+ev.GetEventType().String())
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			l.completed++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			kind := ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType()
			l.events[len(l.events)-1] += " " + kind.String()
			if kind == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				l.waitedSticky++
			} else {
				l.lostToDeadPoll++
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			l.lastScheduled = at
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			l.lastStarted = at
		}
	}
	return l
}

// A worker that dies without a goodbye leaves the workflows it ran sticky to its queue: the
// next task of each waits there for the sticky timeout before another worker may take it.
// Once a new worker resets their stickiness, their next task goes to it at once; a workflow
// that was not reset still waits (which shows the wait is real), and one that does not
// exist is skipped.
//
// Cutting the dead worker's connection can race with a poll of it that the server is
// answering: the server then hands a task to that poll, and the task is lost until its
// start-to-close timeout, whatever its stickiness. The workflows here have a short one, so
// that such a loss (which a kill in production can cause too) costs seconds, and the test
// tells it apart from the sticky wait it is about.
func TestResetStickiness_ANewWorkerTakesADeadWorkersWorkflowsAtOnce(t *testing.T) {
	srv, c := temporaltest.Start(t)
	ctx := context.Background()
	const queue, sticky, taskTimeout = "sticky-test", 5 * time.Second, 2 * time.Second

	px := newCutProxy(t, srv.FrontendAddress)
	viaProxy, err := client.Dial(client.Options{HostPort: px.ln.Addr().String(), Namespace: srv.Namespace})
	require.NoError(t, err)
	dead := sdkworker.New(viaProxy, queue, sdkworker.Options{StickyScheduleToStartTimeout: sticky})
	dead.RegisterWorkflow(pokeable)
	require.NoError(t, dead.Start())
	defer func() { dead.Stop(); viaProxy.Close() }()

	tasks := func(id string) taskLog { return workflowTasks(t, c, id) }
	ids := []string{"reset", "control"}
	for _, id := range ids {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowTaskTimeout: taskTimeout}, pokeable)
		require.NoError(t, err)
		// A task of its own for the signal: sent after the first task, not taken in by it.
		require.Eventually(t, func() bool { return tasks(id).completed >= 1 }, 10*time.Second, 20*time.Millisecond, "the first worker starts %s", id)
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "poke", nil))
		require.Eventually(t, func() bool { return tasks(id).completed >= 2 }, 10*time.Second, 20*time.Millisecond, "the first worker runs %s", id)
	}
	before := map[string]taskLog{}
	for _, id := range ids {
		before[id] = tasks(id)
	}

	px.cut()
	live := sdkworker.New(c, queue, sdkworker.Options{})
	live.RegisterWorkflow(pokeable)
	require.NoError(t, live.Start())
	defer live.Stop()
	n, err := worker.ResetStickiness(ctx, c.WorkflowService(), srv.Namespace, []string{"reset", "never-started"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	for _, id := range ids {
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "poke", nil))
	}
	doneAfter := func(id string, within time.Duration) taskLog {
		t.Helper()
		if !assert.Eventually(t, func() bool { return tasks(id).completed > before[id].completed }, within, 20*time.Millisecond) {
			t.Fatalf("%s's next task is not done within %v; its history: %v", id, within, tasks(id).events)
		}
		return tasks(id)
	}
	reset := doneAfter("reset", sticky+taskTimeout)
	require.Equal(t, before["reset"].waitedSticky, reset.waitedSticky,
		"the reset workflow's task did not wait on the dead worker's queue (history: %v)", reset.events)
	require.Less(t, reset.lastStarted.Sub(reset.lastScheduled), sticky,
		"the live worker took it well within the sticky timeout (history: %v)", reset.events)

	control := doneAfter("control", 3*sticky)
	waited := control.waitedSticky + control.lostToDeadPoll - before["control"].waitedSticky - before["control"].lostToDeadPoll
	require.GreaterOrEqual(t, waited, 1, "the workflow left sticky to the dead worker waited for a timeout (history: %v)", control.events)
}

// holdOn returns the activity "holdOn", which heartbeats until it is cancelled; a retry
// (attempt 2 on) returns at once, naming the attempt, and tells retried when it ran.
func holdOn(retried chan<- time.Time) func(context.Context) (int32, error) {
	return func(ctx context.Context) (int32, error) {
		if n := activity.GetInfo(ctx).Attempt; n > 1 {
			select {
			case retried <- time.Now():
			default:
			}
			return n, nil
		}
		for {
			activity.RecordHeartbeat(ctx, "holding")
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// holding runs holdOn with a heartbeat timeout far longer than the test waits.
func holding(ctx workflow.Context) (int32, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond}})
	var attempt int32
	err := workflow.ExecuteActivity(ctx, "holdOn").Get(ctx, &attempt)
	return attempt, err
}

// A worker that dies without a goodbye leaves the activities it ran started: the server
// retries them only when their heartbeat timeout runs out (a minute here). A new worker on
// the same host ends those attempts, and their retries run on it at once; an attempt a
// worker on another host runs is left alone, as is a workflow that does not exist. What is
// timed is the retry's run, not the workflow's end, which also waits on the workflow's next
// task (sent to the dead worker's sticky queue: this test resets no stickiness) and once
// took 20 s on a loaded machine.
func TestRetryOrphans_ANewWorkerOnTheHostRetriesItsPredecessorsActivitiesAtOnce(t *testing.T) {
	srv, c := temporaltest.Start(t)
	ctx := context.Background()
	const mine, theirs = "orphans-mine", "orphans-theirs"
	dead, other, next := "7@host-a@20261127T040000.000000", "7@host-b@20261127T040000.000000", "7@host-a@20261127T040100.000000"
	retried := make(chan time.Time, 1)

	px := newCutProxy(t, srv.FrontendAddress)
	viaProxy, err := client.Dial(client.Options{HostPort: px.ln.Addr().String(), Namespace: srv.Namespace})
	require.NoError(t, err)
	gone := sdkworker.New(viaProxy, mine, sdkworker.Options{Identity: dead})
	elsewhere := sdkworker.New(c, theirs, sdkworker.Options{Identity: other})
	for _, w := range []sdkworker.Worker{gone, elsewhere} {
		w.RegisterWorkflow(holding)
		w.RegisterActivityWithOptions(holdOn(retried), activity.RegisterOptions{Name: "holdOn"})
		require.NoError(t, w.Start())
	}
	defer func() { gone.Stop(); viaProxy.Close(); elsewhere.Stop() }()

	started := func(id string) bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		pas := d.GetPendingActivities()
		return len(pas) == 1 && pas[0].GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && pas[0].GetAttempt() == 1
	}
	orphan, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "orphan", TaskQueue: mine}, holding)
	require.NoError(t, err)
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "sibling", TaskQueue: theirs}, holding)
	require.NoError(t, err)
	for _, id := range []string{"orphan", "sibling"} {
		require.Eventually(t, func() bool { return started(id) }, 10*time.Second, 20*time.Millisecond, "%s's activity starts", id)
	}

	px.cut()
	took := sdkworker.New(c, mine, sdkworker.Options{Identity: next})
	took.RegisterWorkflow(holding)
	took.RegisterActivityWithOptions(holdOn(retried), activity.RegisterOptions{Name: "holdOn"})
	require.NoError(t, took.Start())
	defer took.Stop()
	cut := time.Now()
	n, err := worker.RetryOrphans(ctx, c.WorkflowService(), srv.Namespace, next, []string{"orphan", "sibling", "never-started"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	select {
	case at := <-retried:
		require.Less(t, at.Sub(cut), 10*time.Second, "the orphan's retry ran well before its heartbeat timeout")
	case <-time.After(30 * time.Second):
		t.Fatal("the orphan's activity was not retried within 30 s")
	}
	waitEnd, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	var attempt int32
	require.NoError(t, orphan.Get(waitEnd, &attempt))
	require.Equal(t, int32(2), attempt, "the orphan's retry, on the new worker, ended it")
	require.True(t, started("sibling"), "the activity of the worker on another host runs on, in its first attempt")
	n, err = worker.RetryOrphans(ctx, c.WorkflowService(), srv.Namespace, next, []string{"orphan", "sibling"})
	require.NoError(t, err)
	require.Zero(t, n, "nothing is left to retry")
}
