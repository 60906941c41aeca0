package queue

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// App is an application as the queues see it.
type App struct {
	ID    string
	Queue string // the leaf queue's full path
	User  string
	// Order is its submission order (earlier first): a time in nanoseconds or a sequence.
	Order int64
	// Priority goes before Order in its leaf (higher first), and a lower one is preemption's
	// victim first.
	Priority int32
	// AM is what its driver or JobManager takes; Demand is all it needs to run (AM and
	// executors); Usage is what it holds now.
	AM, Demand, Usage Resources
	Running           bool
	// Ask is what the application asks for now, when that is not all of Demand: a waiting
	// application admitted driver first asks for its AM; a running one with Pending set asks
	// for one more executor. Zero means Demand (all at once, as slotplane grants slots).
	Ask Resources
	// For StateAware leaves: the start-up state of a running application (empty: Running),
	// since when it is Starting, whether it asks for more now (a running application with
	// Pending set competes for its Ask like a waiting one), and the options' inputs.
	State         AppState
	StartingSince time.Time
	Pending       bool
	NoExecutors   bool
	SlotBacked    bool
	// NoRoom, when set, says why the application cannot start now for a reason of room
	// outside the queues (its named slots are not all free): it counts as not fitting.
	NoRoom string
}

// Queue is a queue of the running tree: configured in the file, or made by a placement rule.
type Queue struct {
	Path     string
	Config   *QueueConfig // nil for a queue a placement rule created
	Children []*Queue
	parent   *Queue
	// n is its place in Tree.queues.
	n int
}

// Leaf: the queue holds applications.
func (q *Queue) Leaf() bool { return len(q.Children) == 0 && (q.Config == nil || q.Config.IsLeaf()) }

// Tree is the queue hierarchy of one test bed, with the file's defaults.
type Tree struct {
	alloc *Allocations
	root  *Queue
	byID  map[string]*Queue
	// queues are every queue, numbered (Queue.n): sums over the tree go in slices.
	queues []*Queue
	// appLimits: some queue or user has a running-application limit (Demand then counts
	// runnable jobs only).
	appLimits bool
}

// NewTree builds the hierarchy the allocation file configures.
func NewTree(a *Allocations) *Tree {
	t := &Tree{alloc: a, byID: map[string]*Queue{}}
	var build func(c *QueueConfig, parent *Queue) *Queue
	build = func(c *QueueConfig, parent *Queue) *Queue {
		q := &Queue{Path: c.Path, Config: c, parent: parent, n: len(t.queues)}
		t.byID[q.Path] = q
		t.queues = append(t.queues, q)
		t.appLimits = t.appLimits || c.MaxRunningApps != nil
		for _, child := range c.Children {
			q.Children = append(q.Children, build(child, q))
		}
		return q
	}
	t.root = build(a.Root, nil)
	t.appLimits = t.appLimits || a.QueueMaxAppsDefault != nil || a.UserMaxAppsDefault != nil || len(a.UserMaxApps) > 0
	return t
}

// Queue returns the queue at path ("root." optional), or nil.
func (t *Tree) Queue(path string) *Queue { return t.byID[FullPath(path)] }

// Ensure returns the queue at path, creating it and missing parents as leaves of the
// dynamic kind (what a placement rule with create makes). It refuses to hang a queue under
// a configured leaf.
func (t *Tree) Ensure(path string) (*Queue, error) {
	path = FullPath(path)
	if q := t.byID[path]; q != nil {
		return q, nil
	}
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return nil, fmt.Errorf("queue %q is not under root", path)
	}
	parent, err := t.Ensure(path[:i])
	if err != nil {
		return nil, err
	}
	if parent.Config != nil && parent.Config.IsLeaf() && parent != t.root {
		return nil, fmt.Errorf("queue %s would hang under the leaf queue %s", path, parent.Path)
	}
	q := &Queue{Path: path, parent: parent, n: len(t.queues)}
	parent.Children = append(parent.Children, q)
	t.byID[path] = q
	t.queues = append(t.queues, q)
	return q, nil
}

func (t *Tree) weight(q *Queue) float64 {
	if q.Config == nil {
		return 1
	}
	return q.Config.Weight
}

// MaxResources is the queue's limit: its own, or the file's default, or none (total).
// A share of the test bed ("50%") is taken of total. A queue a placement rule made takes its
// parent's maxChildResources, when the parent sets one.
func (t *Tree) MaxResources(q *Queue, total Resources) Resources {
	amount, percent := t.maxSetting(q)
	switch {
	case percent != nil:
		return percent.Of(total)
	case amount != nil:
		return *amount
	default:
		return total
	}
}

