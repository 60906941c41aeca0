package workflows

import (
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/installation"
)

// installationOf is the installation a workflow runs in, read from the run itself: the
// task queue it was started on and its id, own (installation.Default's id of the run)
// behind the installation's prefix. Both are in the run's first event, so every replay
// reads the same.
func installationOf(ctx workflow.Context, own string, admission bool) installation.Names {
	info := workflow.GetInfo(ctx)
	return installation.OfRun(info.TaskQueueName, info.WorkflowExecution.ID, own, admission)
}

// jobNudge tells a job's workflow to look at its job again, starting it if needed.
func jobNudge(in installation.Names, namespace, name string) activities.SignalWithStart {
	return activities.SignalWithStart{
		WorkflowID: in.BatchJobID(namespace, name), WorkflowType: "BatchJobWorkflow",
		Input: BatchJobInput{Namespace: namespace, Name: name}, Signal: BatchJobChangedSignal,
	}
}
