package queue

import (
	"fmt"
	"slices"
	"time"
)

// explainAt is what a decision chose on, for the reasons of the jobs it left waiting: its
// time, the bed's slots and the slots it left free. due marks, during the decision, that
// they are to be given.
type explainAt struct {
	now       time.Time
	positions []int32
	avail     []int32
	due       bool
}

// giveReasons writes why each waiting job waits, as the last decision would have said it:
// the queues' order run again on its picture, every job refused noting its reason, each
// SlotBased head reserving its own slots, a strict head holding up the jobs behind it.
// Nothing is granted.
func (a *Admitter) giveReasons() {
	x := a.explain
	if x == nil || x.due {
		return // none due, or a decision that broke part way left no picture to give them from
	}
	a.explain = nil
	a.compact()
	avail := slices.Clone(x.avail)
	c, refs := a.clusterRefs(x.now, Bed{Exists: true, Positions: x.positions}, avail, nil, true)
	c.Reserve = true
	chooser := a.tree.NewChooser(c)
	a.roomFor(chooser, refs, &avail, nil)
	chooser.SetFree(times(a.st.Slot, int64(len(avail))))
	ch := chooser.Choose(true)
	a.noteRefusals(ch.Refusals, refs)
	if ch.OK && ch.Reserve && !refs[ch.Index].running {
		a.heldUp(ch, chooser, refs)
	}
}

// heldUp gives the waiting jobs that the choice of a reserving head passed by unseen (their
// queues come after its leaf) their reason: nothing else starts while the head waits. refs
// are the entries of the chooser's applications.
func (a *Admitter) heldUp(ch Choice, chooser *Chooser, refs []entryRef) {
	seen := make([]bool, len(refs))
	seen[ch.Index] = true
	for _, r := range ch.Refusals {
		seen[r.at] = true
	}
	for _, i := range ch.holding {
		seen[i] = true
	}
	why := fmt.Sprintf("the free slots are held for %s, first in the strict order of queue %s", ch.App.ID, ch.App.Queue)
	// Jobs outside the picture (skipped, or never fitting) keep the reason they have.
	for i, ref := range refs {
		if !ref.running && !seen[i] && !chooser.Skipped(i) {
			a.at(ref).Reason = why
		}
	}
}

// noteRefusals gives the waiting jobs refused their reasons; refs are the entries of the
// applications chosen on.
func (a *Admitter) noteRefusals(rs []Refusal, refs []entryRef) {
	for _, r := range rs {
		if ref := refs[r.at]; !ref.running {
			a.at(ref).Reason = r.Reason
		}
	}
}
