package queue

import (
	"cmp"
	"slices"
	"time"
)

// A Chooser makes Choose's choices one after another on one cluster while the caller starts
// what was chosen: each start updates the sums the policies read (usage, counts, free room)
// along the chosen application's queues, instead of a new picture of every application. A
// decision that starts a thousand jobs out of ten thousand waiting costs a thousand walks
// down the tree, not a thousand pictures of ten thousand applications.
//
// The choices are Choose's on the cluster as it stands after the calls made so far
// (TestChooser_ChoosesAsChooseFromScratch holds the two equal).
type Chooser struct {
	s *snapshot
	// scopes are the waiting applications under each running-application limit (a user's,
	// a queue's), in submission order (built on first use). A start of the earliest waiting
	// application of every limit it counts against cannot change which others are runnable,
	// so what they demand, and the shares, stand.
	scopes map[string]*inOrder
	// redemand: what the applications demand is to be added up again before the next
	// choice (a change under running-application limits that run cannot follow); reshare:
	// the shares are to be computed again from it. Both wait for the next choice, so that
	// a batch of changes costs one count.
	redemand, reshare bool
	// run is which applications the running-application limits let run, as the last count
	// found it and the changes since kept it (nil: unknown, or no limits).
	run *runnability
}

// inOrder are applications in an order (a leaf's, or submission), and first the position
// of the first that may still be wanted: those before it started or left the picture.
type inOrder struct {
	idx   []int
	first int
}

// NewChooser takes the picture Choose decides on.
func (t *Tree) NewChooser(c Cluster) *Chooser {
	return &Chooser{s: t.snapshot(c)}
}

// Choose is Tree.Choose on the cluster as it stands; reasons false leaves Refusals out.
func (ch *Chooser) Choose(reasons bool) Choice {
	s := ch.s
	s.reasons = reasons
	var c Choice
	var walk func(q *Queue) bool
	walk = func(q *Queue) bool {
		if q.Leaf() {
			return s.pickInLeaf(q, &c)
		}
		for _, child := range s.orderChildren(q) {
			if s.waiting[child.Path] == 0 {
				continue
			}
			if walk(child) || s.stale {
				return !s.stale
			}
		}
		return false
	}
	for {
		ch.share()
		c = Choice{}
		c.OK = walk(s.t.root)
		if !s.stale {
			return c
		}
		// An application holding its own room changed what the others ask for
		// (StopAsking): the choice starts again on the new picture.
		s.stale = false
	}
}

// Room is the room some applications need outside the queues (a SlotBased job's own
// slots), which changes between choices: App.NoRoom, asked when it matters.
type Room struct {
	// Fits: application i has room; asked whenever it could be chosen.
	Fits func(i int) bool
	// Why application i has no room; asked only when reasons are.
	Why func(i int) string
	// HoldOwn is asked of an application without room at the head of a strict leaf. true:
	// it holds only room that is its own (it has set the free room left, SetFree, and
	// given its reason; StopAsking if none is left), and the applications behind it go on;
	// false:
	// it holds up the leaf, and the choice reserves for it (Choice.Reserve).
	HoldOwn func(i int) bool
}

// RoomFor sets the room outside the queues (nil: the free room is all there is).
func (ch *Chooser) RoomFor(r *Room) { ch.s.room = r }

// App is application i as the chooser sees it now.
func (ch *Chooser) App(i int) App { return ch.s.c.Apps[i] }

// SetFree sets the free room.
func (ch *Chooser) SetFree(r Resources) { ch.s.free = r }

// Start marks the waiting application i running with usage, in the given start-up state.
func (ch *Chooser) Start(i int, usage Resources, state AppState, since time.Time) {
	s := ch.s
	a := &s.c.Apps[i]
	asked := a.asking()
	earliest := !s.t.appLimits || ch.earliestUnderItsLimits(i)
	a.Running, a.Usage, a.Demand, a.Pending = true, usage, usage, false
	a.State, a.StartingSince = state, since
	q := s.leafOf[i]
	if q == nil {
		return
	}
	s.byUser[a.User]++
	s.amUsage[q.Path] = s.amUsage[q.Path].Add(a.AM)
	for p := q; p != nil; p = p.parent {
		s.usage[p.Path] = s.usage[p.Path].Add(usage)
		s.running[p.Path]++
		if asked {
			s.waiting[p.Path]--
		}
	}
	if !earliest {
		// A job started ahead of an earlier one counts against the running-application
		// limits the earlier one was counted under: what is runnable, and so the shares,
		// may change.
		ch.run, ch.redemand = nil, true
	}
}

