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

// New returns a worker of slotplane's task queue with every workflow and activity
// registered; the caller starts and stops it. The activities get c to signal-with-start
// workflows, unless they carry a Temporal client already.
func New(c client.Client, acts *activities.Activities) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{})
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
