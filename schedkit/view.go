package schedkit

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// world is what the kit knows of the namespace, from the feed, and what it did itself.
type world struct {
	bed *apitypes.TestBed
	// slices are the bed's slot slices, by index: the feed carries its slots in them.
	slices      map[int32]apitypes.SlotSlice
	jobs        map[string]apitypes.Job
	schedulings map[string]apitypes.Scheduling
	// placed are the jobs this kit placed whose runs have not ended, with the slots it
	// named (none for a QueueBased placement); held says the feed has shown the job held
	// since.
	placed map[string]*placement
	// refused are jobs the API refused to run (403, 404, 422), with the job's version and
	// the time then: they wait until the job changes, or RefusedFor has passed (the cause
	// may have been fixed elsewhere: an ACL, a policy).
	refused map[string]refusal
	// seen numbers the jobs in the order the kit first saw them (the feed's order, which
	// is that of their creation); it breaks ties of arrival.
	seen     map[string]uint64
	nextSeen uint64
}

type refusal struct {
	version string
	until   time.Time
}

// RefusedFor is how long a job the API refused to run is not offered to the scheduler
// again, unless it changes.
const RefusedFor = 30 * time.Second

// heldBack says whether a job the API refused is still held back at now.
func (w *world) heldBack(j apitypes.Job, now time.Time) bool {
	r, ok := w.refused[j.Name]
	return ok && r.version == j.ResourceVersion && now.Before(r.until)
}

type placement struct {
	slots []int32
	held  bool
	// scheduling is the kit's Scheduling the job was appended to.
	scheduling string
}

func newWorld() *world {
	return &world{jobs: map[string]apitypes.Job{}, schedulings: map[string]apitypes.Scheduling{}, slices: map[int32]apitypes.SlotSlice{},
		placed: map[string]*placement{}, refused: map[string]refusal{}, seen: map[string]uint64{}}
}

// jobChanged takes a job's new state: a placed job whose run ended, or that was let go of
// after it was held, is no longer the kit's to track.
func (w *world) jobChanged(j apitypes.Job) {
	w.jobs[j.Name] = j
	if _, ok := w.seen[j.Name]; !ok {
		w.nextSeen++
		w.seen[j.Name] = w.nextSeen
	}
	p := w.placed[j.Name]
	if p == nil {
		return
	}
	switch {
	case j.Scheduling != "" && j.Status.State.Ended():
		delete(w.placed, j.Name)
	case j.Scheduling != "":
		p.held = true
	case p.held:
		delete(w.placed, j.Name)
	}
}

// schedulingChanged takes a Scheduling's new state: a job it placed for the kit that it
// says ended, or never got slots (its queue refused it: the job stays claimed and InQueue),
// holds no slot any more.
func (w *world) schedulingChanged(s apitypes.Scheduling) {
	w.schedulings[s.Name] = s
	for _, js := range s.Status.Jobs {
		if p := w.placed[js.Name]; p != nil && p.scheduling == s.Name && js.State.Ended() {
			delete(w.placed, js.Name)
		}
	}
}

func (w *world) jobGone(name string) {
	delete(w.jobs, name)
	delete(w.placed, name)
	delete(w.refused, name)
	delete(w.seen, name)
}

// holds says whether a job's run holds slots of the bed now: it has an application that did
// not end.
func holds(j apitypes.Job, bed string) bool {
	st := j.Status
	return j.Scheduling != "" && st.TestBed == bed && (st.State == v1alpha1.JobSubmitted || st.State == v1alpha1.JobRunning)
}

// inSchedulings are the jobs some Scheduling that goes on has in its list: they are not
// waiting, even before their claim shows.
func (w *world) inSchedulings() map[string]bool {
	out := map[string]bool{}
	for _, s := range w.schedulings {
		switch s.Status.State {
		case v1alpha1.SchedulingCompleted, v1alpha1.SchedulingFailed, v1alpha1.SchedulingCancelled:
			continue
		}
		for _, j := range s.Jobs {
			out[j.Name] = true
		}
	}
	return out
}

// view builds what the scheduler sees; selected picks the jobs it may place.
func (w *world) view(now time.Time, selected func(apitypes.Job) bool) *View {
	v := &View{Now: now, Jobs: map[string]*Job{}}
	bedName := ""
	if w.bed != nil {
		bedName = w.bed.Name
		v.TestBed = bedName
		for _, s := range apitypes.Slots(slices.Collect(maps.Values(w.slices))) {
			v.Slots = append(v.Slots, Slot{Position: s.Position, Node: s.NodeName, Unavailable: s.Unavailable})
		}
	}
	take := func(slots []int32, job string) {
		for _, p := range slots {
			if p >= 0 && int(p) < len(v.Slots) && v.Slots[p].Job == "" {
				v.Slots[p].Job = job
			}
		}
	}
	listed := w.inSchedulings()
	for name, j := range w.jobs {
		job := &Job{Job: j, Replicas: replicasOf(j), Arrival: arrivalOf(j)}
		v.Jobs[name] = job
		p, placed := w.placed[name]
		switch {
		case holds(j, bedName):
			take(j.Status.Slots, name)
			v.Running = append(v.Running, *job)
		case placed:
			take(p.slots, name)
			v.Running = append(v.Running, *job)
		case j.Scheduling == "" && !listed[name] && !w.heldBack(j, now) &&
			(j.Status.State == v1alpha1.JobReady || j.Status.State == "") && (selected == nil || selected(j)):
			v.Waiting = append(v.Waiting, *job)
		}
	}
	slices.SortFunc(v.Waiting, func(a, b Job) int {
		return cmp.Or(a.Arrival.Compare(b.Arrival), cmp.Compare(w.seen[a.Name], w.seen[b.Name]), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(v.Running, func(a, b Job) int { return cmp.Compare(a.Name, b.Name) })
	return v
}
