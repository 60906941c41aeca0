package bridge

import (
	"context"
	"fmt"

	temporal "go.temporal.io/sdk/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/crds/v1alpha1"
	"slotplane/workflows"
)

// SlotsSignaller tells a test bed's Admission workflow that slots came free (or the bed was
// reshaped), so waiting jobs start at once rather than at the workflow's next resync. It only
// signals a running Admission workflow: without one, nobody waits.
type SlotsSignaller struct {
	Temporal temporal.Client
}

var _ reconcile.Reconciler = (*SlotsSignaller)(nil)

// Reconcile signals the Admission workflow of one test bed.
func (s *SlotsSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{}, signalIfRunning(ctx, s.Temporal, workflows.AdmissionWorkflowID(req.Namespace, req.Name), workflows.AdmissionSlotsSignal)
}

// slotsFreed passes the TestBed updates that can let a waiting job start: more free slots,
// or a new layout. Reservations and occupations, the bulk of status writes, only take slots.
func slotsFreed() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*v1alpha1.TestBed)
			after, ok2 := e.ObjectNew.(*v1alpha1.TestBed)
			if !ok1 || !ok2 {
				return false
			}
			return after.Status.Free > before.Status.Free || after.Status.Total != before.Status.Total ||
				after.Generation != before.Generation
		},
	}
}

// QueuesSignaller tells the Admission workflows of a namespace's test beds that the
// namespace's allocation file (ConfigMap v1alpha1.QueuesConfigMap) changed, so a new file is
// in force at once rather than at the workflows' next resync.
type QueuesSignaller struct {
	Reader   client.Reader
	Temporal temporal.Client
}

var _ reconcile.Reconciler = (*QueuesSignaller)(nil)

// Reconcile signals every running Admission workflow of the ConfigMap's namespace. A
// deleted ConfigMap is a change too: the workflows go back to the default queues.
func (s *QueuesSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != v1alpha1.QueuesConfigMap {
		return reconcile.Result{}, nil
	}
	var beds v1alpha1.TestBedList
	if err := s.Reader.List(ctx, &beds, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list test beds of %s: %w", req.Namespace, err)
	}
	for _, b := range beds.Items {
		id := workflows.AdmissionWorkflowID(b.Namespace, b.Name)
		if err := signalIfRunning(ctx, s.Temporal, id, workflows.AdmissionConfigSignal); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// queuesConfigMaps passes only the allocation-file ConfigMaps.
func queuesConfigMaps() predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == v1alpha1.QueuesConfigMap })
}

// JobPolicySignaller nudges the BatchJob workflows of a namespace when its wrapped-spec
// policy (ConfigMap v1alpha1.JobPolicyConfigMap) changes or goes: each job looks at its spec
// again, so a job refused for a field the namespace now allows goes on (and one that uses a
// field no longer allowed is refused) without waiting for its own next change.
type JobPolicySignaller struct {
	Reader   client.Reader
	Temporal temporal.Client
}

var _ reconcile.Reconciler = (*JobPolicySignaller)(nil)

// Reconcile signals every BatchJob workflow of the ConfigMap's namespace that runs.
func (s *JobPolicySignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != v1alpha1.JobPolicyConfigMap {
		return reconcile.Result{}, nil
	}
	var jobs v1alpha1.BatchJobList
	if err := s.Reader.List(ctx, &jobs, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list batch jobs of %s: %w", req.Namespace, err)
	}
	for _, j := range jobs.Items {
		if err := signalIfRunning(ctx, s.Temporal, workflows.BatchJobWorkflowID(j.Namespace, j.Name), workflows.BatchJobChangedSignal); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}
