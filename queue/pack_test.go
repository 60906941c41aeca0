package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The packed state unpacks to the state packed, but the waiting jobs' reasons.
func TestPackState_RoundTrip(t *testing.T) {
	a := envelopeAdmitter(t, 300)
	a.Request(Request{JobKey: JobKey{Scheduling: "s", SchedulingUID: "u", Job: "named", Run: 2}, Queue: "root.team1.q1", User: "user-1",
		SlotIDs: []int32{3, 9}, Driver: MBVCores(512, 1), Expected: time.Minute, GaveBack: 7, Shown: "root.x", Priority: -3})
	for i, job := range []string{"grouped", "grouped-too"} {
		a.Request(Request{JobKey: JobKey{Scheduling: "s", SchedulingUID: "u", Job: job, Run: 1}, Queue: "root.team1.q1", User: "user-2",
			Groups: []string{"g1", "g2", "g3"}, Priority: int32(100 * i)})
	}
	a.Decide(t0, bed(200, 5, 6))
	a.Started(a.Running()[3].Request.JobKey)
	a.NoExecutors(a.Running()[1].Request.JobKey)
	a.Decide(t0.Add(time.Minute), heldBed(a, 200))
	inPlace, err := a.Pack()
	if err != nil {
		t.Fatal(err)
	}
	if copied, _ := PackState(a.State()); !bytes.Equal(inPlace, copied) {
		t.Fatal("packing the Admitter in place differs from packing a copy of its state")
	}
	st := a.State()
	st.Reclaimed, st.Handed = []int32{1, 2}, []int32{4}
	st.Reserved, st.PreemptedFor = &st.Waiting[0].Request.JobKey, &st.Waiting[1].Request.JobKey
	st.Starvation = Starvation{MinShareSince: map[string]time.Time{"root.team0.q0": t0.UTC()}}
	st.Running[2].Request.Priority = 5
	b, err := PackState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnpackState(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range st.Waiting {
		st.Waiting[i].Reason = ""
	}
	// Times compare as instants; JSON gives what the workflow carried before.
	want, _ := json.Marshal(st)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Fatalf("the state changed across packing:\n%s\n%s", want[:min(len(want), 2000)], have[:min(len(have), 2000)])
	}
	if !reflect.DeepEqual(NewAdmitter(got).Decide(t0.Add(2*time.Minute), heldBed(a, 200)), NewAdmitter(st).Decide(t0.Add(2*time.Minute), heldBed(a, 200))) {
		t.Fatal("the unpacked state decides differently")
	}
}

// Damaged input is an error, never a panic or a state that is not what was packed.
func TestUnpackState_Damaged(t *testing.T) {
	b, err := PackState(envelopeAdmitter(t, 50).State())
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, []byte("not gzip"), b[:len(b)/2]} {
		if _, err := UnpackState(bad); err == nil {
			t.Errorf("%d bytes of damage unpacked", len(bad))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		c := append([]byte(nil), b...)
		c[rng.IntN(len(c))] ^= byte(1 + rng.IntN(255))
		_, _ = UnpackState(c) // must not panic
	}
}

// A state packed in another form is refused with an error naming both forms, never read as
// this form.
func TestUnpackState_OtherFormRefused(t *testing.T) {
	b, err := PackState(envelopeAdmitter(t, 20).State())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := inflate(b)
	if err != nil {
		t.Fatal(err)
	}
	n, w := binary.Uvarint(raw)
	var head map[string]any
	if err := json.Unmarshal(raw[w:w+int(n)], &head); err != nil {
		t.Fatal(err)
	}
	head["V"] = 1
	h, _ := json.Marshal(head)
	old := append(binary.AppendUvarint(nil, uint64(len(h))), h...)
	old, err = deflate(append(old, raw[w+int(n):]...))
	if err != nil {
		t.Fatal(err)
	}
	_, err = UnpackState(old)
	if err == nil || !strings.Contains(err.Error(), "form 1") || !strings.Contains(err.Error(), fmt.Sprintf("form %d", packVersion)) {
		t.Fatalf("a form-1 state: %v", err)
	}
}

// The carried state of the scale envelope (8,000 slots held by one-slot jobs, 10,000 jobs
// waiting in 50 queues, each job of a user in 20 groups) stays under half of Temporal's
// 2 MiB payload limit, and at ten times that (80,000 held, 100,000 waiting) under the limit.
func TestPackState_SizesFit(t *testing.T) {
	const payloadLimit = 2 << 20
	for _, c := range []struct {
		slots, waiting int
		limit          int
	}{{8000, 10000, payloadLimit / 2}, {80000, 100000, payloadLimit}} {
		st := envelopeState(c.slots, c.waiting)
		b, err := PackState(st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d held, %d waiting: packed %d KiB (%.1f bytes a job)", c.slots, c.waiting, len(b)>>10, float64(len(b))/float64(c.slots+c.waiting))
		// The workflow carries it inside JSON, as base64.
		if n := (len(b) + 2) / 3 * 4; n > c.limit {
			t.Errorf("%d held, %d waiting: the carried state is %d bytes, over %d", c.slots, c.waiting, n, c.limit)
		}
	}
}

// envelopeState is the state of a bed whose slots are each held by a one-slot job, with
// more waiting: jobs of twenty users in 20 groups each, in the 50 leaves of envelopeQueuesWith,
// from twelve Schedulings, named with a random suffix, as a decision on the empty bed
// leaves them.
func envelopeState(held, waiting int) AdmitterState {
	groups := make([]string, 20)
	for i := range groups {
		groups[i] = fmt.Sprintf("cn=group-%02d,ou=groups,dc=example,dc=com", i)
	}
	st := AdmitterState{Next: int64(held + waiting), Granted: int64(held), Total: times(MBVCores(1024, 1), int64(held)), Slot: MBVCores(1024, 1)}
	for i := range held + waiting {
		s := fmt.Sprintf("sched-%d", i%12)
		r := Request{JobKey: JobKey{Scheduling: s, SchedulingUID: fmt.Sprintf("0b1d0a2c-1111-2222-3333-%012d", i%12),
			Job: fmt.Sprintf("etl-%s-%08x", []string{"daily", "hourly", "adhoc"}[i%3], rand.Uint32()), Run: 1},
			User: fmt.Sprintf("user-%d", i%20), Groups: groups, Slots: 1, Driver: MBVCores(256, 0)}
		e := Entry{ID: r.JobKey.String(), Request: r, Queue: fmt.Sprintf("root.team%d.q%d", i%5, (i/5)%10), Order: int64(i + 1)}
		if i < held {
			e.Slots, e.GrantedAt, e.Grant, e.State, e.StartingSince = []int32{int32(i)}, t0, int64(i+1), Running, t0
			st.Running = append(st.Running, e)
			continue
		}
		st.Waiting = append(st.Waiting, e)
	}
	return st
}

// Whatever bytes a carried state inflates to, reading them answers an error or a state,
// never a panic or an allocation beyond what the bytes can describe.
func FuzzUnpackState(f *testing.F) {
	a := envelopeAdmitter(f, 30)
	a.Decide(t0, bed(10))
	b, err := packRaw(a.State())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := unpackRaw(b)
		if err != nil {
			return
		}
		if _, err := PackState(st); err != nil {
			t.Fatalf("a state that unpacked does not pack: %v", err)
		}
	})
}
