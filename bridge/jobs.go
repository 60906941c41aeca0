package bridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.temporal.io/api/serviceerror"
	temporal "go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/lifecycle"
	"slotplane/workflows"
)

// BatchJobSignaller signals (starting it if needed) a BatchJob's workflow when the job changes
// in a way only the bridge sees (jobChanges); the workflow reads the job itself and ends once
// the job is gone.
type BatchJobSignaller struct {
	Reader   client.Reader
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
}

// Reconcile signals the job's workflow.
func (s *BatchJobSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := s.IDs.BatchJobID(req.Namespace, req.Name)
	var job v1alpha1.BatchJob
	err := s.Reader.Get(ctx, req.NamespacedName, &job)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, signalIfRunning(ctx, s.Temporal, id, workflows.BatchJobChangedSignal)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nudgeBatchJob(ctx, s.Temporal, s.IDs, req.NamespacedName)
}

// nudgeBatchJob signals a BatchJob's workflow that its job changed, starting it if none runs.
func nudgeBatchJob(ctx context.Context, tc temporal.Client, ids installation.Names, job types.NamespacedName) error {
	return signalWithStart(ctx, tc, ids.Queue(), ids.BatchJobID(job.Namespace, job.Name), workflows.BatchJobChangedSignal,
		workflows.BatchJobWorkflow, workflows.BatchJobInput{Namespace: job.Namespace, Name: job.Name})
}

// endedRunsBed maps a BatchJob whose run just ended (runEnds) to the test bed of its
// creation request: the bed's workflow hears of the end through TestBedSignaller, in its
// pace, and its slots get their ghosts back now rather than at the bed's next pass (a
// running job's slots get none, see ReconcileTestBed), unless Admission hands them to the
// next job first. The job's own workflow wrote the end and hears nothing.
func endedRunsBed(_ context.Context, o client.Object) []reconcile.Request {
	cr, err := v1alpha1.CreationRequestOf(o.GetAnnotations())
	if err != nil || cr == nil || cr.TestBed == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: cr.TestBed}}}
}

// runEnds passes a BatchJob whose status just came to an end (Completed or Failed).
func runEnds() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*v1alpha1.BatchJob)
			after, ok2 := e.ObjectNew.(*v1alpha1.BatchJob)
			return ok1 && ok2 && after.Status.State.Ended() && after.Status.State != before.Status.State
		},
	}
}

// jobChanges passes the BatchJob changes its workflow hears of from nobody else: a new or
// deleted job, an edit of its spec, and a change of its labels, annotations or finalizers
// other than the claim, the creation request and its granted-testbed label. A Scheduling
// writes those and then signals the workflow itself (signal-with-start, in the same workflow
// step), so the bridge's signal would only repeat it; the test bed takes the label off a run
// that ended, which the workflow knows of already. The workflow's own status writes, the end
// of a run among them, pass silently too (the test bed hears of an end through
// endedRunsBed). In the long run, the end's signal back cost every job a workflow task and a
// read of the job.
func jobChanges() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*v1alpha1.BatchJob)
		after, ok2 := e.ObjectNew.(*v1alpha1.BatchJob)
		if !ok1 || !ok2 {
			return true
		}
		if before.Generation != after.Generation || !before.DeletionTimestamp.Equal(after.DeletionTimestamp) ||
			!slices.Equal(before.Finalizers, after.Finalizers) ||
			!maps.Equal(without(before.Labels, v1alpha1.ActiveSchedulingLabel, v1alpha1.GrantedTestBedLabel), without(after.Labels, v1alpha1.ActiveSchedulingLabel, v1alpha1.GrantedTestBedLabel)) ||
			!maps.Equal(without(before.Annotations, v1alpha1.CreationRequestAnnotation), without(after.Annotations, v1alpha1.CreationRequestAnnotation)) {
			return true
		}
		return false
	}}
}

