package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"slotplane/examples"
	"slotplane/queue"
)

// runSimulate replays a workload trace through the queues of an allocation file on a test
// bed in virtual time, with the Admission workflow's decisions, and prints what happened:
// the makespan, slot utilization, fairness, and per queue the jobs done, refused and their
// waits.
func runSimulate(_ context.Context, args []string) error {
	return simulateCommand(args, os.Stdout)
}

// embeddedAllocations names the allocation file used when -allocations is not given.
const embeddedAllocations = "fair-scheduler.xml"

func simulateCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "workload trace, CSV with a header: submit,name,queue,user,groups,driver,executors,runtime (- reads stdin)")
	allocPath := fs.String("allocations", "", "allocation file (fair-scheduler.xml format); default: the embedded examples/"+embeddedAllocations)
	nodes := fs.Int("nodes", 4, "test bed nodes")
	perNode := fs.Int("slots-per-node", 2, "slots on each node")
	slotSize := fs.String("slot-size", "8192 mb, 2 vcores", "what one slot (one executor) holds")
	mode := fs.String("mode", string(queue.ReplayGang), "gang (slotplane's Admission: all of a job's slots at once) or driver-first (YARN's way: the driver, then executors one by one)")
	startUp := fs.Duration("startup", 10*time.Second, "how long a driver starts up before its executors work")
	format := fs.String("o", "text", "output: text or json")
	listJobs := fs.Bool("jobs", false, "also list every job's start, finish and wait (text output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags go before them?)", fs.Args())
	}
	switch {
	case *tracePath == "":
		return errors.New("-trace names the workload trace to replay (see examples/traces/)")
	case *nodes <= 0 || *perNode <= 0:
		return fmt.Errorf("-nodes and -slots-per-node must be positive, got %d and %d", *nodes, *perNode)
	case *nodes > 100000 || *perNode > 1000:
		return fmt.Errorf("-nodes %d x -slots-per-node %d is larger than any test bed", *nodes, *perNode)
	case *format != "text" && *format != "json":
		return fmt.Errorf("-o must be text or json, got %q", *format)
	}
	slot, err := queue.ParseResources(*slotSize)
	if err != nil {
		return fmt.Errorf("-slot-size: %w", err)
	}
	jobs, err := readTrace(*tracePath)
	if err != nil {
		return err
	}
	allocName, allocData := "examples/"+embeddedAllocations+" (embedded)", []byte(nil)
	if *allocPath == "" {
		allocData, err = examples.Files.ReadFile(embeddedAllocations)
	} else {
		allocName = *allocPath
		allocData, err = os.ReadFile(*allocPath)
	}
	if err != nil {
		return err
	}
	alloc, err := queue.ParseAllocations(allocData)
	if err != nil {
		return fmt.Errorf("%s: %w", allocName, err)
	}
	res, err := queue.Replay(alloc, jobs, queue.ReplayOptions{
		Slots: *nodes * *perNode, SlotSize: slot, Mode: queue.ReplayMode(*mode), StartUp: *startUp,
	})
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(simulationJSON(*tracePath, allocName, *nodes, *perNode, res))
	}
	return printSimulation(out, *tracePath, allocName, *nodes, *perNode, res, *listJobs)
}

