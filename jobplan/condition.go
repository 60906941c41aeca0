package jobplan

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// SpecCondition sets the job's SpecAllowed condition from the fields of its wrapped spec
// that the namespace's policy refuses, at the time now, and says whether it changed. A job
// whose spec was never refused carries no such condition.
func SpecCondition(st *v1alpha1.BatchJobStatus, refused []string, now time.Time) bool {
	old := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSpecAllowed)
	want := metav1.Condition{Type: v1alpha1.ConditionSpecAllowed, LastTransitionTime: metav1.NewTime(now), ObservedGeneration: st.ObservedGeneration}
	switch {
	case len(refused) > 0:
		want.Status, want.Reason = metav1.ConditionFalse, v1alpha1.ReasonSpecRefused
		want.Message = "the wrapped spec sets what it may not: " + strings.Join(refused, "; ")
		if len(want.Message) > maxConditionMessage {
			want.Message = want.Message[:maxConditionMessage-3] + "..."
		}
	case old != nil && old.Status != metav1.ConditionTrue:
		want.Status, want.Reason = metav1.ConditionTrue, v1alpha1.ReasonSpecAllowed
		want.Message = "the wrapped spec keeps to the namespace's policy"
	default:
		return false
	}
	return v1alpha1.SetCondition(&st.Conditions, want)
}

// maxConditionMessage keeps a condition's message within what the API server accepts.
const maxConditionMessage = 32768
