package v1alpha1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A new condition is added; a repeat changes nothing; a new message keeps the transition
// time while the status stays; a new status takes the condition's own time.
func TestSetCondition(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 6, 5, m, 0, 0, time.UTC)) }
	other := metav1.Condition{Type: "Other", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: at(0)}
	conds := []metav1.Condition{other}
	c := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "a", LastTransitionTime: at(1)}
	if !SetCondition(&conds, c) || len(conds) != 2 || conds[1] != c {
		t.Fatalf("added: %+v", conds)
	}
	repeat := c
	repeat.LastTransitionTime = at(2)
	if SetCondition(&conds, repeat) || conds[1] != c {
		t.Fatalf("a repeat changed it: %+v", conds)
	}
	msg := c
	msg.Message, msg.LastTransitionTime = "b", at(3)
	if !SetCondition(&conds, msg) || conds[1].Message != "b" || !conds[1].LastTransitionTime.Equal(&c.LastTransitionTime) {
		t.Fatalf("a new message: %+v", conds[1])
	}
	flip := c
	flip.Status, flip.Reason, flip.LastTransitionTime = metav1.ConditionTrue, "Ready", at(4)
	if !SetCondition(&conds, flip) || conds[1] != flip || conds[0] != other {
		t.Fatalf("a new status: %+v", conds)
	}
}
