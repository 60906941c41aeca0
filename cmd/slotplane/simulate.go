package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"slotplane/internal/cli"
	"slotplane/simulation/replay"
)

// runSimulate replays a workload trace through the queues of an allocation file on a test
// bed in virtual time, with the Admission workflow's decisions, and prints what happened:
// the makespan, slot utilization, fairness, and per queue the jobs done, refused and their
// waits.
func runSimulate(_ context.Context, args []string) error {
	return simulateCommand(args, os.Stdout)
}

func simulateCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "workload trace, CSV with a header: submit,name,queue,user,groups,driver,executors,runtime (- reads stdin)")
	allocPath := fs.String("allocations", "", "allocation file (fair-scheduler.xml format); default: the embedded examples/"+cli.DefaultAllocations)
	settingsPath := fs.String("settings", "", "the allocation file's settings (yarn-site.xml format); default: with the embedded example its examples/"+cli.DefaultSettings+", else the defaults")
	nodes := fs.Int("nodes", 4, "test bed nodes")
	perNode := fs.Int("slots-per-node", 2, "slots on each node")
	slotSize := fs.String("slot-size", "8192 mb, 2 vcores", "what one slot (one executor) holds")
	mode := fs.String("mode", string(replay.Gang), "gang (slotplane's Admission: all of a job's slots at once) or driver-first (YARN's way: the driver, then executors one by one)")
	startUp := fs.Duration("startup", 10*time.Second, "how long a driver starts up before its executors work")
	format := fs.String("o", "text", "output: text or json")
	listJobs := fs.Bool("jobs", false, "also list every job's start, finish and wait (text output)")
	scheduler := fs.String("scheduler", "", "simulate a built-in external scheduler (fifo, sjf) instead of the queues: its own decisions in virtual time, as slotplane experiment predicts them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags go before them?)", fs.Args())
	}
	return cli.Simulate(cli.SimulateOptions{
		Trace: *tracePath, Allocations: *allocPath, Settings: *settingsPath, Nodes: *nodes, SlotsPerNode: *perNode, SlotSize: *slotSize,
		Mode: replay.Mode(*mode), StartUp: *startUp, Format: *format, ListJobs: *listJobs, Scheduler: *scheduler,
	}, out)
}
