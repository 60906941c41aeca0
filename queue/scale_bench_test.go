package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// scaleRequests are n one-slot jobs of four Schedulings (a quarter each), of four users,
// asking for no queue (the default placement puts them in root.default).
func scaleRequests(n int) []Request {
	out := make([]Request, n)
	for i := range out {
		s := fmt.Sprintf("sched-%d", i%4)
		out[i] = Request{JobKey: JobKey{Scheduling: s, SchedulingUID: "uid-" + s, Job: fmt.Sprintf("job-%05d", i), Run: 1},
			User: fmt.Sprintf("user-%d", i%4), Groups: []string{"analysts", "spark-users"}, Slots: 1, Driver: MBVCores(256, 0)}
	}
	return out
}

// One decision on an empty bed of 1,000 slots with 4,000 jobs waiting: it grants 1,000.
func BenchmarkAdmitterDecide_Grant1000Of4000(b *testing.B) {
	a := NewAdmitter(AdmitterState{})
	for _, r := range scaleRequests(4000) {
		a.Request(r)
	}
	onCopies(b, a, func(x *Admitter) {
		if d := x.Decide(t0, bed(1000)); len(d.Grants) != 1000 {
			b.Fatalf("granted %d", len(d.Grants))
		}
	})
}

// onCopies times f on a fresh copy of a's state each time: a decision changes the entries
// in place. The copy's key index is made before the timer runs, as the Admission workflow's
// Admitter holds it from one decision to the next.
func onCopies(b *testing.B, a *Admitter, f func(x *Admitter)) {
	base := NewAdmitter(a.State())
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x := NewAdmitter(base.State())
		x.find(JobKey{})
		b.StartTimer()
		f(x)
	}
}

// A batch of 1,000 requests taken in while 4,000 wait.
func BenchmarkAdmitterRequest_1000Into4000(b *testing.B) {
	a := NewAdmitter(AdmitterState{})
	rs := scaleRequests(5000)
	for _, r := range rs[:4000] {
		a.Request(r)
	}
	onCopies(b, a, func(x *Admitter) {
		for _, r := range rs[4000:] {
			x.Request(r)
		}
	})
}

// envelopeQueuesWith is an allocation file of 50 leaves under 5 parents, as the scale
// envelope uses: parents weighted and fair, leaves fifo, fair and drf in turn, every tenth
// leaf with a running-application limit if limits.
func envelopeQueuesWith(limits bool) string {
	var sb strings.Builder
	sb.WriteString("<allocations>")
	for i := range 5 {
		fmt.Fprintf(&sb, `<queue name="team%d"><weight>%d</weight>`, i, 1+i%3)
		for j := range 10 {
			fmt.Fprintf(&sb, `<queue name="q%d"><schedulingPolicy>%s</schedulingPolicy>`, j, []string{"fifo", "fair", "drf"}[j%3])
			if j == 9 && limits {
				sb.WriteString("<maxRunningApps>100</maxRunningApps>")
			}
			sb.WriteString("</queue>")
		}
		sb.WriteString("</queue>")
	}
	sb.WriteString("</allocations>")
	return sb.String()
}

// envelopeAdmitter holds n one-slot jobs waiting in the 50 leaves of envelopeQueuesWith, of 20
// users.
func envelopeAdmitter(tb testing.TB, n int) *Admitter { return envelopeAdmitterWith(tb, n, true) }

// envelopeAdmitterWith is envelopeAdmitter, on envelopeQueuesWith(limits).
func envelopeAdmitterWith(tb testing.TB, n int, limits bool) *Admitter {
	return envelopeAdmitterOf(tb, n, limits, 0)
}

// envelopeAdmitterOf is envelopeAdmitterWith, with every odd job SlotBased on slot i mod
// pinned of a bed (0: none), as the probe's SlotBased Schedulings ask.
func envelopeAdmitterOf(tb testing.TB, n int, limits bool, pinned int) *Admitter {
	// Without the bound on starting jobs: a decision may grant every slot, the most work.
	files := ConfigFiles{Allocations: []byte(envelopeQueuesWith(limits)), HasAllocations: true, Settings: []byte(settingsFile(PropMaxStartingApps, "0")), HasSettings: true}
	u := ReadConfigFiles(Config{}, files, "v1")
	if u.Allocations == nil {
		tb.Fatal(u.Rejected)
	}
	a := NewAdmitter(AdmitterState{Config: Config{}.Apply(*u)})
	for i, r := range scaleRequests(n) {
		r.Queue = fmt.Sprintf("root.team%d.q%d", i%5, (i/5)%10)
		r.User = fmt.Sprintf("user-%d", i%20)
		if pinned > 0 && i%2 == 1 {
			r.SlotIDs = []int32{int32(i % pinned)}
		}
		if g := a.Request(r); g != nil {
			tb.Fatalf("refused: %s", g.Refused)
		}
	}
	return a
}

