package jobplan

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// A refused spec sets SpecAllowed False with the fields; a spec that keeps to the policy
// again sets it True; a job never refused carries no condition; a repeat changes nothing,
// and the transition time moves only when the status does.
func TestSpecCondition(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	st := &v1alpha1.BatchJobStatus{ObservedGeneration: 3}
	require.False(t, SpecCondition(st, nil, t0), "never refused: no condition")
	require.Empty(t, st.Conditions)

	require.True(t, SpecCondition(st, []string{"spec.driver.hostNetwork", "spec.volumes"}, t0))
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSpecAllowed)
	require.Equal(t, metav1.ConditionFalse, c.Status)
	require.Equal(t, v1alpha1.ReasonSpecRefused, c.Reason)
	require.Equal(t, "the wrapped spec sets what it may not: spec.driver.hostNetwork; spec.volumes", c.Message)
	require.Equal(t, int64(3), c.ObservedGeneration)
	require.False(t, SpecCondition(st, []string{"spec.driver.hostNetwork", "spec.volumes"}, t0.Add(time.Minute)), "the same refusal")

	require.True(t, SpecCondition(st, []string{"spec.volumes"}, t0.Add(time.Minute)), "fewer fields refused")
	c = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSpecAllowed)
	require.True(t, c.LastTransitionTime.Time.Equal(t0), "still False: the transition stays")

	require.True(t, SpecCondition(st, nil, t0.Add(2*time.Minute)))
	c = meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSpecAllowed)
	require.Equal(t, metav1.ConditionTrue, c.Status)
	require.Equal(t, v1alpha1.ReasonSpecAllowed, c.Reason)
	require.True(t, c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)))
	require.False(t, SpecCondition(st, nil, t0.Add(3*time.Minute)), "allowed again: nothing changes")
	require.Len(t, st.Conditions, 1)

	long := []string{strings.Repeat("x", 40000)}
	require.True(t, SpecCondition(st, long, t0))
	require.LessOrEqual(t, len(meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSpecAllowed).Message), 32768)
}
