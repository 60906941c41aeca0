package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"slotplane/internal/cli"
)

func runExperiment(ctx context.Context, args []string) error {
	return experimentCommand(ctx, args, os.Stdout)
}

// experimentCommand runs a trace on the live test bed with a scheduler (cli.Experiment).
// An external scheduler's command follows "--".
func experimentCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	af := addAPIFlags(fs)
	trace := fs.String("trace", "", "workload trace, the simulator's CSV (submit,name,queue,user,groups,driver,executors,runtime)")
	scale := fs.Float64("scale", 1, "multiply the trace's submit and run times by this (0.05 runs minutes as seconds)")
	bed := fs.String("testbed", "bed", "the test bed the jobs run on")
	scheduler := fs.String("scheduler", "", "a built-in scheduler: fifo, sjf (shortest expected job first, from the run history) or queues (the test bed's queues decide); or give an external one's command after --")
	name := fs.String("name", fmt.Sprintf("exp-%d", time.Now().Unix()%1000000), "the experiment's name: its jobs are <name>-<trace name>, its Schedulings start with it")
	outDir := fs.String("out", "", "the folder for runs.csv, predicted.csv and report.html (default experiment-<name>)")
	asUsers := fs.Bool("as-trace-users", true, "submit each job as the trace's user and groups (the token must be allowed to act as them); false: as the token's user")
	startUp := fs.Duration("startup", 250*time.Millisecond, "the prediction's time from a grant to running executors (about 0.2 s on the local platform: the median of the burst experiment)")
	alloc := fs.String("allocations", "", "the allocation file the queues scheduler's prediction replays (default: the embedded examples/"+cli.DefaultAllocations+"); keep it the one the test bed uses")
	settings := fs.String("settings", "", "the allocation file's settings (yarn-site.xml format) for the prediction (default: with the embedded example its examples/"+cli.DefaultSettings+", else the defaults); keep them the test bed's")
	timeout := fs.Duration("timeout", 30*time.Minute, "how long to wait for the jobs to end; what has not ended is reported unfinished")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane experiment -trace FILE (-scheduler NAME | -- COMMAND [ARG...]) [flags]\n\n"+
			"Runs a workload trace on the live test bed: submits its jobs at their submit times, lets\n"+
			"the scheduler place them, and writes every run (CSV), the simulator's prediction for the\n"+
			"same trace and policy, and an HTML report with a Gantt chart of the slots.\n"+
			"An external scheduler gets SLOTPLANE_SERVER, SLOTPLANE_TOKEN, SLOTPLANE_NAMESPACE,\n"+
			"SLOTPLANE_TESTBED and SLOTPLANE_EXPERIMENT (schedkit.Main reads them).")
		fs.PrintDefaults()
	}
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (an external scheduler's command goes after --)", strings.Join(fs.Args(), " "))
	}
	if *outDir == "" {
		*outDir = "experiment-" + *name
	}
	_, _, err := cli.Experiment(ctx, af.connection(), cli.ExperimentOptions{
		Trace: *trace, Scale: *scale, TestBed: *bed, Scheduler: *scheduler, Command: command, Name: *name, Out: *outDir,
		AsTraceUsers: *asUsers, StartUp: *startUp, Allocations: *alloc, Settings: *settings, Timeout: *timeout,
	}, out)
	return err
}
