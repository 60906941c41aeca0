package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// QueuePlacement says which leaf queue a Scheduling's job is in.
type QueuePlacement struct {
	Scheduling string
	Job        string
	Queue      string
}

// QueuePlacements are placements packed (queue.PackKeys, the queue as each key's note): the
// Admission workflow carries those not yet written across continue-as-new, and a burst of
// requests leaves thousands.
type QueuePlacements []QueuePlacement

// MarshalJSON writes the placements packed, as a base64 string.
func (p QueuePlacements) MarshalJSON() ([]byte, error) {
	notes := make([]queue.KeyNote, len(p))
	for i := range p {
		notes[i] = queue.KeyNote{Key: queue.JobKey{Scheduling: p[i].Scheduling, Job: p[i].Job}, Note: p[i].Queue}
	}
	return marshalPacked(notes)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *QueuePlacements) UnmarshalJSON(data []byte) error {
	notes, err := unmarshalPacked(data)
	*p = make(QueuePlacements, len(notes))
	for i, n := range notes {
		(*p)[i] = QueuePlacement{Scheduling: n.Key.Scheduling, Job: n.Key.Job, Queue: n.Note}
	}
	return err
}

// RecordQueuesInput lists placements of one namespace's jobs.
type RecordQueuesInput struct {
	Namespace  string
	Placements []QueuePlacement
}

// RecordQueues writes each job's queue to its status (status.queue), which only Admission
// writes: where placement put the job, or where a move took it. A job that is gone, or that
// another Scheduling (or none) holds now, is left alone: its queue is another Admission's to
// say, or none.
//
// Each job costs one request: a JSON patch of the status whose first operation tests that the
// Scheduling still holds the job, so the API server applies the write only then, with no
// read before it and nothing to conflict with the job's own status writes.
func (a *Activities) RecordQueues(ctx context.Context, in RecordQueuesInput) error {
	return eachOf(ctx, in.Placements, func(_ int, p QueuePlacement) error {
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/labels/" + jsonPointerEscape(v1alpha1.ActiveSchedulingLabel), "value": p.Scheduling},
			{"op": "add", "path": "/status/queue", "value": p.Queue},
		})
		if err != nil {
			return fmt.Errorf("encode the queue patch: %w", err)
		}
		job := &v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: p.Job}}
		err = a.Client.Status().Patch(ctx, job, client.RawPatch(types.JSONPatchType, patch))
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsInvalid(err):
			// The patch did not apply: the label is another Scheduling's or gone, or the job
			// has no status yet to add to. Decide on the object itself.
			return a.recordQueue(ctx, in.Namespace, p)
		}
		return fmt.Errorf("record queue %s of batchjob %s/%s: %w", p.Queue, in.Namespace, p.Job, err)
	})
}

// recordQueue writes one job's queue by reading the job and updating its status, if its
// Scheduling still holds it.
func (a *Activities) recordQueue(ctx context.Context, namespace string, p QueuePlacement) error {
	key := types.NamespacedName{Namespace: namespace, Name: p.Job}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var job v1alpha1.BatchJob
		if err := a.Client.Get(ctx, key, &job); err != nil {
			return err
		}
		if job.Labels[v1alpha1.ActiveSchedulingLabel] != p.Scheduling || job.Status.Queue == p.Queue {
			return nil
		}
		job.Status.Queue = p.Queue
		return a.Client.Status().Update(ctx, &job)
	})
	if err = client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("record queue %s of batchjob %s: %w", p.Queue, key, err)
	}
	return nil
}

// jsonPointerEscape escapes a key for a JSON pointer (RFC 6901): ~ as ~0, / as ~1.
func jsonPointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// KillJobInput asks for the kill of a job's run in a Scheduling.
type KillJobInput struct {
	Namespace string
	Job       string
	Kill      v1alpha1.KillRequest
	// Nudge, when set, tells the job's workflow to look at the job once the kill is written.
	Nudge     *SignalWithStart `json:",omitempty"`
	TaskQueue string
}

// ErrRunOver: a kill came for a job whose run in that Scheduling is over, or that the
// Scheduling no longer holds.
const ErrRunOver = "RunOver"

// KillJob writes the kill on the BatchJob (v1alpha1.KillAnnotation) and nudges the job's
// workflow, which carries it out. The caller has checked the right to kill. A job its
// Scheduling no longer holds, or whose run there ended, is ErrRunOver: nothing is written.
// Writing the same kill again changes nothing but the nudge.
func (a *Activities) KillJob(ctx context.Context, in KillJobInput) error {
	body, err := json.Marshal(in.Kill)
	if err != nil {
		return fmt.Errorf("encode kill: %w", err)
	}
	key := types.NamespacedName{Namespace: in.Namespace, Name: in.Job}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var job v1alpha1.BatchJob
		if err := a.Client.Get(ctx, key, &job); err != nil {
			if apierrors.IsNotFound(err) {
				return nonRetryable(ErrRunOver, "batch job %s is gone", in.Job)
			}
			return err
		}
		if holder := job.Labels[v1alpha1.ActiveSchedulingLabel]; holder != in.Kill.Scheduling {
			return nonRetryable(ErrRunOver, "batch job %s is held by %q, not scheduling %s", in.Job, holder, in.Kill.Scheduling)
		}
		if st := job.Status; st.Scheduling == in.Kill.Scheduling && st.State.Ended() {
			return nonRetryable(ErrRunOver, "batch job %s ended %s in scheduling %s already", in.Job, st.State, in.Kill.Scheduling)
		}
		var old v1alpha1.KillRequest
		if raw, ok := job.Annotations[v1alpha1.KillAnnotation]; ok && json.Unmarshal([]byte(raw), &old) == nil && old.Scheduling == in.Kill.Scheduling {
			return nil // killed already: the first kill stands
		}
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[v1alpha1.KillAnnotation] = string(body)
		return a.Client.Update(ctx, &job)
	})
	if err != nil {
		if hasErrorType(err, ErrRunOver) {
			return err
		}
		return fmt.Errorf("kill batchjob %s/%s: %w", in.Namespace, in.Job, err)
	}
	if in.Nudge == nil {
		return nil
	}
	return a.NudgeWorkflows(ctx, SignalWithStartInput{TaskQueue: in.TaskQueue, Signals: []SignalWithStart{*in.Nudge}})
}

// IsRunOver says whether err is ErrRunOver.
func IsRunOver(err error) bool { return hasErrorType(err, ErrRunOver) }
