package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"slotplane/simulation/replay"
)

// SimulationRun is a finished replay and what it ran on, as the simulate reports name them.
type SimulationRun struct {
	// Trace and Allocations name the workload trace and the allocation file replayed.
	Trace, Allocations string
	// Nodes and SlotsPerNode are the test bed's shape.
	Nodes, SlotsPerNode int
	// Result is what the replay found.
	Result replay.Result
}

// ReplaySummary is a replay in one line: the jobs' outcomes, the makespan, utilization,
// fairness, preemptions if simulated, and the longest wait at the head of a queue.
func ReplaySummary(r replay.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs: %d done, %d refused, %d unfinished; makespan %s; slot utilization %.1f%%; fairness (Jain) %.3f",
		r.Jobs, r.Done, r.Refused, r.Unfinished, roundDuration(r.Makespan), r.SlotUtilization*100, r.Fairness)
	if r.Preemption == "simulated" {
		fmt.Fprintf(&b, "; %d slots preempted", r.PreemptedSlots)
	}
	fmt.Fprintf(&b, "; longest wait at the head of a queue %s", roundDuration(r.MaxHeadWait))
	return b.String()
}

// roundDuration shows a virtual time to the second (to the millisecond below a second).
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// Simulation prints the text report of a replay: its set-up and summary, a table of the
// queues, the refused and unfinished jobs, and with listJobs every job's times.
func Simulation(out io.Writer, run SimulationRun, listJobs bool) error {
	simulationHeader(out, run)
	if err := simulationQueues(out, run.Result); err != nil {
		return err
	}
	var refused, unfinished []replay.JobOutcome
	for _, o := range run.Result.Outcomes {
		switch {
		case o.Refused != "":
			refused = append(refused, o)
		case !o.Finished:
			unfinished = append(unfinished, o)
		}
	}
	if len(refused) > 0 {
		if err := outcomeList(out, "refused", "REASON", refused, func(o replay.JobOutcome) string { return o.Refused }); err != nil {
			return err
		}
	}
	if len(unfinished) > 0 {
		if err := outcomeList(out, "unfinished", "WHY", unfinished, func(o replay.JobOutcome) string { return o.Waiting }); err != nil {
			return err
		}
	}
	if listJobs {
		return jobTimes(out, run.Result.Outcomes)
	}
	return nil
}

// simulationHeader prints what was replayed on what, and the summary.
func simulationHeader(out io.Writer, run SimulationRun) {
	r := run.Result
	modeText := "gang: a job starts when all its slots are granted at once; drivers run outside the slots"
	if r.Mode == replay.DriverFirst {
		modeText = "driver-first: the driver first, then executors one at a time, from the same pool"
	}
	fmt.Fprintf(out, "trace:       %s (%d jobs)\n", run.Trace, r.Jobs)
	fmt.Fprintf(out, "allocations: %s\n", run.Allocations)
	fmt.Fprintf(out, "test bed:    %d nodes x %d slots = %d slots of %s (the queues share %s)\n", run.Nodes, run.SlotsPerNode, r.Slots, r.SlotSize, r.Total)
	fmt.Fprintf(out, "mode:        %s; driver start-up %s\n", modeText, r.StartUp)
	fmt.Fprintf(out, "preemption:  %s\n", r.Preemption)
	fmt.Fprintf(out, "\nsummary: %s\n", ReplaySummary(r))
	if r.Stopped != "" {
		fmt.Fprintf(out, "stopped: %s\n", r.Stopped)
	}
	fmt.Fprintln(out)
}

// simulationLegend explains the share columns of the queue table.
const simulationLegend = "\nSLOT SHARE is the queue's average part of the slots over the run, STEADY SHARE what its\n" +
	"steady fair share would give it; USE/FAIR its usage over its instantaneous fair share while it\nhad jobs (1 is its due); USE/FAIR (ROOM) the same, leaving out the time it was below its share\nwhile its own settings (maxAMShare, maxRunningApps, maxResources, StateAware) held back every\njob it had waiting."

// simulationQueues prints a row per queue, with the preemption columns when preemption was
// simulated, and the legend under it.
func simulationQueues(out io.Writer, r replay.Result) error {
	w := newTabWriter(out)
	head := "QUEUE\tDONE\tREFUSED\tUNFINISHED\tMEAN WAIT\tP50\tP95\tMAX WAIT\tAVG SLOTS\tSLOT SHARE\tSTEADY SHARE\tUSE/FAIR\tUSE/FAIR (ROOM)"
	if r.Preemption == "simulated" {
		head += "\tPREEMPTED FOR\tLOST"
	}
	fmt.Fprintln(w, head)
	for _, q := range r.Queues {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\t%.1f%%\t%.1f%%\t%.2f\t%.2f", q.Queue, q.Done, q.Refused, q.Unfinished,
			roundDuration(q.MeanWait), roundDuration(q.P50Wait), roundDuration(q.P95Wait), roundDuration(q.MaxWait),
			q.AvgSlots, q.SlotShare*100, q.SteadyShare*100, q.UseOverFair, q.UseOverFairRoom)
		if r.Preemption == "simulated" {
			fmt.Fprintf(w, "\t%d\t%d", q.PreemptedSlots, q.LostToOther)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, simulationLegend)
	return nil
}

// outcomeList prints jobs under a title, each with the why column's text.
func outcomeList(out io.Writer, title, why string, jobs []replay.JobOutcome, text func(replay.JobOutcome) string) error {
	fmt.Fprintf(out, "\n%s:\n", title)
	w := newTabWriter(out)
	fmt.Fprintf(w, "  JOB\tUSER\tQUEUE\t%s\n", why)
	for _, o := range jobs {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", o.Name, o.User, o.Queue, text(o))
	}
	return w.Flush()
}

// jobTimes lists every job that was not refused with its submit, start and finish times,
// its wait and the slots preempted from it.
func jobTimes(out io.Writer, outcomes []replay.JobOutcome) error {
	fmt.Fprintln(out, "\njobs:")
	w := newTabWriter(out)
	fmt.Fprintln(w, "  JOB\tQUEUE\tSUBMIT\tSTART\tFINISH\tWAIT\tPREEMPTED")
	for _, o := range outcomes {
		if o.Refused != "" {
			continue
		}
		start, finish, wait := "-", "-", "-"
		if o.Started {
			start, wait = roundDuration(o.Start).String(), roundDuration(o.Wait()).String()
		}
		if o.Finished {
			finish = roundDuration(o.Finish).String()
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\n", o.Name, o.Queue, o.Submit, start, finish, wait, o.Preempted)
	}
	return w.Flush()
}

// SimulationJSON prints the report of a replay as indented JSON (a SimulationReport).
func SimulationJSON(out io.Writer, run SimulationRun) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(simulationReport(run))
}
