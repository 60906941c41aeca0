package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"slotplane/queue"
	"slotplane/simulation/replay"
)

// Allocations prints the queue tree of an allocation file: a row per queue, indented by
// depth, with its settings and its steady fair share of total.
func Allocations(out io.Writer, tree *queue.Tree, total queue.Resources) error {
	shares := tree.SteadyFairShares(total)
	w := newTabWriter(out)
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
		apps, am := "-", "-"
		if n := tree.MaxRunningApps(q); n >= 0 {
			apps = strconv.Itoa(n)
		}
		if q.Leaf() {
			am = strconv.FormatFloat(tree.MaxAMShare(q), 'g', -1, 64)
		}
		indent := strings.Repeat("  ", strings.Count(path, "."))
		name := path[strings.LastIndex(path, ".")+1:]
		fmt.Fprintf(w, "%s%s\t%s\t%g\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, name, kind, weight, tree.Policy(q),
			tree.MinResources(q), tree.MaxResources(q, total), apps, am, shown(shares[path]))
	}
	return w.Flush()
}

// Ignored lists what the file sets that slotplane reads and does not act on, with why; the
// elements neither it nor the Fair Scheduler knows, which the file loaded without; and the
// elements read under an old name.
func Ignored(out io.Writer, a *queue.Allocations) {
	var meaningless, unknown []queue.Ignored
	for _, i := range a.Ignored {
		if i.Unknown {
			unknown = append(unknown, i)
		} else {
			meaningless = append(meaningless, i)
		}
	}
	list := func(head string, items []queue.Ignored) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(out, "\n"+head+"\n", len(items))
		for _, i := range items {
			fmt.Fprintf(out, "  %s\n", i)
		}
	}
	list("unknown: %d elements, left out (the Fair Scheduler loads the file without them too)", unknown)
	list("old names: %d elements the Fair Scheduler still takes under a name it replaced", a.Deprecated)
	list("ignored: %d settings the Fair Scheduler takes that mean nothing for slots", meaningless)
}

// Warnings says where the file does not do what it seems to (Allocations.Warnings), such as
// root's ACLs leaving every queue open.
func Warnings(out io.Writer, a *queue.Allocations) {
	warnings := a.Warnings()
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintln(out, "\nwarnings:")
	for _, w := range warnings {
		fmt.Fprintf(out, "  %s\n", w)
	}
}

// Preemption says whether preemption is on and, per leaf, after how long a starved queue
// takes slots back.
func Preemption(out io.Writer, a *queue.Allocations, tree *queue.Tree) {
	if !a.Preemption.Enabled {
		fmt.Fprintln(out, "\npreemption: off")
		return
	}
	fmt.Fprintln(out, "\npreemption: on")
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

// Placement says where the placement policy put a user's job, or why it refused it (err),
// and whether the submit ACLs let the user into that queue (allowed).
func Placement(out io.Writer, user string, p queue.Placement, err error, allowed bool) {
	if err != nil {
		fmt.Fprintf(out, "\nplacement: %v\n", err)
		return
	}
	created := ""
	if p.Created {
		created = " (created by the rule; not in the file)"
	}
	fmt.Fprintf(out, "\nplacement: %s, by rule %s%s\n", p.Queue, p.Rule, created)
	if allowed {
		fmt.Fprintf(out, "submit ACL: %s may submit to %s\n", user, p.Queue)
	} else {
		fmt.Fprintf(out, "submit ACL: %s may NOT submit to %s (no aclSubmitApps or aclAdministerApps on the way from root admits the user or a group)\n", user, p.Queue)
	}
}

// DeadlockReplay is the replay of the driver deadlock's jobs under one queue set-up.
type DeadlockReplay struct {
	// Setup names the queue set-up (replay.DeadlockVariant's name).
	Setup string
	// Result is what the replay found.
	Result replay.Result
}

// Deadlock prints a row per replay with its summary line, and under a replay that
// stopped, why.
func Deadlock(out io.Writer, replays []DeadlockReplay) error {
	w := newTabWriter(out)
	fmt.Fprintln(w, "QUEUE SET-UP\tMODE\tOUTCOME")
	for _, d := range replays {
		fmt.Fprintf(w, "%s\t%s\t%s\n", d.Setup, d.Result.Mode, ReplaySummary(d.Result))
		if d.Result.Stopped != "" {
			fmt.Fprintf(w, "\t\tstopped: %s\n", d.Result.Stopped)
		}
	}
	return w.Flush()
}