// Grow gives the running application i more usage; pending says whether it still asks for
// more.
func (ch *Chooser) Grow(i int, by Resources, pending bool) {
	s := ch.s
	a := &s.c.Apps[i]
	asked := a.asking()
	if a.Pending && !pending {
		s.runningAsking--
	}
	a.Usage, a.Pending = a.Usage.Add(by), pending
	if !pending {
		a.Demand = a.Usage
	}
	q := s.leafOf[i]
	if q == nil {
		return
	}
	for p := q; p != nil; p = p.parent {
		s.usage[p.Path] = s.usage[p.Path].Add(by)
		if asked && !a.asking() {
			s.waiting[p.Path]--
		}
	}
	delete(s.order, q)
}

// StopAsking makes every running application that asks for more stop asking: it demands
// what it holds.
func (ch *Chooser) StopAsking() {
	s := ch.s
	if s.runningAsking == 0 {
		return // a pass over every application for nothing
	}
	s.runningAsking = 0
	changed := false
	for i := range s.c.Apps {
		a := &s.c.Apps[i]
		if !a.Running || !a.Pending || s.gone[i] {
			continue
		}
		a.Pending, a.Demand, a.Ask = false, a.Usage, Resources{}
		changed = true
		if q := s.leafOf[i]; q != nil {
			for p := q; p != nil; p = p.parent {
				s.waiting[p.Path]--
			}
			delete(s.order, q)
		}
	}
	if changed {
		ch.run, ch.redemand, s.stale = nil, true, true
	}
}

// Skip takes the waiting application i out of the picture (Remove, a running one too).
func (ch *Chooser) Skip(i int) {
	s := ch.s
	if s.gone[i] {
		return
	}
	s.gone[i] = true
	a := &s.c.Apps[i]
	q := s.leafOf[i]
	if q == nil {
		return
	}
	if a.asking() {
		for p := q; p != nil; p = p.parent {
			s.waiting[p.Path]--
		}
	}
	ch.demands(i, false, false)
}

// demands changes what the queues demand as application i comes into the picture (add;
// last: it is the last in submission order) or leaves it. Without running-application
// limits a queue's demand is the sum of its applications': i's goes up the tree, and a
// decision at the bound on starting jobs, which skips many, does not count every
// application for each. Under such limits i counts only if it is runnable, and its coming
// or leaving may change which others are: run follows what it can (a runnable application
// leaving where no other waits held back by a limit of its own, a new last one), and the
// demand is counted again otherwise.
func (ch *Chooser) demands(i int, add, last bool) {
	s := ch.s
	q, d := s.leafOf[i], s.c.Apps[i].Demand
	if s.t.appLimits {
		counted, ok := ch.run.follow(s.t, &s.c.Apps[i], i, q, add, last)
		if !ok {
			ch.run, ch.redemand = nil, true
			return
		}
		if !counted {
			return
		}
	}
	if d.IsZero() {
		return
	}
	for p := q; p != nil; p = p.parent {
		if add {
			s.demand[p.Path] = s.demand[p.Path].Add(d)
		} else {
			s.demand[p.Path] = s.demand[p.Path].Sub(d)
		}
	}
	ch.reshare = true
}

// Unskip puts back in the picture the waiting application i that Skip took out (a decision
// skips for itself: the next one, on a picture kept for it, considers it again).
func (ch *Chooser) Unskip(i int) {
	s := ch.s
	if !s.gone[i] {
		return
	}
	s.gone[i] = false
	a := &s.c.Apps[i]
	q := s.leafOf[i]
	if q == nil {
		return
	}
	if a.asking() {
		for p := q; p != nil; p = p.parent {
			s.waiting[p.Path]++
		}
	}
	ch.demands(i, true, false)
	// The leaf's order and the limits' submission orders may have passed it by.
	delete(s.order, q)
	ch.scopes = nil
}

// Add puts a new waiting application in the picture, and returns its index. It comes last
// in submission order (a new request).
func (ch *Chooser) Add(app App) int {
	s := ch.s
	i := len(s.c.Apps)
	s.c.Apps = append(s.c.Apps, app)
	q := s.t.Queue(app.Queue)
	s.leafOf, s.gone = append(s.leafOf, q), append(s.gone, false)
	if ch.scopes != nil && q != nil {
		// Last in submission order: last under each of its limits.
		ch.forEachLimit(i, func(scope string) {
			o := ch.scopes[scope]
			if o == nil {
				o = &inOrder{}
				ch.scopes[scope] = o
			}
			o.idx = append(o.idx, i)
		})
	}
	if q == nil {
		if ch.run != nil {
			ch.run.runnable = append(ch.run.runnable, false)
		}
		return i
	}
	ls := s.sums[q]
	if ls == nil {
		ls = &leafSums{}
		s.sums[q] = ls
	}
	ls.apps = append(ls.apps, i)
	for p := q; p != nil; p = p.parent {
		s.waiting[p.Path]++
	}
	ch.demands(i, true, true)
	if o := s.order[q]; o != nil {
		// It goes last in the leaf's order when it sorts after the last there; otherwise
		// the order is made again when next asked for.
		if n := len(o.idx); n == 0 || s.leafCompare(s.t.Policy(q))(o.idx[n-1], i) < 0 {
			o.idx = append(o.idx, i)
		} else {
			delete(s.order, q)
		}
	}
	return i
}

