package jobplan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// A job's run history (status.history) is written by its workflow alone, from the workflow's
// own copy: the status it observes may come from a watch cache a moment old, and a record
// taken from there could lose the run that just ended.

// Where is where a run ran, as its last wait saw it: its nodes, and the other jobs on them
// (SharedWith, up to a bound; SharedWithMore beyond it).
type Where struct {
	Nodes, SharedWith []string
	SharedWithMore    int
}

// RecordRun adds the status's current run to the history as ended with outcome; where is
// empty when the run had no wait. A run already recorded, or no run at all, adds nothing.
func RecordRun(st *v1alpha1.BatchJobStatus, outcome v1alpha1.RunOutcome, msg string, where Where) {
	if st.Run == 0 || st.Scheduling == "" {
		return
	}
	r := v1alpha1.RunRecord{
		Run: st.Run, Scheduling: st.Scheduling, TestBed: st.TestBed,
		Slots: append([]int32(nil), st.Slots...), Nodes: where.Nodes,
		SharedWith: where.SharedWith, SharedWithMore: int32(where.SharedWithMore),
		QueuedAt: st.QueuedAt, Outcome: outcome, Message: v1alpha1.ClipMessage(msg),
	}
	if ph := st.Phases; ph != nil {
		r.AdmittedAt, r.ApplicationCreatedAt, r.RunningAt, r.EndedAt = ph.AdmittedAt, ph.ApplicationCreatedAt, ph.RunningAt, ph.EndedAt
	}
	if r.QueuedAt != nil && r.AdmittedAt != nil {
		// QueuedAt is kept to the second: a grant within it waited no time.
		r.Wait = &metav1.Duration{Duration: max(0, r.AdmittedAt.Sub(r.QueuedAt.Time)).Round(time.Millisecond)}
	}
	for _, old := range st.History {
		if sameRunRecord(old, r) {
			return
		}
	}
	st.History = trimHistory(append(st.History, r))
}

// sameRunRecord: both records are of one run (the grant's time tells apart two Schedulings
// of one name that each asked for run 1).
func sameRunRecord(a, b v1alpha1.RunRecord) bool {
	if a.Scheduling != b.Scheduling || a.Run != b.Run {
		return false
	}
	if a.AdmittedAt == nil || b.AdmittedAt == nil {
		return a.AdmittedAt == nil && b.AdmittedAt == nil
	}
	return a.AdmittedAt.Equal(b.AdmittedAt)
}

// trimHistory keeps the newest records within MaxRunHistory and MaxHistoryBytes; the newest
// stays whatever its size (its own lists are bounded by the schema).
func trimHistory(h []v1alpha1.RunRecord) []v1alpha1.RunRecord {
	if len(h) > v1alpha1.MaxRunHistory {
		h = h[len(h)-v1alpha1.MaxRunHistory:]
	}
	size := 0
	for i := len(h) - 1; i >= 0; i-- {
		size += recordBytes(h[i])
		if size > v1alpha1.MaxHistoryBytes && i < len(h)-1 {
			return append([]v1alpha1.RunRecord(nil), h[i+1:]...)
		}
	}
	return h
}

// recordBytes is about what a record takes in JSON: its lists dominate.
func recordBytes(r v1alpha1.RunRecord) int {
	n := 400 + len(r.Scheduling) + len(r.TestBed) + len(r.Message) + 6*len(r.Slots)
	for _, s := range r.Nodes {
		n += len(s) + 3
	}
	for _, s := range r.SharedWith {
		n += len(s) + 3
	}
	return n
}

// ReleasedRun records the status's current run as released at the time now, if its
// application was created and the run did not end: the job is let go of, or a new run
// replaces it. It reports whether it recorded one.
func ReleasedRun(st *v1alpha1.BatchJobStatus, now time.Time, why string) bool {
	if st.Run == 0 || st.State.Ended() || st.Phases == nil || st.Phases.ApplicationCreatedAt == nil {
		return false
	}
	ended := *st.Phases
	if ended.EndedAt == nil {
		ended.EndedAt = &metav1.MicroTime{Time: now.UTC()}
	}
	cp := *st
	cp.Phases = &ended
	RecordRun(&cp, v1alpha1.RunReleased, why, Where{})
	st.History = cp.History
	return true
}