// maxSetting is the setting that limits q, if any: its own maxResources, its parent's
// maxChildResources when a placement rule made it, or the file's default (never root's).
func (t *Tree) maxSetting(q *Queue) (*Resources, *Percent) {
	switch {
	case q.Config != nil && (q.Config.MaxResources != nil || q.Config.MaxResourcesPercent != nil):
		return q.Config.MaxResources, q.Config.MaxResourcesPercent
	case q.Config == nil && q.parent != nil && q.parent.Config != nil &&
		(q.parent.Config.MaxChildResources != nil || q.parent.Config.MaxChildResourcesPercent != nil):
		return q.parent.Config.MaxChildResources, q.parent.Config.MaxChildResourcesPercent
	case q != t.root:
		return t.alloc.QueueMaxResourcesDefault, t.alloc.QueueMaxResourcesDefaultPercent
	}
	return nil, nil
}

// limitsResources: some setting limits the queue (root only its own).
func (t *Tree) limitsResources(q *Queue) bool {
	amount, percent := t.maxSetting(q)
	return amount != nil || percent != nil
}

// preemptable: neither the queue nor an ancestor sets allowPreemptionFrom false.
func preemptable(q *Queue) bool {
	for ; q != nil; q = q.parent {
		if q.Config != nil && q.Config.AllowPreemptionFrom != nil && !*q.Config.AllowPreemptionFrom {
			return false
		}
	}
	return true
}

// MinResources is the queue's guaranteed minimum (none by default).
func (t *Tree) MinResources(q *Queue) Resources {
	if q.Config != nil && q.Config.MinResources != nil {
		return *q.Config.MinResources
	}
	return Resources{}
}

// MaxRunningApps is the queue's limit on running applications; -1 is none.
func (t *Tree) MaxRunningApps(q *Queue) int {
	switch {
	case q.Config != nil && q.Config.MaxRunningApps != nil:
		return *q.Config.MaxRunningApps
	case t.alloc.QueueMaxAppsDefault != nil:
		return *t.alloc.QueueMaxAppsDefault
	default:
		return -1
	}
}

// MaxAMShare is the fraction of a leaf's fair share its AMs may take; -1 is no check.
func (t *Tree) MaxAMShare(q *Queue) float64 {
	if q.Config != nil && q.Config.MaxAMShare != nil {
		return *q.Config.MaxAMShare
	}
	return t.alloc.QueueMaxAMShareDefault
}

// UserMaxRunningApps is a user's limit on running applications; -1 is none.
func (t *Tree) UserMaxRunningApps(user string) int {
	if n, ok := t.alloc.UserMaxApps[user]; ok {
		return n
	}
	if t.alloc.UserMaxAppsDefault != nil {
		return *t.alloc.UserMaxAppsDefault
	}
	return -1
}

// Policy is the queue's scheduling policy, or the file's default.
func (t *Tree) Policy(q *Queue) Policy {
	if q.Config != nil && q.Config.Policy != "" {
		return q.Config.Policy
	}
	return t.alloc.DefaultQueueSchedulingPolicy
}

// Strict: the leaf serves its applications strictly in order (see QueueConfig.StrictOrder):
// its own or an ancestor's setting, else true for fifo and stateaware leaves.
func (t *Tree) Strict(q *Queue) bool {
	if v, ok := inherited(q, func(c *QueueConfig) *bool { return c.StrictOrder }); ok {
		return v
	}
	p := t.Policy(q)
	return p == PolicyFIFO || p == PolicyStateAware
}

// Backfill: applications may pass a reserving head of the leaf when they cannot delay it.
func (t *Tree) Backfill(q *Queue) bool {
	v, _ := inherited(q, func(c *QueueConfig) *bool { return c.Backfill })
	return v
}

// SteadyFairShares splits total down the whole hierarchy, every configured queue counting,
// whether it has applications or not: what each queue can expect in the long run.
func (t *Tree) SteadyFairShares(total Resources) map[string]Resources {
	return t.shares(total, func(*Queue) bool { return true }, func(q *Queue, max Resources) Resources { return max })
}

// InstantaneousFairShares splits total among the queues that have applications now, each
// capped by what its applications ask for (their demand): what each queue is entitled to
// at this moment. Queues without applications get nothing.
func (t *Tree) InstantaneousFairShares(total Resources, apps []App) map[string]Resources {
	return t.instantaneous(total, t.Demand(apps))
}

func (t *Tree) instantaneous(total Resources, demand map[string]Resources) map[string]Resources {
	return t.shares(total,
		func(q *Queue) bool { return !demand[q.Path].IsZero() },
		func(q *Queue, max Resources) Resources { return max.Min(demand[q.Path]) })
}

