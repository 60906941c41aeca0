package queue

import (
	"maps"
	"slices"
	"time"
)

// backfill grants, on the slots a reserving head cannot use yet, jobs that cannot delay the
// head's start (EASY backfill): each needs an expected duration, and either ends before the
// head can start (its shadow time) or uses only slots the head will not need then. The head
// can start once enough running jobs end; without an expected end for each of those jobs
// the shadow time is unknown and nothing backfills.
func (a *Admitter) backfill(now time.Time, bed Bed, head *Entry, avail []int32, skip map[string]bool, d *Decision) []int32 {
	if head.slotBased() {
		return avail // its own slots are set aside already; the others go on as usual
	}
	need := head.wanted()
	type end struct {
		at    time.Time
		slots int64
	}
	var ends []end
	for _, e := range a.st.Running {
		if e.gone || e.Request.Expected <= 0 {
			continue
		}
		ends = append(ends, end{at: e.GrantedAt.Add(e.Request.Expected), slots: int64(len(e.Slots))})
	}
	slices.SortStableFunc(ends, func(x, y end) int { return x.at.Compare(y.at) })
	have := int64(len(avail))
	// Jobs without an expected end may hold what the head needs: then the shadow time is
	// only known when the ones with an end suffice.
	var shadow time.Time
	found := false
	for _, x := range ends {
		have += x.slots
		if have >= need {
			shadow, found = x.at, true
			break
		}
	}
	if !found {
		return avail
	}
	extra := have - need // slots free at the shadow time beyond the head's need
	headID := head.ID
	for len(avail) > 0 && a.room != 0 {
		s := maps.Clone(skip)
		if s == nil {
			s = map[string]bool{}
		}
		s[headID] = true
		// Only jobs that qualify are offered; the others wait behind the head.
		var offered []string
		for i := range a.st.Waiting {
			e := &a.st.Waiting[i]
			id := e.ID
			if e.gone || s[id] || e.slotBased() {
				continue
			}
			n := e.wanted()
			ok := e.Request.Expected > 0 && n <= int64(len(avail)) && (!now.Add(e.Request.Expected).After(shadow) || n <= extra)
			if !ok {
				s[id] = true
				continue
			}
			offered = append(offered, id)
		}
		if len(offered) == 0 {
			break
		}
		c, refs := a.clusterRefs(now, bed, avail, s, false)
		ch := a.tree.Choose(c) // without Reserve: the first that fits, in the policies' order
		if !ch.OK || refs[ch.Index].running {
			break
		}
		e := a.at(refs[ch.Index])
		n := e.wanted()
		if now.Add(e.Request.Expected).After(shadow) {
			extra -= n // it still runs at the shadow time: it uses the head's spare slots
		}
		a.pic = nil // a grant outside the picture
		avail = a.grant(now, e, avail, d)
		a.tidy()
	}
	return avail
}
