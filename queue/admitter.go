package queue

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// JobKey names one admission request: one run of a job in one Scheduling. Every message of
// the admission protocol (request, grant, start, release) carries it, so a repeated or late
// message is recognised for what it is. SchedulingUID tells a Scheduling apart from a later
// one of the same name.
type JobKey struct {
	Scheduling    string
	SchedulingUID string
	Job           string
	Run           int32
}

// String is the key as the queue policies name the application.
func (k JobKey) String() string {
	return k.Scheduling + "/" + k.SchedulingUID + "/" + k.Job + "#" + strconv.Itoa(int(k.Run))
}

// Request asks for a run of a job to be started in the test bed's slots.
type Request struct {
	JobKey
	// Queue is the queue asked for (the job's, else its Scheduling's); placement decides.
	Queue  string
	User   string
	Groups []string
	// Slots is how many slots the job needs (QueueBased), SlotIDs the exact ones (SlotBased).
	Slots   int32
	SlotIDs []int32
	// Driver is the driver's or JobManager's size: the job's AM.
	Driver Resources
	// Expected is how long the job is expected to run once it has its slots (0: unknown).
	// Only backfill reads it: a job without it never passes a reserving head.
	Expected time.Duration
	// GaveBack is the number (Grant.Seq) of a grant the job gives back: its slots left the
	// test bed before it could use them. If the job still holds that grant, the request
	// releases it and the job waits again, at the end of its queue. One message does both,
	// so no order of a release and a request can lose the job.
	GaveBack int64 `json:",omitempty"`
	// Shown is the queue the job's status shows as the request is made (see
	// activities.JobInfo): its test bed's Admission writes the queue it places the job in
	// only where that differs. The Admitter does not read it.
	Shown string `json:",omitempty"`
}

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

// Grant answers a request: the slots to start in, or why it is refused for good.
type Grant struct {
	JobKey
	Queue   string
	Slots   []int32
	Refused string
	// Seq numbers the Admitter's grants, from 1 (0: a refusal, or a grant of an Admitter
	// from before grants were numbered). A repeat of a grant carries its number, so a
	// Scheduling that gave a grant back and asked again can tell a late copy of the old one
	// from the new one.
	Seq int64
	// QuietStart: the job need not tell Admission when its run leaves Starting (its entry
	// counts as Running already). False: it tells.
	QuietStart bool `json:",omitempty"`
}

// Assignment changes the slots of a granted job's application: it keeps Keep and loses
// Revoke (preemption), or gets a slot back (Revoke empty).
type Assignment struct {
	JobKey
	Keep, Revoke []int32
	// Why is said to people when slots are revoked, and For is the starving queue they are
	// taken for.
	Why, For string
}

// Decision is what Decide asks the caller to carry out.
type Decision struct {
	Grants      []Grant
	Assignments []Assignment
}

// Bed is the test bed as a decision sees it.
type Bed struct {
	Exists bool
	// Positions are all slots; Free those its status shows free (no pod in them), and
	// Unavailable those no new job may get (their node is not Ready or left the bed).
	Positions   []int32
	Free        []int32
	Unavailable []int32
	SlotSize    Resources
}

// Move asks to move a job to another queue, on behalf of By (with ByGroups). By must be the
// job's user or may administer the job's queue (aclAdministerApps); the job's user must be
// allowed to submit to the target, a leaf; a running job must fit the target's and its new
// ancestors' maxRunningApps and maxResources. A waiting job keeps its place in submission
// order.
type Move struct {
	Scheduling string
	Job        string
	Queue      string
	By         string
	ByGroups   []string
}

// Moved says where a moved job was and is now (the full queue paths).
type Moved struct {
	Job  string
	From string
	To   string
}

// The kinds of a refused move, for callers that answer people.
const (
	MoveNotReady  = "MoveNotReady"
	MoveNotFound  = "MoveNotFound"
	MoveForbidden = "MoveForbidden"
	MoveInvalid   = "MoveInvalid"
)

// MoveError is a refused move: Kind is one of the Move* kinds.
type MoveError struct {
	Kind string
	Msg  string
}

func (e *MoveError) Error() string { return e.Msg }

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

