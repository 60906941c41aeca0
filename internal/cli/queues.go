package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"slotplane/internal/cli/render"
	"slotplane/queue"
	"slotplane/simulation/replay"
)

// QueuesOptions are what Queues checks: an allocation file, what its queues share, and
// optionally a submitter to place.
type QueuesOptions struct {
	// File is the allocation file (fair-scheduler.xml format); Settings its settings
	// (yarn-site.xml format), empty for the defaults.
	File, Settings string
	// Capacity is what the queues share, for the fair shares: "98304 mb, 48 vcores".
	Capacity string
	// User is the submitter to place; empty places nobody. Queue is the queue the job asks
	// for, Groups the user's groups, primary first, comma-separated.
	User, Queue, Groups string
}

// Queues checks an allocation file and its settings and shows what they mean: the queue
// tree with each queue's settings and steady fair share of the capacity, the settings in
// force, when preemption acts, and for a submitter, where the placement policy puts a job
// and whether the ACLs let it in.
func Queues(o QueuesOptions, out io.Writer) error {
	f := queue.ConfigFiles{HasAllocations: true, HasSettings: o.Settings != ""}
	var err error
	if f.Allocations, err = os.ReadFile(o.File); err != nil {
		return err
	}
	if f.HasSettings {
		if f.Settings, err = os.ReadFile(o.Settings); err != nil {
			return err
		}
	}
	a, err := queue.ParseConfig(f)
	if ce := (*queue.ConfigError)(nil); errors.As(err, &ce) && ce.File == queue.SettingsFile {
		return fmt.Errorf("%s: %w", o.Settings, err)
	}
	if err != nil {
		return err
	}
	total, err := queue.ParseResources(o.Capacity)
	if err != nil {
		return fmt.Errorf("-capacity: %w", err)
	}
	tree := queue.NewTree(a)
	if err := render.Allocations(out, tree, total); err != nil {
		return err
	}
	render.Settings(out, a, o.Settings)
	render.Preemption(out, a, tree)
	render.Ignored(out, a)
	render.Warnings(out, a)
	if o.User == "" {
		return nil
	}
	var groups []string
	for _, g := range strings.Split(o.Groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	s := queue.Submitter{Queue: o.Queue, User: o.User}
	if len(groups) > 0 {
		s.PrimaryGroup, s.SecondaryGroups = groups[0], groups[1:]
	}
	p, err := a.Place(s)
	render.Placement(out, o.User, p, err, err == nil && a.Allowed(queue.Submit, p.Queue, o.User, groups))
	return nil
}

// Deadlock replays replay.DriverDeadlockJobs under every queue set-up of
// replay.DriverDeadlockVariants and prints each outcome as simulate sums it up, with why a
// replay stopped, if it did.
func Deadlock(out io.Writer) error {
	var replays []render.DeadlockReplay
	for _, v := range replay.DriverDeadlockVariants {
		r, err := v.Run()
		if err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		replays = append(replays, render.DeadlockReplay{Setup: v.Name, Result: r})
	}
	return render.Deadlock(out, replays)
}
