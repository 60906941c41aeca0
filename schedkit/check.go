package schedkit

import (
	"fmt"

	"slotplane/crds/v1alpha1"
)

// check keeps the placements the view allows, in order, and says why it drops the others:
// a job that is not waiting or is placed twice, a replica count out of bounds, slots that
// are not free (or named twice), or not one per replica. A placement without a count takes
// its job's Replicas, or the number of its slots.
func check(v *View, ps []Placement) (ok []Placement, dropped []error) {
	waiting := map[string]*Job{}
	for i := range v.Waiting {
		waiting[v.Waiting[i].Name] = &v.Waiting[i]
	}
	placed := map[string]bool{}
	taken := map[int32]bool{}
	for _, p := range ps {
		err := func() error {
			j := waiting[p.Job]
			switch {
			case j == nil:
				return fmt.Errorf("job %q is not waiting", p.Job)
			case placed[p.Job]:
				return fmt.Errorf("job %q is placed twice", p.Job)
			}
			if p.Replicas == 0 {
				p.Replicas = j.Replicas
				if len(p.Slots) > 0 {
					p.Replicas = int32(len(p.Slots))
				}
			}
			if p.Replicas < 1 || p.Replicas > v1alpha1.MaxReplication {
				return fmt.Errorf("job %q: %d replicas (1 to %d)", p.Job, p.Replicas, v1alpha1.MaxReplication)
			}
			if len(p.Slots) > 0 && len(p.Slots) != int(p.Replicas) {
				return fmt.Errorf("job %q: %d slots for %d replicas", p.Job, len(p.Slots), p.Replicas)
			}
			seen := map[int32]bool{}
			for _, s := range p.Slots {
				switch {
				case s < 0 || int(s) >= len(v.Slots):
					return fmt.Errorf("job %q: the test bed has no slot %d", p.Job, s)
				case seen[s] || taken[s]:
					return fmt.Errorf("job %q: slot %d is named twice", p.Job, s)
				case !v.Slots[s].Free():
					return fmt.Errorf("job %q: slot %d is not free", p.Job, s)
				}
				seen[s] = true
			}
			for s := range seen {
				taken[s] = true
			}
			placed[p.Job] = true
			ok = append(ok, p)
			return nil
		}()
		if err != nil {
			dropped = append(dropped, err)
		}
	}
	return ok, dropped
}