// Request takes a request in. It answers at once with a grant to (re)send when the request
// is refused (placement, ACL) or repeats one that is granted already; nil when the job now
// waits, or waited already.
func (a *Admitter) Request(r Request) *Grant {
	if ref, ok := a.find(r.JobKey); ok && ref.running {
		e := a.st.Running[ref.i]
		if r.GaveBack == 0 || r.GaveBack != e.Grant {
			return &Grant{JobKey: r.JobKey, Queue: e.Queue, Slots: slices.Clone(e.Slots), Seq: e.Grant, QuietStart: a.quietStart(&e)}
		}
		a.Release(r.JobKey)
	} else if ok {
		return nil
	}
	refuse := func(why string) *Grant { return &Grant{JobKey: r.JobKey, Refused: why} }
	switch {
	case r.Job == "" || r.Scheduling == "":
		return refuse("the request names no job or scheduling")
	case len(r.SlotIDs) == 0 && r.Slots < 1:
		return refuse(fmt.Sprintf("the job asks for %d slots", r.Slots))
	case r.Driver.MemoryBytes < 0 || r.Driver.MilliCores < 0 || r.Expected < 0:
		return refuse("the job's driver size or expected duration is negative")
	case !r.Driver.Fits(MBVCores(maxMB, maxVCores)):
		return refuse(fmt.Sprintf("the job's driver of %s is more than the queues count", r.Driver))
	}
	alloc := a.st.Config.Allocations
	p, err := alloc.PlaceJob(r.Queue, r.User, r.Groups)
	if err != nil {
		return refuse(err.Error())
	}
	if !alloc.Allowed(Submit, p.Queue, r.User, r.Groups) {
		return refuse(fmt.Sprintf("user %q may not submit to queue %s (aclSubmitApps)", r.User, p.Queue))
	}
	if _, err := a.tree.Ensure(p.Queue); err != nil {
		return refuse(err.Error())
	}
	r.SlotIDs, r.Groups = slices.Clone(r.SlotIDs), slices.Clone(r.Groups)
	a.st.Next++
	a.st.Waiting = append(a.st.Waiting, Entry{ID: r.JobKey.String(), Request: r, Queue: p.Queue, Order: a.st.Next})
	a.keys[r.JobKey] = entryRef{i: len(a.st.Waiting) - 1}
	if pic := a.pic; pic != nil {
		pic.request(a, len(a.st.Waiting)-1)
	}
	return nil
}

// Release withdraws a waiting job or frees a granted job's slots. It reports whether the key
// was known: a release of an unknown key is a no-op. The slots are free for others once the
// bed's status shows them free (the job's pods may still run: a withdrawn job's are being
// deleted).
func (a *Admitter) Release(k JobKey) bool { return a.release(k, false) }

// Ended releases a granted job whose run is over (its status says so, its pods are ending):
// its slots may be granted in the same decision (Handed). Otherwise it is Release.
func (a *Admitter) Ended(k JobKey) bool { return a.release(k, true) }

func (a *Admitter) release(k JobKey, handOver bool) bool {
	ref, ok := a.find(k)
	if !ok {
		return false
	}
	e := a.at(ref)
	if ref.running && handOver {
		a.st.Handed = append(a.st.Handed, e.Slots...)
	}
	if p := a.pic; p != nil && !p.leave(ref) {
		a.pic = nil
	}
	a.drop(e)
	if a.st.Reserved != nil && *a.st.Reserved == k {
		a.st.Reserved = nil
	}
	if a.st.PreemptedFor != nil && *a.st.PreemptedFor == k {
		a.st.PreemptedFor = nil
	}
	return true
}

// Restore takes in a grant the cluster shows in use that the Admitter does not hold: a job
// whose creation request, written by its live Scheduling, names slots of this bed, learnt
// after the Admitter's own record of it was lost (its workflow ended and started anew). The
// job goes to Running in the leaf its request names (placed again when that leaf cannot be
// made), holding slots from grantedAt; started: it left Starting (StateAware). It reports
// whether it took the grant in: a key the Admitter holds already, granted or waiting, is
// left as it is.
func (a *Admitter) Restore(r Request, leaf string, slots []int32, grantedAt time.Time, started bool) bool {
	if _, ok := a.find(r.JobKey); ok || len(slots) == 0 {
		return false
	}
	if q, err := a.tree.Ensure(leaf); leaf == "" || err != nil || !q.Leaf() {
		leaf = "root.default"
		if p, err := a.st.Config.Allocations.PlaceJob(r.Queue, r.User, r.Groups); err == nil {
			leaf = p.Queue
		}
		if _, err := a.tree.Ensure(leaf); err != nil {
			return false
		}
	}
	r.SlotIDs, r.Groups = slices.Clone(r.SlotIDs), slices.Clone(r.Groups)
	a.st.Next++
	a.st.Granted++
	e := Entry{ID: r.JobKey.String(), Request: r, Queue: FullPath(leaf), Order: a.st.Next, Slots: slices.Clone(slots), GrantedAt: grantedAt,
		Grant: a.st.Granted, State: Starting, StartingSince: grantedAt}
	if started {
		e.State = Running
	}
	a.st.Running = append(a.st.Running, e)
	if a.keys != nil {
		a.keys[r.JobKey] = entryRef{running: true, i: len(a.st.Running) - 1}
	}
	// The slots it holds and the room it takes are in no picture made before.
	a.pic, a.explain = nil, nil
	return true
}

// Started marks a granted job Running for StateAware: it left Starting.
func (a *Admitter) Started(k JobKey) {
	if ref, ok := a.find(k); ok && ref.running {
		a.st.Running[ref.i].State = Running
		if p := a.pic; p != nil {
			if i, ok := p.appAt(ref); ok {
				p.chooser.SetState(i, Running)
			} else if i != -1 {
				a.pic = nil
			}
		}
	}
}

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
// job, which a decision that granted one job paid in full when it compacted every time. The
// lists' order is kept either way, and everything that walks them passes the gone entries
// by, or compacts first.
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

