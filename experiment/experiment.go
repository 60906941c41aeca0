// Package experiment holds what an experiment measured and how it is reported: every run of
// every job of a trace on the live test bed (Run), the figures a scheduling researcher
// compares (Summary: makespan, waits, slot utilization, fairness), the gap to what the
// simulator predicted for the same trace (Gap), the CSV a researcher plots, and a
// self-contained HTML report with a Gantt chart of the slots.
//
// It decides and draws only: no I/O beyond the io.Writer it is handed, so the same
// functions serve `slotplane experiment`, its tests and anyone replaying a saved CSV.
package experiment

import (
	"time"
)

// Run is one run of one job of an experiment: when it arrived, when it got its slots, ran
// and ended, where, and how it ended. Times are offsets from the experiment's start (the
// trace's time zero); a phase the run never reached is negative (NotReached).
type Run struct {
	// Job is the trace's job name; BatchJob the object that ran it (they may differ by an
	// experiment's prefix).
	Job      string
	BatchJob string
	Queue    string
	User     string
	// Attempt numbers the job's runs in the experiment, from 1.
	Attempt int
	// Arrival is when the job was submitted (the trace's submit time, as it happened).
	Arrival time.Duration
	// Admitted is when its slots were granted; Running when all its executors ran in them;
	// Ended when the application was seen completed or failed.
	Admitted, Running, Ended time.Duration
	// Slots are the slot positions it held; Nodes the nodes those slots are on.
	Slots []int32
	Nodes []string
	// Width is how many slots the run held when Slots does not say which: a simulator's
	// prediction knows how many, not which. When Slots is set, len(Slots) wins.
	Width int
	// Outcome is Completed, Failed or Released (its Scheduling let go of it mid-run).
	Outcome string
	// Expected is how long the trace says the job works once running (0: not known).
	Expected time.Duration
}

// NotReached marks a phase a run never reached.
const NotReached time.Duration = -1

// Wait is how long the run waited for its slots: arrival to admission (NotReached if it was
// never admitted).
func (r Run) Wait() time.Duration {
	if r.Admitted < 0 {
		return NotReached
	}
	return r.Admitted - r.Arrival
}

// RunTime is how long it held its slots: admission to its end (NotReached if either is
// missing).
func (r Run) RunTime() time.Duration {
	if r.Admitted < 0 || r.Ended < 0 {
		return NotReached
	}
	return r.Ended - r.Admitted
}

// SlotCount is how many slots the run held: len(Slots) when it says which, else Width.
func (r Run) SlotCount() int {
	if len(r.Slots) > 0 {
		return len(r.Slots)
	}
	return r.Width
}

// Bed is the test bed an experiment ran on, as the Gantt chart lays it out: one row per
// slot, grouped by node.
type Bed struct {
	Name string
	// SlotNodes is the node of each slot, by position.
	SlotNodes []string
}

// Result is an experiment: its inputs, the runs it measured and, when the scheduler's
// policy can be simulated, what the simulator predicted for the same trace.
type Result struct {
	// Name is the experiment's name (its BatchJobs and Schedulings start with it).
	Name string
	// Trace is the trace file; Scale the factor its times were multiplied by.
	Trace string
	Scale float64
	// Scheduler names the scheduler that placed the jobs.
	Scheduler string
	Bed       Bed
	// Start is the wall-clock time of the trace's time zero.
	Start time.Time
	// Runs are every run of every job, in arrival order, then attempt.
	Runs []Run
	// Predicted is the simulator's prediction for the same trace and policy; nil when the
	// scheduler's policy cannot be simulated (an external command), with NoPrediction
	// saying why.
	Predicted    *Prediction
	NoPrediction string
}

// Prediction is what the simulator predicted for each job of the trace.
type Prediction struct {
	// Policy names what was simulated (the scheduler's policy, or the allocation file).
	Policy string
	// Jobs are the predicted runs by trace job name: Admitted is the predicted start, Ended
	// the predicted finish (NotReached when the simulation did not finish it); Width how many
	// slots it was predicted to hold, since a prediction places no run in a given slot.
	Jobs map[string]Run
}
