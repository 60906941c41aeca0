package schedkit

import (
	"cmp"
	"slices"
	"time"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// world is what the kit knows of the namespace, from the feed, and what it did itself.
type world struct {
	bed         *apitypes.TestBed
	jobs        map[string]apitypes.Job
	schedulings map[string]apitypes.Scheduling
	// placed are the jobs this kit placed whose runs have not ended, with the slots it
	// named (none for a QueueBased placement); held says the feed has shown the job held
	// since.
	placed map[string]*placement
	// refused are jobs the API refused to run, with the job's version then: they wait
	// until the job changes.
	refused map[string]string
}

type placement struct {
	slots []int32
	held  bool
}

func newWorld() *world {
	return &world{jobs: map[string]apitypes.Job{}, schedulings: map[string]apitypes.Scheduling{},
		placed: map[string]*placement{}, refused: map[string]string{}}
}

// jobChanged takes a job's new state: a placed job whose run ended, or that was let go of
// after it was held, is no longer the kit's to track.
func (w *world) jobChanged(j apitypes.Job) {
	w.jobs[j.Name] = j
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

func (w *world) jobGone(name string) {
	delete(w.jobs, name)
	delete(w.placed, name)
	delete(w.refused, name)
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
		for _, s := range w.bed.Status.Slots {
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
		job := &Job{Job: j, Replicas: replicasOf(j)}
		if j.CreatedAt != nil {
			job.Arrival = j.CreatedAt.Time
		}
		v.Jobs[name] = job
		p, placed := w.placed[name]
		switch {
		case holds(j, bedName):
			take(j.Status.Slots, name)
			v.Running = append(v.Running, *job)
		case placed:
			take(p.slots, name)
			v.Running = append(v.Running, *job)
		case j.Scheduling == "" && !listed[name] && w.refused[name] != j.ResourceVersion &&
			(j.Status.State == v1alpha1.JobReady || j.Status.State == "") && (selected == nil || selected(j)):
			v.Waiting = append(v.Waiting, *job)
		}
	}
	slices.SortFunc(v.Waiting, func(a, b Job) int {
		return cmp.Or(a.Arrival.Compare(b.Arrival), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(v.Running, func(a, b Job) int { return cmp.Compare(a.Name, b.Name) })
	return v
}
