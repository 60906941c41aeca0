package queue

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// twinDecides brings twin to the decision a just made (d): it applies a's recorded outcome,
// after the JSON round trip of the workflow's history, or (decide) decides itself. Either
// way it must then hold a's state, reasons aside, and carry out the same decision.
func twinDecides(t *testing.T, twin *Admitter, now time.Time, b Bed, a *Admitter, d Decision, decide bool) {
	t.Helper()
	got := d
	if decide {
		got = twin.Decide(now, b)
	} else {
		o, err := a.OutcomeOf(d)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back Outcome
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if got, err = twin.Apply(now, back); err != nil {
			t.Fatal(err)
		}
	}
	if w, g := decisionText(d), decisionText(got); w != g {
		t.Fatalf("the twin carries out\n%s\ninstead of\n%s", g, w)
	}
	if w, g := stateText(a), stateText(twin); w != g {
		t.Fatalf("the twin holds\n%s\ninstead of\n%s", g, w)
	}
}

func decisionText(d Decision) string {
	var sb strings.Builder
	for _, g := range d.Grants {
		fmt.Fprintf(&sb, "grant %s %s %v %d %v %q\n", g.JobKey, g.Queue, g.Slots, g.Seq, g.QuietStart, g.Refused)
	}
	for _, as := range d.Assignments {
		fmt.Fprintf(&sb, "assign %s keep %v revoke %v %q %q\n", as.JobKey, as.Keep, as.Revoke, as.Why, as.For)
	}
	return sb.String()
}

// stateText is an Admitter's state without the waiting jobs' reasons.
func stateText(a *Admitter) string {
	st := a.State()
	for i := range st.Waiting {
		st.Waiting[i].Reason = ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "next %d granted %d reserved %v preemptedFor %v reclaimed %v handed %v total %v slot %v\n",
		st.Next, st.Granted, st.Reserved, st.PreemptedFor, st.Reclaimed, st.Handed, st.Total, st.Slot)
	fmt.Fprintf(&sb, "starvation %v %v\n", st.Starvation.MinShareSince, st.Starvation.FairShareSince)
	for _, l := range [][]Entry{st.Waiting, st.Running} {
		for _, e := range l {
			fmt.Fprintf(&sb, "%s %+v %s %d %q %v %s %d %s %s %d\n", e.ID, e.Request, e.Queue, e.Order, e.Reason, e.Slots, e.GrantedAt.UTC(), e.Grant, e.State,
				e.StartingSince.UTC(), e.Preempted)
		}
		sb.WriteString("--\n")
	}
	return sb.String()
}

// A decision's outcome applied to a copy of the Admitter it was made on leaves the copy in
// the deciding one's state, whether it granted (packed grants, gzipped from a few kilobytes)
// or failed part way (the whole state).
func TestOutcome_AppliedOnACopyGivesTheSameState(t *testing.T) {
	for _, n := range []int{3, 300} {
		a := envelopeAdmitter(t, 2*n)
		twin := NewAdmitter(a.State())
		d := a.Decide(t0, bed(n))
		if len(d.Grants) != n {
			t.Fatalf("granted %d of %d", len(d.Grants), n)
		}
		twinDecides(t, twin, t0, bed(n), a, d, false)

		failed := NewAdmitter(a.State())
		a.Ended(a.Running()[0].Request.JobKey)
		o, err := a.FailedOutcome()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := failed.Apply(t0, o); err != nil || len(got.Grants) > 0 {
			t.Fatalf("a failed outcome carries out %+v, %v", got, err)
		}
		if w, g := stateText(a), stateText(failed); w != g {
			t.Fatalf("after a failed outcome the copy holds\n%s\ninstead of\n%s", g, w)
		}
	}
}

// An outcome that does not fit the Admitter it is applied to is an error, not a panic or a
// silent difference.
func TestOutcome_ThatDoesNotFitIsAnError(t *testing.T) {
	a := envelopeAdmitter(t, 4)
	d := a.Decide(t0, bed(2))
	o, err := a.OutcomeOf(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(t0, o); err == nil {
		t.Fatal("applied a grant of jobs that run already")
	}
	if _, err := NewAdmitter(AdmitterState{}).Apply(t0, Outcome{Grants: []byte{7, 1}}); err == nil {
		t.Fatal("applied grants of an unknown form")
	}
	if _, err := NewAdmitter(AdmitterState{}).Apply(t0, Outcome{Grants: o.Grants[:len(o.Grants)-2]}); err == nil {
		t.Fatal("applied cut grants")
	}
}

// The recorded outcome of the largest decision of the scale envelope (an empty bed of 8,000
// slots filled from the jobs waiting) stays under half of Temporal's 2 MiB payload limit as
// the JSON a side effect records, and at ten times that (80,000 slots) under the limit.
func TestOutcome_SizesFit(t *testing.T) {
	const payloadLimit = 2 << 20
	for _, c := range []struct{ slots, limit int }{{8000, payloadLimit / 2}, {80000, payloadLimit}} {
		// The grants of the decision are the jobs that hold the slots after it.
		a := NewAdmitter(envelopeState(c.slots, 0))
		var d Decision
		for _, e := range a.Running() {
			d.Grants = append(d.Grants, Grant{JobKey: e.Request.JobKey, Queue: e.Queue, Slots: e.Slots, Seq: e.Grant, QuietStart: true})
		}
		o, err := a.OutcomeOf(d)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d grants: the outcome is %d KiB (%.1f bytes a grant)", c.slots, len(b)>>10, float64(len(b))/float64(c.slots))
		if len(b) > c.limit {
			t.Errorf("%d grants: the outcome is %d bytes, over %d", c.slots, len(b), c.limit)
		}
	}
}

// Applying a decision's recorded outcome, against making it, in the steady state of the
// scale envelope (one slot freed on a full bed of 8,000, 10,000 waiting): the work of a
// replay against that of the decision.
func BenchmarkOutcome_ApplyAgainstDecide(b *testing.B) {
	a := envelopeAdmitter(b, 18000)
	a.Decide(t0, bed(8000))
	a.Ended(a.Running()[0].Request.JobKey)
	busy := heldBed(a, 8000)
	at := t0.Add(time.Second)
	b.Run("decide", func(b *testing.B) {
		onCopies(b, a, func(x *Admitter) { x.Decide(at, busy) })
	})
	x := NewAdmitter(a.State())
	o, err := x.OutcomeOf(x.Decide(at, busy))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("apply", func(b *testing.B) {
		// A replay indexes the jobs once at the start of its run, not for each decision.
		for b.Loop() {
			b.StopTimer()
			x := NewAdmitter(a.State())
			x.find(JobKey{})
			b.StartTimer()
			if _, err := x.Apply(at, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
