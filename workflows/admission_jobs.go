package workflows

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// What Admission tells the BatchJobs themselves: the queue each is in, and kills.
const (
	// AdmissionKillUpdate kills a job's run (AdmissionKill), answering an AdmissionKilled: the
	// caller must be the job's user or an administrator of its queue. The job's workflow
	// deletes the application and ends the job Failed, reason Killed; its slots go on as
	// after any end, and its Scheduling goes on with its other jobs. A refusal has the move's
	// error types (MoveForbidden, MoveNotFound, MoveNotReady).
	AdmissionKillUpdate = "kill"
)

type (
	// AdmissionKill asks for the kill of a job's run.
	AdmissionKill = queue.Kill
)

// AdmissionKilled answers a kill: the job's run will end.
type AdmissionKilled struct {
	Job, Scheduling, Queue string
	// As is the right the caller killed in: "the job's user" or "an administrator of <queue>".
	As string
	// Running: the run held slots; else it was waiting.
	Running bool
}

// listenForKills registers the kill update. The handler writes the kill on the BatchJob (an
// activity): the kill outlives any process, and the job's workflow, which owns the run,
// carries it out.
func (a *admission) listenForKills(ctx workflow.Context) error {
	return workflow.SetUpdateHandlerWithOptions(ctx, AdmissionKillUpdate,
		func(ctx workflow.Context, k AdmissionKill) (AdmissionKilled, error) {
			var kb queue.Killable
			if err := guard("kill", func() (err error) { kb, err = a.core.CheckKill(k); return err }); err != nil {
				return AdmissionKilled{}, moveError(err)
			}
			nudge := jobNudge(a.ids, a.in.Namespace, k.Job)
			in := activities.KillJobInput{Namespace: a.in.Namespace, Job: k.Job, TaskQueue: a.ids.Queue(),
				Kill:  v1alpha1.KillRequest{Scheduling: k.Scheduling, By: k.By, As: kb.As, Reason: k.Reason, At: metav1.NewTime(workflow.Now(ctx).UTC().Truncate(time.Second))},
				Nudge: &nudge}
			err := workflow.ExecuteActivity(withActivityDefaults(ctx), acts.KillJob, in).Get(ctx, nil)
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.Type() == activities.ErrRunOver {
				return AdmissionKilled{}, temporal.NewApplicationError(app.Message(), MoveNotFound)
			}
			if err != nil {
				return AdmissionKilled{}, err
			}
			return AdmissionKilled{Job: k.Job, Scheduling: k.Scheduling, Queue: kb.Queue, As: kb.As, Running: kb.Running}, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, k AdmissionKill) error {
			return moveError(guard("kill", func() error {
				_, err := a.core.CheckKill(k)
				return err
			}))
		}})
}

// queuesBefore are the queues the core holds the jobs of keys in before their requests are
// taken (nil when it holds none of them): a request sent again (a Scheduling asks again for
// its waiting jobs) writes no queue that did not change.
func (a *admission) queuesBefore(keys []queue.JobKey) map[queue.JobKey]string {
	return a.core.QueuesOf(keys)
}

// placed notes the queues the core put the jobs of the requests rs in, to be written to
// their statuses (queue.Admitter.ToShow): those the statuses do not show yet, and those of
// jobs whose last placement is still to be written.
func (a *admission) placed(rs []AdmissionRequest, before map[queue.JobKey]string) {
	var pending map[string]bool // scheduling/job of the placements not yet written
	isPending := func(k queue.JobKey) bool {
		if pending == nil {
			pending = map[string]bool{}
			for _, p := range a.pendingQueues() {
				pending[p.Scheduling+"/"+p.Job] = true
			}
		}
		return pending[k.Scheduling+"/"+k.Job]
	}
	for _, p := range a.core.ToShow(rs, before, isPending) {
		a.unrecorded = append(a.unrecorded, activities.QueuePlacement{Scheduling: p.Key.Scheduling, Job: p.Key.Job, Queue: p.Queue})
	}
}

// recordQueues writes the noted placements to the jobs' statuses in the background, a
// batch at a time until none is left or the run hands over, without holding up a decision.
// A batch that fails (the activity retries until it is cancelled) is noted again, and goes
// to the next run with the rest; so does a batch cancelled at the hand-over, which may be
// written twice, which changes nothing.
func (a *admission) recordQueues(ctx workflow.Context) {
	if len(a.unrecorded) == 0 || a.recordingBusy {
		return
	}
	a.recordingBusy = true
	ctx, a.stopRecording = workflow.WithCancel(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() {
			a.recordingBusy = false
			if a.handingOver {
				a.arrived.SendAsync(true) // the loop winds down: it may hand over now
			}
		}()
		for len(a.unrecorded) > 0 && !a.handingOver {
			n := min(len(a.unrecorded), recordBatch)
			a.recording, a.unrecorded = a.unrecorded[:n:n], a.unrecorded[n:]
			in := activities.RecordQueuesInput{Namespace: a.in.Namespace, Placements: a.recording}
			if err := workflow.ExecuteActivity(ctx, acts.RecordQueues, in).Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("write the jobs' queues", "jobs", len(a.recording), "err", err)
				a.unrecorded = append(a.recording, a.unrecorded...)
				a.recording = nil
				return
			}
			a.recording = nil
		}
	})
}

// recordBatch is how many jobs' queues one activity writes: at the worker's client rate, a
// few seconds' worth.
const recordBatch = 200

// pendingQueues are the placements not yet known written, for the next run.
func (a *admission) pendingQueues() []activities.QueuePlacement {
	return append(append([]activities.QueuePlacement(nil), a.recording...), a.unrecorded...)
}
