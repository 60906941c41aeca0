package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/activities"
	"slotplane/installation"
	"slotplane/workflows"
)

// wakeTimeout bounds one signal to an Admission workflow. A wake-up that fails is logged and
// not tried again: the workflow decides again at its resync anyway.
const wakeTimeout = 10 * time.Second

// AdmissionWaker signals a test bed's Admission workflow (workflows.AdmissionSlotsUpdate)
// when the worker's copy of its slots changes in a way that may let a job start
// (activities.SlotsWake). It sends at most one signal per bed at a time, and at most one
// more for whatever changed while that one was on its way: a wave of slot changes (a
// thousand jobs ending together) makes two signals, not a thousand, and none is lost, since
// the last signal leaves after the last change. A bed without a running Admission is not
// signalled: it has no one waiting.
type AdmissionWaker struct {
	Temporal client.Client
	// IDs names the installation's workflows (zero: the default one).
	IDs installation.Names
	Log *slog.Logger
	// Ctx ends the wake-ups; nil is context.Background.
	Ctx context.Context

	mu sync.Mutex
	// beds holds each bed with a signal on its way: true when another one is owed.
	beds map[types.NamespacedName]bool
}

// Wake is an activities.SlotsWake.
func (w *AdmissionWaker) Wake(bed types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.beds == nil {
		w.beds = map[types.NamespacedName]bool{}
	}
	if _, sending := w.beds[bed]; sending {
		w.beds[bed] = true
		return
	}
	w.beds[bed] = false
	go w.send(bed)
}

// send signals bed's Admission until no change waits for a signal.
func (w *AdmissionWaker) send(bed types.NamespacedName) {
	ctx := w.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		w.signal(ctx, bed)
		w.mu.Lock()
		if !w.beds[bed] || ctx.Err() != nil {
			delete(w.beds, bed)
			w.mu.Unlock()
			return
		}
		w.beds[bed] = false
		w.mu.Unlock()
	}
}

func (w *AdmissionWaker) signal(ctx context.Context, bed types.NamespacedName) {
	ctx, cancel := context.WithTimeout(ctx, wakeTimeout)
	defer cancel()
	_, err := activities.Update(ctx, w.Temporal, w.IDs.AdmissionID(bed.Namespace, bed.Name), workflows.AdmissionSlotsUpdate, nil)
	if err != nil && w.Log != nil {
		w.Log.Warn("could not tell a test bed's Admission that slots changed; it decides again at its resync", "testbed", bed.String(), "err", err)
	}
}

var _ activities.SlotsWake = (*AdmissionWaker)(nil).Wake