// One decision that fills an empty bed of 8,000 slots from 10,000 waiting jobs in 50 queues.
func BenchmarkAdmitterDecide_Fill8000SlotsFrom10000Waiting(b *testing.B) {
	onCopies(b, envelopeAdmitter(b, 10000), func(x *Admitter) {
		if d := x.Decide(t0, bed(8000)); len(d.Grants) < 7000 {
			b.Fatalf("granted %d", len(d.Grants))
		}
	})
}

// One decision after a job ended on a full bed of 8,000 slots, 10,000 more waiting: the
// steady state of a busy bed.
func BenchmarkAdmitterDecide_OneFreedOf8000With10000Waiting(b *testing.B) {
	a := envelopeAdmitter(b, 18000)
	a.Decide(t0, bed(8000))
	k := a.Running()[0].Request.JobKey
	a.Ended(k)
	busy := heldBed(a, 8000)
	onCopies(b, a, func(x *Admitter) { x.Decide(t0.Add(time.Second), busy) })
}

// The steady state of a busy bed as the Admission workflow lives it: a job of a full bed of
// 8,000 slots ends, a new one is asked for, and a decision grants the freed slot, 10,000
// waiting. One Admitter throughout: the picture of the queues is kept from one decision to
// the next, and the lists are compacted now and then, as they are live. With running-
// application limits in the file, a change counts what the waiting jobs demand again.
// In a full bed, half the jobs SlotBased: the waiting ones' slots are all held, as in the
// probe with the bed full.
func BenchmarkAdmitter_EndRequestDecide_8000Held10000Waiting(b *testing.B) {
	b.Run("limits", func(b *testing.B) { endRequestDecide(b, true, 0) })
	b.Run("no-limits", func(b *testing.B) { endRequestDecide(b, false, 0) })
	b.Run("half-slot-based", func(b *testing.B) { endRequestDecide(b, false, 8000) })
}

func endRequestDecide(b *testing.B, limits bool, pinned int) {
	a := envelopeAdmitterOf(b, 18000, limits, pinned)
	a.Decide(t0, bed(8000))
	full := heldBed(a, 8000) // no slot shows free: the ended job's is handed on
	more := scaleRequests(18000 + 20000)[18000:]
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := a.st.Running[0].Request.JobKey
		for j := 1; a.st.Running[0].gone; j++ {
			k = a.st.Running[j].Request.JobKey
			if !a.st.Running[j].gone {
				break
			}
		}
		a.Ended(k)
		r := more[i%len(more)]
		r.Run += int32(i / len(more)) // a key not asked for before
		r.Queue, r.User = fmt.Sprintf("root.team%d.q%d", i%5, (i/5)%10), fmt.Sprintf("user-%d", i%20)
		a.Request(r)
		if d := a.Decide(t0.Add(time.Duration(i)*time.Second), full); len(d.Grants) != 1 {
			b.Fatalf("granted %d", len(d.Grants))
		}
		i++
	}
	b.ReportMetric(float64(a.kept)/float64(i), "kept/op")
}

// Packing and unpacking the state of the scale envelope (8,000 held, 10,000 waiting), as
// each continue-as-new of the Admission workflow does once.
func BenchmarkPackState_8000Held10000Waiting(b *testing.B) {
	a := envelopeAdmitter(b, 18000)
	a.Decide(t0, bed(8000))
	st := a.State()
	var packed []byte
	b.Run("pack", func(b *testing.B) {
		for b.Loop() {
			var err error
			if packed, err = PackState(st); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(packed)), "bytes")
	})
	b.Run("unpack", func(b *testing.B) {
		for b.Loop() {
			if _, err := UnpackState(packed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
