package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"slotplane/queue"
)

// runQueues checks an allocation file and shows what it means: the queue tree with each
// queue's settings and steady fair share for a capacity, and, for a submitter, where the
// placement policy puts a job and whether the ACLs let it in.
func runQueues(_ context.Context, args []string) error {
	return queuesCommand(args, os.Stdout)
}

func queuesCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("queues", flag.ContinueOnError)
	file := fs.String("f", "", "allocation file (fair-scheduler.xml format) to check")
	capacity := fs.String("capacity", "98304 mb, 48 vcores", "what the queues share, for the fair shares")
	user := fs.String("user", "", "show where a job of this user goes (with -queue and -groups)")
	requested := fs.String("queue", "", "the queue the job asks for")
	groups := fs.String("groups", "", "the user's groups, primary first, comma-separated")
	deadlock := fs.Bool("deadlock", false, "replay the seeds' driver deadlock (10 Spark jobs on 12 slots) under each queue set-up and print the outcomes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *deadlock {
		return printDeadlock(out)
	}
	if *file == "" {
		return errors.New("-f names the allocation file to check")
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	a, err := queue.ParseAllocations(data)
	if err != nil {
		return err
	}
	total, err := queue.ParseResources(*capacity)
	if err != nil {
		return fmt.Errorf("-capacity: %w", err)
	}
	tree := queue.NewTree(a)
	shares := tree.SteadyFairShares(total)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tKIND\tWEIGHT\tPOLICY\tMIN\tMAX\tMAX APPS\tMAX AM SHARE\tSTEADY FAIR SHARE")
	for _, path := range tree.Paths() {
		q := tree.Queue(path)
		kind := "leaf"
		if !q.Leaf() {
			kind = "parent"
		}
		weight := 1.0
		if q.Config != nil {
			weight = q.Config.Weight
		}
		min := tree.MinResources(q)
		max := tree.MaxResources(q, total)
		apps, am := "-", "-"
		if n := tree.MaxRunningApps(q); n >= 0 {
			apps = strconv.Itoa(n)
		}
		if q.Leaf() {
			am = strconv.FormatFloat(tree.MaxAMShare(q), 'g', -1, 64)
		}
		indent := strings.Repeat("  ", strings.Count(path, "."))
		name := path[strings.LastIndex(path, ".")+1:]
		fmt.Fprintf(w, "%s%s\t%s\t%g\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, name, kind, weight, tree.Policy(q), min, max, apps, am, shares[path])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	printPreemption(out, a, tree)
	if *user == "" {
		return nil
	}
	var gs []string
	for _, g := range strings.Split(*groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			gs = append(gs, g)
		}
	}
	s := queue.Submitter{Queue: *requested, User: *user}
	if len(gs) > 0 {
		s.PrimaryGroup, s.SecondaryGroups = gs[0], gs[1:]
	}
	p, err := a.Place(s)
	if err != nil {
		fmt.Fprintf(out, "\nplacement: %v\n", err)
		return nil
	}
	created := ""
	if p.Created {
		created = " (created by the rule; not in the file)"
	}
	fmt.Fprintf(out, "\nplacement: %s, by rule %s%s\n", p.Queue, p.Rule, created)
	if a.Allowed(queue.Submit, p.Queue, *user, gs) {
		fmt.Fprintf(out, "submit ACL: %s may submit to %s\n", *user, p.Queue)
	} else {
		fmt.Fprintf(out, "submit ACL: %s may NOT submit to %s (no aclSubmitApps or aclAdministerApps on the way from root admits the user or a group)\n", *user, p.Queue)
	}
	return nil
}

// printDeadlock replays queue.DriverDeadlockJobs under every variant: the summary line
// `slotplane simulate` prints, and below it why a replay stopped, if it did.
func printDeadlock(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE SET-UP\tMODE\tOUTCOME")
	for _, v := range queue.DriverDeadlockVariants {
		r, err := v.Run()
		if err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", v.Name, r.Mode, summaryLine(r))
		if r.Stopped != "" {
			fmt.Fprintf(w, "\t\tstopped: %s\n", r.Stopped)
		}
	}
	return w.Flush()
}

// printPreemption says whether preemption is on and, per leaf, after how long a starved
// queue takes slots back.
func printPreemption(out io.Writer, a *queue.Allocations, tree *queue.Tree) {
	if !a.Preemption.Enabled {
		fmt.Fprintln(out, "\npreemption: off")
		return
	}
	fmt.Fprintf(out, "\npreemption: on while the test bed is at least %g%% used\n", a.Preemption.UtilizationThreshold*100)
	for _, path := range tree.Paths() {
		q := tree.Queue(path)
		if !q.Leaf() {
			continue
		}
		minShare, minOK, fairShare, fairOK, threshold := tree.Timeouts(q)
		var when []string
		if minOK {
			when = append(when, fmt.Sprintf("below its minimum share for %s", minShare))
		}
		if fairOK {
			when = append(when, fmt.Sprintf("below %g%% of its fair share for %s", threshold*100, fairShare))
		}
		if len(when) == 0 {
			when = append(when, "never (no timeout set)")
		}
		fmt.Fprintf(out, "  %s takes slots back when %s\n", path, strings.Join(when, ", or "))
	}
}
