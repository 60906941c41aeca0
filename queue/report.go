package queue

import "slices"

// Report is the queue picture the API and people read.
type Report struct {
	ConfigVersion string
	ConfigError   string
	// Warnings say, in words for people, where the file in force does not do what it seems
	// to (Allocations.Warnings): that root's ACLs leave every queue open, say.
	Warnings []string `json:",omitempty"`
	// Ignored are the file's settings in force that slotplane reads and does not act on, and
	// the elements it does not know (Ignored.Unknown), which the file loaded without.
	Ignored []Ignored `json:",omitempty"`
	// Deprecated are the file's elements read under an old name (Allocations.Deprecated).
	Deprecated []Ignored `json:",omitempty"`
	// Settings are the settings in force (yarn-site.xml, or their defaults).
	Settings Settings
	Queues   []QueueReport
	// Waiting and Running are the first jobs of each list, in submission order, as many as
	// the options asked for; MoreWaiting and MoreRunning count those left out (the queues'
	// counts include them).
	Waiting                  []Entry
	Running                  []Entry
	MoreWaiting, MoreRunning int `json:",omitempty"`
}

// ReportOptions say how much of the job lists a report carries.
type ReportOptions struct {
	// Jobs is how many waiting and how many running jobs to list: 0 is DefaultReportJobs,
	// less than 0 none (the queues alone).
	Jobs int
}

// DefaultReportJobs is how many jobs of each list a report carries unless asked otherwise:
// a report's size stays far below a query answer's limit however many jobs wait.
const DefaultReportJobs = 500

// QueueReport is one queue's shares and use: the ResourceManager's scheduler view of it. A
// parent's use, demand and jobs are those of every queue under it.
type QueueReport struct {
	Path                   string
	Leaf                   bool
	SteadyShare, FairShare Resources
	Usage, Demand          Resources
	// RunningJobs are the jobs that hold slots (YARN's active applications), WaitingJobs
	// those that wait for them (its pending ones), and PendingDemand what the waiting ones
	// ask for.
	RunningJobs, WaitingJobs   int
	PendingDemand              Resources
	MaxResources, MinResources Resources
	// Policy is how the queue orders its jobs, or shares among its children.
	Policy Policy
}

// Report is the queue picture now (built on demand: a query, not every decision, pays
// for it), with the jobs the options ask for. It changes nothing.
func (a *Admitter) Report(opts ReportOptions) Report {
	a.compact()
	n := opts.Jobs
	if n == 0 {
		n = DefaultReportJobs
	}
	n = max(n, 0)
	if n > 0 {
		a.giveReasons()
	}
	listed, listedRunning := a.st.Waiting[:min(n, len(a.st.Waiting))], a.st.Running[:min(n, len(a.st.Running))]
	r := Report{ConfigVersion: a.st.Config.Version, ConfigError: a.st.Config.Rejected,
		Waiting: cloneEntries(listed), Running: cloneEntries(listedRunning),
		MoreWaiting: len(a.st.Waiting) - len(listed), MoreRunning: len(a.st.Running) - len(listedRunning)}
	if a.st.Config.Allocations != nil {
		r.Ignored = slices.Clone(a.st.Config.Allocations.Ignored)
		r.Deprecated = slices.Clone(a.st.Config.Allocations.Deprecated)
		r.Settings = a.st.Config.Allocations.Settings
		r.Warnings = a.st.Config.Allocations.Warnings()
	}
	slot, total := a.st.Slot, a.st.Total
	var apps []App
	// The counts and the pending demand go up the hierarchy, as Usage and Demand do: a
	// parent's are its subtree's. A job whose queue the tree no longer has counts nowhere.
	running, waiting := map[string]int{}, map[string]int{}
	pending := map[string]Resources{}
	up := func(leaf string, add func(path string)) {
		for q := a.tree.Queue(leaf); q != nil; q = q.parent {
			add(q.Path)
		}
	}
	for i := range a.st.Running {
		e := &a.st.Running[i]
		use := times(slot, int64(len(e.Slots)))
		apps = append(apps, App{ID: e.ID, Queue: e.Queue, Demand: use, Usage: use, Running: true})
		up(e.Queue, func(p string) { running[p]++ })
	}
	for i := range a.st.Waiting {
		e := &a.st.Waiting[i]
		need := times(slot, e.wanted())
		apps = append(apps, App{ID: e.ID, Queue: e.Queue, Demand: need})
		up(e.Queue, func(p string) {
			pending[p] = pending[p].Add(need)
			waiting[p]++
		})
	}
	steady := a.tree.SteadyFairShares(total)
	fair := a.tree.InstantaneousFairShares(total, apps)
	usage, demand := a.tree.Usage(apps), a.tree.Demand(apps)
	for _, path := range a.tree.Paths() {
		q := a.tree.Queue(path)
		r.Queues = append(r.Queues, QueueReport{Path: path, Leaf: q.Leaf(), SteadyShare: steady[path], FairShare: fair[path], Usage: usage[path], Demand: demand[path],
			PendingDemand: pending[path], MaxResources: a.tree.MaxResources(q, total), MinResources: a.tree.MinResources(q),
			RunningJobs: running[path], WaitingJobs: waiting[path], Policy: a.tree.Policy(q)})
	}
	return r
}
