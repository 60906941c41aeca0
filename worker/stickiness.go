package worker

import (
	"context"
	"fmt"
	"log/slog"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/installation"
)

// A worker keeps the workflows it ran in its cache, and the Temporal server sends each one's
// next workflow task to that worker's own (sticky) queue. When the worker dies without a
// goodbye (SIGKILL, an OOM kill, a lost node), the server learns of it only when such a task
// is not taken within StickyTimeout; every workflow that was busy on the dead worker loses
// that long once. In the long run a job whose end was seen by the new worker waited there
// 2 s, after its wait's heartbeat timeout, and a kill cost 4 to 5 s of the whole bed.
//
// ActiveWorkflows names the workflows of the installation ids on queues (nil: both of its
// queues) that were likely busy when a worker of those queues died: on ids.Queue, the test
// beds' TestBed workflows, the Schedulings that still run, and the jobs with a run under way
// (a creation request, an application, Submitted or Running); on ids.AdmissionQueue, the
// test beds' Admission workflows. A new worker resets their stickiness (ResetStickiness) so that
// their next task goes to any worker at once; one still sticky to a live worker costs that
// worker one replay of its history.
func ActiveWorkflows(ctx context.Context, kube client.Reader, ids installation.Names, queues []string) ([]string, error) {
	cached := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	var active []string
	var beds v1alpha1.TestBedList
	if err := kube.List(ctx, &beds, cached); err != nil {
		return nil, fmt.Errorf("list test beds: %w", err)
	}
	for _, b := range beds.Items {
		if Polls(queues, ids.Queue()) {
			active = append(active, ids.TestBedID(b.Namespace, b.Name))
		}
		if Polls(queues, ids.AdmissionQueue()) {
			active = append(active, ids.AdmissionID(b.Namespace, b.Name))
		}
	}
	if !Polls(queues, ids.Queue()) {
		return active, nil
	}
	var schedulings v1alpha1.SchedulingList
	if err := kube.List(ctx, &schedulings, cached); err != nil {
		return nil, fmt.Errorf("list schedulings: %w", err)
	}
	for _, s := range schedulings.Items {
		if !s.Status.State.Ended() {
			active = append(active, ids.SchedulingID(s.Namespace, s.Name))
		}
	}
	var jobs v1alpha1.BatchJobList
	if err := kube.List(ctx, &jobs, cached); err != nil {
		return nil, fmt.Errorf("list batch jobs: %w", err)
	}
	for _, j := range jobs.Items {
		st := j.Status
		_, requested := j.Annotations[v1alpha1.CreationRequestAnnotation]
		underWay := st.State == v1alpha1.JobSubmitted || st.State == v1alpha1.JobRunning || requested || st.Application != nil
		if underWay && !st.State.Ended() {
			active = append(active, ids.BatchJobID(j.Namespace, j.Name))
		}
	}
	return active, nil
}

// ResetStickiness asks the Temporal server to send the next workflow task of each workflow
// of ids to the task queue every worker polls, rather than to the queue of the worker that
// last ran it. A workflow that does not run (ended, never started) is skipped. It returns
// how many it reset.
func ResetStickiness(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace string, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		_, err := svc.ResetStickyTaskQueue(ctx, &workflowservice.ResetStickyTaskQueueRequest{
			Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
		switch {
		case err == nil:
			n++
		case isNotFound(err):
		default:
			return n, fmt.Errorf("reset the stickiness of workflow %s: %w", id, err)
		}
	}
	return n, nil
}

// TakeOver takes up, once, as a worker of queues (nil: both of ids') starts, what a worker
// of the same queues that died before it may have left: it resets the stickiness of the
// workflows that worker may have held (ActiveWorkflows), then ends the attempts of their
// activities that a worker on this host had started (RetryOrphans), so that both go on at
// once. A failure is only logged, since the server's timeouts do the same, later.
func TakeOver(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace string, kube client.Reader, ids installation.Names, queues []string, log *slog.Logger) {
	active, err := ActiveWorkflows(ctx, kube, ids, queues)
	if err != nil {
		log.Warn("could not find the workflows a dead worker may have held", "err", err)
		return
	}
	n, err := ResetStickiness(ctx, svc, namespace, active)
	if err != nil {
		log.Warn("could not reset the workflows' stickiness", "reset", n, "of", len(active), "err", err)
	} else {
		log.Info("workflows a dead worker may have held go to any worker", "reset", n, "of", len(active))
	}
	ended, err := RetryOrphans(ctx, svc, namespace, Identity, active)
	if err != nil {
		log.Warn("could not retry the activities a dead worker had started", "retried", ended, "err", err)
		return
	}
	log.Info("activities a dead worker on this host had started are retried", "retried", ended, "identity", Identity)
}
