package workflows

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
)

// The counters and timers slotplane's workflows record through the SDK's metrics handler
// (the worker's Prometheus registry; docs/metrics.md). The SDK records nothing while a
// workflow replays, so a decision is counted when it is made, not again on each replay; a
// workflow task that failed after recording and ran again may count twice. Counters get
// "_total" and timers become histograms in seconds ("_seconds").
const (
	metricAdmitted      = "slotplane_admitted_jobs"
	metricAdmissionWait = "slotplane_admission_wait_time"
	metricStartup       = "slotplane_job_startup_time"
	metricFinished      = "slotplane_finished_jobs"
	metricPreempted     = "slotplane_preempted_jobs"
	metricRejected      = "slotplane_rejected_jobs"
	metricDecision      = "slotplane_admission_decision"
	metricDecisionCPU   = "slotplane_admission_decision_cpu"
)

// metricsFor is the workflow's metrics handler with a job's place as labels: the Kubernetes
// namespace (it takes the "namespace" tag over from the Temporal namespace in slotplane's own
// metrics; the SDK's temporal_* metrics keep it), the test bed and, where known, the queue.
func metricsFor(ctx workflow.Context, namespace, testBed, queue string) client.MetricsHandler {
	tags := map[string]string{"namespace": namespace, "testbed": testBed}
	if queue != "" {
		tags["queue"] = queue
	}
	return workflow.GetMetricsHandler(ctx).WithTags(tags)
}

// since is the time from a to b, or false when a is unknown or after b.
func since(a *time.Time, b time.Time) (time.Duration, bool) {
	if a == nil || a.IsZero() || b.Before(*a) {
		return 0, false
	}
	return b.Sub(*a), true
}