// Demand adds up, per queue and up the hierarchy, what the runnable applications need: the
// running ones, and the waiting ones the running-application limits let run, as in the Fair
// Scheduler. In submission order, a waiting application is runnable while its user and every
// queue above it (root aside) run fewer than their maxRunningApps, counting the runnable
// applications before it. One over a limit asks for nothing its queue could give it, so it
// takes no share from the others.
func (t *Tree) Demand(apps []App) map[string]Resources {
	leafOf := make([]*Queue, len(apps))
	for i, a := range apps {
		leafOf[i] = t.Queue(a.Queue)
	}
	return t.demand(apps, leafOf, nil, nil)
}

// runnability is which applications the running-application limits let run (Tree.demand):
// the counts they are judged by, and the limits under which some application is held back.
type runnability struct {
	// runnable says, by application, whether it counts: it runs, or it waits and the limits
	// let it run.
	runnable []bool
	// count is the applications counted per queue, up the hierarchy; byUser per user (nil:
	// no user has a limit).
	count  []int
	byUser map[string]int
	// heldQueues (by queue number) and heldUsers are the limits that count an application
	// held back by a limit.
	heldQueues []bool
	heldUsers  map[string]bool
}

// follow keeps r up to date as application i (of leaf q) comes into the picture (add; last:
// after every other in submission order) or leaves it. counted says whether i counts toward
// the demand; ok false that r cannot tell without counting again (r nil, or i may change
// what else is runnable).
func (r *runnability) follow(t *Tree, a *App, i int, q *Queue, add, last bool) (counted, ok bool) {
	if r == nil || q == nil || i > len(r.runnable) || add && (!last || i != len(r.runnable)) || !add && i == len(r.runnable) {
		return false, false
	}
	if add {
		// The last in submission order: counted as the others stand, and no one after it
		// to hold back.
		runs := a.Running || t.runnable(q, a.User, r.count, r.byUser)
		r.runnable = append(r.runnable, runs)
		if runs {
			r.take(a, q, 1)
		} else {
			r.held(t, a, q)
		}
		return runs, true
	}
	if !r.runnable[i] {
		return false, true // it counted for no limit
	}
	if r.holdsBack(t, a, q) {
		return false, false
	}
	r.runnable[i] = false
	r.take(a, q, -1)
	return true, true
}

// take counts application a of leaf q (n: 1) or stops counting it (-1).
func (r *runnability) take(a *App, q *Queue, n int) {
	if r.byUser != nil {
		r.byUser[a.User] += n
	}
	for p := q; p != nil; p = p.parent {
		r.count[p.n] += n
	}
}

// held notes that application a of leaf q is held back: each limit it counts under.
func (r *runnability) held(t *Tree, a *App, q *Queue) {
	t.eachLimit(a.User, q, func(p *Queue) {
		if p == nil {
			r.heldUsers[a.User] = true
		} else {
			r.heldQueues[p.n] = true
		}
	})
}

// holdsBack: one of the limits application a of leaf q counts under holds back some
// application, which might run once a no longer counts.
func (r *runnability) holdsBack(t *Tree, a *App, q *Queue) bool {
	holds := false
	t.eachLimit(a.User, q, func(p *Queue) {
		holds = holds || p == nil && r.heldUsers[a.User] || p != nil && r.heldQueues[p.n]
	})
	return holds
}

// eachLimit calls f with each running-application limit an application of user in leaf
// counts against: nil for its user's, then its queues' from leaf up (root aside).
func (t *Tree) eachLimit(user string, leaf *Queue, f func(q *Queue)) {
	if t.UserMaxRunningApps(user) >= 0 {
		f(nil)
	}
	for q := leaf; q != nil && q != t.root; q = q.parent {
		if t.MaxRunningApps(q) >= 0 {
			f(q)
		}
	}
}

