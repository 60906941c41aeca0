package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"slotplane/experiment"
	"slotplane/internal/cli/render"
	"slotplane/internal/samples"
	"slotplane/queue"
	"slotplane/simulation"
	"slotplane/simulation/replay"
	"slotplane/simulation/tracefile"
)

// DefaultAllocations is the example allocation file, embedded in the binary, that Simulate
// replays through when SimulateOptions.Allocations is empty.
const DefaultAllocations = "fair-scheduler.xml"

// DefaultSettings are the settings (a yarn-site.xml) of the embedded example allocation file.
const DefaultSettings = queue.SettingsFile

// SimulateOptions are a replay's inputs and how to report it.
type SimulateOptions struct {
	// Trace is the workload trace, CSV with a header; - reads stdin.
	Trace string
	// Allocations is the allocation file; empty takes examples/DefaultAllocations. Settings
	// is its yarn-site.xml; empty takes the example's with the example, else the defaults.
	Allocations, Settings string
	// Nodes and SlotsPerNode shape the test bed; SlotSize is what a slot holds, in the
	// allocation file's form ("8192 mb, 2 vcores").
	Nodes, SlotsPerNode int
	SlotSize            string
	// Mode is how slots are granted: gang or driver-first.
	Mode replay.Mode
	// StartUp is how long a driver starts up before its executors work.
	StartUp time.Duration
	// Format is the report's: text or json. ListJobs adds every job's times to the text.
	Format   string
	ListJobs bool
	// Scheduler, when set, names a built-in external scheduler (Schedulers: fifo, sjf) to
	// simulate instead of the queues: its own Decide in schedkit's virtual time, as
	// `slotplane experiment` predicts it. The allocation file is not read then.
	Scheduler string
}

// check refuses settings no replay can run with, naming the flag that set them.
func (o SimulateOptions) check() error {
	switch {
	case o.Trace == "":
		return errors.New("-trace names the workload trace to replay (see examples/traces/)")
	case o.Nodes <= 0 || o.SlotsPerNode <= 0:
		return fmt.Errorf("-nodes and -slots-per-node must be positive, got %d and %d", o.Nodes, o.SlotsPerNode)
	case o.Nodes > 100000 || o.SlotsPerNode > 1000:
		return fmt.Errorf("-nodes %d x -slots-per-node %d is larger than any test bed", o.Nodes, o.SlotsPerNode)
	case o.Format != "text" && o.Format != "json":
		return fmt.Errorf("-o must be text or json, got %q", o.Format)
	case o.Scheduler != "" && (Schedulers[o.Scheduler] == nil || o.Scheduler == "queues"):
		return fmt.Errorf("-scheduler %q is not a built-in scheduler to simulate (fifo, sjf; the queues are the default)", o.Scheduler)
	case o.Scheduler != "" && o.Mode != replay.Gang && o.Mode != "":
		return errors.New("-mode is the queues' replay's; a scheduler places whole jobs")
	}
	return nil
}

// Simulate replays a workload trace through the queues of an allocation file on a test
// bed in virtual time, with the Admission workflow's decisions, and prints what happened:
// the makespan, slot utilization, fairness, and per queue the jobs done, refused and their
// waits.
func Simulate(o SimulateOptions, out io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	slot, err := queue.ParseResources(o.SlotSize)
	if err != nil {
		return fmt.Errorf("-slot-size: %w", err)
	}
	jobs, err := readTrace(o.Trace)
	if err != nil {
		return err
	}
	if o.Scheduler != "" {
		return simulateScheduler(o, jobs, out)
	}
	allocName, alloc, err := readAllocations(o.Allocations, o.Settings)
	if err != nil {
		return err
	}
	res, err := replay.Run(alloc, jobs, replay.Options{
		Slots: o.Nodes * o.SlotsPerNode, SlotSize: slot, Mode: o.Mode, StartUp: o.StartUp,
	})
	if err != nil {
		return err
	}
	run := render.SimulationRun{Trace: o.Trace, Allocations: allocName, Nodes: o.Nodes, SlotsPerNode: o.SlotsPerNode, Result: res}
	if o.Format == "json" {
		return render.SimulationJSON(out, run)
	}
	return render.Simulation(out, run, o.ListJobs)
}

