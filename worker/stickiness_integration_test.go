//go:build integration

package worker_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/internal/testtemporal"
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

// A worker that dies without a goodbye leaves the workflows it ran sticky to its queue: the
// next task of each waits there for the sticky timeout before another worker may take it.
// Once a new worker resets their stickiness, their next task goes to it at once; a workflow
// that was not reset still waits (which shows the wait is real), and one that does not
// exist is skipped.
func TestResetStickiness_ANewWorkerTakesADeadWorkersWorkflowsAtOnce(t *testing.T) {
	srv, c := testtemporal.Start(t)
	ctx := context.Background()
	const queue, sticky = "sticky-test", 5 * time.Second

	px := newCutProxy(t, srv.FrontendAddress)
	viaProxy, err := client.Dial(client.Options{HostPort: px.ln.Addr().String(), Namespace: srv.Namespace})
	require.NoError(t, err)
	dead := sdkworker.New(viaProxy, queue, sdkworker.Options{StickyScheduleToStartTimeout: sticky})
	dead.RegisterWorkflow(pokeable)
	require.NoError(t, dead.Start())
	defer func() { dead.Stop(); viaProxy.Close() }()

	tasks := func(id string) (completed, timedOut int, lastScheduled, lastStarted time.Time) {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				completed++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
				timedOut++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				lastScheduled = ev.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				lastStarted = ev.GetEventTime().AsTime()
			}
		}
		return
	}
	ids := []string{"reset", "control"}
	for _, id := range ids {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, pokeable)
		require.NoError(t, err)
		// A task of its own for the signal: sent after the first task, not taken in by it.
		require.Eventually(t, func() bool { n, _, _, _ := tasks(id); return n >= 1 }, 10*time.Second, 20*time.Millisecond, "the first worker starts %s", id)
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "poke", nil))
		require.Eventually(t, func() bool { n, _, _, _ := tasks(id); return n >= 2 }, 10*time.Second, 20*time.Millisecond, "the first worker runs %s", id)
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
	require.Eventually(t, func() bool { n, _, _, _ := tasks("reset"); return n >= 3 }, 10*time.Second, 20*time.Millisecond)
	_, timedOut, scheduled, started := tasks("reset")
	require.Zero(t, timedOut, "the reset workflow's task went to the live worker")
	require.Less(t, started.Sub(scheduled), sticky, "and did not wait out the sticky timeout")

	require.Eventually(t, func() bool { n, _, _, _ := tasks("control"); return n >= 3 }, 3*sticky, 50*time.Millisecond)
	_, timedOut, _, _ = tasks("control")
	require.Equal(t, 1, timedOut, "the workflow left sticky to the dead worker waited out its sticky timeout")
}

// holdOn heartbeats until it is cancelled; a retry (attempt 2 on) returns at once, naming the
// attempt.
func holdOn(ctx context.Context) (int32, error) {
	if n := activity.GetInfo(ctx).Attempt; n > 1 {
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

// holding runs holdOn with a heartbeat timeout far longer than the test waits.
func holding(ctx workflow.Context) (int32, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond}})
	var attempt int32
	err := workflow.ExecuteActivity(ctx, holdOn).Get(ctx, &attempt)
	return attempt, err
}

// A worker that dies without a goodbye leaves the activities it ran started: the server
// retries them only when their heartbeat timeout runs out (a minute here). A new worker on
// the same host ends those attempts, and their retries run on it at once; an attempt a
// worker on another host runs is left alone, as is a workflow that does not exist.
func TestRetryOrphans_ANewWorkerOnTheHostRetriesItsPredecessorsActivitiesAtOnce(t *testing.T) {
	srv, c := testtemporal.Start(t)
	ctx := context.Background()
	const mine, theirs = "orphans-mine", "orphans-theirs"
	dead, other, next := "7@host-a@20261127T040000.000000", "7@host-b@20261127T040000.000000", "7@host-a@20261127T040100.000000"

	px := newCutProxy(t, srv.FrontendAddress)
	viaProxy, err := client.Dial(client.Options{HostPort: px.ln.Addr().String(), Namespace: srv.Namespace})
	require.NoError(t, err)
	gone := sdkworker.New(viaProxy, mine, sdkworker.Options{Identity: dead})
	elsewhere := sdkworker.New(c, theirs, sdkworker.Options{Identity: other})
	for _, w := range []sdkworker.Worker{gone, elsewhere} {
		w.RegisterWorkflow(holding)
		w.RegisterActivity(holdOn)
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
	took.RegisterActivity(holdOn)
	require.NoError(t, took.Start())
	defer took.Stop()
	cut := time.Now()
	n, err := worker.RetryOrphans(ctx, c.WorkflowService(), srv.Namespace, next, []string{"orphan", "sibling", "never-started"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	var attempt int32
	require.NoError(t, orphan.Get(ctx, &attempt))
	require.Equal(t, int32(2), attempt, "the orphan's retry ran on the new worker")
	require.Less(t, time.Since(cut), 10*time.Second, "well before its heartbeat timeout")
	require.True(t, started("sibling"), "the activity of the worker on another host runs on, in its first attempt")
	n, err = worker.RetryOrphans(ctx, c.WorkflowService(), srv.Namespace, next, []string{"orphan", "sibling"})
	require.NoError(t, err)
	require.Zero(t, n, "nothing is left to retry")
}
