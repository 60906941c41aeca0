package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/workflowservice/v1"
	temporal "go.temporal.io/sdk/client"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"slotplane/crds/v1alpha1"
	"slotplane/workflows"
)

// WorkflowKeeper starts again the workflow of each TestBed and BatchJob that has none
// running. Both run for as long as their object exists, and are started by the object's
// changes: one terminated (from Temporal's Web UI, say) or failed would otherwise wait for
// the object's next change, a bed keeping its ghosts as they were and a running job its
// slots after its application ended. A fresh run rebuilds from the cluster: the bed's
// workflow from its nodes and pods, a job's from its claim, creation request and
// application (CreateApplication finds the application a lost run made).
//
// Every Every, it lists the running workflows of each kind from Temporal's visibility (one
// paged query per kind, not one call per object) and signal-with-starts the missing ones,
// as a change of their object does. Visibility lags the workflows by a moment, so a
// workflow started or continued just before may be signalled once more: a look that finds
// nothing new.
//
// A running Scheduling workflow whose Scheduling is gone (its finalizer removed by hand) is
// cancelled: it releases the jobs it claimed and tells Admission, as on a deletion. The
// absence is read live, not from the cache: a Scheduling is made before its workflow.
type WorkflowKeeper struct {
	// Reader lists the TestBeds, BatchJobs and Schedulings (the manager's cache).
	Reader client.Reader
	// Live reads a Scheduling the cache does not have (the manager's API reader).
	Live     client.Reader
	Temporal temporal.Client
	Log      *slog.Logger
	// Every is how often it looks (default 30 s).
	Every time.Duration
}

// workflowsRestarted counts the workflows the keeper started again, by kind.
var workflowsRestarted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slotplane_workflows_restarted_total",
	Help: "Workflows the bridge started again because their object had none running (testbed, batchjob).",
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
	bedKeys, jobKeys := make([]client.Object, len(beds.Items)), make([]client.Object, len(jobs.Items))
	for i := range beds.Items {
		bedKeys[i] = &beds.Items[i]
	}
	for i := range jobs.Items {
		jobKeys[i] = &jobs.Items[i]
	}
	started := 0
	for _, kind := range []struct {
		label, workflowType string
		objects             []client.Object
		id                  func(namespace, name string) string
		nudge               func(context.Context, temporal.Client, types.NamespacedName) error
	}{
		{"testbed", "TestBedWorkflow", bedKeys, workflows.TestBedWorkflowID, nudgeTestBed},
		{"batchjob", "BatchJobWorkflow", jobKeys, workflows.BatchJobWorkflowID, nudgeBatchJob},
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
			if err := kind.nudge(ctx, k.Temporal, key); err != nil {
				return started, err
			}
			started++
			workflowsRestarted.WithLabelValues(kind.label).Inc()
			k.logger().Warn("an object had no workflow running; started it again", "kind", kind.label, "object", key.String())
		}
	}
	if err := k.cancelOrphans(ctx); err != nil {
		return started, err
	}
	return started, nil
}

// cancelOrphans cancels the running Scheduling workflows whose Scheduling is gone.
func (k *WorkflowKeeper) cancelOrphans(ctx context.Context) error {
	running, err := k.running(ctx, "SchedulingWorkflow")
	if err != nil {
		return err
	}
	var scheds v1alpha1.SchedulingList
	if err := k.Reader.List(ctx, &scheds, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list schedulings: %w", err)
	}
	for _, sc := range scheds.Items {
		delete(running, workflows.SchedulingWorkflowID(sc.Namespace, sc.Name))
	}
	for id := range running {
		key, ok := workflows.SchedulingOfWorkflowID(id)
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
	req := &workflowservice.ListWorkflowExecutionsRequest{
		Query:    fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflowType),
		PageSize: 1000,
	}
	for {
		resp, err := k.Temporal.ListWorkflow(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list running %s workflows: %w", workflowType, err)
		}
		for _, e := range resp.GetExecutions() {
			out[e.GetExecution().GetWorkflowId()] = true
		}
		if len(resp.GetNextPageToken()) == 0 {
			return out, nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}
