package queue

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// PackState writes an Admitter's state in the compact form the Admission workflow carries
// across continue-as-new: the entries by column, as varints, every repeated string
// (Scheduling, uid, queue, user, group list, state) written once, orders, grants, slots and
// times as differences from the entry before; the rest as JSON; all of it gzipped. What the
// state costs grows with the number of jobs by little more than their names, not by their
// group lists or the field names of each entry.
//
// The waiting jobs' reasons are left out: the next decision gives them anew, and the
// Admission workflow decides first thing in each run.
func PackState(st AdmitterState) ([]byte, error) {
	raw, err := packRaw(st)
	if err != nil {
		return nil, err
	}
	return deflate(raw)
}

// Pack is PackState of the Admitter's state, read in place rather than copied first
// (State): a continue-as-new packs the whole state inside one workflow task, and what it
// allocates there the worker's garbage collector makes that task pay for.
func (a *Admitter) Pack() ([]byte, error) {
	a.compact()
	return PackState(a.st)
}

func packRaw(st AdmitterState) ([]byte, error) {
	h := packedHeader{V: packVersion, Config: st.Config, Next: st.Next, Granted: st.Granted, Starvation: st.Starvation,
		Reclaimed: st.Reclaimed, Handed: st.Handed, PreemptedFor: st.PreemptedFor, Reserved: st.Reserved,
		Total: st.Total, Slot: st.Slot}
	strs := &interner{at: map[string]int32{}}
	strs.index("") // 0 is the empty string (and no groups)
	waiting, running := packEntries(st.Waiting, strs), packEntries(st.Running, strs)
	h.Strings, h.Waiting, h.Running = strs.all, len(waiting.Job), len(running.Job)
	h.Priorities = append(packPriorities(st.Waiting, false, nil), packPriorities(st.Running, true, nil)...)
	h.NoExecutors = packNoExecutors(st.Running)
	// encoding/json writes a struct's fields in order and a map's keys sorted: the same state
	// packs to the same bytes. (workflowcheck flags the reflection it uses, whose only
	// non-deterministic paths build panic messages.)
	head, err := json.Marshal(&h) //workflowcheck:ignore
	if err != nil {
		return nil, err
	}
	// An entry packs to about 30 bytes at the envelope: 48 each is one allocation rather
	// than a doubling chain.
	raw := make([]byte, 0, len(head)+binary.MaxVarintLen64+48*(h.Waiting+h.Running))
	raw = binary.AppendUvarint(raw, uint64(len(head)))
	raw = append(raw, head...)
	raw = waiting.appendTo(raw)
	return running.appendTo(raw), nil
}

// packLevel is the gzip level of the packed state: at the envelope's 18,000 jobs it packs in
// half the time of the default level, 5% larger (BenchmarkPackState_8000Held10000Waiting,
// TestPackState_SizesFit).
const packLevel = 4

func deflate(raw []byte) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, len(raw)/8+64))
	z, err := gzip.NewWriterLevel(buf, packLevel)
	if err != nil {
		return nil, err
	}
	if _, err := z.Write(raw); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnpackState reads what PackState wrote.
func UnpackState(b []byte) (AdmitterState, error) {
	raw, err := inflate(b)
	if err != nil {
		return AdmitterState{}, fmt.Errorf("the carried admission state: %w", err)
	}
	return unpackRaw(raw)
}