// Decide grants every waiting job the policies let through on the free slots, gives back
// slots to jobs that lost them, and plans preemption. The decision is applied to the
// Admitter's state at once; the caller carries it out, and releases a job whose grant or
// assignment cannot be delivered (its Scheduling no longer holds it).
//
// Strict leaves (fifo and stateaware by default) keep their order: a head that does not fit
// the free slots reserves them as they free up, and nothing else starts while it waits,
// except by backfill. A SlotBased head reserves its own slots only.
func (a *Admitter) Decide(now time.Time, bed Bed) Decision {
	a.tidy()
	var d Decision
	slot := bed.SlotSize
	a.st.Slot, a.st.Total = slot, times(slot, int64(len(bed.Positions)))
	if !bed.Exists {
		for i := range a.st.Waiting {
			a.st.Waiting[i].Reason = "the test bed does not exist"
		}
		a.st.Reserved, a.explain = nil, nil
		return d
	}
	avail := a.freeSlots(&bed)
	a.room = a.startingRoom(now)
	skip := map[string]bool{}
	// The job slots were taken back for goes first, and holds the free slots until it fits
	// and no limit holds it back, so they go neither back to their victims nor to another
	// queue whose turn comes (which would starve it again and preempt again). A strict
	// head's reservation, by contrast, is decided anew each time: the queues' fair order
	// says whose turn it is.
	a.st.Reserved = nil
	reserving, avail := a.grantPreemptedFor(now, bed, avail, &d)
	if reserving == nil {
		reserving, avail = a.grantInTurn(now, bed, avail, skip, &d)
	}
	if reserving != nil {
		avail = a.holdFor(now, bed, reserving, avail, skip, &d)
	}
	a.preempt(now, bed, avail, &d)
	if a.explain != nil && a.explain.due {
		// The reasons are given from the slots left free once everything is decided.
		a.explain = &explainAt{now: now, positions: bed.Positions, avail: slices.Clone(avail)}
	}
	if len(a.st.Handed) > 0 {
		// What was granted again is no longer being handed on: the handed slots were held
		// by no job when the decision began (freeSlots), so only its own grants count.
		var again slotSet
		for _, g := range d.Grants {
			for _, p := range g.Slots {
				again.add(p)
			}
		}
		for _, as := range d.Assignments {
			for _, p := range as.Keep {
				again.add(p)
			}
		}
		a.st.Handed = slices.DeleteFunc(a.st.Handed, again.has)
	}
	a.tidy()
	return d
}

// freeSlots returns the free slots jobs may be given, sorted: the bed's free positions that
// no running job holds. It sorts a copy of bed.Positions into bed, and forgets the slots
// taken back by preemption that are free again or held again.
func (a *Admitter) freeSlots(bed *Bed) []int32 {
	held := a.heldSlots()
	free := setOf(bed.Free)
	a.st.Reclaimed = slices.DeleteFunc(a.st.Reclaimed, func(p int32) bool { return held.has(p) || free[p] })
	bed.Positions = slices.Clone(bed.Positions)
	slices.Sort(bed.Positions)
	avail := slices.Clone(bed.Free)
	// A handed slot counts as free until the status says so itself, unless it went away
	// (its node left or is not Ready) or preemption is taking it back.
	unavailable, reclaimed := setOf(bed.Unavailable), setOf(a.st.Reclaimed)
	a.st.Handed = slices.DeleteFunc(a.st.Handed, func(p int32) bool {
		return held.has(p) || free[p] || !has(bed.Positions, p) || unavailable[p]
	})
	for _, p := range a.st.Handed {
		if !reclaimed[p] {
			avail = append(avail, p)
		}
	}
	slices.Sort(avail)
	return slices.DeleteFunc(slices.Compact(avail), func(p int32) bool { return held.has(p) || !has(bed.Positions, p) })
}

// heldSlots is the set of slots granted jobs hold.
func (a *Admitter) heldSlots() slotSet {
	var held slotSet
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone {
			for _, p := range e.Slots {
				held.add(p)
			}
		}
	}
	return held
}

// slotSet is a set of slots: a flag per slot number below denseSlots (a bed's slots are
// numbered from 0), a map above. A decision reads the held slots of a full bed of thousands:
// a map of them cost more than the rest of the decision.
type slotSet struct {
	dense  []bool
	sparse map[int32]bool
}

const denseSlots = 1 << 20

func (s *slotSet) add(p int32) {
	if p < 0 || p >= denseSlots {
		if s.sparse == nil {
			s.sparse = map[int32]bool{}
		}
		s.sparse[p] = true
		return
	}
	if int(p) >= len(s.dense) {
		n := max(int(p)+1, 2*len(s.dense))
		s.dense = slices.Grow(s.dense, n-len(s.dense))[:n]
	}
	s.dense[p] = true
}

func (s slotSet) has(p int32) bool {
	if p < 0 || p >= denseSlots {
		return s.sparse[p]
	}
	return int(p) < len(s.dense) && s.dense[p]
}

func setOf(ps []int32) map[int32]bool {
	out := make(map[int32]bool, len(ps))
	for _, p := range ps {
		out[p] = true
	}
	return out
}