// readTrace reads and parses the trace at path ("-": stdin), naming the file in errors.
func readTrace(path string) ([]queue.TraceJob, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	jobs, err := queue.ParseTrace(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// summaryLine is the replay in one line.
func summaryLine(r queue.ReplayResult) string {
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

func printSimulation(out io.Writer, tracePath, allocName string, nodes, perNode int, r queue.ReplayResult, listJobs bool) error {
	modeText := "gang: a job starts when all its slots are granted at once; drivers run outside the slots"
	if r.Mode == queue.ReplayDriverFirst {
		modeText = "driver-first: the driver first, then executors one at a time, from the same pool"
	}
	fmt.Fprintf(out, "trace:       %s (%d jobs)\n", tracePath, r.Jobs)
	fmt.Fprintf(out, "allocations: %s\n", allocName)
	fmt.Fprintf(out, "test bed:    %d nodes x %d slots = %d slots of %s (the queues share %s)\n", nodes, perNode, r.Slots, r.SlotSize, r.Total)
	fmt.Fprintf(out, "mode:        %s; driver start-up %s\n", modeText, r.StartUp)
	fmt.Fprintf(out, "preemption:  %s\n", r.Preemption)
	fmt.Fprintf(out, "\nsummary: %s\n", summaryLine(r))
	if r.Stopped != "" {
		fmt.Fprintf(out, "stopped: %s\n", r.Stopped)
	}
	fmt.Fprintln(out)

	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
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
	fmt.Fprintln(out, "\nSLOT SHARE is the queue's average part of the slots over the run, STEADY SHARE what its\n"+
		"steady fair share would give it; USE/FAIR its usage over its instantaneous fair share while it\nhad jobs (1 is its due); USE/FAIR (ROOM) the same, leaving out the time it was below its share\nwhile its own settings (maxAMShare, maxRunningApps, maxResources, StateAware) held back every\njob it had waiting.")

	var refused, unfinished []queue.JobOutcome
	for _, o := range r.Outcomes {
		switch {
		case o.Refused != "":
			refused = append(refused, o)
		case !o.Finished:
			unfinished = append(unfinished, o)
		}
	}
	if len(refused) > 0 {
		fmt.Fprintln(out, "\nrefused:")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  JOB\tUSER\tQUEUE\tREASON")
		for _, o := range refused {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", o.Name, o.User, o.Queue, o.Refused)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(unfinished) > 0 {
		fmt.Fprintln(out, "\nunfinished:")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  JOB\tUSER\tQUEUE\tWHY")
		for _, o := range unfinished {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", o.Name, o.User, o.Queue, o.Waiting)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if listJobs {
		fmt.Fprintln(out, "\njobs:")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  JOB\tQUEUE\tSUBMIT\tSTART\tFINISH\tWAIT\tPREEMPTED")
		for _, o := range r.Outcomes {
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
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// The JSON report: times in seconds, resources in the allocation file's form.
type simulationReport struct {
	Trace           string  `json:"trace"`
	Allocations     string  `json:"allocations"`
	Nodes           int     `json:"nodes"`
	SlotsPerNode    int     `json:"slotsPerNode"`
	Slots           int     `json:"slots"`
	SlotSize        string  `json:"slotSize"`
	Mode            string  `json:"mode"`
	StartUpSeconds  float64 `json:"startUpSeconds"`
	Preemption      string  `json:"preemption"`
	Summary         string  `json:"summary"`
	Jobs            int     `json:"jobs"`
	Done            int     `json:"done"`
	Refused         int     `json:"refused"`
	Unfinished      int     `json:"unfinished"`
	MakespanSeconds float64 `json:"makespanSeconds"`
	EndSeconds      float64 `json:"endSeconds"`
	Stopped         string  `json:"stopped,omitempty"`
	SlotUtilization float64 `json:"slotUtilization"`
	Fairness        float64 `json:"fairness"`
	PreemptedSlots  int     `json:"preemptedSlots"`
	// MaxHeadWaitSeconds is the longest a job waited as the first waiting job of its queue.
	MaxHeadWaitSeconds float64       `json:"maxHeadWaitSeconds"`
	Queues             []queueReport `json:"queues"`
	JobOutcomes        []jobReport   `json:"jobOutcomes"`
}

type queueReport struct {
	Queue           string  `json:"queue"`
	Done            int     `json:"done"`
	Refused         int     `json:"refused"`
	Unfinished      int     `json:"unfinished"`
	MeanWaitSeconds float64 `json:"meanWaitSeconds"`
	P50WaitSeconds  float64 `json:"p50WaitSeconds"`
	P95WaitSeconds  float64 `json:"p95WaitSeconds"`
	MaxWaitSeconds  float64 `json:"maxWaitSeconds"`
	AvgSlots        float64 `json:"avgSlots"`
	SlotShare       float64 `json:"slotShare"`
	SteadyShare     float64 `json:"steadyShare"`
	UseOverFair     float64 `json:"useOverFair"`
	UseOverFairRoom float64 `json:"useOverFairRoom"`
	PreemptedFor    int     `json:"preemptedFor"`
	LostToOther     int     `json:"lostToOther"`
}

type jobReport struct {
	Name           string   `json:"name"`
	User           string   `json:"user"`
	Queue          string   `json:"queue"`
	SubmitSeconds  float64  `json:"submitSeconds"`
	StartSeconds   *float64 `json:"startSeconds,omitempty"`
	FinishSeconds  *float64 `json:"finishSeconds,omitempty"`
	WaitSeconds    *float64 `json:"waitSeconds,omitempty"`
	PreemptedSlots int      `json:"preemptedSlots,omitempty"`
	Refused        string   `json:"refused,omitempty"`
	Waiting        string   `json:"waiting,omitempty"`
}

func simulationJSON(tracePath, allocName string, nodes, perNode int, r queue.ReplayResult) simulationReport {
	seconds := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	rep := simulationReport{
		Trace: tracePath, Allocations: allocName, Nodes: nodes, SlotsPerNode: perNode, Slots: r.Slots, SlotSize: r.SlotSize.String(),
		Mode: string(r.Mode), StartUpSeconds: r.StartUp.Seconds(), Preemption: r.Preemption, Summary: summaryLine(r),
		Jobs: r.Jobs, Done: r.Done, Refused: r.Refused, Unfinished: r.Unfinished,
		MakespanSeconds: r.Makespan.Seconds(), EndSeconds: r.End.Seconds(), Stopped: r.Stopped,
		SlotUtilization: r.SlotUtilization, Fairness: r.Fairness, PreemptedSlots: r.PreemptedSlots, MaxHeadWaitSeconds: r.MaxHeadWait.Seconds(),
		Queues: []queueReport{}, JobOutcomes: []jobReport{},
	}
	for _, q := range r.Queues {
		rep.Queues = append(rep.Queues, queueReport{
			Queue: q.Queue, Done: q.Done, Refused: q.Refused, Unfinished: q.Unfinished,
			MeanWaitSeconds: q.MeanWait.Seconds(), P50WaitSeconds: q.P50Wait.Seconds(), P95WaitSeconds: q.P95Wait.Seconds(), MaxWaitSeconds: q.MaxWait.Seconds(),
			AvgSlots: q.AvgSlots, SlotShare: q.SlotShare, SteadyShare: q.SteadyShare, UseOverFair: q.UseOverFair, UseOverFairRoom: q.UseOverFairRoom,
			PreemptedFor: q.PreemptedSlots, LostToOther: q.LostToOther,
		})
	}
	for _, o := range r.Outcomes {
		j := jobReport{Name: o.Name, User: o.User, Queue: o.Queue, SubmitSeconds: o.Submit.Seconds(), PreemptedSlots: o.Preempted, Refused: o.Refused, Waiting: o.Waiting}
		if o.Started {
			j.StartSeconds, j.WaitSeconds = seconds(o.Start), seconds(o.Wait())
		}
		if o.Finished {
			j.FinishSeconds = seconds(o.Finish)
		}
		rep.JobOutcomes = append(rep.JobOutcomes, j)
	}
	return rep
}
