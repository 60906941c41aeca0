package worker

import (
	"testing"

	"slotplane/activities"
	"slotplane/workflows"
)

// Each job that starts or runs holds an activity slot for as long as it does (its wait), so
// the worker of the jobs' queue must hold the waits of ten times the envelope (8,000 slots,
// as many one-slot jobs running at once) and still run a bed's reconcile beside them.
func TestOptions_HoldTheWaitsOfTenTimesTheEnvelope(t *testing.T) {
	const envelopeJobs = 8_000
	for _, queue := range Queues {
		o := options(queue, &activities.Activities{})
		if o.MaxConcurrentActivityExecutionSize <= 10*envelopeJobs {
			t.Errorf("%s: %d activities at once, want more than %d", queue, o.MaxConcurrentActivityExecutionSize, 10*envelopeJobs)
		}
	}
	if o := options(workflows.AdmissionTaskQueue, &activities.Activities{}); o.MaxConcurrentWorkflowTaskPollers != AdmissionPollers {
		t.Errorf("Admission's queue: %d workflow pollers, want %d", o.MaxConcurrentWorkflowTaskPollers, AdmissionPollers)
	}
}