// without is m less keys (m itself when it has none of them).
func without(m map[string]string, keys ...string) map[string]string {
	if !slices.ContainsFunc(keys, func(k string) bool { _, ok := m[k]; return ok }) {
		return m
	}
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func signalIfRunning(ctx context.Context, tc temporal.Client, id, signal string) error {
	err := tc.SignalWorkflow(ctx, id, "", signal, nil)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("signal %s: %w", id, err)
	}
	return nil
}

// SchedulingStarter starts a Scheduling's workflow when the Scheduling appears, passes an
// edited job list on as the extend Update, and cancels the workflow when the Scheduling is
// deleted. A finalizer keeps the deleted object until the workflow has released its jobs.
type SchedulingStarter struct {
	Client   client.Client
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
}

// Reconcile brings the Scheduling's workflow in line with the object.
func (s *SchedulingStarter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var sched v1alpha1.Scheduling
	if err := s.Client.Get(ctx, req.NamespacedName, &sched); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if sched.DeletionTimestamp != nil {
		return reconcile.Result{}, lifecycle.CancelScheduling(ctx, s.Client, s.Temporal, s.IDs, &sched)
	}
	if controllerutil.AddFinalizer(&sched, v1alpha1.SchedulingFinalizer) {
		if err := s.Client.Update(ctx, &sched); err != nil {
			return reconcile.Result{}, fmt.Errorf("add finalizer to scheduling %s: %w", req.NamespacedName, err)
		}
	}
	// The API may have started it already: the same id is the same workflow.
	run, err := lifecycle.StartScheduling(ctx, s.Temporal, s.IDs, &sched)
	if err != nil {
		return reconcile.Result{}, err
	}
	if sched.Generation > 1 && sched.Status.ObservedGeneration < sched.Generation && sched.Status.State == v1alpha1.SchedulingScheduling &&
		!refusedAlready(&sched) {
		// An edit of the job list: the workflow appends what is new, or refuses.
		_, err := lifecycle.ExtendScheduling(ctx, s.Temporal, s.IDs, req.Namespace, req.Name, run.GetRunID(), sched.Spec.Jobs)
		var refused *lifecycle.RefusedError
		switch {
		case errors.As(err, &refused):
			// Retrying cannot help: the list must change.
			log.FromContext(ctx).Info("the scheduling refused the edited job list", "scheduling", req.NamespacedName, "reason", refused.Reason)
			return reconcile.Result{}, s.noteRefusal(ctx, &sched, refused)
		case err != nil:
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// refusedAlready: the workflow refused this generation's job list; asking again cannot help.
func refusedAlready(sched *v1alpha1.Scheduling) bool {
	gen, _, ok := strings.Cut(sched.Annotations[v1alpha1.ExtendRefusedAnnotation], ":")
	return ok && gen == strconv.FormatInt(sched.Generation, 10)
}

// noteRefusal writes on the Scheduling that its workflow refused this generation's job list,
// and why, for whoever edited it (kubectl shows annotations), and so that the bridge does not
// ask again until the list changes. The status stays the workflow's.
//
// The note is written only on the object as it was refused (optimistically): when the API
// refused the list itself, it has put the list back already, and the note is not needed.
func (s *SchedulingStarter) noteRefusal(ctx context.Context, sched *v1alpha1.Scheduling, why *lifecycle.RefusedError) error {
	patch := client.MergeFromWithOptions(sched.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if sched.Annotations == nil {
		sched.Annotations = map[string]string{}
	}
	sched.Annotations[v1alpha1.ExtendRefusedAnnotation] = fmt.Sprintf("%d: %s", sched.Generation, v1alpha1.ClipMessage(why.Reason))
	if err := s.Client.Patch(ctx, sched, patch); err != nil && !apierrors.IsConflict(err) {
		return client.IgnoreNotFound(err)
	}
	return nil // a conflict: the object changed, and its next reconcile looks again
}
