//go:build integration

package temporalserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/internal/localplatform/temporalserver"
	"slotplane/internal/localplatform/temporaltest"
)

// greetAfter sleeps on a durable timer, then runs an activity: the two primitives every
// slotplane workflow is built from.
func greetAfter(ctx workflow.Context, delay time.Duration) (string, error) {
	start := workflow.Now(ctx)
	if err := workflow.Sleep(ctx, delay); err != nil {
		return "", err
	}
	if slept := workflow.Now(ctx).Sub(start); slept < delay {
		return "", nil // a timer that fires early must fail the test below
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, greet, "slotplane").Get(ctx, &out)
	return out, err
}

func greet(_ context.Context, name string) (string, error) { return "hello " + name, nil }

func runWorker(t *testing.T, c client.Client, queue string) {
	t.Helper()
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflow(greetAfter)
	w.RegisterActivity(greet)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

func TestEmbeddedTemporal_RunsTimerAndActivity(t *testing.T) {
	_, c := temporaltest.Start(t)
	runWorker(t, c, "smoke")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "smoke", TaskQueue: "smoke"}, greetAfter, 500*time.Millisecond)
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "hello slotplane", out)

	// The history shows the timer and the activity really ran on the server.
	kinds := map[string]bool{}
	iter := c.GetWorkflowHistory(ctx, "smoke", run.GetRunID(), false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		kinds[ev.GetEventType().String()] = true
	}
	require.True(t, kinds["TimerFired"], "history has no fired timer: %v", kinds)
	require.True(t, kinds["ActivityTaskCompleted"], "history has no completed activity: %v", kinds)
}

// A workflow started before a restart finishes after it: the file database keeps it.
func TestEmbeddedTemporal_FileDatabaseSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := temporalserver.Options{
		DatabaseFile: filepath.Join(dir, "temporal.db"),
		LogFile:      filepath.Join(dir, "temporal.log"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	first, err := temporalserver.Start(ctx, opts)
	require.NoError(t, err)
	c, err := first.Dial()
	require.NoError(t, err)
	// No worker yet: the workflow waits in the database.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "durable", TaskQueue: "durable"}, greetAfter, time.Second)
	require.NoError(t, err)
	c.Close()
	first.Stop()

	opts.FrontendPort = 0 // a new port: nothing may depend on the old one
	second, err := temporalserver.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(second.Stop)
	c, err = second.Dial()
	require.NoError(t, err)
	t.Cleanup(c.Close)
	runWorker(t, c, "durable") // its cleanup runs first: worker, client, server
	var out string
	require.NoError(t, c.GetWorkflow(ctx, "durable", run.GetRunID()).Get(ctx, &out))
	require.Equal(t, "hello slotplane", out)
}

func TestEmbeddedTemporal_ServesWebUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := temporalserver.Start(ctx, temporalserver.Options{UI: true, LogFile: filepath.Join(t.TempDir(), "t.log")})
	require.NoError(t, err)
	defer srv.Stop()
	requireHTTPBody(t, srv.UIAddress+"/", "<html")
	requireHTTPBody(t, srv.UIAddress+"/api/v1/namespaces/"+srv.Namespace, `"namespaceInfo"`)
	requireHTTPBody(t, srv.MetricsAddress, "# TYPE")
}