// grantPreemptedFor grants the job slots were taken back for, if it still waits, fits the
// free slots and no limit holds it back; if it cannot start yet it is returned as the job
// the free slots are held for. It returns the slots left free.
func (a *Admitter) grantPreemptedFor(now time.Time, bed Bed, avail []int32, d *Decision) (*Entry, []int32) {
	k := a.st.PreemptedFor
	if k == nil {
		return nil, avail
	}
	ref, ok := a.find(*k)
	switch {
	case !ok || ref.running:
		a.st.PreemptedFor = nil
	case a.room != 0 && fits(a.at(ref), avail) && a.admissible(now, bed, a.at(ref)):
		a.pic = nil // a grant outside the picture
		avail = a.grant(now, a.at(ref), avail, d)
		a.st.PreemptedFor = nil
		a.tidy()
	default:
		return a.at(ref), avail
	}
	return nil, avail
}

// grantInTurn grants jobs, and gives preempted ones their slots back, in the order the
// queues' policies choose, until none is chosen or a strict leaf's head that does not fit
// reserves the free slots: that head is returned (and is Reserved). It returns the slots
// left free.
//
// The choices are made on one picture of the jobs (a Chooser), updated as each is granted:
// the reasons of those that wait are those of the last choice, the one that found nothing
// more to start.
func (a *Admitter) grantInTurn(now time.Time, bed Bed, avail []int32, skip map[string]bool, d *Decision) (*Entry, []int32) {
	// Whether a running job asks for a slot back that preemption took (anyPreempted): the
	// one thing left to do once no job may start. Known until a slot goes back.
	var asking, known bool
	askingBack := func() bool {
		if !known {
			asking, known = a.anyPreempted(), true
		}
		return asking
	}
	if a.room == 0 && !askingBack() {
		// The queues' order would choose nothing, and choosing costs a pass over every job.
		a.startingFull()
		return nil, avail
	}
	p := a.pictureFor(now, bed, avail)
	chooser, refs := p.chooser, p.refs
	a.roomFor(chooser, refs, &avail, skip)
	slot := a.st.Slot
	full := false // a waiting job was passed by for the bound on starting jobs
	for {
		if len(avail) == 0 {
			chooser.StopAsking() // a preempted job asks for its slots back only while some are free
		}
		chooser.SetFree(times(slot, int64(len(avail))))
		ch := chooser.Choose(false)
		if !ch.OK || ch.Reserve {
			// Why the others wait is written when it is read (giveReasons): a pass over
			// every waiting job, which each decision would otherwise pay for.
			a.explain = &explainAt{due: true}
		}
		if !ch.OK {
			if full {
				a.startingFull()
			}
			a.tidy()
			return nil, avail
		}
		i := ch.Index
		e, running := a.at(refs[i]), refs[i].running
		if ch.Reserve {
			k := e.Request.JobKey
			a.st.Reserved = &k
			a.tidy() // a compaction moves the entries: find the head again
			ref, _ := a.find(k)
			return a.at(ref), avail
		}
		if running {
			// A preempted job gets one of its slots back.
			e.Slots = append(e.Slots, avail[0])
			avail = avail[1:]
			d.Assignments = append(d.Assignments, Assignment{JobKey: e.Request.JobKey, Keep: slices.Clone(e.Slots)})
			chooser.Grow(i, slot, int64(len(e.Slots)) < e.wanted())
			known = false
			continue
		}
		if a.room == 0 {
			if !askingBack() {
				a.startingFull()
				a.tidy()
				return nil, avail
			}
			// A running job may still get a slot back: pass the waiting one by.
			skip[ch.App.ID], full = true, true
			p.skip(i)
			continue
		}
		avail = a.grant(now, e, avail, d)
		g := &a.st.Running[len(a.st.Running)-1]
		refs[i] = entryRef{running: true, i: len(a.st.Running) - 1}
		p.running = append(p.running, i)
		chooser.Start(i, times(slot, int64(len(g.Slots))), g.State, g.StartingSince)
	}
}

// roomFor tells the chooser, from the slots free now, why a SlotBased job cannot start: its
// named slots are not all free. At the head of a strict leaf such a job holds its own free
// slots (reserveOwnSlots) and the jobs behind it go on; skip, when given, notes it. Without
// skip the choices are made for their reasons (giveReasons), and the head gives its own;
// a decision leaves the reasons to giveReasons.
func (a *Admitter) roomFor(chooser *Chooser, refs []entryRef, avail *[]int32, skip map[string]bool) {
	chooser.RoomFor(&Room{
		Fits: func(i int) bool {
			e := a.at(refs[i])
			return refs[i].running || !e.slotBased() || hasAll(*avail, e.Request.SlotIDs)
		},
		Why: func(i int) string {
			return fmt.Sprintf("its slots %v are not free", missing(a.at(refs[i]).Request.SlotIDs, *avail))
		},
		HoldOwn: func(i int) bool {
			e := a.at(refs[i])
			if refs[i].running || !e.slotBased() {
				return false
			}
			*avail = reserveOwnSlots(e, *avail, skip == nil)
			chooser.SetFree(times(a.st.Slot, int64(len(*avail))))
			if len(*avail) == 0 {
				chooser.StopAsking() // as a choice with no slot free does
			}
			if skip != nil {
				skip[e.ID] = true
			}
			return true
		},
	})
}

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

