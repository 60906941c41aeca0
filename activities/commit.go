package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// GrantRequest is the creation request a grant of a test bed's Admission asks for: what its
// Scheduling writes on the job when it takes the grant, and what CommitGrants writes before
// the Scheduling hears of it. Both build it here, so the two writes are the same bytes and
// the second finds its work done.
func GrantRequest(g queue.Grant, testBed string, at time.Time) v1alpha1.CreationRequest {
	granted := metav1.NewMicroTime(at)
	return v1alpha1.CreationRequest{Scheduling: g.Scheduling, SchedulingUID: g.SchedulingUID, TestBed: testBed, Slots: g.Slots, Run: g.Run,
		GrantedAt: &granted, Queue: g.Queue, QuietStart: g.QuietStart}
}

// GrantGroup is one signal of grants to one Scheduling's workflow. Nudges, beside Grants,
// are the signal-with-starts that wake each granted job's workflow (a zero value for a
// refusal).
type GrantGroup struct {
	WorkflowID string
	Signal     string
	Grants     []queue.Grant
	Nudges     []SignalWithStart
}

// CommitGrantsInput is one decision's grants, by Scheduling, in a test bed's namespace.
type CommitGrantsInput struct {
	Namespace string
	TestBed   string
	// TaskQueue is where a nudged job's workflow runs if the nudge starts it.
	TaskQueue string
	Groups    []GrantGroup
}

// ErrRequestTaken: the job carries another creation request of the same Scheduling, so the
// grant is not the first the Scheduling would take for it. CommitGrants leaves such a grant
// to the Scheduling, which knows which of the two it wants.
const ErrRequestTaken = "RequestTaken"

// writeMargin is the least time an attempt of CommitGrants must have left to write a
// request. An attempt that runs out is repeated by the server once its timeout passed; the
// repeat writes nothing, and a write of the attempt before must not land after the repeat's
// signals told the Scheduling that it had not been made.
const writeMargin = time.Second

// CommitGrants carries out an Admission's grants: it writes each grant's creation request on
// its job, clears the granted slots' ghosts and wakes the job's workflow, all before the
// Scheduling hears of the grant, then signals the Schedulings with their grants. A grant
// whose request was written says so (queue.Grant.Written): its Scheduling records it and
// writes nothing. The job makes its application a Scheduling workflow task sooner than if
// its Scheduling wrote the request, and a Scheduling busy with other work holds up no
// grant.
//
// Only what the Scheduling would take is written: the job must be held by the grant's
// Scheduling, whose object must still carry the grant's UID (a Scheduling made again under
// the same name holds its jobs under the same label), and must carry no other request of
// that Scheduling. Anything else (those, slots gone from the bed, an error) is left to the
// Scheduling as before: the grant goes out unwritten, and the Scheduling writes it, or gives
// it back, itself.
//
// Only the first attempt writes, and only while it has writeMargin left: a later attempt
// (the first ran out or its worker was lost) only signals, with nothing said written, and
// the Scheduling's own write of the same bytes is a no-op. A Scheduling that does not run
// cannot take its grants (Admission releases them): the requests written for it are taken
// off their jobs again, and their workflows woken to see so.
func (a *Activities) CommitGrants(ctx context.Context, in CommitGrantsInput) (SignalWorkflowsResult, error) {
	return a.commitGrants(ctx, in, activity.GetInfo(ctx).Attempt)
}

// commitGrants is CommitGrants in the given attempt.
func (a *Activities) commitGrants(ctx context.Context, in CommitGrantsInput, attempt int32) (SignalWorkflowsResult, error) {
	if a.Temporal == nil {
		return SignalWorkflowsResult{}, nonRetryable("NoTemporalClient", "the worker gave its activities no Temporal client")
	}
	groups := slices.Clone(in.Groups)
	for i := range groups {
		groups[i].Grants = slices.Clone(groups[i].Grants)
		for j := range groups[i].Grants {
			groups[i].Grants[j].Written = false // only this attempt's word counts
		}
	}
	if attempt == 1 {
		a.writeGrants(ctx, in, groups)
	}
	signals := make([]Signal, len(groups))
	for i, g := range groups {
		signals[i] = Signal{WorkflowID: g.WorkflowID, Name: g.Signal, Arg: g.Grants}
	}
	res, err := a.SignalWorkflows(ctx, SignalWorkflowsInput{Signals: signals})
	for _, i := range res.NotRunning {
		a.withdrawGrants(ctx, in, groups[i])
	}
	return res, err
}