// inflate undoes deflate, up to maxUnpacked bytes. The gzip trailer's size (the
// uncompressed length modulo 2^32) sizes the buffer, so reading does not double it along
// the way. The trailer is believed up to maxInflateRatio times the packed size (a state
// packs about 16 to 1): a trailer that lies costs a reallocation or a bounded buffer, not
// a wrong answer or a gigabyte.
func inflate(b []byte) ([]byte, error) {
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	size := 0
	if len(b) >= 4 {
		size = min(int(binary.LittleEndian.Uint32(b[len(b)-4:])), maxInflateRatio*len(b), maxUnpacked)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(z, maxUnpacked)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpackRaw reads the state from the inflated bytes.
func unpackRaw(raw []byte) (AdmitterState, error) {
	r := &columnReader{b: raw}
	n := r.uvarint()
	head := r.bytes(n)
	var h packedHeader
	if r.err == nil {
		//workflowcheck:ignore (as in packRaw)
		if err := json.Unmarshal(head, &h); err != nil {
			return AdmitterState{}, fmt.Errorf("the carried admission state: %w", err)
		}
	}
	if r.err == nil && h.V != packVersion {
		return AdmitterState{}, fmt.Errorf("the carried admission state is of form %d; this build reads form %d", h.V, packVersion)
	}
	st := AdmitterState{Config: h.Config, Next: h.Next, Granted: h.Granted, Starvation: h.Starvation, Reclaimed: h.Reclaimed, Handed: h.Handed,
		PreemptedFor: h.PreemptedFor, Reserved: h.Reserved, Total: h.Total, Slot: h.Slot}
	st.Waiting = r.entries(h.Waiting, h.Strings)
	st.Running = r.entries(h.Running, h.Strings)
	for _, p := range h.Priorities {
		list := st.Waiting
		if p.Running {
			list = st.Running
		}
		if p.I < 0 || p.I >= len(list) {
			r.err = fmt.Errorf("a priority for entry %d of %d", p.I, len(list))
			break
		}
		list[p.I].Request.Priority = p.P
	}
	for _, i := range h.NoExecutors {
		if r.err != nil {
			break
		}
		if i < 0 || i >= len(st.Running) {
			r.err = fmt.Errorf("no executors for entry %d of %d", i, len(st.Running))
			break
		}
		st.Running[i].NoExecutors = true
	}
	if r.err == nil && r.off != len(r.b) {
		r.err = fmt.Errorf("%d bytes after the last column", len(r.b)-r.off)
	}
	if r.err != nil {
		return AdmitterState{}, fmt.Errorf("the carried admission state is damaged: %w", r.err)
	}
	return st, nil
}

// packVersion is the form PackState writes, and the only one UnpackState reads.
const packVersion = 2

// maxUnpacked bounds what UnpackState inflates (a state of a million jobs is well below).
const maxUnpacked = 1 << 30

// maxInflateRatio bounds how far inflate sizes its buffer ahead from the gzip trailer.
const maxInflateRatio = 64

// packedHeader is what PackState writes as JSON before the columns: all but the entries,
// the strings the columns name, and how many entries each list has.
type packedHeader struct {
	V                      int
	Config                 Config
	Next, Granted          int64
	Starvation             Starvation
	Reclaimed, Handed      []int32
	PreemptedFor, Reserved *JobKey
	Total, Slot            Resources
	Strings                []string
	Waiting, Running       int
	// Priorities are the entries' priorities that are not 0, by their place in the columns:
	// few jobs set one, and a state without any packs as it did before priorities.
	Priorities []packedPriority `json:",omitempty"`
	// NoExecutors are the running entries whose driver runs without executors, by their
	// place in the columns.
	NoExecutors []int `json:",omitempty"`
}

// packedPriority is the priority P of the I-th packed entry of the waiting or running list.
type packedPriority struct {
	Running bool `json:",omitempty"`
	I       int
	P       int32
}

// packNoExecutors lists the places of the running entries marked NoExecutors.
func packNoExecutors(es []Entry) []int {
	var out []int
	eachPacked(es, func(i int, e *Entry) {
		if e.NoExecutors {
			out = append(out, i)
		}
	})
	return out
}

// packPriorities appends to out the priorities of es that are not 0, by their places.
func packPriorities(es []Entry, running bool, out []packedPriority) []packedPriority {
	eachPacked(es, func(i int, e *Entry) {
		if p := e.Request.Priority; p != 0 {
			out = append(out, packedPriority{Running: running, I: i, P: p})
		}
	})
	return out
}

// eachPacked calls f with each entry of es that packEntries packs (those not gone) and its
// place among them, the place the header's lists name it by.
func eachPacked(es []Entry, f func(i int, e *Entry)) {
	i := 0
	for k := range es {
		if !es[k].gone {
			f(i, &es[k])
			i++
		}
	}
}

// packedEntries are entries by column. Strings are indexes into packed.Strings; Order,
// Grant, GrantedAt and StartingSince are differences from the entry before (times in Unix
// nanoseconds, 0 for none), and each list of Granted slots its differences from the slot
// before, the first from the first of the entry before.
type packedEntries struct {
	Job                                                       []string
	Scheduling, UID, Asked, User, Groups, Shown, Queue, State []int32
	Run, Slots, Preempted                                     []int32
	SlotIDs, Granted                                          [][]int32
	DriverMemory, DriverMilli, Expected, GaveBack, Grant      []int64
	Order, GrantedAt, StartingSince                           []int64
}

type interner struct {
	all []string
	at  map[string]int32
	buf []byte
}

// joined indexes a group list as one string (groupsSep between the groups), joining it
// only when it is new.
func (s *interner) joined(groups []string) int32 {
	if len(groups) < 2 {
		return s.index(strings.Join(groups, groupsSep)) // "" or the one group: no copy
	}
	s.buf = s.buf[:0]
	for i, g := range groups {
		if i > 0 {
			s.buf = append(s.buf, groupsSep...)
		}
		s.buf = append(s.buf, g...)
	}
	if i, ok := s.at[string(s.buf)]; ok {
		return i
	}
	return s.index(string(s.buf))
}

func (s *interner) index(v string) int32 {
	if i, ok := s.at[v]; ok {
		return i
	}
	i := int32(len(s.all))
	s.all = append(s.all, v)
	s.at[v] = i
	return i
}

// groupsSep joins a group list into one string: no group name holds it.
const groupsSep = "\x00"

func packEntries(es []Entry, strs *interner) packedEntries {
	n, slots := 0, 0
	for i := range es {
		if !es[i].gone {
			n++
			slots += len(es[i].Slots)
		}
	}
	// Every column at its full size at once, and the granted slots' differences in one
	// array the entries' lists share.
	p := packedEntries{Job: make([]string, 0, n), SlotIDs: make([][]int32, 0, n), Granted: make([][]int32, 0, n)}
	for _, col := range []*[]int32{&p.Scheduling, &p.UID, &p.Asked, &p.User, &p.Groups, &p.Shown, &p.Queue, &p.State, &p.Run, &p.Slots, &p.Preempted} {
		*col = make([]int32, 0, n)
	}
	for _, col := range []*[]int64{&p.DriverMemory, &p.DriverMilli, &p.Expected, &p.GaveBack, &p.Grant, &p.Order, &p.GrantedAt, &p.StartingSince} {
		*col = make([]int64, 0, n)
	}
	flat := make([]int32, 0, slots)
	var order, grant, grantedAt, since int64
	var slot int32
	for i := range es {
		e := &es[i]
		if e.gone {
			continue
		}
		r := &e.Request
		p.Scheduling = append(p.Scheduling, strs.index(r.Scheduling))
		p.UID = append(p.UID, strs.index(r.SchedulingUID))
		p.Job = append(p.Job, r.Job)
		p.Run = append(p.Run, r.Run)
		p.Asked = append(p.Asked, strs.index(r.Queue))
		p.User = append(p.User, strs.index(r.User))
		p.Groups = append(p.Groups, strs.joined(r.Groups))
		p.Shown = append(p.Shown, strs.index(r.Shown))
		p.Slots = append(p.Slots, r.Slots)
		p.SlotIDs = append(p.SlotIDs, r.SlotIDs)
		p.DriverMemory = append(p.DriverMemory, r.Driver.MemoryBytes)
		p.DriverMilli = append(p.DriverMilli, r.Driver.MilliCores)
		p.Expected = append(p.Expected, int64(r.Expected))
		p.GaveBack = append(p.GaveBack, r.GaveBack)
		p.Queue = append(p.Queue, strs.index(e.Queue))
		p.Order = append(p.Order, e.Order-order)
		order = e.Order
		start := len(flat)
		flat = appendDeltas(flat, e.Slots, &slot)
		p.Granted = append(p.Granted, flat[start:len(flat):len(flat)])
		g := nanos(e.GrantedAt)
		p.GrantedAt = append(p.GrantedAt, g-grantedAt)
		grantedAt = g
		p.Grant = append(p.Grant, e.Grant-grant)
		grant = e.Grant
		p.State = append(p.State, strs.index(string(e.State)))
		s := nanos(e.StartingSince)
		p.StartingSince = append(p.StartingSince, s-since)
		since = s
		p.Preempted = append(p.Preempted, e.Preempted)
	}
	return p
}

// appendTo writes the columns, in the order of the struct's fields: each number a varint,
// each string its length and bytes, each list its length and items.
func (p *packedEntries) appendTo(b []byte) []byte {
	for _, s := range p.Job {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, col := range [][]int32{p.Scheduling, p.UID, p.Asked, p.User, p.Groups, p.Shown, p.Queue, p.State, p.Run, p.Slots, p.Preempted} {
		for _, v := range col {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	for _, col := range [][][]int32{p.SlotIDs, p.Granted} {
		for _, l := range col {
			b = binary.AppendUvarint(b, uint64(len(l)))
			for _, v := range l {
				b = binary.AppendVarint(b, int64(v))
			}
		}
	}
	for _, col := range [][]int64{p.DriverMemory, p.DriverMilli, p.Expected, p.GaveBack, p.Grant, p.Order, p.GrantedAt, p.StartingSince} {
		for _, v := range col {
			b = binary.AppendVarint(b, v)
		}
	}
	return b
}

// columnReader reads what appendTo wrote; the first error stops it and stays in err.
type columnReader struct {
	b   []byte
	off int
	err error
}

func (r *columnReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || v > uint64(len(r.b)) {
		r.err = fmt.Errorf("a bad length at byte %d", r.off)
		return 0
	}
	r.off += n
	return int(v)
}

func (r *columnReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.err = fmt.Errorf("a bad number at byte %d", r.off)
		return 0
	}
	r.off += n
	return v
}

func (r *columnReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = fmt.Errorf("%d bytes wanted at byte %d of %d", n, r.off, len(r.b))
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *columnReader) int32s(n int) []int32 {
	return r.appendInt32s(nil, n)
}

// appendInt32s reads n numbers into out.
func (r *columnReader) appendInt32s(out []int32, n int) []int32 {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = fmt.Errorf("%d numbers wanted at byte %d of %d", n, r.off, len(r.b))
		return nil
	}
	out = slices.Grow(out, n)
	for range n {
		v := r.varint()
		if v != int64(int32(v)) {
			r.err = fmt.Errorf("%d is out of range before byte %d", v, r.off)
			return nil
		}
		out = append(out, int32(v))
	}
	return out
}

func (r *columnReader) int64s(n int) []int64 {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = fmt.Errorf("%d numbers wanted at byte %d of %d", n, r.off, len(r.b))
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = r.varint()
	}
	return out
}

// entries reads n entries' columns and builds the entries.
func (r *columnReader) entries(n int, strs []string) []Entry {
	if r.err != nil || n == 0 {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = fmt.Errorf("%d entries wanted at byte %d of %d", n, r.off, len(r.b))
		return nil
	}
	var p packedEntries
	p.Job = make([]string, n)
	for i := range p.Job {
		p.Job[i] = string(r.bytes(r.uvarint()))
	}
	for _, col := range []*[]int32{&p.Scheduling, &p.UID, &p.Asked, &p.User, &p.Groups, &p.Shown, &p.Queue, &p.State, &p.Run, &p.Slots, &p.Preempted} {
		*col = r.int32s(n)
	}
	// Each column's lists share one array: an entry's list is its own stretch of it.
	for _, col := range []*[][]int32{&p.SlotIDs, &p.Granted} {
		*col = make([][]int32, n)
		var flat []int32
		for i := range *col {
			if k := r.uvarint(); k > 0 && r.err == nil {
				start := len(flat)
				if flat = r.appendInt32s(flat, k); r.err != nil {
					return nil
				}
				(*col)[i] = flat[start:len(flat):len(flat)]
			}
		}
	}
	for _, col := range []*[]int64{&p.DriverMemory, &p.DriverMilli, &p.Expected, &p.GaveBack, &p.Grant, &p.Order, &p.GrantedAt, &p.StartingSince} {
		*col = r.int64s(n)
	}
	if r.err != nil {
		return nil
	}
	str := func(i int32) string {
		if i < 0 || int(i) >= len(strs) {
			r.err = fmt.Errorf("string %d of %d", i, len(strs))
			return ""
		}
		return strs[i]
	}
	out := make([]Entry, n)
	var order, grant, grantedAt, since int64
	var slot int32
	for i := range out {
		req := Request{JobKey: JobKey{Scheduling: str(p.Scheduling[i]), SchedulingUID: str(p.UID[i]), Job: p.Job[i], Run: p.Run[i]},
			Queue: str(p.Asked[i]), User: str(p.User[i]), Shown: str(p.Shown[i]), Slots: p.Slots[i], SlotIDs: p.SlotIDs[i],
			Driver: Resources{MemoryBytes: p.DriverMemory[i], MilliCores: p.DriverMilli[i]}, Expected: time.Duration(p.Expected[i]), GaveBack: p.GaveBack[i]}
		if g := str(p.Groups[i]); g != "" {
			req.Groups = strings.Split(g, groupsSep)
		}
		order += p.Order[i]
		grant += p.Grant[i]
		grantedAt += p.GrantedAt[i]
		since += p.StartingSince[i]
		out[i] = Entry{ID: req.JobKey.String(), Request: req, Queue: str(p.Queue[i]), Order: order,
			GrantedAt: fromNanos(grantedAt), Grant: grant, State: AppState(str(p.State[i])), StartingSince: fromNanos(since), Preempted: p.Preempted[i]}
		if len(p.Granted[i]) > 0 {
			sumInPlace(p.Granted[i], &slot)
			out[i].Slots = p.Granted[i]
		}
	}
	return out
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// appendDeltas appends ps to out as differences, the first from *prev, and sets *prev to
// the first.
func appendDeltas(out, ps []int32, prev *int32) []int32 {
	if len(ps) == 0 {
		return out
	}
	out = append(out, ps[0]-*prev)
	for i := 1; i < len(ps); i++ {
		out = append(out, ps[i]-ps[i-1])
	}
	*prev = ps[0]
	return out
}

// sumInPlace undoes appendDeltas on ds itself (not empty), which becomes the slots.
func sumInPlace(ds []int32, prev *int32) {
	ds[0] += *prev
	*prev = ds[0]
	for i := 1; i < len(ds); i++ {
		ds[i] += ds[i-1]
	}
}