// reserveOwnSlots has the SlotBased head e of a strict leaf hold its own slots, saying so
// if say, and returns the free slots (sorted) without them: the others may use the rest.
func reserveOwnSlots(e *Entry, avail []int32, say bool) []int32 {
	if say {
		e.Reason = fmt.Sprintf("first in the strict order of queue %s: reserves its slots %v as they free up", e.Queue, e.Request.SlotIDs)
	}
	for _, p := range e.Request.SlotIDs {
		if k, ok := slices.BinarySearch(avail, p); ok {
			avail = slices.Delete(avail, k, k+1)
		}
	}
	return avail
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

// holdFor holds the free slots for the waiting job reserving them, saying so in its reason,
// and backfills behind it where its queue allows. It returns the slots left free.
func (a *Admitter) holdFor(now time.Time, bed Bed, reserving *Entry, avail []int32, skip map[string]bool, d *Decision) []int32 {
	k := reserving.Request.JobKey
	why := fmt.Sprintf("first in the strict order of queue %s", reserving.Queue)
	if a.st.PreemptedFor != nil && *a.st.PreemptedFor == k {
		why = "slots were taken back for it by preemption"
	}
	reserving.Reason = fmt.Sprintf("%s: the %d free slots are held for it until it fits (needs %d)", why, len(avail), reserving.wanted())
	if q := a.tree.Queue(reserving.Queue); q != nil && a.tree.Backfill(q) {
		avail = a.backfill(now, bed, reserving, avail, skip, d)
	}
	return avail
}

// admissible: nothing but room holds the waiting entry back now (Tree.HeldBack), with every
// job counted.
func (a *Admitter) admissible(now time.Time, bed Bed, e *Entry) bool {
	c := a.cluster(now, bed, bed.Positions, nil)
	return a.tree.HeldBack(c, e.ID) == ""
}

// WantsRoom is Tree.WantsRoom on the Admitter's jobs now: the leaves that have a waiting
// job only room holds back.
func (a *Admitter) WantsRoom(now time.Time, bed Bed) map[string]bool {
	a.tidy()
	return a.tree.WantsRoom(a.cluster(now, bed, bed.Positions, nil))
}

// grant gives a waiting entry its slots out of avail and moves it to the running ones.
func (a *Admitter) grant(now time.Time, e *Entry, avail []int32, d *Decision) []int32 {
	g := *e
	if g.slotBased() {
		g.Slots = slices.Clone(g.Request.SlotIDs)
		avail = slices.DeleteFunc(avail, func(p int32) bool { return slices.Contains(g.Slots, p) })
	} else {
		g.Slots = slices.Clone(avail[:g.Request.Slots])
		avail = avail[g.Request.Slots:]
	}
	a.st.Granted++
	g.Reason, g.State, g.StartingSince, g.GrantedAt, g.Grant = "", Starting, now, now, a.st.Granted
	// Only a StateAware leaf, or the bound on starting jobs, needs to hear of a start: any
	// other grant is Running at once, and its job's workflow does not tell (QuietStart).
	if q := a.tree.Queue(g.Queue); a.maxStarting() == 0 && q != nil && a.tree.Policy(q) != PolicyStateAware {
		g.State = Running
	}
	if a.room > 0 {
		a.room--
	}
	a.drop(e)
	a.st.Running = append(a.st.Running, g)
	if a.keys != nil {
		a.keys[g.Request.JobKey] = entryRef{running: true, i: len(a.st.Running) - 1}
	}
	d.Grants = append(d.Grants, Grant{JobKey: g.Request.JobKey, Queue: g.Queue, Slots: slices.Clone(g.Slots), Seq: g.Grant, QuietStart: a.quietStart(&g)})
	return avail
}

// maxStarting is the bound on the jobs starting at once (slotplane.max-starting-apps), 0
// for none.
func (a *Admitter) maxStarting() int {
	if al := a.st.Config.Allocations; al != nil {
		return al.Settings.MaxStartingApps
	}
	return 0
}

// startingRoom is how many more jobs may start now under the bound: the bound less the
// granted jobs still Starting (for less than StartingTimeout, StateAware's fallback), or
// -1 without a bound.
func (a *Admitter) startingRoom(now time.Time) int {
	most := a.maxStarting()
	if most == 0 {
		return -1
	}
	n := 0
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone && e.State == Starting && now.Sub(e.StartingSince) < StartingTimeout {
			n++
		}
	}
	return max(most-n, 0)
}

// anyPreempted says whether a running job lost slots to preemption: it asks for them back
// one at a time, bound or not.
func (a *Admitter) anyPreempted() bool {
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone && e.Preempted > 0 && int64(len(e.Slots)) < e.wanted() {
			return true
		}
	}
	return false
}

