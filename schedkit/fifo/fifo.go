// Package fifo is the baseline external scheduler: jobs run strictly in the order they
// arrived, each in the lowest-numbered free slots. A job that does not fit yet stops the
// ones behind it, so no job ever overtakes an earlier one; a job larger than the whole test
// bed, which could never run, is passed over.
package fifo

import "slotplane/schedkit"

// Scheduler is strict first-in, first-out over the waiting jobs.
type Scheduler struct{}

// New returns the FIFO scheduler.
func New() Scheduler { return Scheduler{} }

// Decide places the oldest waiting jobs while they fit.
func (Scheduler) Decide(v *schedkit.View) []schedkit.Placement {
	var free []int32
	for _, s := range v.FreeSlots() {
		free = append(free, s.Position)
	}
	var out []schedkit.Placement
	for _, j := range v.Waiting {
		n := int(j.Replicas)
		if n > len(v.Slots) {
			continue // never fits: it must not block the others forever
		}
		if n > len(free) {
			break
		}
		out = append(out, schedkit.Placement{Job: j.Name, Replicas: j.Replicas, Slots: free[:n:n]})
		free = free[n:]
	}
	return out
}
