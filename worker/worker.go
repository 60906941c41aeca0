package worker

import (
	"log/slog"

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

// New returns a worker of slotplane's task queue with every workflow and activity
// registered; the caller starts and stops it. The activities get c to signal-with-start
// workflows, unless they carry a Temporal client already.
func New(c client.Client, acts *activities.Activities) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{MaxConcurrentWorkflowTaskPollers: Pollers, MaxConcurrentActivityTaskPollers: Pollers})
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
