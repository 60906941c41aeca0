package queue

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Entry is a request with where it stands: waiting, or granted (Slots set).
type Entry struct {
	// ID is the entry's name for the queue policies: its key as a string.
	ID      string
	Request Request
	// Queue is the leaf queue placement put the job in (its full path).
	Queue string
	// Order is its submission order in the Admitter.
	Order int64
	// Reason says why a waiting job waits.
	Reason string
	// Slots are a granted job's slots, GrantedAt when it got them, and Grant the grant's
	// number (Grant.Seq).
	Slots     []int32
	GrantedAt time.Time
	Grant     int64
	// State is a granted job's start-up state for StateAware leaves: Starting from the grant
	// (its driver is being started), Running once its job's workflow says so. Without a
	// bound on starting jobs, a job granted in another leaf is Running from its grant.
	State         AppState
	StartingSince time.Time
	// NoExecutors: the job's workflow said its driver runs and has asked for no executor
	// yet (Admitter.NoExecutors). With SkipStartingWithoutExecutors its Starting does not
	// hold a StateAware leaf.
	NoExecutors bool
	// Preempted counts the slots preemption took back from the job. A job with fewer slots
	// than it asked for asks for them again, one at a time.
	Preempted int32
	// gone: the entry left its list (released, or granted out of Waiting) and is dropped at
	// the next compact, so that a thousand releases do not shift the list a thousand times.
	gone bool
}

func (e *Entry) wanted() int64 {
	if len(e.Request.SlotIDs) > 0 {
		return int64(len(e.Request.SlotIDs))
	}
	return int64(e.Request.Slots)
}

func (e *Entry) slotBased() bool { return len(e.Request.SlotIDs) > 0 }

// AdmitterState is all an Admitter holds, in a form that survives serialization: the
// Admission workflow hands it from one run to the next.
type AdmitterState struct {
	Config Config
	// Next is the last submission order given, Granted the last grant number.
	Next, Granted    int64
	Waiting, Running []Entry
	Starvation       Starvation
	// Reclaimed are slots preemption took back that are not free yet. PreemptedFor is the
	// waiting job they were taken for: the free slots are held for it until it starts (or
	// leaves), so they cannot go back to their victims or to anyone else meanwhile.
	Reclaimed    []int32
	PreemptedFor *JobKey
	// Handed are slots of a job whose run ended (Ended) that the bed's status does not show
	// free yet: they may be granted at once, so a freed slot does not wait for the status to
	// catch up. A slot leaves the list once the status shows it free, or once it is granted
	// again. A withdrawn job's slots (Release) are not handed on: its pods still run until
	// they are deleted.
	Handed []int32
	// Reserved is the waiting job the free slots are held for (strict order), if any.
	Reserved *JobKey
	// Total and Slot are the test bed's size and slot size at the last decision (zero before
	// the first): what a move is checked against.
	Total, Slot Resources
}

// Admitter is the whole admission core of one test bed, pure and deterministic: requests
// wait in their queues, Decide grants slots as the policies allow, and the caller carries
// out what it decides (tells the Schedulings, assigns slots). It holds no clock: times come
// in as arguments. The Admission workflow, the simulator and the trace replay all run it.
//
// Its protocol is idempotent: a repeated request for a granted job gets its grant again, a
// repeated request for a waiting one changes nothing, a release of an unknown key is a
// no-op.
type Admitter struct {
	st   AdmitterState
	tree *Tree
	// ids finds an entry by its application id (its key's string): whether it is granted,
	// and its index. Built by indexIDs; any change to the lists makes it stale.
	ids map[string]entryRef
	// keys finds an entry by its key, kept up to date as entries come and go (nil: to be
	// built); removed counts the entries marked gone.
	keys    map[JobKey]entryRef
	removed int
	// room is startingRoom during a decision: grant takes one from it.
	room int
	// pic is the picture the last decision chose on, kept for the next (nil: the next
	// makes one). fresh: every decision makes its own (tests compare the two).
	pic   *picture
	fresh bool
	kept  int // decisions made on a kept picture
	// explain, when set, is what the last decision chose on: the waiting jobs' reasons are
	// written from it when they are read (Waiting, Report), not at each decision.
	explain *explainAt
}

type entryRef struct {
	running bool
	i       int
}

// NewAdmitter restores an Admitter from its state (the zero state is a fresh one with the
// default configuration).
func NewAdmitter(st AdmitterState) *Admitter {
	if st.Config.Allocations == nil {
		def := DefaultConfig()
		def.RejectedVersion, def.Rejected = st.Config.RejectedVersion, st.Config.Rejected
		st.Config = def
	}
	a := &Admitter{st: st}
	a.buildTree()
	return a
}

