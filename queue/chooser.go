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
			if walk(child) {
				return true
			}
		}
		return false
	}
	c.OK = walk(s.t.root)
	return c
}

// RoomFor sets why application i (an index into the cluster's applications) cannot start
// for a reason of room outside the queues, asked whenever it could be chosen: App.NoRoom
// for room that changes between choices.
func (ch *Chooser) RoomFor(f func(i int) string) { ch.s.roomFor = f }

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
		ch.reshare()
	}
}

// Grow gives the running application i more usage; pending says whether it still asks for
// more.
func (ch *Chooser) Grow(i int, by Resources, pending bool) {
	s := ch.s
	a := &s.c.Apps[i]
	asked := a.asking()
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
		ch.reshare()
	}
}

// Skip takes the waiting application i out of the picture.
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
	if s.t.appLimits {
		// Another application may become runnable in its place: the demand is counted again.
		ch.reshare()
		return
	}
	// Without running-application limits a queue's demand is the sum of its applications':
	// the skipped one's comes off its queues. A decision at the bound on starting jobs skips
	// many, and a count over every application for each was half of its CPU at 8,000 slots.
	if a.Demand.IsZero() {
		return
	}
	for p := q; p != nil; p = p.parent {
		s.demand[p.Path] = s.demand[p.Path].Sub(a.Demand)
	}
	s.share = s.t.instantaneous(s.c.Total, s.demand)
}

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
	a := &s.c.Apps[i]
	if s.t.UserMaxRunningApps(a.User) >= 0 {
		f("user " + a.User)
	}
	for q := s.leafOf[i]; q != nil && q != s.t.root; q = q.parent {
		if s.t.MaxRunningApps(q) >= 0 {
			f("queue " + q.Path)
		}
	}
}

// reshare computes the instantaneous fair shares again, from what the applications in the
// picture demand now.
func (ch *Chooser) reshare() {
	s := ch.s
	apps, leafOf := s.c.Apps, s.leafOf
	if ch.anyGone() {
		apps, leafOf = nil, nil
		for i := range s.c.Apps {
			if !s.gone[i] {
				apps, leafOf = append(apps, s.c.Apps[i]), append(leafOf, s.leafOf[i])
			}
		}
	}
	s.demand = s.t.demand(apps, leafOf)
	s.share = s.t.instantaneous(s.c.Total, s.demand)
}

func (ch *Chooser) anyGone() bool {
	for _, g := range ch.s.gone {
		if g {
			return true
		}
	}
	return false
}

// sortByOrder sorts application indexes by submission order, then id.
func sortByOrder(idx []int, apps []App) {
	slices.SortFunc(idx, func(i, j int) int {
		if c := cmp.Compare(apps[i].Order, apps[j].Order); c != 0 {
			return c
		}
		return cmp.Compare(apps[i].ID, apps[j].ID)
	})
}
