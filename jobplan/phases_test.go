package jobplan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/crds/v1alpha1"
)

// Each wait adds the executors placed since the last; the first times stay; the run is
// running when its last executor was placed.
func TestNotePlaced(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	ph := &v1alpha1.RunPhases{}
	NotePlaced(ph, time.Time{}, []time.Time{t0.Add(time.Second)}, 2)
	require.Nil(t, ph.DriverRunningAt, "no driver seen yet")
	require.Len(t, ph.ExecutorsPlacedAt, 1)
	require.Nil(t, ph.RunningAt, "one executor of two")

	// The next wait reports both executors, the first one seen later than before, and the
	// driver.
	NotePlaced(ph, t0, []time.Time{t0.Add(3 * time.Second), t0.Add(4 * time.Second)}, 2)
	require.True(t, ph.DriverRunningAt.Time.Equal(t0))
	require.Len(t, ph.ExecutorsPlacedAt, 2)
	require.True(t, ph.ExecutorsPlacedAt[0].Time.Equal(t0.Add(time.Second)), "the first time stays")
	require.True(t, ph.RunningAt.Time.Equal(t0.Add(4*time.Second)))

	// Later waits change nothing that was set.
	NotePlaced(ph, t0.Add(time.Minute), []time.Time{t0.Add(time.Minute), t0.Add(time.Minute)}, 2)
	require.True(t, ph.DriverRunningAt.Time.Equal(t0))
	require.True(t, ph.RunningAt.Time.Equal(t0.Add(4*time.Second)))

	// The schema bounds the times kept.
	many := make([]time.Time, maxPlacedTimes+10)
	for i := range many {
		many[i] = t0.Add(time.Duration(i) * time.Millisecond)
	}
	big := &v1alpha1.RunPhases{}
	NotePlaced(big, t0, many, len(many))
	require.Len(t, big.ExecutorsPlacedAt, maxPlacedTimes)
	require.Nil(t, big.RunningAt, "its last executor's time is beyond the bound")
}
