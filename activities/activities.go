// Package activities is everything slotplane's workflows do to the cluster. Each activity is
// idempotent: running it twice (a retry after a crash) leaves the cluster as running it once.
// Decisions are not made here: they come from the pure packages (slots, queue).
package activities

import (
	"time"

	temporalclient "go.temporal.io/sdk/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Activities holds the clients the activities use. Workflows refer to its methods through a
// nil *Activities.
type Activities struct {
	Client client.Client
	// Temporal lets activities signal-with-start workflows (NudgeWorkflows).
	Temporal temporalclient.Client
	// GhostImage is the image of ghost pods; it never runs anything that matters.
	GhostImage string
	// Changes, when set, wakes the activities that wait on an application at each change of
	// it or its pods (WatchChanges); without it they poll every second.
	Changes *Changes
	// LeavingGrace, when positive, replaces the package's LeavingGrace (tests shorten it).
	LeavingGrace time.Duration
	// Batched are the message names that SignalWorkflows may send together with others to
	// the same workflow, as one BatchUpdate.
	Batched map[string]bool
	// Updates are the message names that go to their workflow as Temporal updates, not as
	// signals (deliver). A signal that comes in while its workflow's task continues it as
	// new makes the server refuse that continue-as-new, and the worker replays the whole
	// run to take it in; an update that comes in then is retried by the client on the new
	// run instead.
	Updates map[string]bool
	// Clock, when set, is the time the activities decide by (what a job holds of a bed, a
	// freed slot's grace, an application's creation time); nil is the wall clock. Deadlines
	// of the activities' own waits and writes stay on the wall clock.
	Clock func() time.Time

	batches signalBatches
}

// now is the time the activities decide by (Clock).
func (a *Activities) now() time.Time {
	if a.Clock != nil {
		return a.Clock()
	}
	return time.Now()
}

func (a *Activities) leavingGrace() time.Duration {
	if a.LeavingGrace > 0 {
		return a.LeavingGrace
	}
	return LeavingGrace
}

// DefaultGhostImage is a pause container: the smallest image that stays up.
const DefaultGhostImage = "registry.k8s.io/pause:3.10"
