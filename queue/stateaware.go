package queue

import (
	"cmp"
	"slices"
	"time"
)

// AppState is where an application is in its start-up, as StateAware sees it.
type AppState string

// The application states of StateAware.
const (
	// Accepted: admitted to the queue, waiting for its first allocation (the driver or
	// JobManager).
	Accepted AppState = "Accepted"
	// Starting: its driver runs; no executor (TaskManager) yet.
	Starting AppState = "Starting"
	// Running: it has at least one executor, or left Starting by the fallback timer.
	Running AppState = "Running"
	// Completed: it ended; it asks for nothing.
	Completed AppState = "Completed"
)

// StartingTimeout is how long an application may stay Starting before it counts as Running
// anyway (the seed's fallback, hard-coded there too).
const StartingTimeout = 5 * time.Minute

// StateApp is an application of a StateAware queue.
type StateApp struct {
	ID string
	// Order is the submission order: earlier goes first, after a higher Priority.
	Order    int64
	Priority int32
	State    AppState
	// StartingSince is when it entered Starting.
	StartingSince time.Time
	// Pending: it has an outstanding request (it wants resources now).
	Pending bool
	// NoExecutors: its driver or JobManager runs and has asked for no executor or
	// TaskManager. With StateAwareOptions.SkipStartingWithoutExecutors it no longer holds
	// the queue.
	NoExecutors bool
	// SlotBacked: its executors have their slots reserved already, so its start-up cannot
	// starve anyone. With StateAwareOptions.SlotBackedDoNotHold it never holds the queue.
	SlotBacked bool
}

// StateAwareOptions are slotplane's documented fixes for the weaknesses that got StateAware
// deprecated upstream. All off is the seed's behaviour.
type StateAwareOptions struct {
	// SkipStartingWithoutExecutors: an application whose driver runs without having asked
	// for executors does not hold the queue, for the five minutes of the fallback or for
	// its driver's start-up (slotplane.stateaware.skip-starting-without-executors, on by
	// default). The queue still holds while a driver is being placed, and while executors
	// it asked for are.
	SkipStartingWithoutExecutors bool
	// SlotBackedDoNotHold: an application whose executors already hold reserved slots does
	// not count as the one application starting
	// (slotplane.stateaware.slot-backed-do-not-hold).
	SlotBackedDoNotHold bool
}

// StateAwareDecision is what a StateAware queue lets through now.
type StateAwareDecision struct {
	// Schedulable are the applications that may get resources, in the order they get them:
	// first in, first out.
	Schedulable []string
	// HeldBack are applications with outstanding requests that StateAware keeps waiting:
	// their demand is pending demand of the queue (to report to people and autoscalers).
	HeldBack []string
}

// StateAware is the YuniKorn StateAware application sorting policy as the seeds specify it:
// applications are served first in, first out by submission (a higher priority first, as
// YuniKorn sorts StateAware with priorities on), but at most one application in
// an early state (Accepted or Starting) is scheduled at a time. If one is Starting, it is
// the one; otherwise the oldest Accepted application with an outstanding request. An
// application Starting for StartingTimeout counts as Running. now is the caller's clock.
func StateAware(apps []StateApp, now time.Time, opts StateAwareOptions) StateAwareDecision {
	sorted := slices.Clone(apps)
	slices.SortStableFunc(sorted, func(a, b StateApp) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Order, b.Order)
	})
	late := func(a StateApp) bool {
		switch {
		case a.State == Running:
			return true
		case opts.SlotBackedDoNotHold && a.SlotBacked && (a.State == Accepted || a.State == Starting):
			return true
		case a.State != Starting:
			return false
		case !a.StartingSince.IsZero() && now.Sub(a.StartingSince) >= StartingTimeout:
			return true
		default:
			return opts.SkipStartingWithoutExecutors && a.NoExecutors
		}
	}
	early := func(a StateApp) bool { return !late(a) && (a.State == Accepted || a.State == Starting) }

	// The one early application allowed: a Starting one, or else the oldest pending
	// Accepted one.
	chosen := ""
	for _, a := range sorted {
		if early(a) && a.State == Starting {
			chosen = a.ID
			break
		}
	}
	if chosen == "" {
		for _, a := range sorted {
			if early(a) && a.State == Accepted && a.Pending {
				chosen = a.ID
				break
			}
		}
	}
	var d StateAwareDecision
	for _, a := range sorted {
		switch {
		case a.State == Completed || !a.Pending:
			continue
		case late(a) || a.ID == chosen:
			d.Schedulable = append(d.Schedulable, a.ID)
		default:
			d.HeldBack = append(d.HeldBack, a.ID)
		}
	}
	return d
}
