package queue

import (
	"slices"
	"time"
)

// A picture is the queues' view of the jobs (a Chooser, and the entry of each of its
// applications) kept from one decision to the next. A request adds its job, a release or an
// end takes its job out, a start changes its state, and a decision's grants start their
// jobs: a decision that grants one job does not look at every waiting job again. What it
// does not follow drops it, and the next decision makes one anew: a new allocation file, a
// move, a decision's outcome applied, other slots in the bed, a grant outside the queues'
// order (backfill, preemption's), and preemption, which changes what running jobs hold (it
// is never kept while the allocation file turns preemption on, or a running job lacks
// slots). A compaction of the lists moves the applications' entries with them.
type picture struct {
	chooser *Chooser
	// refs are the entry of each application; waiting and running the application of each
	// entry (-1: none, a job no decision can choose: it never fits the bed, or its queue is
	// not in the tree).
	refs             []entryRef
	waiting, running []int
	tree             *Tree
	positions        []int32
	slot             Resources
	// skipped are the applications the last decision took out for itself.
	skipped []int
}

// pictureFor is the picture a decision on the bed chooses on: the one kept, or a new one.
func (a *Admitter) pictureFor(now time.Time, bed Bed, avail []int32) *picture {
	keep := !a.fresh && !a.st.Config.Allocations.Preemption.Enabled && !a.anyShort()
	if p := a.pic; keep && p != nil && p.tree == a.tree && p.slot == a.st.Slot && slices.Equal(p.positions, bed.Positions) {
		for _, i := range p.skipped {
			p.chooser.Unskip(i)
		}
		p.skipped = p.skipped[:0]
		p.chooser.SetNow(now)
		a.kept++
		return p
	}
	c, refs := a.clusterRefs(now, bed, avail, nil, true)
	c.Reserve = true
	p := &picture{chooser: a.tree.NewChooser(c), refs: refs, tree: a.tree, positions: bed.Positions, slot: a.st.Slot,
		waiting: slices.Repeat([]int{-1}, len(a.st.Waiting)), running: slices.Repeat([]int{-1}, len(a.st.Running))}
	for i, r := range refs {
		if r.running {
			p.running[r.i] = i
		} else {
			p.waiting[r.i] = i
		}
	}
	a.pic = nil
	if keep {
		a.pic = p
	}
	return p
}

// anyShort: a running job holds fewer slots than it asked for (preemption took some).
func (a *Admitter) anyShort() bool {
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone && int64(len(e.Slots)) < e.wanted() {
			return true
		}
	}
	return false
}

// request adds the waiting entry w (just appended) to the picture, when a decision may
// choose it.
func (p *picture) request(a *Admitter, w int) {
	e := &a.st.Waiting[w]
	i := -1
	if a.choosable(e, p.positions) {
		i = p.chooser.Add(a.appOf(e, false))
		p.refs = append(p.refs, entryRef{i: w})
	}
	p.waiting = append(p.waiting, i)
}

// appAt is the application of the entry ref: ok false and -1 when it has none, -2 when
// the picture does not know the entry (it is not to be kept).
func (p *picture) appAt(ref entryRef) (int, bool) {
	of := p.waiting
	if ref.running {
		of = p.running
	}
	if ref.i >= len(of) {
		return -2, false
	}
	return of[ref.i], of[ref.i] >= 0
}

// leave takes the entry ref out of the picture: its job left. false: the picture does not
// know the entry.
func (p *picture) leave(ref entryRef) bool {
	i, ok := p.appAt(ref)
	if !ok {
		return i == -1
	}
	if k := slices.Index(p.skipped, i); k >= 0 {
		p.chooser.Unskip(i) // so that Remove takes out what it counts
		p.skipped = slices.Delete(p.skipped, k, k+1)
	}
	p.chooser.Remove(i)
	return true
}

// compact follows a compaction of the lists (about to take their gone entries out): the
// applications' entries move up. false: the picture does not know every entry.
func (p *picture) compact(waiting, running []Entry) bool {
	if len(p.waiting) != len(waiting) || len(p.running) != len(running) {
		return false
	}
	p.waiting, p.running = p.moved(waiting, p.waiting, false), p.moved(running, p.running, true)
	return true
}

// moved is apps, the application of each entry of es, without the gone entries; the
// applications of the others name their new places.
func (p *picture) moved(es []Entry, apps []int, running bool) []int {
	out := apps[:0]
	for i := range es {
		if es[i].gone {
			continue
		}
		if j := apps[i]; j >= 0 && p.refs[j] == (entryRef{running: running, i: i}) {
			p.refs[j].i = len(out)
		}
		out = append(out, apps[i])
	}
	return out
}

// skip takes application i out of the picture for the rest of the decision.
func (p *picture) skip(i int) {
	p.chooser.Skip(i)
	p.skipped = append(p.skipped, i)
}
