package bridge

import (
	"context"
	"fmt"
	"time"

	temporal "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/workflows"
)

// QueuesSignaller tells the Admission workflows of a namespace's test beds that the
// namespace's allocation file (ConfigMap v1alpha1.QueuesConfigMap) changed, so a new file is
// in force at once rather than at the workflows' next resync. It also writes, on each test
// bed of the namespace, the condition QueuesConfigured (QueuesCondition): whether the file
// loads, and whether root's ACLs leave every queue open. A new test bed is reconciled as a
// change of its namespace's file, so it gets the condition too.
type QueuesSignaller struct {
	// Client reads the ConfigMap and the test beds (the manager's cache) and writes the
	// test beds' status.
	Client   client.Client
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
}

var _ reconcile.Reconciler = (*QueuesSignaller)(nil)

// conflictRetry is how soon a condition write that lost a race with another status writer
// (the TestBed workflow, the extender) is tried again, on a fresher read.
const conflictRetry = 200 * time.Millisecond

// Reconcile writes the QueuesConfigured condition on every test bed of the ConfigMap's
// namespace and signals every running Admission workflow there. A deleted ConfigMap is a
// change too: the workflows go back to the default queues.
func (s *QueuesSignaller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != v1alpha1.QueuesConfigMap {
		return reconcile.Result{}, nil
	}
	var cm *corev1.ConfigMap
	var got corev1.ConfigMap
	switch err := s.Client.Get(ctx, req.NamespacedName, &got); {
	case err == nil:
		cm = &got
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("get configmap %s: %w", req.NamespacedName, err)
	}
	cond := QueuesCondition(cm)
	var beds v1alpha1.TestBedList
	if err := s.Client.List(ctx, &beds, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list test beds of %s: %w", req.Namespace, err)
	}
	raced := false
	for i := range beds.Items {
		b := &beds.Items[i]
		err := s.setCondition(ctx, b, cond)
		switch {
		case apierrors.IsConflict(err):
			raced = true
		case client.IgnoreNotFound(err) != nil:
			return reconcile.Result{}, fmt.Errorf("write condition %s of test bed %s/%s: %w", v1alpha1.ConditionQueuesConfigured, b.Namespace, b.Name, err)
		}
		id := s.IDs.AdmissionID(b.Namespace, b.Name)
		if err := tellConfig(ctx, s.Temporal, id); err != nil {
			return reconcile.Result{}, err
		}
	}
	if raced {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, nil
}

// setCondition writes cond into the test bed's status unless it says that already. The
// write carries the version read, so it never drops what another writer put in meanwhile:
// it conflicts instead.
func (s *QueuesSignaller) setCondition(ctx context.Context, b *v1alpha1.TestBed, cond metav1.Condition) error {
	updated := b.DeepCopy()
	if !meta.SetStatusCondition(&updated.Status.Conditions, cond) {
		return nil
	}
	return s.Client.Status().Update(ctx, updated)
}

// bedsQueuesFile maps a test bed to its namespace's allocation-file ConfigMap: a new test bed
// is reconciled as a change of the file, so it gets its QueuesConfigured condition.
func bedsQueuesFile(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: v1alpha1.QueuesConfigMap}}}
}

// created passes creations only.
func created() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
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
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
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
		if err := signalIfRunning(ctx, s.Temporal, s.IDs.BatchJobID(j.Namespace, j.Name), workflows.BatchJobChangedSignal); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// tellConfig tells a test bed's Admission workflow, if it runs, that its allocation file may
// have changed. It waits at most configTellTimeout for the workflow to take the message in:
// one that is busy or has no worker reads the file at its next resync anyway.
func tellConfig(ctx context.Context, tc temporal.Client, id string) error {
	ctx, cancel := context.WithTimeout(ctx, configTellTimeout)
	defer cancel()
	_, err := activities.Update(ctx, tc, id, workflows.AdmissionConfigUpdate, nil)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("tell %s its allocation file changed: %w", id, err)
	}
	return nil
}

// configTellTimeout bounds how long the bridge waits for an Admission workflow to take in a
// change of its allocation file.
const configTellTimeout = 10 * time.Second