// Remove takes application i out of the picture for good (its job left: released, ended,
// withdrawn), with what it holds and demands.
func (ch *Chooser) Remove(i int) {
	s := ch.s
	a, q := &s.c.Apps[i], s.leafOf[i]
	if a.Running && !s.gone[i] && q != nil {
		for p := q; p != nil; p = p.parent {
			s.usage[p.Path] = s.usage[p.Path].Sub(a.Usage)
			s.running[p.Path]--
		}
		if a.Pending {
			s.runningAsking--
		}
		s.byUser[a.User]--
		s.amUsage[q.Path] = s.amUsage[q.Path].Sub(a.AM)
	}
	ch.Skip(i) // what it asks for and demands
}

// SetNow sets the clock the policies read (StateAware's starting timeout).
func (ch *Chooser) SetNow(now time.Time) { ch.s.c.Now = now }

// SetState sets the start-up state of the running application i (it told of its start).
func (ch *Chooser) SetState(i int, state AppState) { ch.s.c.Apps[i].State = state }

// SetNoExecutors marks the running application i's driver as running without executors.
func (ch *Chooser) SetNoExecutors(i int) { ch.s.c.Apps[i].NoExecutors = true }

// Skipped: application i was taken out of the picture.
func (ch *Chooser) Skipped(i int) bool { return ch.s.gone[i] }

// earliestUnderItsLimits: application i waits first, in submission order, under every
// running-application limit it counts against.
func (ch *Chooser) earliestUnderItsLimits(i int) bool {
	s := ch.s
	if ch.scopes == nil {
		ch.scopes = map[string]*inOrder{}
		var made []*inOrder // in the order made: workflow code ranges over no map
		for j := range s.c.Apps {
			if !s.c.Apps[j].Running && !s.gone[j] {
				ch.forEachLimit(j, func(scope string) {
					o := ch.scopes[scope]
					if o == nil {
						o = &inOrder{}
						ch.scopes[scope] = o
						made = append(made, o)
					}
					o.idx = append(o.idx, j)
				})
			}
		}
		for _, o := range made {
			sortByOrder(o.idx, s.c.Apps)
		}
	}
	first := true
	ch.forEachLimit(i, func(scope string) {
		o := ch.scopes[scope]
		for ; o != nil && o.first < len(o.idx); o.first++ {
			if j := o.idx[o.first]; !s.c.Apps[j].Running && !s.gone[j] {
				first = first && j == i
				return
			}
		}
	})
	return first
}

// forEachLimit calls f with each running-application limit application i counts against:
// its user's, and its queues' (root aside).
func (ch *Chooser) forEachLimit(i int, f func(scope string)) {
	s := ch.s
	user := s.c.Apps[i].User
	s.t.eachLimit(user, s.leafOf[i], func(q *Queue) {
		if q == nil {
			f("user " + user)
		} else {
			f("queue " + q.Path)
		}
	})
}

// share brings the demand and the instantaneous fair shares up to date with the changes
// made since the last choice.
func (ch *Chooser) share() {
	s := ch.s
	if ch.redemand {
		ch.countDemand()
	}
	if ch.redemand || ch.reshare {
		s.share = s.t.instantaneous(s.c.Total, s.demand)
	}
	ch.redemand, ch.reshare = false, false
}

// countDemand adds up again what the applications in the picture demand now.
func (ch *Chooser) countDemand() {
	s := ch.s
	ch.run = nil
	if s.t.appLimits {
		ch.run = &runnability{}
	}
	s.demand = s.t.demand(s.c.Apps, s.leafOf, s.gone, ch.run)
}

// sortByOrder sorts application indexes by priority (higher first), submission order, then id.
func sortByOrder(idx []int, apps []App) {
	slices.SortFunc(idx, func(i, j int) int {
		if c := servedBefore(&apps[i], &apps[j]); c != 0 {
			return c
		}
		return cmp.Compare(apps[i].ID, apps[j].ID)
	})
}

// servedBefore compares two applications by priority (higher first), then submission.
func servedBefore(a, b *App) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.Order, b.Order)
}
