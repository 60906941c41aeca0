package queue

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// PolicyStateAware is slotplane's extension of the allocation file's schedulingPolicy for
// leaf queues: applications first in, first out, with YuniKorn's StateAware drip-feed of
// starting applications.
const PolicyStateAware Policy = "stateaware"

// Cluster is the picture one admission decision is made on.
type Cluster struct {
	// Total is what the queues share (the test bed's slots, and room for drivers).
	Total Resources
	// Apps are running applications (with their Usage) and waiting ones (Running false).
	Apps []App
	// Now is the caller's clock (StateAware's fallback timer).
	Now time.Time
	// StateAware tunes the StateAware leaves.
	StateAware StateAwareOptions
	// Reserve turns strict leaves on (Choose): the Admitter sets it.
	Reserve bool
	// Free, when set, is the free room: less than Total minus the running applications'
	// usage when some room is set aside (slots being vacated, reserved slots).
	Free *Resources
}

// Refusal says why a waiting application cannot start now. It waits; it never fails.
type Refusal struct {
	App    string
	Reason string
	// at is the application's index in the cluster chosen on.
	at int
}

// Next chooses the waiting application to start next, or none. It walks down from root,
// offering the resources to the child queue that is furthest below its share (by the
// parent's policy), and in the chosen leaf to the first application in the leaf's order
// that no limit holds back: maxRunningApps of the queue and its ancestors, the user's
// maxRunningApps, maxResources of the queue and its ancestors, maxAMShare of the leaf, and
// the free capacity. Refusals say why the applications it passed over wait. Next never
// reserves: it is Choose without Cluster.Reserve.
func (t *Tree) Next(c Cluster) (App, []Refusal, bool) {
	c.Reserve = false
	ch := t.Choose(c)
	return ch.App, ch.Refusals, ch.OK
}

// Choice is what Choose decided.
type Choice struct {
	// App is the application chosen, and Index its index in the cluster; OK false when
	// there is none.
	App   App
	Index int
	OK    bool
	// Reserve: App is the head of a strict leaf and does not fit the free room. It is not
	// to start now; the free room is held for it, and nothing else starts (but backfill).
	Reserve bool
	// Refusals say why the applications passed over wait.
	Refusals []Refusal
	// holding are the applications passed over that hold their own room (Room.HoldOwn),
	// when reasons are asked for: they gave their reasons themselves.
	holding []int
}

// Choose is Next with strict leaves (Cluster.Reserve): in a strict leaf the first
// application in order that is held back only by room (the free capacity, or App.NoRoom)
// is chosen to reserve, and one held back by a resource limit (maxResources, maxAMShare)
// holds up the leaf. Applications over a running-application limit are not runnable: they
// never hold up anyone, as in the Fair Scheduler.
func (t *Tree) Choose(c Cluster) Choice {
	return t.NewChooser(c).Choose(true)
}

// WantsRoom lists the leaf queues that have a waiting application which only room keeps
// from starting: with every slot of the cluster free, the leaf's policy and the limits of
// its queues and user would start it. A leaf whose waiting applications are all held back
// by its own settings (maxRunningApps, maxResources, maxAMShare, a StateAware leaf with an
// application starting) is not listed: what it lacks is not room another queue holds.
// It changes nothing.
func (t *Tree) WantsRoom(c Cluster) map[string]bool {
	room := c.Total
	c.Free, c.Reserve = &room, false
	s := t.snapshot(c)
	out := map[string]bool{}
	for q, ls := range s.sums {
		if !q.Leaf() || len(ls.apps) == 0 {
			continue
		}
		var ch Choice
		if s.pickInLeaf(q, &ch) {
			out[q.Path] = true
		}
	}
	return out
}

