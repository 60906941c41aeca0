package queue

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Outcome is what one decision changed in an Admitter, in a form that can be recorded and
// applied again without deciding. The Admission workflow records the outcome of each of its
// decisions in its history: a replay of the run (a new worker, a task the server refused)
// applies them, at the cost of the jobs they granted, instead of deciding again over every
// waiting job.
//
// The waiting jobs' reasons are not part of it: the next decision gives them anew.
type Outcome struct {
	// Grants are the decision's grants, packed (packGrants).
	Grants []byte `json:",omitempty"`
	// Assignments are the decision's assignments; Kept the slots and preemption counts,
	// after the decision, of the running jobs they name.
	Assignments []Assignment `json:",omitempty"`
	Kept        []Kept       `json:",omitempty"`
	// The rest of the state, as the decision left it.
	Granted                int64
	Reserved, PreemptedFor *JobKey    `json:",omitempty"`
	Reclaimed, Handed      []int32    `json:",omitempty"`
	Starvation             Starvation `json:",omitempty"`
	Total, Slot            Resources
	// State, when the decision failed part way, is the whole state it left (PackState):
	// what it changed is not known piece by piece.
	State []byte `json:",omitempty"`
}

// Kept is a running job's slots and preemption count after a decision.
type Kept struct {
	JobKey
	Slots     []int32
	Preempted int32 `json:",omitempty"`
}

// OutcomeOf is the outcome of d, the decision just made by Decide.
func (a *Admitter) OutcomeOf(d Decision) (Outcome, error) {
	o := a.scalars()
	var err error
	if o.Grants, err = packGrants(d.Grants); err != nil {
		return Outcome{}, err
	}
	o.Assignments = d.Assignments
	for _, as := range d.Assignments {
		if ref, ok := a.find(as.JobKey); ok && ref.running {
			e := a.at(ref)
			o.Kept = append(o.Kept, Kept{JobKey: as.JobKey, Slots: slices.Clone(e.Slots), Preempted: e.Preempted})
		}
	}
	return o, nil
}

// FailedOutcome is the outcome of a decision that failed part way: the whole state.
func (a *Admitter) FailedOutcome() (Outcome, error) {
	packed, err := PackState(a.State())
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{State: packed}, nil
}

// scalars is the state but the entries, copied.
func (a *Admitter) scalars() Outcome {
	st := copyBeyondEntries(a.st)
	return Outcome{Granted: st.Granted, Reserved: st.Reserved, PreemptedFor: st.PreemptedFor, Reclaimed: st.Reclaimed, Handed: st.Handed,
		Starvation: st.Starvation, Total: st.Total, Slot: st.Slot}
}

// Apply makes the changes of a decision taken at now, as OutcomeOf recorded them, and
// returns the decision to carry out. The Admitter must hold what the deciding one held
// before it decided.
func (a *Admitter) Apply(now time.Time, o Outcome) (Decision, error) {
	a.pic, a.explain = nil, nil // the picture does not follow what the outcome changes
	if len(o.State) > 0 {
		st, err := UnpackState(o.State)
		if err != nil {
			return Decision{}, err
		}
		*a = *NewAdmitter(st)
		return Decision{}, nil
	}
	gs, err := unpackGrants(o.Grants)
	if err != nil {
		return Decision{}, err
	}
	for _, g := range gs {
		ref, ok := a.find(g.JobKey)
		if !ok || ref.running {
			return Decision{}, fmt.Errorf("the recorded decision grants %s, which does not wait", g.JobKey)
		}
		e := a.at(ref)
		r := *e
		r.Slots, r.Reason, r.StartingSince, r.GrantedAt, r.Grant = slices.Clone(g.Slots), "", now, now, g.Seq
		r.State = Starting
		if g.QuietStart {
			r.State = Running
		}
		a.drop(e)
		a.st.Running = append(a.st.Running, r)
		a.keys[r.Request.JobKey] = entryRef{running: true, i: len(a.st.Running) - 1}
	}
	for _, k := range o.Kept {
		ref, ok := a.find(k.JobKey)
		if !ok || !ref.running {
			return Decision{}, fmt.Errorf("the recorded decision assigns slots to %s, which does not run", k.JobKey)
		}
		e := a.at(ref)
		e.Slots, e.Preempted = slices.Clone(k.Slots), k.Preempted
	}
	st := a.st
	st.Granted, st.Reserved, st.PreemptedFor, st.Reclaimed, st.Handed = o.Granted, o.Reserved, o.PreemptedFor, o.Reclaimed, o.Handed
	st.Starvation, st.Total, st.Slot = o.Starvation, o.Total, o.Slot
	a.st = copyBeyondEntries(st)
	return Decision{Grants: gs, Assignments: o.Assignments}, nil
}

// packGrants writes grants in the entries' column form (packEntries), gzipped once they
// are more than a few kilobytes: a decision that fills a bed of 8,000 slots packs to tens of
// kilobytes.
func packGrants(gs []Grant) ([]byte, error) {
	if len(gs) == 0 {
		return nil, nil
	}
	es := make([]Entry, len(gs))
	for i, g := range gs {
		es[i] = Entry{Request: Request{JobKey: g.JobKey}, Queue: g.Queue, Slots: g.Slots, Grant: g.Seq, State: Starting}
		if g.QuietStart {
			es[i].State = Running
		}
	}
	strs := &interner{at: map[string]int32{}}
	strs.index("")
	cols := packEntries(es, strs)
	raw := []byte{0}
	raw = binary.AppendUvarint(raw, uint64(len(gs)))
	raw = binary.AppendUvarint(raw, uint64(len(strs.all)))
	for _, v := range strs.all {
		raw = binary.AppendUvarint(raw, uint64(len(v)))
		raw = append(raw, v...)
	}
	raw = cols.appendTo(raw)
	if len(raw) < grantsDeflatedFrom {
		return raw, nil
	}
	z, err := deflate(raw[1:])
	if err != nil {
		return nil, err
	}
	return append([]byte{1}, z...), nil
}

// grantsDeflatedFrom is the size from which packGrants gzips.
const grantsDeflatedFrom = 4 << 10

// unpackGrants reads what packGrants wrote.
func unpackGrants(b []byte) ([]Grant, error) {
	if len(b) == 0 {
		return nil, nil
	}
	raw := b[1:]
	switch b[0] {
	case 0:
	case 1:
		st, err := inflate(raw)
		if err != nil {
			return nil, fmt.Errorf("the recorded grants: %w", err)
		}
		raw = st
	default:
		return nil, fmt.Errorf("the recorded grants are of form %d", b[0])
	}
	r := &columnReader{b: raw}
	n := r.uvarint()
	strs := make([]string, r.uvarint())
	for i := range strs {
		strs[i] = string(r.bytes(r.uvarint()))
	}
	es := r.entries(n, strs)
	if r.err == nil && r.off != len(r.b) {
		r.err = fmt.Errorf("%d bytes after the last column", len(r.b)-r.off)
	}
	if r.err != nil {
		return nil, fmt.Errorf("the recorded grants are damaged: %w", r.err)
	}
	gs := make([]Grant, len(es))
	for i, e := range es {
		gs[i] = Grant{JobKey: e.Request.JobKey, Queue: e.Queue, Slots: e.Slots, Seq: e.Grant, QuietStart: e.State == Running}
	}
	return gs, nil
}
