// Package lifecycle holds the steps every front door (the bridge for kubectl, the REST API)
// takes on a Scheduling's workflow, so that both take them the same way.
package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	temporal "go.temporal.io/sdk/client"
	temporalerr "go.temporal.io/sdk/temporal"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/workflows"
)

// StepsPerRun is how many steps a Scheduling workflow and the Admission workflow it starts
// take before they continue as new; zero keeps the workflows' defaults.
type StepsPerRun struct {
	Scheduling, Admission int
}

// Steps is the process's setting (the -scheduling-steps-per-run and -admission-steps-per-run
// flags of the API, the bridge and dev): smaller bounds history, and tests make it tiny so
// that workflows continue as new many times.
var Steps StepsPerRun

// StartScheduling starts the workflow of sched under the installation's SchedulingID, the id every front
// door uses. A workflow already running under it for this object is used, not a second one
// started, so the API and the bridge (kubectl) never start the same Scheduling twice. One
// running for an earlier object of the name (deleted without its workflow's clean-up: its
// finalizer removed by hand) is terminated first: the new object never takes over an old
// object's run. The new run finds the jobs the old one claimed held under the name, and
// their requests of the old UID, which it does not take as its own.
func StartScheduling(ctx context.Context, tc temporal.Client, ids installation.Names, sched *v1alpha1.Scheduling) (temporal.WorkflowRun, error) {
	id := ids.SchedulingID(sched.Namespace, sched.Name)
	uid := string(sched.UID)
	if running, was, err := runningUID(ctx, tc, id); err != nil {
		return nil, err
	} else if running && was != "" && was != uid {
		err := tc.TerminateWorkflow(ctx, id, "", fmt.Sprintf("its Scheduling (uid %s) is gone; a new one of the name (uid %s) starts its own run", was, uid))
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			return nil, fmt.Errorf("terminate %s of an earlier scheduling: %w", id, err)
		}
	}
	run, err := tc.ExecuteWorkflow(ctx, temporal.StartWorkflowOptions{
		ID: id, TaskQueue: ids.Queue(), WorkflowTaskTimeout: workflows.TaskTimeout,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                     map[string]any{workflows.SchedulingUIDMemo: uid},
	}, workflows.SchedulingWorkflow, workflows.SchedulingInput{Namespace: sched.Namespace, Name: sched.Name, UID: uid,
		StepsPerRun: Steps.Scheduling, AdmissionStepsPerRun: Steps.Admission})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	return run, nil
}

// runningUID says whether the workflow id runs, and the UID of the Scheduling it runs for
// (its memo; "" when it has none).
func runningUID(ctx context.Context, tc temporal.Client, id string) (bool, string, error) {
	desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("describe %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return false, "", nil
	}
	return true, UIDOf(info.GetMemo()), nil
}

// CancelScheduling is what follows the deletion of a Scheduling: its running workflow is
// asked to release everything and removes the finalizer when done. A Scheduling that never
// ran (no status) has nothing to release, and the finalizer goes now. One whose workflow is
// not running although it ran (terminated) gets its workflow started again, which takes up
// its jobs, and cancelled, which releases them.
func CancelScheduling(ctx context.Context, kube client.Client, tc temporal.Client, ids installation.Names, sched *v1alpha1.Scheduling) error {
	if !controllerutil.ContainsFinalizer(sched, v1alpha1.SchedulingFinalizer) {
		return nil
	}
	id := ids.SchedulingID(sched.Namespace, sched.Name)
	running, was, err := runningUID(ctx, tc, id)
	if err != nil {
		return err
	}
	if !running || (was != "" && was != string(sched.UID)) {
		if sched.Status.State == "" {
			controllerutil.RemoveFinalizer(sched, v1alpha1.SchedulingFinalizer)
			return client.IgnoreNotFound(kube.Update(ctx, sched))
		}
		if _, err := StartScheduling(ctx, tc, ids, sched); err != nil {
			return err
		}
	}
	var notFound *serviceerror.NotFound
	if err := tc.CancelWorkflow(ctx, id, ""); err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	return nil
}

// RefusedError is the workflow's refusal of an extension (a job list its schema refuses, a
// job another Scheduling holds, a Scheduling that takes no more jobs): asking again cannot
// help until the list changes.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "the scheduling refused the job list: " + e.Reason }

// ExtendScheduling asks the Scheduling's workflow (its run runID; empty is the latest) to
// take the whole job list jobs: it claims and appends the jobs it does not have yet, and
// answers how many it queues. Both front doors extend this way: the API after writing the
// object, the bridge when it sees a generation the workflow has not taken; the workflow
// takes each job once, whichever asks first. A refusal is a *RefusedError with the
// workflow's reason; any other error means the answer did not come (ctx's deadline, or
// Temporal out of reach).
func ExtendScheduling(ctx context.Context, tc temporal.Client, ids installation.Names, namespace, name, runID string, jobs []v1alpha1.SchedulingJob) (int, error) {
	handle, err := tc.UpdateWorkflow(ctx, temporal.UpdateWorkflowOptions{
		WorkflowID: ids.SchedulingID(namespace, name), RunID: runID, UpdateName: workflows.ExtendUpdate,
		Args: []any{jobs}, WaitForStage: temporal.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return 0, fmt.Errorf("extend scheduling %s/%s: %w", namespace, name, err)
	}
	var queued int
	if err := handle.Get(ctx, &queued); err != nil {
		var app *temporalerr.ApplicationError
		if errors.As(err, &app) {
			return 0, &RefusedError{Reason: app.Message()}
		}
		return 0, fmt.Errorf("extend scheduling %s/%s: %w", namespace, name, err)
	}
	return queued, nil
}