// writeGrants writes the requests of the grants that may be written, then clears their
// slots' ghosts, then nudges their jobs, and marks each grant written whose request is on
// its job.
func (a *Activities) writeGrants(ctx context.Context, in CommitGrantsInput, groups []GrantGroup) {
	type at struct{ group, grant int }
	var todo []at
	for i, g := range groups {
		if !a.schedulingIs(ctx, in.Namespace, g) {
			continue
		}
		for j, gr := range g.Grants {
			if gr.Refused == "" && !gr.At.IsZero() && g.Nudges[j].WorkflowID != "" {
				todo = append(todo, at{i, j})
			}
		}
	}
	written := make([]bool, len(todo))
	_ = eachOf(ctx, todo, func(k int, w at) error {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < writeMargin {
			return nil
		}
		gr := groups[w.group].Grants[w.grant]
		req := RequestCreationInput{Namespace: in.Namespace, Job: gr.Job, Request: GrantRequest(gr, in.TestBed, gr.At)}
		if err := a.writeRequestIf(ctx, req, true); err != nil {
			slog.Debug("a grant's request is left to its scheduling", "job", gr.Job, "scheduling", gr.Scheduling, "err", err)
			return nil
		}
		written[k] = true
		return nil
	})
	var positions []int32
	var nudges []SignalWithStart
	for k, w := range todo {
		if written[k] {
			positions = append(positions, groups[w.group].Grants[w.grant].Slots...)
			nudges = append(nudges, groups[w.group].Nudges[w.grant])
		}
	}
	if len(nudges) == 0 {
		return
	}
	// The ghosts go before the jobs are woken (see RequestCreation). One that stays (the
	// call failed) is preempted by the job's pod instead.
	if err := a.ClearGhosts(ctx, TestBedRef{Namespace: in.Namespace, Name: in.TestBed}, positions); err != nil {
		slog.Warn("clear the ghosts of granted slots", "testbed", in.TestBed, "slots", positions, "err", err)
	}
	nudged := make([]bool, len(nudges))
	_ = eachOf(ctx, nudges, func(i int, n SignalWithStart) error {
		nudged[i] = a.NudgeWorkflows(ctx, SignalWithStartInput{TaskQueue: in.TaskQueue, Signals: []SignalWithStart{n}}) == nil
		return nil
	})
	i := 0
	for k, w := range todo {
		if written[k] {
			// A job whose nudge failed is nudged by its Scheduling, which then writes (a no-op)
			// and nudges as before.
			groups[w.group].Grants[w.grant].Written = nudged[i]
			i++
		}
	}
}

// schedulingIs says whether the group's Scheduling exists with the UID its grants name. It
// is read from etcd: a copy that lags could show a Scheduling deleted since, whose name a
// new one took with the jobs.
func (a *Activities) schedulingIs(ctx context.Context, namespace string, g GrantGroup) bool {
	if len(g.Grants) == 0 || len(g.Nudges) != len(g.Grants) {
		return false
	}
	var s v1alpha1.Scheduling
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: g.Grants[0].Scheduling}, &s); err != nil {
		return false
	}
	for _, gr := range g.Grants {
		if gr.Scheduling != s.Name || gr.SchedulingUID == "" || gr.SchedulingUID != string(s.UID) {
			return false
		}
	}
	return s.DeletionTimestamp == nil
}

// withdrawGrants takes back the requests this attempt wrote for a Scheduling that does not
// run (WithdrawGrant).
func (a *Activities) withdrawGrants(ctx context.Context, in CommitGrantsInput, g GrantGroup) {
	for j, gr := range g.Grants {
		if !gr.Written {
			continue
		}
		w := WithdrawGrantInput{Namespace: in.Namespace, TestBed: in.TestBed, TaskQueue: in.TaskQueue, Grant: gr, Nudge: g.Nudges[j]}
		if err := a.WithdrawGrant(ctx, w); err != nil {
			slog.Warn("take back the request of a grant nobody took", "job", gr.Job, "err", err)
		}
	}
}

// WithdrawGrantInput names a grant whose request was written (queue.Grant.Written) and the
// nudge of its job's workflow.
type WithdrawGrantInput struct {
	Namespace string
	TestBed   string
	TaskQueue string
	Grant     queue.Grant
	Nudge     SignalWithStart
}

// WithdrawGrant takes a written grant's request off its job, if it is still the one written,
// and wakes the job's workflow, which then drops what it made of it: nobody follows the run
// (its Scheduling does not run, or did not want the grant), and Admission releases its
// slots. A job that is gone, or carries another request, is left as it is.
func (a *Activities) WithdrawGrant(ctx context.Context, in WithdrawGrantInput) error {
	body, err := json.Marshal(GrantRequest(in.Grant, in.TestBed, in.Grant.At))
	if err != nil {
		return fmt.Errorf("encode creation request: %w", err)
	}
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Grant.Job}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var job v1alpha1.BatchJob
		if err := a.Client.Get(ctx, key, &job); err != nil {
			return err
		}
		if job.Annotations[v1alpha1.CreationRequestAnnotation] != string(body) {
			return nil
		}
		base := job.DeepCopy()
		delete(job.Annotations, v1alpha1.CreationRequestAnnotation)
		return a.Client.Patch(ctx, &job, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("take the request of a withdrawn grant off job %s: %w", key, err)
	}
	if in.Nudge.WorkflowID == "" {
		return nil
	}
	return a.NudgeWorkflows(ctx, SignalWithStartInput{TaskQueue: in.TaskQueue, Signals: []SignalWithStart{in.Nudge}})
}

// requestTaken is the error of a fresh write that found another request of its Scheduling.
func requestTaken(key types.NamespacedName, scheduling string) error {
	return nonRetryable(ErrRequestTaken, "job %s carries another request of scheduling %s", key, scheduling)
}

// killsRunOf says whether the job carries a kill of the Scheduling's run (one that does not
// parse counts: it is the job's workflow's to judge).
func killsRunOf(job *v1alpha1.BatchJob, scheduling string) bool {
	raw, ok := job.Annotations[v1alpha1.KillAnnotation]
	if !ok {
		return false
	}
	var k v1alpha1.KillRequest
	return json.Unmarshal([]byte(raw), &k) != nil || k.Scheduling == scheduling
}
