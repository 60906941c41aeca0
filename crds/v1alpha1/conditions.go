package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SetCondition puts c in conds in place of the condition of its type, and says whether the
// condition's status, reason or message changed; when none did, conds stays as it is. The
// transition time stays the old one while the status does, and is c's otherwise. It never
// reads the clock, so code a workflow runs may call it: meta.SetStatusCondition reads it
// when a time is missing.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return false
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return true
	}
	*conds = append(*conds, c)
	return true
}