// readTrace reads and parses the trace at path ("-": stdin), naming the file in errors.
func readTrace(path string) ([]simulation.Job, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	jobs, err := tracefile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// readAllocations reads and parses the allocation file at path and the settings (a
// yarn-site.xml) at settingsPath, and returns them with the name the report gives them. An
// empty path takes the embedded example; an empty settingsPath takes the example's settings
// with the example (preemption on), and the defaults with a file of the caller's.
func readAllocations(path, settingsPath string) (string, *queue.Allocations, error) {
	name := "examples/" + DefaultAllocations + " (embedded)"
	f := queue.ConfigFiles{HasAllocations: true, HasSettings: path == "" || settingsPath != ""}
	var err error
	if path == "" {
		f.Allocations, err = samples.Files.ReadFile(DefaultAllocations)
	} else {
		name = path
		f.Allocations, err = os.ReadFile(path)
	}
	if err != nil {
		return "", nil, err
	}
	settingsName := settingsPath
	switch {
	case settingsPath != "":
		f.Settings, err = os.ReadFile(settingsPath)
		name += ", settings " + settingsPath
	case path == "":
		settingsName = "examples/" + DefaultSettings + " (embedded)"
		f.Settings, err = samples.Files.ReadFile(DefaultSettings)
	}
	if err != nil {
		return "", nil, err
	}
	alloc, err := queue.ParseConfig(f)
	if ce := (*queue.ConfigError)(nil); errors.As(err, &ce) && ce.File == queue.SettingsFile {
		return "", nil, fmt.Errorf("%s: %w", settingsName, err)
	}
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, alloc, nil
}

// simulateScheduler runs a built-in scheduler on the trace in virtual time and prints the
// experiment's figures of the runs it predicts (the text), or the runs themselves (json).
func simulateScheduler(o SimulateOptions, trace []simulation.Job, out io.Writer) error {
	slots := o.Nodes * o.SlotsPerNode
	jobs, left := scaleTrace(trace, 1, slots)
	p, err := schedulerPrediction(o.Scheduler, "", jobs, "simulation", o.Nodes, o.SlotsPerNode, o.StartUp)
	if err != nil {
		return err
	}
	runs := p.Runs()
	if o.Format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Summary experiment.Summary `json:"summary"`
			Left    []string           `json:"leftOut,omitempty"`
			Runs    []experiment.Run   `json:"runs"`
		}{experiment.Summarize(runs, slots), left, runs})
	}
	s := experiment.Summarize(runs, slots)
	fmt.Fprintf(out, "trace:       %s (%d jobs)\n", o.Trace, len(trace))
	fmt.Fprintf(out, "scheduler:   %s (%s)\n", o.Scheduler, p.Policy)
	fmt.Fprintf(out, "test bed:    %d nodes x %d slots = %d slots; a grant runs its executors after %s\n", o.Nodes, o.SlotsPerNode, slots, o.StartUp)
	for _, l := range left {
		fmt.Fprintf(out, "left out:    %s\n", l)
	}
	fmt.Fprintf(out, "\nsummary: %d jobs: %d done, %d unfinished; makespan %s; mean wait %s; p95 wait %s; slot utilization %.1f%%; fairness (Jain over users' stretch) %.3f\n",
		s.Jobs, s.Completed, s.Unfinished, s.Makespan.Round(time.Millisecond), s.MeanWait.Round(time.Millisecond), s.P95Wait.Round(time.Millisecond), 100*s.Utilization, s.Fairness)
	if o.ListJobs {
		fmt.Fprintf(out, "\n%-20s %10s %10s %10s  %s\n", "JOB", "ARRIVAL", "START", "FINISH", "SLOTS")
		for _, r := range runs {
			fmt.Fprintf(out, "%-20s %10s %10s %10s  %v\n", r.Job, r.Arrival, r.Admitted, r.Ended, r.Slots)
		}
	}
	return nil
}
