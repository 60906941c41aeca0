package worker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// Identity is the name this process's workers give the Temporal server: the SDK's own
// (pid@host@), with the moment the process started after it. The server keeps the identity
// of the worker that started each activity (LastWorkerIdentity); the time tells this
// process from the one before it on the same host, which in a container often had the
// same pid.
var Identity = identity(os.Getpid(), hostname(), time.Now())

func identity(pid int, host string, started time.Time) string {
	return fmt.Sprintf("%d@%s@%s", pid, host, started.UTC().Format("20060102T150405.000000"))
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// hostOf is the host an identity names: the part between its first two @ ("pid@host@...",
// the SDK's form and Identity's); "" when there is none.
func hostOf(identity string) string {
	parts := strings.SplitN(identity, "@", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[1]
}

// predecessor says whether other is a worker that ran on self's host before self: the same
// host, another process. slotplane runs one worker process of a set of task queues per host
// (a pod of the worker's Deployment), so such a worker is dead: its host's one process is
// self now. Two workers of different queues may share a host; each looks only at the
// workflows of its own queues (ActiveWorkflows), whose activities run on no other queue.
func predecessor(self, other string) bool {
	host := hostOf(self)
	return host != "" && other != self && hostOf(other) == host
}

// WorkerLost is the failure type of an activity attempt that RetryOrphans ends for a
// worker that died. No activity names it as non-retryable: the attempt is retried, at once.
const WorkerLost = "WorkerLost"

// RetryOrphans ends, as failed, the attempts of activities of the workflows of ids that a
// predecessor of self (a worker process on self's host before this one) had started, so
// that their retries run now. The server would retry them only once their heartbeat timeout
// ran out, or their start-to-close timeout for those that send none; in the long run every
// job that ran at a kill waited 4 s for its wait to be retried. Activities are written to
// be retried at any point, so even an attempt ended while its worker lived on would cost
// work, never a wrong result. It returns how many attempts it ended.
func RetryOrphans(ctx context.Context, svc workflowservice.WorkflowServiceClient, namespace, self string, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		desc, err := svc.DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
			Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("describe workflow %s: %w", id, err)
		}
		if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED || !predecessor(self, pa.GetLastWorkerIdentity()) {
				continue
			}
			_, err := svc.RespondActivityTaskFailedById(ctx, &workflowservice.RespondActivityTaskFailedByIdRequest{
				Namespace: namespace, WorkflowId: id, RunId: runID, ActivityId: pa.GetActivityId(), Identity: self,
				LastHeartbeatDetails: pa.GetHeartbeatDetails(),
				Failure: &failurepb.Failure{
					Message: fmt.Sprintf("worker %s, which ran the attempt, is gone: worker %s took its place", pa.GetLastWorkerIdentity(), self),
					FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
						Type: WorkerLost}},
				}})
			switch {
			case err == nil:
				n++
			case isNotFound(err):
				// Ended or retried since the look: nothing left to do.
			default:
				return n, fmt.Errorf("end activity %s of workflow %s: %w", pa.GetActivityId(), id, err)
			}
		}
	}
	return n, nil
}