// startingFull says every waiting job waits for a granted one to start (startingRoom 0).
func (a *Admitter) startingFull() {
	why := fmt.Sprintf("%d granted jobs are starting, the most %s allows: it waits for one to start", a.maxStarting(), PropMaxStartingApps)
	a.explain = nil
	for i := range a.st.Waiting {
		if e := &a.st.Waiting[i]; !e.gone {
			e.Reason = why
		}
	}
}

// quietStart says whether a granted entry's job need not tell of its start: it counts as
// Running already, from its grant in a leaf that is not StateAware, or from the start it
// told.
func (a *Admitter) quietStart(e *Entry) bool {
	return e.State == Running
}

// cluster is the picture the policies decide on: running jobs, and waiting ones not in skip.
// A waiting job that can never fit the bed, or whose named slots are not all available,
// waits with its reason.
func (a *Admitter) cluster(now time.Time, bed Bed, avail []int32, skip map[string]bool) Cluster {
	c, _ := a.clusterRefs(now, bed, avail, skip, false)
	return c
}

// clusterRefs is cluster with the entry of each application. lateRoom leaves a SlotBased
// job's NoRoom to the caller (Chooser.RoomFor), who knows the free slots as they change.
func (a *Admitter) clusterRefs(now time.Time, bed Bed, avail []int32, skip map[string]bool, lateRoom bool) (Cluster, []entryRef) {
	slot := a.st.Slot
	c := Cluster{Total: a.st.Total, Now: now, StateAware: a.st.Config.Allocations.StateAware,
		Apps: make([]App, 0, len(a.st.Running)+len(a.st.Waiting))}
	refs := make([]entryRef, 0, cap(c.Apps))
	// The free room the policies see is the available slots: not the slots held by jobs,
	// nor slots taken back that are not free yet, nor slots some reservation holds.
	free := times(slot, int64(len(avail)))
	c.Free = &free
	for i := range a.st.Running {
		e := &a.st.Running[i]
		if e.gone {
			continue
		}
		app := a.appOf(e, true)
		if n := e.wanted(); int64(len(e.Slots)) < n && len(a.st.Reclaimed) == 0 && len(avail) > 0 && !skip[app.ID] {
			// Preempted: it asks for its slots again, one at a time, once the slots taken
			// back have gone where they were taken for.
			app.Demand, app.Pending, app.Ask = times(slot, n), true, slot
		}
		c.Apps = append(c.Apps, app)
		refs = append(refs, entryRef{running: true, i: i})
	}
	for i := range a.st.Waiting {
		e := &a.st.Waiting[i]
		if skip[e.ID] || e.gone || !a.choosable(e, bed.Positions) {
			continue
		}
		app := a.appOf(e, false)
		if e.slotBased() && !lateRoom {
			if missing := missing(e.Request.SlotIDs, avail); len(missing) > 0 {
				app.NoRoom = fmt.Sprintf("its slots %v are not free", missing)
			}
		}
		c.Apps = append(c.Apps, app)
		refs = append(refs, entryRef{i: i})
	}
	return c, refs
}

// choosable: a decision may choose the waiting entry: it fits the bed of the given slots,
// and its queue is in the tree. If not, its reason says why.
func (a *Admitter) choosable(e *Entry, positions []int32) bool {
	switch {
	case e.slotBased():
		if missing := missing(e.Request.SlotIDs, positions); len(missing) > 0 {
			e.Reason = fmt.Sprintf("the test bed has no slot %v", missing)
			return false
		}
	case int(e.Request.Slots) > len(positions):
		e.Reason = fmt.Sprintf("needs %d slots; the test bed has %d", e.Request.Slots, len(positions))
		return false
	}
	if a.tree.Queue(e.Queue) == nil {
		e.Reason = fmt.Sprintf("its queue %s does not fit the allocation file in force", e.Queue)
		return false
	}
	return true
}

