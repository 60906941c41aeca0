package replay

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"slotplane/queue"
)

// The seeds' driver deadlock on Replay, worked out by hand. The pool is 12 slots of 4 GB and
// 1 vcore (48 GB, 12 vcores); a driver is 8 GB and 2 vcores, a job's two executors 8 GB and
// 2 vcores more. A job works 60 s once both executors hold their slots and its 10 s start-up
// is over, so driver-first a job that gets its driver at d starts at d+10 s and ends at d+70 s.
func TestDriverDeadlock_OnlyPlainFIFODriverFirstDeadlocks(t *testing.T) {
	s := time.Second
	cases := map[string]struct {
		mode     Mode
		done     int
		makespan time.Duration
		// starts are when each job held all its executors (spark-00 first); nil when none did.
		starts []time.Duration
		// utilization is executor slot-seconds over 12 slots x the run's end.
		utilization float64
		stopped     string
	}{
		// Six drivers take all 48 GB and 12 vcores at 0 s. At 10 s they ask for executors
		// and none is free; nothing was granted after 0 s.
		"fifo, no AM limit": {
			mode:    DriverFirst,
			stopped: "deadlock: nothing granted or finished after 0s; 6 drivers hold 0 executors and wait for more, 4 jobs wait to start",
		},
		// One Starting job at a time: each driver waits for the previous one's executors, so
		// drivers come at 0, 10 and 20 s, and three jobs with their executors fill the pool.
		// Three lanes then run 70 s jobs staggered by 10 s; the fourth job of the first lane
		// (spark-09) gets its driver at 210 s and ends at 280 s. Executors hold
		// 10 x 2 x 60 = 1200 of 12 x 280 = 3360 slot-seconds.
		"stateaware": {
			mode: DriverFirst, done: 10, makespan: 280 * s, utilization: 1200.0 / 3360,
			starts: []time.Duration{10 * s, 20 * s, 30 * s, 80 * s, 90 * s, 100 * s, 150 * s, 160 * s, 170 * s, 220 * s},
		},
		// Half of 48 GB and 12 vcores is three drivers, so three jobs at a time, in rounds of
		// 70 s: 3, 3, 3, 1. Same slot-seconds and makespan as StateAware.
		"fifo, maxAMShare 0.5": {
			mode: DriverFirst, done: 10, makespan: 280 * s, utilization: 1200.0 / 3360,
			starts: []time.Duration{10 * s, 10 * s, 10 * s, 80 * s, 80 * s, 80 * s, 150 * s, 150 * s, 150 * s, 220 * s},
		},
		// Drivers outside the slots: six jobs of two slots at 0 s, four more at 70 s; a gang
		// starts when granted and holds its slots through its start-up, so 10 x 2 x 70 =
		// 1400 of 12 x 140 = 1680 slot-seconds.
		"fifo, gang (slotplane)": {
			mode: Gang, done: 10, makespan: 140 * s, utilization: 1400.0 / 1680,
			starts: []time.Duration{0, 0, 0, 0, 0, 0, 70 * s, 70 * s, 70 * s, 70 * s},
		},
	}
	require.Len(t, DriverDeadlockVariants, len(cases))
	for _, v := range DriverDeadlockVariants {
		t.Run(v.Name, func(t *testing.T) {
			tc, ok := cases[v.Name]
			require.True(t, ok, "no case for variant %q", v.Name)
			require.Equal(t, tc.mode, v.Mode)
			r, err := v.Run()
			require.NoError(t, err)
			require.Equal(t, tc.stopped, r.Stopped)
			require.Equal(t, tc.done, r.Done)
			require.Equal(t, 10-tc.done, r.Unfinished)
			require.Equal(t, tc.makespan, r.Makespan)
			require.InDelta(t, tc.utilization, r.SlotUtilization, 1e-9)
			var starts []time.Duration
			for _, o := range r.Outcomes {
				if o.Started {
					starts = append(starts, o.Start)
				}
			}
			if diff := cmp.Diff(tc.starts, starts); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

// What the plain FIFO deadlock holds: six drivers own the whole pool, every one waits for
// executors that cannot come, and the other four jobs are told nothing is free. The replay
// notices at 10 s, when the drivers' start-ups end and nothing else can happen.
func TestDriverDeadlock_DriversHoldThePool(t *testing.T) {
	r, err := DriverDeadlockVariants[0].Run()
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, r.End)
	require.Equal(t, queue.MBVCores(49152, 12), r.Total)
	held, waiting := queue.Resources{}, 0
	for _, o := range r.Outcomes {
		switch o.Waiting {
		case "holds 0 of its 2 executors":
			held = held.Add(queue.MBVCores(8192, 2))
		case "not enough free resources (0 mb, 0 vcores free, needs 8192 mb, 2 vcores)":
			waiting++
		default:
			t.Errorf("%s: unexpected wait %q", o.Name, o.Waiting)
		}
	}
	require.Equal(t, r.Total, held, "the drivers hold everything")
	require.Equal(t, 4, waiting)
	require.True(t, strings.HasPrefix(r.Stopped, "deadlock:"), r.Stopped)
}

// StateAware's fallback, driver-first: with a 10-minute start-up, job a stays Starting past
// the 5-minute timeout, which lets b's driver in at 5m instead of when a gets an executor
// (10m). a asks for executors at 10m and ends at 11m; b asks at 15m and ends at 16m.
func TestDriverDeadlock_StateAwareFallbackLetsTheNextDriverIn(t *testing.T) {
	r := replayFile(t, `<allocations><queue name="spark"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`,
		`submit,name,queue,user,groups,driver,executors,runtime
0s,a,spark,u,,"1024 mb, 1 vcores",1,1m
0s,b,spark,u,,"1024 mb, 1 vcores",1,1m
`, Options{Slots: 8, SlotSize: queue.MBVCores(1024, 1), Mode: DriverFirst, StartUp: 10 * time.Minute})
	require.Empty(t, r.Stopped)
	require.Equal(t, 10*time.Minute, outcome(t, r, "a").Start)
	require.Equal(t, 11*time.Minute, outcome(t, r, "a").Finish)
	require.Equal(t, queue.StartingTimeout+10*time.Minute, outcome(t, r, "b").Start)
	require.Equal(t, queue.StartingTimeout+11*time.Minute, outcome(t, r, "b").Finish)
}

func BenchmarkDriverDeadlock_StateAware(b *testing.B) {
	v := DriverDeadlockVariants[1]
	for b.Loop() {
		if _, err := v.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDriverDeadlock_Gang(b *testing.B) {
	v := DriverDeadlockVariants[3]
	for b.Loop() {
		if _, err := v.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
