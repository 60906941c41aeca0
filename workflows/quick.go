package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// LocalActivitiesChange is the version marker of the short cluster calls (a read, a status
// write, a creation request) made as local activities: run by the worker that runs the
// workflow, their results recorded with the workflow task. An activity costs the Temporal
// server three history events, a trip through matching and a second workflow task; on the
// local platform, where every write goes through one SQLite connection, those writes were
// what a job waited for between its grant and its running pods. Histories from before run
// them as activities.
const LocalActivitiesChange = "local-activities"

// quickTimeout bounds one attempt of a local activity. A local activity longer than the
// workflow task timeout (10 s) holds the task open with heartbeats, so the calls made this
// way are those that take milliseconds; the long ones (claims of a whole Scheduling, a
// reconcile pass, the waits) stay activities.
const quickTimeout = 30 * time.Second

// quick runs a short cluster call: a local activity from LocalActivitiesChange on, an
// activity (with the context's activity options) in histories from before.
func quick(ctx workflow.Context, activity any, args ...any) workflow.Future {
	if workflow.GetVersion(ctx, LocalActivitiesChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.ExecuteActivity(ctx, activity, args...)
	}
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: quickTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	return workflow.ExecuteLocalActivity(ctx, activity, args...)
}
