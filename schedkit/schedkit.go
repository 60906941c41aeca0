// Package schedkit is a kit for writing an external scheduler: an algorithm that decides
// which of a namespace's waiting BatchJobs run next, with how many slots, and (if it
// wants) in exactly which slots of a test bed. The kit keeps a current View of the test bed
// from the REST API's change feed, calls the scheduler's Decide whenever something changed,
// and carries out its Placements by creating and extending Schedulings, with retries.
//
// The same Scheduler runs unchanged in virtual time (Simulate), so a prediction of an
// experiment is made by the very code that schedules it live.
//
// It is a client of the REST API only (package apiclient): it must never import the
// server, the workflows or controller-runtime.
package schedkit

import (
	"strconv"
	"time"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// Scheduler is an external scheduling algorithm. Decide looks at the view and answers the
// jobs to run now; it is called again after every change, so it places only what it wants
// placed now and leaves the rest waiting. It must not keep the view's slices: the next view
// is a new one. It must be quick (the live loop waits for it) and deterministic for a
// given view, which makes simulations repeatable.
type Scheduler interface {
	Decide(v *View) []Placement
}

// SchedulerFunc makes a function a Scheduler.
type SchedulerFunc func(v *View) []Placement

// Decide calls f.
func (f SchedulerFunc) Decide(v *View) []Placement { return f(v) }

// Placement runs one waiting job. With Slots, the job runs in exactly those slots (a
// SlotBased Scheduling), which must be free in the view, one per replica; without, it asks
// the test bed's queues for Replicas slots (a QueueBased Scheduling) and Admission decides
// when and where.
type Placement struct {
	Job      string
	Replicas int32
	Slots    []int32
	// Notes are written to the job's scheduler data before it is placed (a nil value
	// removes a note): what the next invocations of the scheduler should know.
	Notes map[string]*string
}

// View is what a scheduler decides on.
type View struct {
	// Now is the time of the view (virtual in a simulation).
	Now time.Time
	// TestBed is the test bed's name; Slots its slots by position.
	TestBed string
	Slots   []Slot
	// Waiting are the jobs the scheduler may place, oldest first: no Scheduling holds them
	// and the scheduler has not placed them yet.
	Waiting []Job
	// Running are the jobs whose runs hold slots of the test bed now (or were placed and
	// have not ended), by name.
	Running []Job
	// Jobs are all the jobs the scheduler sees, by name, with their run histories: the
	// waiting and running ones, and those that ended.
	Jobs map[string]*Job
}

// Slot is one slot of the test bed as the scheduler sees it.
type Slot struct {
	Position int32
	Node     string
	// Job is the job that holds the slot, or was placed into it and has not ended; empty
	// when the slot is free.
	Job string
	// Unavailable says why no job may be placed in the slot (its node is not ready or is
	// leaving); such a slot is never free.
	Unavailable string
}

// Free says whether a job may be placed in the slot now.
func (s Slot) Free() bool { return s.Job == "" && s.Unavailable == "" }

// Job is a BatchJob as a scheduler sees it.
type Job struct {
	apitypes.Job
	// Arrival is when the job arrived: its scheduler data "arrival" (ArrivalNote), else its
	// creation. A creation time is kept to the second, so jobs made within one second are
	// told apart by the order the kit first saw them in, which is the feed's, and so their
	// creations' order; a submitter that makes many jobs a second (an experiment) gives each
	// its exact arrival. Scheduler data is any updater's to write, so the note counts only
	// from ArrivalSlack before the job's creation to the end of its creation's second: no
	// one moves a job ahead of jobs made more than that much earlier.
	Arrival time.Time
	// Replicas is how many slots the job asks for: its scheduler data "replicas" (the
	// submitter's word, ReplicasNote), else 1.
	Replicas int32
}

// ReplicasNote is the scheduler data name under which a job's submitter says how many
// executors (slots) the job wants. The kit reads it into Job.Replicas; a scheduler may
// still place the job with another count.
const ReplicasNote = "replicas"

// ArrivalNote is the scheduler data name under which a job's submitter gives its exact
// arrival, in RFC 3339 with fractions of a second.
const ArrivalNote = "arrival"

// ArrivalSlack is how long before its job's creation an ArrivalNote may say the job arrived:
// a submitter takes its note, then creates the job, retrying for some seconds when the API
// is busy.
const ArrivalSlack = 10 * time.Second

// arrivalOf is a job's ArrivalNote when it falls from ArrivalSlack before the job's creation
// to the end of its creation's second, else its creation time (zero when it has neither).
func arrivalOf(j apitypes.Job) time.Time {
	t, err := time.Parse(time.RFC3339Nano, j.SchedulerData[ArrivalNote])
	switch {
	case j.CreatedAt == nil && err == nil:
		return t
	case j.CreatedAt == nil:
		return time.Time{}
	case err == nil && !t.Before(j.CreatedAt.Add(-ArrivalSlack)) && t.Before(j.CreatedAt.Add(time.Second)):
		return t
	}
	return j.CreatedAt.Time
}

// replicasOf reads a job's ReplicasNote, 1 when it is missing or not a count.
func replicasOf(j apitypes.Job) int32 {
	n, err := strconv.ParseInt(j.SchedulerData[ReplicasNote], 10, 32)
	if err != nil || n < 1 || n > v1alpha1.MaxReplication {
		return 1
	}
	return int32(n)
}

// FreeSlots are the view's free slots, by position.
func (v *View) FreeSlots() []Slot {
	var out []Slot
	for _, s := range v.Slots {
		if s.Free() {
			out = append(out, s)
		}
	}
	return out
}

// RunTimes are the run times (running to end) of a job's completed runs, oldest first.
func (j *Job) RunTimes() []time.Duration {
	var out []time.Duration
	for _, r := range j.Status.History {
		if r.Outcome == v1alpha1.RunCompleted && r.RunningAt != nil && r.EndedAt != nil {
			out = append(out, r.EndedAt.Sub(r.RunningAt.Time))
		}
	}
	return out
}