// State is a copy of the Admitter's state, for NewAdmitter.
func (a *Admitter) State() AdmitterState {
	a.compact()
	st := copyBeyondEntries(a.st)
	st.Waiting = cloneEntries(a.st.Waiting)
	st.Running = cloneEntries(a.st.Running)
	return st
}

// copyBeyondEntries is st with its own copies of everything but the entries: the slot
// lists, the starvation clocks and the keys pointed to.
func copyBeyondEntries(st AdmitterState) AdmitterState {
	st.Reclaimed = slices.Clone(st.Reclaimed)
	st.Handed = slices.Clone(st.Handed)
	st.Starvation = Starvation{MinShareSince: cloneTimes(st.Starvation.MinShareSince), FairShareSince: cloneTimes(st.Starvation.FairShareSince)}
	if st.Reserved != nil {
		k := *st.Reserved
		st.Reserved = &k
	}
	if st.PreemptedFor != nil {
		k := *st.PreemptedFor
		st.PreemptedFor = &k
	}
	return st
}

func cloneEntries(es []Entry) []Entry {
	out := slices.Clone(es)
	for i := range out {
		out[i].Slots = slices.Clone(out[i].Slots)
		out[i].Request.SlotIDs = slices.Clone(out[i].Request.SlotIDs)
		out[i].Request.Groups = slices.Clone(out[i].Request.Groups)
	}
	return out
}

func cloneTimes(m map[string]time.Time) map[string]time.Time { return maps.Clone(m) }

// Total is the test bed's size at the last decision: zero before the first decision that
// saw the bed.
func (a *Admitter) Total() Resources { return a.st.Total }

// Starvation is since when each queue has been short of its shares (read only).
func (a *Admitter) Starvation() Starvation { return a.st.Starvation }

// Config is the configuration in force.
func (a *Admitter) Config() Config { return a.st.Config }

// Configure puts a configuration in force: the queues are rebuilt, and queues that placement
// rules made live on while they have jobs. If building them panics (a malformed
// configuration), the Admitter is left as it was.
func (a *Admitter) Configure(c Config) {
	if c.Allocations == nil {
		c = DefaultConfig()
	}
	tree := a.newTree(c.Allocations) // first: should it fail, nothing has changed
	a.st.Config, a.tree, a.pic = c, tree, nil
}

func (a *Admitter) buildTree() {
	a.tree = a.newTree(a.st.Config.Allocations)
}

// newTree builds the queues of an allocation file, with the queues the jobs in hand were
// placed in.
func (a *Admitter) newTree(alloc *Allocations) *Tree {
	a.compact()
	tree := NewTree(alloc)
	seen := map[string]bool{}
	for _, l := range [][]Entry{a.st.Running, a.st.Waiting} {
		for i := range l {
			// A queue that no longer fits the file (now under a configured leaf) keeps
			// nothing here: the job's decisions skip it, and the report shows the reason.
			if q := l[i].Queue; !seen[q] {
				seen[q] = true
				_, _ = tree.Ensure(q)
			}
		}
	}
	return tree
}

// Entries is how many entries a decision walks: the waiting and running ones, those not yet
// compacted away included.
func (a *Admitter) Entries() int { return len(a.st.Waiting) + len(a.st.Running) }

// Waiting and Running are the entries, in submission order.
func (a *Admitter) Waiting() []Entry { a.compact(); a.giveReasons(); return a.st.Waiting }
func (a *Admitter) Running() []Entry { a.compact(); return a.st.Running }

// find locates the entry of a key.
func (a *Admitter) find(k JobKey) (entryRef, bool) {
	if a.keys == nil {
		a.keys = make(map[JobKey]entryRef, len(a.st.Waiting)+len(a.st.Running))
		for i := range a.st.Running {
			if e := &a.st.Running[i]; !e.gone {
				a.keys[e.Request.JobKey] = entryRef{running: true, i: i}
			}
		}
		for i := range a.st.Waiting {
			if e := &a.st.Waiting[i]; !e.gone {
				a.keys[e.Request.JobKey] = entryRef{i: i}
			}
		}
	}
	ref, ok := a.keys[k]
	return ref, ok
}

func (a *Admitter) at(ref entryRef) *Entry {
	if ref.running {
		return &a.st.Running[ref.i]
	}
	return &a.st.Waiting[ref.i]
}

// drop marks an entry gone: it leaves its list at the next compact.
func (a *Admitter) drop(e *Entry) {
	e.gone = true
	a.removed++
	if a.keys != nil {
		delete(a.keys, e.Request.JobKey)
	}
}

