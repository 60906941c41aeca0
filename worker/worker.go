package worker

import (
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"slotplane/activities"
	"slotplane/workflows"
)

// DefaultNamespace is the Temporal namespace slotplane uses unless told otherwise.
const DefaultNamespace = "default"

// Pollers is how many long polls the worker keeps open for workflow tasks, and as many for
// activity tasks. The SDK's default of 2 made a burst (eight jobs granted at once, a
// Scheduling's first jobs) queue on the poll: each task waited for a poller to come back
// from handing over the one before. With 8, the orchestration bench's first wave starts about
// a fifth sooner.
const Pollers = 8

// A worker that dies (a crash, an evicted pod) is noticed by the Temporal server only through
// timeouts, and every running job waits on them. In the long run each kill of the worker cost
// 11-12 s before the jobs it ran went on: a wait's heartbeat timeout ran out (5 s), then
// the job's next workflow task went to the dead worker's sticky queue and waited out the
// SDK's default StickyScheduleToStartTimeout (5 s) before the server gave it to anyone.
// StickyTimeout is that timeout here: a live worker takes its sticky tasks in milliseconds,
// and one it does not take within 2 s is replayed from history by any worker (slower, never
// wrong). HeartbeatThrottle is the most the SDK holds a heartbeat back: by default it holds
// them for 80% of the heartbeat timeout, which would leave a wait's 3 s timeout
// (workflows.WaitHeartbeatTimeout) a margin of 0.6 s; sent every second, they leave 2 s.
const (
	StickyTimeout     = 2 * time.Second
	HeartbeatThrottle = activities.HeartbeatEvery
)

// New returns a worker of slotplane's task queue with every workflow and activity
// registered; the caller starts and stops it. The activities get c to signal-with-start
// workflows, unless they carry a Temporal client already.
func New(c client.Client, acts *activities.Activities) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{MaxConcurrentWorkflowTaskPollers: Pollers, MaxConcurrentActivityTaskPollers: Pollers,
		StickyScheduleToStartTimeout: StickyTimeout, MaxHeartbeatThrottleInterval: HeartbeatThrottle, Identity: Identity})
	w.RegisterWorkflow(workflows.TestBedWorkflow)
	w.RegisterWorkflow(workflows.BatchJobWorkflow)
	w.RegisterWorkflow(workflows.SchedulingWorkflow)
	w.RegisterWorkflow(workflows.AdmissionWorkflow)
	if acts.Temporal == nil {
		acts.Temporal = c
	}
	w.RegisterActivity(acts)
	return w
}

// ClientLogger is the Temporal SDK's logger for slotplane's clients and workers: slog's
// default logger, at its level (the SDK's own default prints debug lines to stdout).
func ClientLogger() sdklog.Logger { return sdklog.NewStructuredLogger(slog.Default()) }
