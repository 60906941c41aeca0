package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The driver deadlock of the seeds: under plain FIFO without an AM limit the drivers take
// the whole queue and no executor ever starts; StateAware's drip-feed, maxAMShare, or
// slotplane's gang grants finish all ten. The makespans go to the test log.
func TestSimulate_TheDriverDeadlock(t *testing.T) {
	results := map[string]SimResult{}
	for _, v := range DriverDeadlockVariants {
		r, err := v.Run()
		require.NoError(t, err)
		results[v.Name] = r
		t.Logf("%-24s %s", v.Name, r)
	}

	fifo := results["fifo, no AM limit"]
	require.True(t, fifo.Stuck, "plain FIFO deadlocks")
	require.Zero(t, fifo.Completed)
	require.Equal(t, 6, fifo.Drivers, "six drivers take all 12 vcores")
	require.Zero(t, fifo.Executors, "and no executor ever starts")
	require.Equal(t, MBVCores(6*8192, 12), fifo.Held)

	for _, name := range []string{"stateaware", "fifo, maxAMShare 0.5", "fifo, gang (slotplane)"} {
		r := results[name]
		require.False(t, r.Stuck, "%s: %s", name, r)
		require.Equal(t, 10, r.Completed, name)
	}
	// Three jobs run at a time under each, so one of the three lanes runs four jobs of 10s
	// start-up and a minute of work. StateAware staggers the lanes by a start-up each, which
	// the last lane's head start hides; gang grants come to the same without the risk.
	require.Equal(t, 10*time.Second, fifo.At, "stuck once the drivers ask for executors")
	require.Equal(t, 4*70*time.Second, results["fifo, maxAMShare 0.5"].Makespan)
	require.Equal(t, 4*70*time.Second, results["stateaware"].Makespan)
	require.Equal(t, 4*70*time.Second, results["fifo, gang (slotplane)"].Makespan)
}

// StateAware's fallback: a driver that never asks for executors holds its queue for the five
// minutes of the starting timeout, then the next application starts.
func TestSimulate_StateAwareFallback(t *testing.T) {
	jobs := []SimJob{
		{ID: "driver-only", Queue: "root.spark", Driver: MBVCores(1024, 1), Executor: MBVCores(1024, 1), Executors: 1, StartUp: time.Hour, Work: time.Minute},
		{ID: "next", Queue: "root.spark", Driver: MBVCores(1024, 1), Executor: MBVCores(1024, 1), Executors: 1, StartUp: time.Second, Work: time.Minute},
	}
	opts := SimOptions{Total: MBVCores(8192, 8), Limit: 3 * time.Hour}
	r := Simulate(spark(t, "stateaware"), jobs, opts)
	require.False(t, r.Stuck, "%s", r)
	require.Equal(t, StartingTimeout+time.Second+time.Minute, r.Finished["next"], "next starts when the fallback lets driver-only count as running")
	require.Equal(t, time.Hour+time.Minute, r.Finished["driver-only"])
}

func spark(t testing.TB, policy string) *Tree {
	a, err := ParseAllocations([]byte(`<allocations><queue name="spark"><schedulingPolicy>` + policy + `</schedulingPolicy></queue></allocations>`))
	require.NoError(t, err)
	return NewTree(a)
}

func BenchmarkSimulate_DriverDeadlockStateAware(b *testing.B) {
	v := DriverDeadlockVariants[1]
	for b.Loop() {
		if _, err := v.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