// appOf is an entry as the queue policies see it: a granted entry uses, and demands, the
// slots it holds; a waiting one demands the slots it asked for.
func (a *Admitter) appOf(e *Entry, running bool) App {
	slot := a.st.Slot
	app := App{ID: e.ID, Queue: e.Queue, User: e.Request.User, Order: e.Order, AM: e.Request.Driver, Demand: times(slot, e.wanted()),
		SlotBacked: true}
	if running {
		app.Usage = times(slot, int64(len(e.Slots)))
		app.Demand, app.Running = app.Usage, true
		app.State, app.StartingSince = e.State, e.StartingSince
	}
	return app
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

// preempt takes executors' slots back for queues starved past their timeouts, when the
// allocation file turns preemption on and the test bed is used at least its threshold: from
// jobs of queues at or above their fair share, the newest job and its newest slots first. It
// takes what the starving queue's first waiting job needs beyond the free slots, in one step;
// the slots taken back are then held for that queue (they are not given back to their victims
// while they free up). No more is taken while slots taken earlier are still being vacated.
// SlotBased jobs are victims only when the settings say so (slotplane.preemption.slot-based).
func (a *Admitter) preempt(now time.Time, bed Bed, avail []int32, d *Decision) {
	pre := a.st.Config.Allocations.Preemption
	if !pre.Enabled {
		clear(a.st.Starvation.MinShareSince)
		clear(a.st.Starvation.FairShareSince)
		return
	}
	if len(a.st.Reclaimed) > 0 || a.st.PreemptedFor != nil {
		return
	}
	a.compact() // the picture, the heads and the victims are read from the lists as they are
	c, executors := a.preemptionCluster(now, pre)
	// The clocks run whatever the utilization (as in Hadoop 3); the threshold is applied
	// below, once it is known what the free slots can do.
	starvedBy := pre
	starvedBy.UtilizationThreshold = 0
	starving := a.tree.Starved(c, starvedBy, &a.st.Starvation)
	if len(starving) == 0 {
		return
	}
	head, starving := a.preemptFor(now, bed, starving, avail)
	if head == nil {
		return
	}
	if !a.roomToSpareBelow(pre.UtilizationThreshold, head, avail) {
		return
	}
	// A job granted in this decision is no victim: its Scheduling is being told of the
	// grant, which a revocation would contradict at once.
	for _, g := range d.Grants {
		delete(executors, g.JobKey.String())
	}
	victims := a.tree.PlanPreemption(c, starving, a.st.Slot, executors)
	a.takeBack(victims, starving, head, d)
}

// preemptionCluster is the picture preemption is planned on: every running job demanding
// what it asked for and every waiting one; and the executors of each running job that may
// be taken (those of SlotBased jobs only when pre.SlotBased).
func (a *Admitter) preemptionCluster(now time.Time, pre Preemption) (Cluster, map[string]int) {
	c := Cluster{Total: a.st.Total, Now: now}
	executors := map[string]int{}
	for i := range a.st.Running {
		e := &a.st.Running[i]
		app := a.appOf(e, true)
		app.Demand = times(a.st.Slot, e.wanted()) // a preempted job still demands what it asked for
		c.Apps = append(c.Apps, app)
		if !e.slotBased() || pre.SlotBased {
			executors[app.ID] = len(e.Slots)
		}
	}
	for i := range a.st.Waiting {
		c.Apps = append(c.Apps, a.appOf(&a.st.Waiting[i], false))
	}
	return c, executors
}

// preemptFor picks the starving queue preemption acts for and the waiting job it takes
// slots for, and sets how much that queue is to get.
//
// One starving queue at a time, the first whose first waiting job no limit holds back:
// what that job needs beyond what is free is taken in one step, so it starts as soon as the
// slots are vacated (what the queue is owed, when the free slots are enough for it). Slots
// taken for a job that a limit keeps waiting would only sit idle, so when no queue's head
// is admissible there is none.
func (a *Admitter) preemptFor(now time.Time, bed Bed, starving []Starving, avail []int32) (*Entry, []Starving) {
	for _, s := range starving {
		if head := a.headOf(s.Queue); head != nil && a.admissible(now, bed, head) {
			short := head.wanted() - int64(len(avail))
			if short > 0 {
				// Just what the head lacks: queues at their share may give now, and the
				// queue's next job gets its own turn.
				s.Amount = Resources{MemoryBytes: times(a.st.Slot, short).MemoryBytes}
			}
			return head, []Starving{s}
		}
	}
	// No starving queue has a head that only room holds back: slots taken now would sit
	// idle.
	return nil, nil
}

// takeBack takes back the victims' newest slots for head: they become the victims' Revoke
// assignments and Reclaimed, and the free slots are held for head (PreemptedFor).
func (a *Admitter) takeBack(victims []Victim, starving []Starving, head *Entry, d *Decision) {
	a.pic = nil // what running jobs hold changes
	a.indexIDs()
	for _, v := range victims {
		e, running := a.byID(v.App)
		if e == nil || !running {
			continue
		}
		n := min(v.Executors, len(e.Slots))
		keep, revoke := slices.Clone(e.Slots[:len(e.Slots)-n]), slices.Clone(e.Slots[len(e.Slots)-n:])
		why := fmt.Sprintf("queue %s is above its fair share", e.Queue)
		if i := slices.IndexFunc(starving, func(s Starving) bool { return s.Queue == v.For }); i >= 0 {
			why += "; " + starving[i].Reason
		}
		e.Slots = keep
		e.Preempted += int32(n)
		a.st.Reclaimed = append(a.st.Reclaimed, revoke...)
		k := head.Request.JobKey
		a.st.PreemptedFor = &k
		d.Assignments = append(d.Assignments, Assignment{JobKey: e.Request.JobKey, Keep: keep, Revoke: revoke, Why: why, For: v.For})
	}
}

// roomToSpareBelow is the utilization threshold with slots: preemption waits while the test
// bed is used less than threshold, counting as spare only the free slots that could start
// the head preemption would act for. Free slots a strict head holds, or too few for the
// head, are no room to spare: they would sit idle while the queues above their shares keep
// the rest, and preemption takes only what the head lacks beyond them.
func (a *Admitter) roomToSpareBelow(threshold float64, head *Entry, avail []int32) bool {
	total := a.st.Total.MemoryBytes
	if total <= 0 {
		return true
	}
	var spare int64
	if a.st.Reserved == nil && fits(head, avail) {
		spare = times(a.st.Slot, int64(len(avail))).MemoryBytes
	}
	return float64(total-spare)/float64(total) >= threshold
}

// headOf is the first waiting job of a leaf, in submission order.
func (a *Admitter) headOf(leaf string) *Entry {
	var head *Entry
	for i := range a.st.Waiting {
		e := &a.st.Waiting[i]
		if e.Queue == leaf && (head == nil || e.Order < head.Order) {
			head = e
		}
	}
	return head
}

// CheckMove says whether m may be done, and which entry it moves. It changes nothing.
func (a *Admitter) CheckMove(m Move) (*Entry, bool, error) {
	a.compact()
	e, running, _, err := a.actedOn("move", m.Scheduling, m.Job, m.By, m.ByGroups)
	if err != nil {
		return nil, false, err
	}
	alloc := a.st.Config.Allocations
	c := Cluster{Total: a.st.Total}
	for i := range a.st.Running {
		c.Apps = append(c.Apps, a.appOf(&a.st.Running[i], true))
	}
	if err := a.tree.CanMove(c, a.appOf(e, running), m.Queue); err != nil {
		return nil, false, &MoveError{MoveInvalid, fmt.Sprintf("job %s cannot move to %s: %v", m.Job, m.Queue, err)}
	}
	if to := a.tree.Queue(m.Queue).Path; !alloc.Allowed(Submit, to, e.Request.User, e.Request.Groups) {
		return nil, false, &MoveError{MoveForbidden, fmt.Sprintf("job %s cannot move to %s: its user %q may not submit there (aclSubmitApps)", m.Job, to, e.Request.User)}
	}
	return e, running, nil
}

// actedOn finds the entry that an action of by (move or kill, what) on a job of a Scheduling
// acts on, the newest of the job there (keys of an earlier run may linger), and checks that
// by may act on it: the job's user, or whoever may administer its queue (aclAdministerApps).
// running says the entry holds slots; as names the right. It changes nothing.
func (a *Admitter) actedOn(what, scheduling, job, by string, groups []string) (e *Entry, running bool, as string, err error) {
	if a.st.Total.IsZero() {
		return nil, false, "", &MoveError{MoveNotReady, "the queues are not ready yet (no decision on the test bed yet); try again"}
	}
	if by == "" {
		return nil, false, "", &MoveError{MoveForbidden, fmt.Sprintf("the %s names nobody asking for it (By)", what)}
	}
	for i := range a.st.Running {
		if x := &a.st.Running[i]; x.Request.Scheduling == scheduling && x.Request.Job == job {
			e, running = x, true
		}
	}
	for i := range a.st.Waiting {
		if x := &a.st.Waiting[i]; x.Request.Scheduling == scheduling && x.Request.Job == job {
			e, running = x, false
		}
	}
	switch {
	case e == nil:
		return nil, false, "", &MoveError{MoveNotFound, fmt.Sprintf("job %s of scheduling %s is not in the queues (not submitted yet, or ended)", job, scheduling)}
	case by == e.Request.User:
		return e, running, "the job's user", nil
	case a.st.Config.Allocations.Allowed(Administer, e.Queue, by, groups):
		return e, running, "an administrator of " + e.Queue, nil
	}
	return nil, false, "", &MoveError{MoveForbidden, fmt.Sprintf("user %q may not %s job %s: it is neither the job's user (%q) nor may it administer queue %s (aclAdministerApps)",
		by, what, job, e.Request.User, e.Queue)}
}

// Move moves a job to another queue, after CheckMove.
func (a *Admitter) Move(m Move) (Moved, error) {
	e, _, err := a.CheckMove(m)
	if err != nil {
		return Moved{}, err
	}
	res := Moved{Job: m.Job, From: e.Queue, To: a.tree.Queue(m.Queue).Path}
	e.Queue, a.pic = res.To, nil
	if a.st.Reserved != nil && *a.st.Reserved == e.Request.JobKey {
		a.st.Reserved = nil
	}
	return res, nil
}

// Report is the queue picture the API and people read.
type Report struct {
	ConfigVersion string
	ConfigError   string
	// Warnings say, in words for people, where the file in force does not do what it seems
	// to (Allocations.Warnings): that root's ACLs leave every queue open, say.
	Warnings []string `json:",omitempty"`
	// Ignored are the file's settings in force that slotplane reads and does not act on.
	Ignored []Ignored `json:",omitempty"`
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

// fits: the entry can start on the available slots.
func fits(e *Entry, avail []int32) bool {
	if e.slotBased() {
		return len(missing(e.Request.SlotIDs, avail)) == 0
	}
	return e.wanted() <= int64(len(avail))
}

// missing lists what of want is not in have, which is sorted.
func missing(want, have []int32) []int32 {
	var out []int32
	for _, w := range want {
		if !has(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// hasAll: every one of want is in sorted.
func hasAll(sorted, want []int32) bool {
	for _, w := range want {
		if !has(sorted, w) {
			return false
		}
	}
	return true
}

// has: p is in sorted.
func has(sorted []int32, p int32) bool {
	_, ok := slices.BinarySearch(sorted, p)
	return ok
}
