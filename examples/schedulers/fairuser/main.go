// Command fairuser is the scheduler of the guide docs/write-a-scheduler.md: each time slots
// are free, the user who holds the fewest slots runs their oldest waiting job next.
package main

import (
	"slotplane/schedkit"
)

// fairUser gives the free slots to the users who hold the fewest.
type fairUser struct{}

func (fairUser) Decide(v *schedkit.View) []schedkit.Placement {
	// How many slots each user holds now.
	held := map[string]int{}
	for _, j := range v.Running {
		held[j.User] += int(j.Replicas)
	}
	var free []int32
	for _, s := range v.FreeSlots() {
		free = append(free, s.Position)
	}
	var out []schedkit.Placement
	placed := map[string]bool{}
	for len(free) > 0 {
		// The oldest waiting job of the user who holds the fewest slots (v.Waiting is
		// oldest first), among the jobs that fit in what is free.
		var next *schedkit.Job
		for i := range v.Waiting {
			j := &v.Waiting[i]
			if placed[j.Name] || int(j.Replicas) > len(free) {
				continue
			}
			if next == nil || held[j.User] < held[next.User] {
				next = j
			}
		}
		if next == nil {
			break
		}
		n := int(next.Replicas)
		out = append(out, schedkit.Placement{Job: next.Name, Replicas: next.Replicas, Slots: free[:n:n]})
		free = free[n:]
		held[next.User] += n
		placed[next.Name] = true
	}
	return out
}

func main() {
	schedkit.Main(fairUser{})
}