// HeldBack says what keeps the waiting application id from starting even with room for it:
// its StateAware leaf, or a limit of its queues or its user (maxRunningApps, maxResources,
// maxAMShare), judged with every application of c counted, so that shares, and the limits
// drawn from them, are what they are now. "" when only room does. Preemption asks it first:
// slots taken back for an application a limit holds back would only sit idle.
func (t *Tree) HeldBack(c Cluster, id string) string {
	room := c.Total
	c.Free = &room
	i := slices.IndexFunc(c.Apps, func(a App) bool { return a.ID == id })
	if i < 0 {
		return fmt.Sprintf("application %s is not in the cluster", id)
	}
	a := c.Apps[i]
	q := t.Queue(a.Queue)
	if q == nil || !q.Leaf() {
		return fmt.Sprintf("queue %s is not a leaf of the tree", a.Queue)
	}
	s := t.snapshot(c)
	var ch Choice
	if s.pickInLeaf(q, &ch) && ch.App.ID == id {
		return ""
	}
	for _, r := range ch.Refusals {
		if r.App == id {
			return r.Reason
		}
	}
	return fmt.Sprintf("queue %s starts %s first", q.Path, ch.App.ID)
}

type snapshot struct {
	t       *Tree
	c       Cluster
	usage   map[string]Resources
	amUsage map[string]Resources
	running map[string]int // per queue, up the hierarchy
	byUser  map[string]int
	waiting map[string]int // waiting apps per queue, up the hierarchy
	share   map[string]Resources
	// demand is what the applications in the picture demand, per queue and up the
	// hierarchy (Tree.demand): what share is computed from.
	demand map[string]Resources
	free   Resources
	sums   map[*Queue]*leafSums
	// leafOf is each application's leaf (nil: a queue the tree does not know).
	leafOf []*Queue
	// reasons: refusals are written out (Choice.Refusals); without, a choice costs no
	// words for the applications it passes over.
	reasons bool
	// order caches each leaf's asking applications in the leaf's order (before StateAware's
	// filter); a leaf whose order may have changed is dropped from it.
	order map[*Queue]*inOrder
	// gone are applications taken out of the picture (Chooser.Skip).
	gone []bool
	// runningAsking counts the running applications that ask for more (Pending).
	runningAsking int
	// room, when set, is the room outside the queues (Chooser.RoomFor).
	room *Room
	// stale: what the applications ask for changed during a choice (Chooser.StopAsking
	// from Room.HoldOwn), which is to start again.
	stale bool
}

// leafSums is what the applications of one queue add up to, before the roll-up.
type leafSums struct {
	usage, am        Resources
	running, waiting int
	apps             []int // indexes into Cluster.Apps
}

func (t *Tree) snapshot(c Cluster) *snapshot {
	s := &snapshot{
		t: t, c: c,
		usage: map[string]Resources{}, amUsage: map[string]Resources{},
		running: map[string]int{}, byUser: map[string]int{}, waiting: map[string]int{},
	}
	// One map step per application, then one walk of the tree: a decision over ten
	// thousand applications must not do ten thousand walks up the hierarchy.
	sums := make(map[*Queue]*leafSums, len(t.byID))
	s.sums = sums
	total := Resources{}
	leafOf := make([]*Queue, len(c.Apps))
	s.leafOf, s.order, s.reasons, s.gone = leafOf, map[*Queue]*inOrder{}, true, make([]bool, len(c.Apps))
	for i := range c.Apps {
		a := &c.Apps[i]
		q := t.Queue(a.Queue)
		if q == nil {
			continue // a queue the tree does not know: Ensure it first
		}
		leafOf[i] = q
		ls := sums[q]
		if ls == nil {
			ls = &leafSums{}
			sums[q] = ls
		}
		ls.apps = append(ls.apps, i)
		if a.Running {
			total = total.Add(a.Usage)
			s.byUser[a.User]++
			ls.usage, ls.am = ls.usage.Add(a.Usage), ls.am.Add(a.AM)
			ls.running++
			if a.Pending {
				s.runningAsking++
			}
		}
		if a.asking() {
			ls.waiting++
		}
	}
	var roll func(q *Queue) leafSums
	roll = func(q *Queue) leafSums {
		var sum leafSums
		if ls := sums[q]; ls != nil {
			sum = *ls
			sum.apps = nil
			s.amUsage[q.Path] = ls.am
		}
		for _, c := range q.Children {
			k := roll(c)
			sum.usage = sum.usage.Add(k.usage)
			sum.running += k.running
			sum.waiting += k.waiting
		}
		s.usage[q.Path] = sum.usage
		s.running[q.Path], s.waiting[q.Path] = sum.running, sum.waiting
		return sum
	}
	roll(t.root)
	s.free = c.Total.Sub(total)
	if c.Free != nil {
		s.free = *c.Free
	}
	s.demand = t.demand(c.Apps, leafOf, nil, nil)
	s.share = t.instantaneous(c.Total, s.demand)
	return s
}

