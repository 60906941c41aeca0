package threadcpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var sink uint64

// A decision's CPU time counts the work, not the time it waited: a sleep of 100 ms costs
// next to nothing, and work costs something, never more than the wall time it took.
func TestOf_CountsWorkNotWaiting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread CPU time is read on Linux only")
	}
	slept, ok := Of(func() { time.Sleep(100 * time.Millisecond) })
	require.True(t, ok)
	require.Less(t, slept, 20*time.Millisecond)

	began := time.Now()
	busy, ok := Of(func() {
		x := uint64(1)
		for i := range 50_000_000 {
			x = x*6364136223846793005 + uint64(i)
		}
		sink = x
	})
	wall := time.Since(began)
	require.True(t, ok)
	require.Positive(t, busy)
	require.LessOrEqual(t, busy, wall+time.Millisecond)
}
