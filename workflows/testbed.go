// Package workflows holds slotplane's Temporal workflows. They only orchestrate: decisions
// come from the pure packages (slots, queue, schedplan, jobplan), and everything that
// touches the cluster is an activity. Workflow code is deterministic:
// workflow.Now/Sleep/Go/Selector, no map ranging, no I/O. A change to its logic that would
// break a recorded history changes HistoryForm and records the histories again until the
// first release; from v0.1.0 on it ships behind a patch (workflow.GetVersion), as
// docs/operations.md says under "Upgrades".
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/slots"
)

// TaskTimeout is the workflow task timeout of every slotplane workflow, set when each is
// started and kept across continue-as-new. It is Temporal's default, 10 s, and it trades two
// costs. A worker that dies with a workflow task in hand stalls that workflow for this long,
// since the server waits it out before another worker may take the task; Admission is busy
// nearly all the time, so a kill often catches one of its tasks (in the long run, 8 more
// jobs ended 4 to 12 s after a kill, against 5 to 7 s with 3 s). A task that runs past it on
// a live worker is lost and made again after a replay of the run; a worker short of CPU (a
// pod at its limit, or 2,000 slots filling on 2 cores) ran thousands of job tasks past 3 s
// while their local activities waited, and each retry made the shortage worse. slotplane's
// workflow tasks take milliseconds: decisions are in memory, cluster calls longer than a
// moment are activities, and a local activity that runs long has the SDK extend the task
// at 80% of this timeout.
const TaskTimeout = activities.WorkflowTaskTimeout

// TestBedChangedSignal tells a TestBedWorkflow that its test bed, a node or one of its pods
// changed. Its payload is ignored: a pass always reads the whole picture.
const TestBedChangedSignal = "testbed-changed"

// TestBedInput names the test bed. The timings are optional (zero takes the default) so
// tests can shorten them.
type TestBedInput struct {
	Namespace string
	Name      string
	// Resync is the pause between passes when nothing is happening (default 30s).
	Resync time.Duration
	// Retry is the pause after a pass that changed something or found the cluster in
	// progress (default 2s).
	Retry time.Duration
	// Debounce is how long the workflow gathers further change signals after the first one
	// before it runs a pass (default 1s): a hundred pods changing at once make one pass.
	Debounce time.Duration
	// PassesPerRun bounds the history: after this many passes the workflow continues as new
	// (default 500).
	PassesPerRun int
}

// TestBedOutput is what the workflow ends with.
type TestBedOutput struct {
	// Passes is the number of reconcile passes of this run.
	Passes int
}

// TestBedWorkflow keeps a test bed's ghost pods and slot status in line with the cluster.
// It runs a reconcile pass, then waits for a change signal or a timer, and repeats until the
// TestBed is gone. It continues as new to keep its history short.
func TestBedWorkflow(ctx workflow.Context, in TestBedInput) (TestBedOutput, error) {
	resync, retry, debounce, perRun := in.Resync, in.Retry, in.Debounce, in.PassesPerRun
	if resync <= 0 {
		resync = 30 * time.Second
	}
	if retry <= 0 {
		retry = 2 * time.Second
	}
	if debounce <= 0 {
		debounce = time.Second
	}
	if perRun <= 0 {
		perRun = 500
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
		},
	})
	changed := workflow.GetSignalChannel(ctx, TestBedChangedSignal)
	logger := workflow.GetLogger(ctx)
	var a *activities.Activities
	out := TestBedOutput{}
	for {
		// Signals that arrived before or during the last pass are covered by this one.
		for changed.ReceiveAsync(nil) {
		}
		var res activities.ReconcileTestBedResult
		pass := activities.TestBedRef{Namespace: in.Namespace, Name: in.Name}
		if err := workflow.ExecuteActivity(ctx, a.ReconcileTestBed, pass).Get(ctx, &res); err != nil {
			return out, err
		}
		out.Passes++
		if res.Gone {
			logger.Info("test bed gone; workflow ends", "testbed", in.Namespace+"/"+in.Name)
			return out, nil
		}
		wait := slots.NextPass(res.Settled, res.RecheckIn, resync, retry)
		if out.Passes >= perRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// Changes that arrived meanwhile are not lost: the next run starts with a pass.
			next := TestBedInput{Namespace: in.Namespace, Name: in.Name, Resync: resync, Retry: retry, Debounce: debounce, PassesPerRun: perRun}
			return out, workflow.NewContinueAsNewError(ctx, TestBedWorkflow, next)
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) {})
		signalled := false
		sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			signalled = true
		})
		sel.Select(ctx)
		cancel()
		if signalled {
			// Let the rest of a burst arrive; the drain above then takes it all at once.
			if err := workflow.Sleep(ctx, debounce); err != nil {
				return out, err
			}
		}
	}
}