// orderChildren sorts a parent's children the way its policy offers resources: under
// fair (and fifo, which orders applications, not queues), queues below their minimum share
// first, by usage over minimum, then by usage over weight (memory); under drf, as Hadoop's
// dominant resource fairness does, queues below their minimum in any resource first, by
// their dominant usage over minimum, then by dominant share over weight. Ties go by name, so
// the order is deterministic.
func (s *snapshot) orderChildren(q *Queue) []*Queue {
	kids := slices.Clone(q.Children)
	drf := s.t.Policy(q) == PolicyDRF
	key := func(c *Queue) (needy bool, ratio float64) {
		u, w := s.usage[c.Path], s.t.weight(c)
		if w <= 0 {
			w = 1e-9
		}
		if drf {
			min := s.t.MinResources(c)
			if u.MemoryBytes < min.MemoryBytes || u.MilliCores < min.MilliCores {
				return true, u.DominantShare(min)
			}
			return false, u.DominantShare(s.c.Total) / w
		}
		min := s.t.MinResources(c)
		if u.MemoryBytes < min.MemoryBytes {
			return true, float64(u.MemoryBytes) / float64(min.MemoryBytes)
		}
		return false, float64(u.MemoryBytes) / w
	}
	slices.SortStableFunc(kids, func(a, b *Queue) int {
		na, ra := key(a)
		nb, rb := key(b)
		if na != nb {
			if na {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(ra, rb); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return kids
}

// pickInLeaf chooses, in the leaf's order, the first waiting application that no limit
// holds back (or, under Cluster.Reserve in a strict leaf, the head that reserves).
func (s *snapshot) pickInLeaf(q *Queue, ch *Choice) bool {
	waiting, allowed := s.waitingInLeaf(q, ch)
	held := func(i int) bool { return allowed != nil && !allowed[s.c.Apps[i].ID] }
	strict := s.c.Reserve && s.t.Strict(q)
	for n := 0; n < len(waiting); n++ {
		i := waiting[n]
		a := &s.c.Apps[i]
		if !a.asking() || s.gone[i] || held(i) {
			continue
		}
		why, kind := s.blocked(q, a, i)
		switch {
		case kind == notBlocked:
			ch.App, ch.Index = *a, i
			return true
		case !strict || kind == blockedByCount:
			s.refuse(ch, i, why)
			continue
		case kind == blockedByRoom && s.room != nil && s.room.HoldOwn(i):
			if s.reasons {
				ch.holding = append(ch.holding, i)
			}
			if s.stale {
				return false
			}
			continue // it holds its own room; the rest of the leaf goes on
		case kind == blockedByRoom:
			ch.App, ch.Index, ch.Reserve = *a, i, true
		default:
			s.refuse(ch, i, why)
		}
		// The head holds up the rest of its strict leaf.
		if s.reasons {
			for _, j := range waiting[n+1:] {
				if b := &s.c.Apps[j]; b.asking() && !s.gone[j] && !held(j) {
					ch.Refusals = append(ch.Refusals, Refusal{App: b.ID, Reason: fmt.Sprintf("waits behind %s in the strict order of queue %s", a.ID, q.Path), at: j})
				}
			}
		}
		return ch.Reserve
	}
	return false
}

// refuse notes why application i waits, when reasons are asked for.
func (s *snapshot) refuse(ch *Choice, i int, why string) {
	if s.reasons {
		ch.Refusals = append(ch.Refusals, Refusal{App: s.c.Apps[i].ID, Reason: why, at: i})
	}
}

// waitingInLeaf returns the leaf's applications that may ask for room (indexes into the
// cluster's), in the order the leaf serves them: those that no longer ask are to be passed
// over. In a StateAware leaf, allowed are those StateAware lets start; the others are
// refused into ch.
func (s *snapshot) waitingInLeaf(q *Queue, ch *Choice) (order []int, allowed map[string]bool) {
	policy := s.t.Policy(q)
	o := s.order[q]
	if o == nil {
		o = &inOrder{idx: s.leafOrder(q, policy)}
		s.order[q] = o
	}
	for ; o.first < len(o.idx); o.first++ {
		if i := o.idx[o.first]; s.c.Apps[i].asking() && !s.gone[i] {
			break // what went before it started, or left the picture
		}
	}
	order = o.idx[o.first:]
	if policy == PolicyStateAware {
		allowed = s.stateAwareAllowed(q)
		for _, i := range order {
			if a := &s.c.Apps[i]; a.asking() && !s.gone[i] && !allowed[a.ID] {
				s.refuse(ch, i, fmt.Sprintf("queue %s is StateAware and another application is starting", q.Path))
			}
		}
	}
	return order, allowed
}

// leafOrder is the leaf's asking applications in the order the leaf serves them.
func (s *snapshot) leafOrder(q *Queue, policy Policy) []int {
	var order []int
	if ls := s.sums[q]; ls != nil {
		for _, i := range ls.apps {
			if s.c.Apps[i].asking() && !s.gone[i] {
				order = append(order, i)
			}
		}
	}
	slices.SortStableFunc(order, s.leafCompare(policy))
	return order
}

// leafCompare orders two applications (indexes into the cluster's) as a leaf of the policy
// serves them: the higher priority first, in every policy; then fifo and StateAware serve by
// submission; fair serves the application with the least memory over its weight first, drf
// the one with the least dominant share over its weight, submission breaking ties. Waiting
// applications hold nothing, so among them every policy is first come, first served within
// a priority: weights (sizebasedweight) only tell apart running applications that ask for
// more.
func (s *snapshot) leafCompare(policy Policy) func(i, j int) int {
	settings := s.t.alloc.Settings
	weight := func(a *App) float64 { return max(settings.AppWeight(a.Demand), 1e-9) }
	return func(i, j int) int {
		apps := s.c.Apps
		a, b := &apps[i], &apps[j]
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		switch policy {
		case PolicyFair:
			if c := cmp.Compare(float64(a.Usage.MemoryBytes)/weight(a), float64(b.Usage.MemoryBytes)/weight(b)); c != 0 {
				return c
			}
		case PolicyDRF:
			if c := cmp.Compare(a.Usage.DominantShare(s.c.Total)/weight(a), b.Usage.DominantShare(s.c.Total)/weight(b)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.Order, b.Order); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	}
}

// stateAwareAllowed is the set of a StateAware leaf's applications that StateAware lets
// start now.
func (s *snapshot) stateAwareAllowed(q *Queue) map[string]bool {
	var states []StateApp
	if ls := s.sums[q]; ls != nil {
		states = make([]StateApp, 0, len(ls.apps))
		for _, i := range ls.apps {
			if s.gone[i] {
				continue
			}
			a := &s.c.Apps[i]
			st := a.State
			if st == "" {
				st = Accepted
				if a.Running {
					st = Running
				}
			}
			states = append(states, StateApp{ID: a.ID, Order: a.Order, Priority: a.Priority, State: st, StartingSince: a.StartingSince, Pending: !a.Running || a.Pending,
				NoExecutors: a.NoExecutors, SlotBacked: a.SlotBacked})
		}
	}
	allowed := map[string]bool{}
	for _, id := range StateAware(states, s.c.Now, s.c.StateAware).Schedulable {
		allowed[id] = true
	}
	return allowed
}

// What holds an application back.
type blockKind int

const (
	notBlocked blockKind = iota
	// blockedByCount: a running-application limit (the queue's or the user's).
	blockedByCount
	// blockedByLimit: a resource limit (maxResources, maxAMShare).
	blockedByLimit
	// blockedByRoom: the free capacity, or App.NoRoom.
	blockedByRoom
)

// blocked says which limit keeps a waiting application from starting, or a running one from
// getting more, and of which kind; "" when none. The application limits (maxRunningApps, the
// user's, maxAMShare) only hold back applications that do not run yet.
func (s *snapshot) blocked(leaf *Queue, a *App, i int) (string, blockKind) {
	ask := a.ask()
	if n := s.t.UserMaxRunningApps(a.User); !a.Running && n >= 0 && s.byUser[a.User] >= n {
		return s.say("user %s runs its maximum of %d applications", a.User, n), blockedByCount
	}
	for q := leaf; q != nil; q = q.parent {
		if n := s.t.MaxRunningApps(q); !a.Running && n >= 0 && s.running[q.Path] >= n && q != s.t.root {
			return s.say("queue %s runs its maximum of %d applications", q.Path, n), blockedByCount
		}
	}
	for q := leaf; q != nil; q = q.parent {
		if !s.t.limitsResources(q) {
			// No limit of its own: root's only limit is the capacity, and any other queue's
			// the total, which the free room below stands for.
			continue
		}
		max := s.t.MaxResources(q, s.c.Total)
		if s.usage[q.Path].Add(ask).Fits(max) {
			continue
		}
		why := s.say("queue %s would exceed its maxResources %s (uses %s, the application needs %s)", q.Path, max, s.usage[q.Path], ask)
		if !ask.Fits(max) {
			return why, blockedByCount // it never fits this queue: it holds up nobody
		}
		return why, blockedByLimit
	}
	if share := s.t.MaxAMShare(leaf); !a.Running && share >= 0 && s.running[leaf.Path] > 0 {
		limit := scale(s.share[leaf.Path], share)
		if !s.amUsage[leaf.Path].Add(a.AM).Fits(limit) {
			return s.say("queue %s's drivers would exceed maxAMShare %.2f of its fair share (%s)", leaf.Path, share, limit), blockedByLimit
		}
	}
	if a.NoRoom != "" {
		return a.NoRoom, blockedByRoom
	}
	if s.room != nil && !s.room.Fits(i) {
		if !s.reasons {
			return "", blockedByRoom
		}
		return s.room.Why(i), blockedByRoom
	}
	if !ask.Fits(s.free) {
		return s.say("not enough free resources (%s free, needs %s)", s.free, ask), blockedByRoom
	}
	return "", notBlocked
}

// say formats a reason, if reasons are written out.
func (s *snapshot) say(format string, args ...any) string {
	if !s.reasons {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// asking: the application competes for resources now (it waits, or runs and asks for more).
func (a App) asking() bool { return !a.Running || a.Pending }

// ask is what the application asks for now.
func (a App) ask() Resources {
	if a.Ask.IsZero() {
		return a.Demand
	}
	return a.Ask
}

// scale is the fraction f of r, rounded down to the byte and the millicore.
func scale(r Resources, f float64) Resources {
	return Resources{MemoryBytes: int64(math.Floor(float64(r.MemoryBytes) * f)), MilliCores: int64(math.Floor(float64(r.MilliCores) * f))}
}

// CanMove reports why moving a job to the target queue would break the target's limits
// (nil: it may move). A waiting job moves freely as long as the target is a leaf; a
// running one must fit the target's and its ancestors' maxRunningApps and maxResources,
// counting what it holds now. Ancestors shared with the job's current queue lose nothing.
func (t *Tree) CanMove(c Cluster, app App, target string) error {
	to := t.Queue(target)
	switch {
	case to == nil:
		return fmt.Errorf("queue %s does not exist", target)
	case !to.Leaf() || to == t.root:
		return fmt.Errorf("queue %s is a parent queue; jobs go to leaf queues", to.Path)
	case !app.Running:
		return nil
	}
	s := t.snapshot(c)
	from := t.Queue(app.Queue)
	shared := map[*Queue]bool{}
	for q := from; q != nil; q = q.parent {
		shared[q] = true
	}
	for q := to; q != nil && !shared[q]; q = q.parent {
		if n := t.MaxRunningApps(q); n >= 0 && s.running[q.Path]+1 > n {
			return fmt.Errorf("queue %s runs its maximum of %d applications", q.Path, n)
		}
		if max := t.MaxResources(q, c.Total); !s.usage[q.Path].Add(app.Usage).Fits(max) {
			return fmt.Errorf("queue %s would exceed its maxResources %s (uses %s, the job holds %s)", q.Path, max, s.usage[q.Path], app.Usage)
		}
	}
	return nil
}