// tidy compacts the lists once the entries marked gone are an eighth of them. A compaction
// moves the entries after the first gone one and makes the key index anew: a pass over every
// job, too much for a decision that grants one job to pay each time. The lists' order is
// kept either way, and everything that walks them passes the gone entries by, or compacts
// first.
func (a *Admitter) tidy() {
	if a.removed > 0 && 8*a.removed >= len(a.st.Waiting)+len(a.st.Running) {
		a.compact()
	}
}

// compact takes the entries marked gone out of the lists.
func (a *Admitter) compact() {
	if a.removed == 0 {
		return
	}
	if p := a.pic; p != nil && !p.compact(a.st.Waiting, a.st.Running) {
		a.pic = nil
	}
	gone := func(e Entry) bool { return e.gone }
	a.st.Waiting = slices.DeleteFunc(a.st.Waiting, gone)
	a.st.Running = slices.DeleteFunc(a.st.Running, gone)
	a.removed, a.keys = 0, nil
}

// Keys lists every key the Admitter holds, waiting and granted.
func (a *Admitter) Keys() []JobKey {
	a.compact()
	out := make([]JobKey, 0, len(a.st.Waiting)+len(a.st.Running))
	for _, l := range [][]Entry{a.st.Waiting, a.st.Running} {
		for i := range l {
			out = append(out, l[i].Request.JobKey)
		}
	}
	return out
}

// Close empties the Admitter (its test bed is gone): it returns the refusals to send to the
// waiting jobs' Schedulings. Granted jobs are dropped: their slots are gone with the bed.
func (a *Admitter) Close(why string) []Grant {
	a.compact()
	var out []Grant
	for _, e := range a.st.Waiting {
		out = append(out, Grant{JobKey: e.Request.JobKey, Refused: why})
	}
	a.st.Waiting, a.st.Running, a.st.Reserved, a.st.Reclaimed, a.st.PreemptedFor, a.st.Handed = nil, nil, nil, nil, nil, nil
	a.keys, a.pic, a.explain = nil, nil, nil
	return out
}

// indexIDs rebuilds the id index after the lists changed.
func (a *Admitter) indexIDs() {
	if a.ids == nil {
		a.ids = map[string]entryRef{}
	}
	clear(a.ids)
	for i := range a.st.Running {
		if !a.st.Running[i].gone {
			a.ids[a.st.Running[i].ID] = entryRef{running: true, i: i}
		}
	}
	for i := range a.st.Waiting {
		if !a.st.Waiting[i].gone {
			a.ids[a.st.Waiting[i].ID] = entryRef{i: i}
		}
	}
}

// byID finds an entry by its application id (through the index: call indexIDs first).
func (a *Admitter) byID(id string) (*Entry, bool) {
	r, ok := a.ids[id]
	switch {
	case !ok:
		return nil, false
	case r.running:
		return &a.st.Running[r.i], true
	default:
		return &a.st.Waiting[r.i], false
	}
}

// Check verifies the Admitter's invariants: no slot granted twice, no granted slot outside
// the bed, no key twice, no reclaimed slot held. It returns the first broken one ("" when
// all hold). Tests call it after every step.
func (a *Admitter) Check(positions []int32) string {
	a.compact()
	seen := map[int32]string{}
	keys := map[JobKey]bool{}
	for _, e := range slices.Concat(a.st.Waiting, a.st.Running) {
		if keys[e.Request.JobKey] {
			return fmt.Sprintf("key %s is held twice", e.Request.JobKey)
		}
		keys[e.Request.JobKey] = true
	}
	for _, e := range a.st.Running {
		for _, p := range e.Slots {
			if other, ok := seen[p]; ok {
				return fmt.Sprintf("slot %d is granted to %s and %s", p, other, e.Request.JobKey)
			}
			seen[p] = e.Request.JobKey.String()
			if positions != nil && !slices.Contains(positions, p) {
				return fmt.Sprintf("slot %d of %s is not in the test bed", p, e.Request.JobKey)
			}
		}
		if int64(len(e.Slots)) > e.wanted() {
			return fmt.Sprintf("%s holds %d slots, it asked for %d", e.Request.JobKey, len(e.Slots), e.wanted())
		}
	}
	for _, p := range a.st.Reclaimed {
		if who, ok := seen[p]; ok {
			return fmt.Sprintf("slot %d is being taken back and is granted to %s", p, who)
		}
	}
	for _, p := range a.st.Handed {
		if who, ok := seen[p]; ok {
			return fmt.Sprintf("slot %d is handed on and is granted to %s", p, who)
		}
	}
	return ""
}
