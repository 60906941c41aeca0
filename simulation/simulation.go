// Package simulation is the home of slotplane's simulations in virtual time: the workload a
// simulation runs (Job) and the event loop that runs it (Run). A decision maker plugs into
// the loop as a Model. There are two:
//
//   - the test bed's queue policies, through the Admission workflow's own Admitter
//     (package simulation/replay, behind `slotplane simulate` and the predictions of
//     `slotplane experiment -scheduler queues`);
//   - an external scheduler written with the kit, its own Decide on the kit's view
//     (schedkit.Simulate, behind `slotplane simulate -scheduler` and the other predictions).
//
// Package simulation/tracefile reads and writes a workload as a CSV trace.
//
// This package imports neither the queue policies nor anything of the server, so that a
// scheduler built on the kit simulates without them: the kit must not pull them in
// (schedkit's TestTheKitDoesNotPullInTheServer). What needs the queue policies lives in the
// subpackages.
package simulation

import (
	"time"

	"slotplane/apitypes"
)

// Job is one job of a simulated workload: a line of a trace, or a job made in code.
//
// The queues' replay reads every field. The kit's simulation reads the name, the user, the
// queue, the submit time, the executors (the slots the job asks for) and the runtime: an
// external scheduler places whole jobs, so the driver and the groups are not its matter.
type Job struct {
	// Line is the job's line in the trace file (0 for a job made in code).
	Line int
	// Submit is when the job is submitted, from the start of the simulation.
	Submit time.Duration
	Name   string
	// Queue is the queue the job asks for ("": the placement rules decide).
	Queue string
	User  string
	// Groups are the user's groups, the primary one first.
	Groups []string
	// Driver is the driver's or JobManager's size: the application's AM. It is an exact
	// amount, as the queues count it (apitypes.Resources is the queue policies' Resources
	// without their package).
	Driver apitypes.Resources
	// Executors is how many executors (TaskManagers) the job runs, one slot each.
	Executors int
	// Runtime is how long the job works once all its executors hold their slots.
	Runtime time.Duration
	// Priority orders the job in its leaf queue before its submission (higher first).
	Priority int32
}