// demand is Demand with each application's queue looked up already (nil: unknown), less the
// applications that are gone (nil: none); run, when given, is filled with which ones count.
// Sums per leaf, then one walk of the tree: a decision over ten thousand applications must
// not walk up the hierarchy for each. The sums and counts are slices by queue number: a map
// step per application would be most of a decision's cost under running-application
// limits, where every change counts again.
func (t *Tree) demand(apps []App, leafOf []*Queue, gone []bool, run *runnability) map[string]Resources {
	perLeaf := make([]Resources, len(t.queues))
	count := make([]int, len(t.queues))
	var byUser map[string]int
	if t.userLimits() {
		byUser = map[string]int{}
	}
	var waiting []int
	sorted := true
	if run != nil {
		*run = runnability{runnable: make([]bool, len(apps)), count: count, byUser: byUser, heldQueues: make([]bool, len(t.queues)), heldUsers: map[string]bool{}}
	}
	for i := range apps {
		a := &apps[i]
		q := leafOf[i]
		if q == nil || gone != nil && gone[i] {
			continue
		}
		if run != nil && a.Running {
			run.runnable[i] = true
		}
		if !a.Running {
			if n := len(waiting); n > 0 && servedBefore(&apps[waiting[n-1]], a) > 0 {
				sorted = false
			}
			waiting = append(waiting, i)
			continue
		}
		perLeaf[q.n] = perLeaf[q.n].Add(a.Demand)
		count[q.n]++
		if byUser != nil {
			byUser[a.User]++
		}
	}
	if t.appLimits {
		if !sorted {
			slices.SortStableFunc(waiting, func(i, j int) int { return servedBefore(&apps[i], &apps[j]) })
		}
		t.rollCounts(t.root, count)
		for _, i := range waiting {
			a, leaf := &apps[i], leafOf[i]
			if !t.runnable(leaf, a.User, count, byUser) {
				if run != nil {
					run.held(t, a, leaf)
				}
				continue
			}
			if run != nil {
				run.runnable[i] = true
			}
			perLeaf[leaf.n] = perLeaf[leaf.n].Add(a.Demand)
			if byUser != nil {
				byUser[a.User]++
			}
			for q := leaf; q != nil; q = q.parent {
				count[q.n]++
			}
		}
	} else {
		for _, i := range waiting {
			q := leafOf[i]
			perLeaf[q.n] = perLeaf[q.n].Add(apps[i].Demand)
		}
	}
	out := map[string]Resources{}
	var roll func(q *Queue) Resources
	roll = func(q *Queue) Resources {
		sum := perLeaf[q.n]
		for _, c := range q.Children {
			sum = sum.Add(roll(c))
		}
		if !sum.IsZero() {
			out[q.Path] = sum
		}
		return sum
	}
	roll(t.root)
	return out
}

// userLimits: some user has a running-application limit.
func (t *Tree) userLimits() bool {
	return t.alloc.UserMaxAppsDefault != nil || len(t.alloc.UserMaxApps) > 0
}

// rollCounts turns per-queue counts of its own applications into counts of the queue and
// everything under it.
func (t *Tree) rollCounts(q *Queue, count []int) int {
	n := count[q.n]
	for _, c := range q.Children {
		n += t.rollCounts(c, count)
	}
	count[q.n] = n
	return n
}

// runnable: the user and every queue from leaf up (root aside) run fewer applications than
// their limits, by the counts given (byUser nil: no user has a limit).
func (t *Tree) runnable(leaf *Queue, user string, count []int, byUser map[string]int) bool {
	if byUser != nil {
		if n := t.UserMaxRunningApps(user); n >= 0 && byUser[user] >= n {
			return false
		}
	}
	for q := leaf; q != nil && q != t.root; q = q.parent {
		if n := t.MaxRunningApps(q); n >= 0 && count[q.n] >= n {
			return false
		}
	}
	return true
}

// Usage adds up, per queue and up the hierarchy, what the applications hold.
func (t *Tree) Usage(apps []App) map[string]Resources {
	out := map[string]Resources{}
	for _, a := range apps {
		for q := t.Queue(a.Queue); q != nil; q = q.parent {
			out[q.Path] = out[q.Path].Add(a.Usage)
		}
	}
	return out
}

func (t *Tree) shares(total Resources, active func(*Queue) bool, cap func(*Queue, Resources) Resources) map[string]Resources {
	out := map[string]Resources{t.root.Path: total}
	var split func(q *Queue)
	split = func(q *Queue) {
		var kids []*Queue
		for _, c := range q.Children {
			if active(c) {
				kids = append(kids, c)
			}
		}
		claims := make([]Claim, len(kids))
		for i, c := range kids {
			claims[i] = Claim{Weight: t.weight(c), Min: t.MinResources(c), Max: cap(c, t.MaxResources(c, total))}
		}
		for i, s := range ComputeShares(claims, out[q.Path]) {
			out[kids[i].Path] = s
			split(kids[i])
		}
	}
	split(t.root)
	return out
}

// Paths lists every queue of the tree, depth first in file order.
func (t *Tree) Paths() []string {
	var out []string
	var walk func(q *Queue)
	walk = func(q *Queue) {
		out = append(out, q.Path)
		for _, c := range q.Children {
			walk(c)
		}
	}
	walk(t.root)
	return slices.Clip(out)
}
