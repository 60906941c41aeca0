package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func decide(t *testing.T, apps []StateApp, now time.Time, opts StateAwareOptions, schedulable, held []string) {
	t.Helper()
	d := StateAware(apps, now, opts)
	if diff := cmp.Diff(StateAwareDecision{Schedulable: schedulable, HeldBack: held}, d); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// The seeds' example run, step by step: App1 then App2 into one StateAware queue.
func TestStateAware_TheApp1App2Run(t *testing.T) {
	app1 := StateApp{ID: "App1", Order: 1, State: Accepted, Pending: true}
	app2 := StateApp{ID: "App2", Order: 2, State: Accepted, Pending: true}
	none := StateAwareOptions{}

	// 1-2: both wait for their drivers; only the oldest accepted one is scheduled.
	decide(t, []StateApp{app2, app1}, t0, none, []string{"App1"}, []string{"App2"})
	// App1 gets D1 and is Starting; it asks for E11 and E12. App2's driver request waits.
	app1.State, app1.StartingSince = Starting, t0
	decide(t, []StateApp{app1, app2}, t0.Add(time.Second), none, []string{"App1"}, []string{"App2"})
	// 3: E11 and E12 allocated: App1 is Running and asks for nothing more.
	app1.State, app1.Pending = Running, false
	// 4: no application is Starting: App2, accepted, is scheduled and gets D2.
	decide(t, []StateApp{app1, app2}, t0.Add(2*time.Second), none, []string{"App2"}, nil)
	app2.State, app2.StartingSince = Starting, t0.Add(2*time.Second)
	decide(t, []StateApp{app1, app2}, t0.Add(3*time.Second), none, []string{"App2"}, nil)
	// 5: E21 allocated: App2 Running. A running app that asks again is served first in, first out.
	app2.State = Running
	app1.Pending, app2.Pending = true, true
	decide(t, []StateApp{app2, app1}, t0.Add(4*time.Second), none, []string{"App1", "App2"}, nil)
}

// An application stuck Starting holds the queue for five minutes, then counts as Running.
func TestStateAware_StartingFallback(t *testing.T) {
	stuck := StateApp{ID: "stuck", Order: 1, State: Starting, StartingSince: t0, Pending: true}
	next := StateApp{ID: "next", Order: 2, State: Accepted, Pending: true}
	decide(t, []StateApp{stuck, next}, t0.Add(StartingTimeout-time.Second), StateAwareOptions{}, []string{"stuck"}, []string{"next"})
	decide(t, []StateApp{stuck, next}, t0.Add(StartingTimeout), StateAwareOptions{}, []string{"stuck", "next"}, nil)
}

// The documented options for the weaknesses that got StateAware deprecated upstream.
func TestStateAware_Options(t *testing.T) {
	driverOnly := StateApp{ID: "driver-only", Order: 1, State: Starting, StartingSince: t0, Pending: true, NoExecutors: true}
	next := StateApp{ID: "next", Order: 2, State: Accepted, Pending: true}
	decide(t, []StateApp{driverOnly, next}, t0.Add(time.Minute), StateAwareOptions{}, []string{"driver-only"}, []string{"next"})
	decide(t, []StateApp{driverOnly, next}, t0.Add(time.Minute), StateAwareOptions{SkipStartingWithoutExecutors: true}, []string{"driver-only", "next"}, nil)

	slotted := StateApp{ID: "slotted", Order: 1, State: Starting, StartingSince: t0, Pending: true, SlotBacked: true}
	decide(t, []StateApp{slotted, next}, t0.Add(time.Minute), StateAwareOptions{}, []string{"slotted"}, []string{"next"})
	decide(t, []StateApp{slotted, next}, t0.Add(time.Minute), StateAwareOptions{SlotBackedDoNotHold: true}, []string{"slotted", "next"}, nil)

	// Completed and satisfied applications are neither scheduled nor held.
	done := StateApp{ID: "done", Order: 0, State: Completed, Pending: true}
	idle := StateApp{ID: "idle", Order: 3, State: Accepted}
	decide(t, []StateApp{done, idle, next}, t0, StateAwareOptions{}, []string{"next"}, nil)
}
