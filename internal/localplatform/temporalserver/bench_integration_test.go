//go:build integration

package temporalserver_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"slotplane/internal/localplatform/temporaltest"
)

// hops runs n activities one after the other, each with a local activity in the workflow
// task that follows it: the shape of a slotplane job's steps (a wait ends, the task writes
// the status through a local activity, the next wait is scheduled).
func hops(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	for i := range n {
		if err := workflow.ExecuteActivity(ctx, step, i).Get(ctx, nil); err != nil {
			return err
		}
		if err := workflow.ExecuteLocalActivity(lctx, step, i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func step(context.Context, int) error { return nil }

// idleSample is how long the benchmark watches the process do nothing.
const idleSample = 5 * time.Second

// cpuTime is the CPU this process has spent, user and system: the server, the worker and the
// client all run in it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEmbeddedTemporal_ActivityHop measures what one hop of a workflow costs the
// embedded server on its SQLite store: an activity scheduled, started and completed, and the
// workflow task that follows with a local activity in it. A slotplane job takes some eight
// workflow tasks and three activities; on 2 cores shared with the whole platform, the
// server's CPU per hop is much of what a job costs (docs/benchmarks.md). cpu-µs/hop is this
// process's CPU per hop (the server, the worker and the client together), busy-cpu-µs/hop
// the same less what the process spends idle over that time (idle-cpu-ms/s, about 1% of a
// core). The hops run one after another: the wall time per hop (ns/op) is mostly the
// server's pacing of its task queues, not work.
func BenchmarkEmbeddedTemporal_ActivityHop(b *testing.B) {
	_, c := temporaltest.Start(b)
	w := sdkworker.New(c, "hops", sdkworker.Options{})
	w.RegisterWorkflow(hops)
	w.RegisterActivity(step)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	ctx := context.Background()
	run := func(id string, n int) {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "hops"}, hops, n)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	run("warm-up", 20)
	// What the process spends with nothing to do (the server's own timers and polls), to
	// take out of the hops' figure. The testing package's first call of one hop is only
	// its probe.
	var idle time.Duration
	if b.N > 1 {
		idleFrom := cpuTime(b)
		time.Sleep(idleSample)
		idle = cpuTime(b) - idleFrom
	}
	b.ResetTimer()
	from, began := cpuTime(b), time.Now()
	run(fmt.Sprintf("hops-%d", b.N), b.N)
	used, took := cpuTime(b)-from, time.Since(began)
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/hop")
	b.ReportMetric(float64(idle.Milliseconds())/idleSample.Seconds(), "idle-cpu-ms/s")
	// Less what the process would have spent idle over the same time: the hops' own.
	b.ReportMetric(float64((used-time.Duration(float64(idle)*took.Seconds()/idleSample.Seconds())).Microseconds())/float64(b.N), "busy-cpu-µs/hop")
}
