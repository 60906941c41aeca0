package workflows

import (
	"time"

	"slotplane/activities"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// quickTimeout bounds one attempt of a local activity. A local activity longer than the
// workflow task timeout (TaskTimeout) holds the task open with heartbeats, so the calls made this
// way are those that take milliseconds; the long ones (claims of a whole Scheduling, a
// reconcile pass, the waits) stay activities.
const quickTimeout = 30 * time.Second

// quick runs a short cluster call (a read, a status write, a creation request) as a local
// activity: run by the worker that runs the workflow, its result recorded with the workflow
// task. An activity costs the Temporal server three history events, a trip through matching
// and a second workflow task, which is what a job would wait for between its grant and its
// running pods.
func quick(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteLocalActivity(withQuickOptions(ctx), activity, args...)
}

// quickRetriesFor bounds the attempts of a local activity, retries and their pauses
// included. A local activity's deadline is otherwise its first attempt's: a read that took
// 30 s on an API server starved of CPU (2,000 slots filling on 2 cores) failed its
// Scheduling for good, and the Scheduling's 250 jobs stayed claimed and queued with nobody
// to run them. A call that fails for this long needs a person: the workflow then fails,
// visibly (the TestBed's WorkflowsHealthy condition says which).
const quickRetriesFor = 24 * time.Hour

// withQuickOptions gives a local activity its timeout and retries.
func withQuickOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    quickTimeout,
		ScheduleToCloseTimeout: quickRetriesFor,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
}

// commitTimeout bounds one attempt of the activity by which Admission commits a decision
// before telling it (see decide): a signal or a slot assignment, which takes
// milliseconds. The server learns of a worker lost during an attempt only when the attempt
// times out: with the activities' default of a minute, each kill of the worker in the long
// run held up every grant for up to a minute. An attempt that runs out on a live worker is
// repeated at once, which is safe: every message is keyed, and an assignment is idempotent.
const commitTimeout = 3 * time.Second

// firstRetry is the wait before the first retry of an activity that may be repeated at once
// (a job's wait only reads; a commit's messages are keyed): work a dead worker held goes on
// as soon as its timeout runs out.
const firstRetry = 200 * time.Millisecond

// withCommitOptions gives the commit activity its timeout and retries.
func withCommitOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: commitTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: firstRetry, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
}

// commitActivity runs the commit activity.
func commitActivity(ctx workflow.Context, activity any, args ...any) workflow.Future {
	return workflow.ExecuteActivity(withCommitOptions(ctx), activity, args...)
}

// sendSignals sends the signals, in order, through the Temporal client; the result
// (activities.SignalWorkflowsResult) names those whose workflow does not run. Workflows
// signal each other this way, not with SignalExternalWorkflow: the server delivers an
// external signal with the sender's lock held while it waits for the target's, and a
// Scheduling and its Admission, which signal each other, would wait on each other for up to
// 3 s.
func sendSignals(ctx workflow.Context, signals []activities.Signal) workflow.Future {
	return workflow.ExecuteLocalActivity(withQuickOptions(ctx), acts.SignalWorkflows, activities.SignalWorkflowsInput{Signals: signals})
}
