package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"slotplane/activities"
	"slotplane/workflows"
)

// New returns a worker of slotplane's task queue with every workflow and activity
// registered; the caller starts and stops it.
func New(c client.Client, acts *activities.Activities) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{})
	w.RegisterWorkflow(workflows.TestBedWorkflow)
	w.RegisterActivity(acts)
	return w
}
