package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporal "go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/lifecycle"
	"slotplane/workflows"
)

// WorkflowKeeper starts again the workflow of each object that has none running. TestBed,
// BatchJob and Scheduling workflows run for as long as their object exists, and an Admission
// workflow while its bed has a Scheduling that has not ended; all are started by changes and
// messages. One terminated (from Temporal's Web UI, say) or failed would otherwise wait for
// the next change: a bed keeping its ghosts as they were, a running job its slots after its
// application ended, a Scheduling its queue, an Admission its grants. A fresh run rebuilds
// from the cluster: the bed's workflow from its nodes and pods, a job's from its claim,
// creation request and application, a Scheduling's from its status and its jobs' runs, an
// Admission's from the creation requests in its bed.
//
// Every Every, it lists the running workflows of each kind from Temporal's visibility (one
// paged query per kind, not one call per object) and starts the missing ones, as a change of
// their object does. Visibility lags the workflows by a moment, so a workflow started or
// continued just before may be signalled once more: a look that finds nothing new.
//
// A running Scheduling workflow whose Scheduling is gone (its finalizer removed by hand) is
// cancelled: it releases the jobs it claimed and tells Admission, as on a deletion. The
// absence is read live, not from the cache: a Scheduling is made before its workflow. One
// that runs for an earlier object of the name is terminated and the new object's started
// (lifecycle.StartScheduling); a deleted Scheduling whose workflow is gone gets it back, and
// cancelled, so that its jobs are released (lifecycle.CancelScheduling).
type WorkflowKeeper struct {
	// Reader lists the TestBeds, BatchJobs and Schedulings (the manager's cache).
	Reader client.Reader
	// Live reads a Scheduling the cache does not have (the manager's API reader).
	Live client.Reader
	// Client removes the finalizer of a deleted Scheduling that never ran.
	Client   client.Client
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
	Log *slog.Logger
	// Every is how often it looks (default 30 s).
	Every time.Duration
}

// workflowsRestarted counts the workflows the keeper started again, by kind.
var workflowsRestarted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotplane_workflows_restarted_total",
	Help: "Workflows the bridge started again because their object had none running (testbed, batchjob, scheduling, admission).",
}, []string{"workflow"})

// workflowsCancelled counts the workflows the keeper cancelled because their object was
// gone, by kind.
var workflowsCancelled = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotplane_workflows_cancelled_total",
	Help: "Workflows the bridge cancelled because their object was gone while they ran (scheduling).",
}, []string{"workflow"})

func init() { ctrlmetrics.Registry.MustRegister(workflowsRestarted, workflowsCancelled) }

// NeedLeaderElection: one bridge replica keeps the workflows.
func (k *WorkflowKeeper) NeedLeaderElection() bool { return true }

// Start looks every Every until ctx ends. A pass that fails is logged and tried at the next.
func (k *WorkflowKeeper) Start(ctx context.Context) error {
	every := k.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := k.Pass(ctx); err != nil && ctx.Err() == nil {
			k.logger().Warn("could not check that every test bed and job has its workflow; trying again at the next pass", "err", err)
		}
	}
}

func (k *WorkflowKeeper) logger() *slog.Logger {
	if k.Log != nil {
		return k.Log
	}
	return slog.Default()
}

// Pass starts the missing workflows once, and says how many it started.
func (k *WorkflowKeeper) Pass(ctx context.Context) (int, error) {
	// The cache's own objects, not copies: only their names are read.
	var beds v1alpha1.TestBedList
	if err := k.Reader.List(ctx, &beds, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list test beds: %w", err)
	}
	var jobs v1alpha1.BatchJobList
	if err := k.Reader.List(ctx, &jobs, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list batch jobs: %w", err)
	}
	var scheds v1alpha1.SchedulingList
	if err := k.Reader.List(ctx, &scheds, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list schedulings: %w", err)
	}
	bedKeys, jobKeys := make([]client.Object, len(beds.Items)), make([]client.Object, len(jobs.Items))
	for i := range beds.Items {
		bedKeys[i] = &beds.Items[i]
	}
	for i := range jobs.Items {
		jobKeys[i] = &jobs.Items[i]
	}
	started := 0
	restarted := func(kind string, key types.NamespacedName) {
		started++
		workflowsRestarted.WithLabelValues(kind).Inc()
		k.logger().Warn("an object had no workflow running; started it again", "kind", kind, "object", key.String())
	}
	for _, kind := range []struct {
		label, workflowType string
		objects             []client.Object
		id                  func(namespace, name string) string
		nudge               func(context.Context, temporal.Client, installation.Names, types.NamespacedName) error
	}{
		{"testbed", "TestBedWorkflow", bedKeys, k.IDs.TestBedID, nudgeTestBed},
		{"batchjob", "BatchJobWorkflow", jobKeys, k.IDs.BatchJobID, nudgeBatchJob},
	} {
		running, err := k.running(ctx, kind.workflowType)
		if err != nil {
			return started, err
		}
		for _, o := range kind.objects {
			if o.GetDeletionTimestamp() != nil || running[kind.id(o.GetNamespace(), o.GetName())] {
				continue
			}
			key := client.ObjectKeyFromObject(o)
			if err := kind.nudge(ctx, k.Temporal, k.IDs, key); err != nil {
				return started, err
			}
			restarted(kind.label, key)
		}
	}
	if err := k.keepSchedulings(ctx, scheds.Items, restarted); err != nil {
		return started, err
	}
	if err := k.keepAdmissions(ctx, beds.Items, scheds.Items, restarted); err != nil {
		return started, err
	}
	return started, nil
}

