package worker

import (
	"errors"
	"testing"

	"slotplane/activities"
)

// Each job that starts or runs holds an activity slot for as long as it does (its wait), so
// the worker of the jobs' queue must hold the waits of ten times the envelope (8,000 slots,
// as many one-slot jobs running at once) and still run a bed's reconcile beside them.
func TestOptions_HoldTheWaitsOfTenTimesTheEnvelope(t *testing.T) {
	const envelopeJobs = 8_000
	for _, admission := range []bool{false, true} {
		o := options(admission, &activities.Activities{}, nil)
		if o.MaxConcurrentActivityExecutionSize <= 10*envelopeJobs {
			t.Errorf("admission %v: %d activities at once, want more than %d", admission, o.MaxConcurrentActivityExecutionSize, 10*envelopeJobs)
		}
	}
	if o := options(true, &activities.Activities{}, nil); o.MaxConcurrentWorkflowTaskPollers != AdmissionPollers {
		t.Errorf("Admission's queue: %d workflow pollers, want %d", o.MaxConcurrentWorkflowTaskPollers, AdmissionPollers)
	}
}

// A task queue's worker that stops for good tells the process, which ends.
func TestOptions_AFatalErrorReachesTheProcess(t *testing.T) {
	var got error
	o := options(false, &activities.Activities{}, func(err error) { got = err })
	if o.OnFatalError == nil {
		t.Fatal("no OnFatalError")
	}
	o.OnFatalError(errors.New("namespace default is not found"))
	if got == nil || got.Error() != "namespace default is not found" {
		t.Errorf("onFatal got %v", got)
	}
}