// keepSchedulings starts the workflow of each Scheduling that has none running, or one of an
// earlier object of its name; it cancels the workflows of Schedulings that are gone, and
// brings back (to cancel) those of deleted Schedulings that still hold their jobs.
func (k *WorkflowKeeper) keepSchedulings(ctx context.Context, scheds []v1alpha1.Scheduling, restarted func(string, types.NamespacedName)) error {
	running, err := k.runningUIDs(ctx, "SchedulingWorkflow")
	if err != nil {
		return err
	}
	for i := range scheds {
		sc := &scheds[i]
		id := k.IDs.SchedulingID(sc.Namespace, sc.Name)
		uid, runs := running[id]
		delete(running, id)
		if runs && (uid == "" || uid == string(sc.UID)) {
			continue
		}
		key := client.ObjectKeyFromObject(sc)
		// The cache's object is shared: the steps below take a copy.
		own := sc.DeepCopy()
		if sc.DeletionTimestamp != nil {
			if err := lifecycle.CancelScheduling(ctx, k.Client, k.Temporal, k.IDs, own); err != nil {
				return err
			}
			continue
		}
		if _, err := lifecycle.StartScheduling(ctx, k.Temporal, k.IDs, own); err != nil {
			return err
		}
		restarted("scheduling", key)
	}
	return k.cancelOrphans(ctx, running)
}

// keepAdmissions starts the Admission workflow of each test bed that a Scheduling which has
// not ended names, when none runs: it takes up the grants in use at once, rather than when a
// Scheduling next asks (reaskEvery).
func (k *WorkflowKeeper) keepAdmissions(ctx context.Context, beds []v1alpha1.TestBed, scheds []v1alpha1.Scheduling, restarted func(string, types.NamespacedName)) error {
	wanted := map[types.NamespacedName]bool{}
	for i := range scheds {
		switch sc := &scheds[i]; sc.Status.State {
		case v1alpha1.SchedulingCompleted, v1alpha1.SchedulingFailed, v1alpha1.SchedulingCancelled:
		default:
			wanted[types.NamespacedName{Namespace: sc.Namespace, Name: sc.Spec.TestBed}] = true
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	running, err := k.running(ctx, "AdmissionWorkflow")
	if err != nil {
		return err
	}
	for i := range beds {
		key := client.ObjectKeyFromObject(&beds[i])
		id := k.IDs.AdmissionID(key.Namespace, key.Name)
		if beds[i].DeletionTimestamp != nil || !wanted[key] || running[id] {
			continue
		}
		_, err := k.Temporal.ExecuteWorkflow(ctx, temporal.StartWorkflowOptions{
			ID: id, TaskQueue: k.IDs.AdmissionQueue(), WorkflowTaskTimeout: workflows.TaskTimeout,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		}, workflows.AdmissionWorkflow, workflows.AdmissionInput{Namespace: key.Namespace, TestBed: key.Name, StepsPerRun: lifecycle.Steps.Admission})
		if err != nil {
			return fmt.Errorf("start %s: %w", id, err)
		}
		restarted("admission", key)
	}
	return nil
}

// cancelOrphans cancels the running Scheduling workflows (ids) whose Scheduling is gone.
func (k *WorkflowKeeper) cancelOrphans(ctx context.Context, running map[string]string) error {
	for id := range running {
		key, ok := lifecycle.SchedulingOf(k.IDs, id)
		if !ok || k.Live == nil {
			continue
		}
		err := k.Live.Get(ctx, key, &v1alpha1.Scheduling{})
		if !apierrors.IsNotFound(err) {
			continue // there after all (the cache lags), or unknown: the next pass looks again
		}
		if err := k.Temporal.CancelWorkflow(ctx, id, ""); err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
		workflowsCancelled.WithLabelValues("scheduling").Inc()
		k.logger().Warn("a scheduling is gone but its workflow ran on; cancelled it, which releases its jobs", "scheduling", key.String())
	}
	return nil
}

// running lists the ids of the running workflows of a type, from visibility.
func (k *WorkflowKeeper) running(ctx context.Context, workflowType string) (map[string]bool, error) {
	out := map[string]bool{}
	err := k.eachRunning(ctx, workflowType, func(e *workflowpb.WorkflowExecutionInfo) { out[e.GetExecution().GetWorkflowId()] = true })
	return out, err
}

// runningUIDs lists the running Scheduling workflows with the UID each runs for ("": its
// memo has none yet).
func (k *WorkflowKeeper) runningUIDs(ctx context.Context, workflowType string) (map[string]string, error) {
	out := map[string]string{}
	err := k.eachRunning(ctx, workflowType, func(e *workflowpb.WorkflowExecutionInfo) {
		out[e.GetExecution().GetWorkflowId()] = lifecycle.UIDOf(e.GetMemo())
	})
	return out, err
}

// eachRunning calls each for every running workflow of the type in this installation: on
// its task queue, with its id prefix. Another installation's workflows in the namespace are
// not listed.
func (k *WorkflowKeeper) eachRunning(ctx context.Context, workflowType string, each func(*workflowpb.WorkflowExecutionInfo)) error {
	req := &workflowservice.ListWorkflowExecutionsRequest{Query: installation.RunningQuery(k.IDs, workflowType), PageSize: 1000}
	for {
		resp, err := k.Temporal.ListWorkflow(ctx, req)
		if err != nil {
			return fmt.Errorf("list running %s workflows: %w", workflowType, err)
		}
		for _, e := range resp.GetExecutions() {
			each(e)
		}
		if len(resp.GetNextPageToken()) == 0 {
			return nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}
