package queue

import (
	"slices"
	"testing"
	"time"
)

// EASY backfill: with backfill on and expected durations, a job that ends before the head
// can start goes first; one that would run past it waits; without a duration nothing
// backfills.
func TestAdmitter_BackfillNeverDelaysTheHead(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy><backfill>true</backfill></queue></allocations>`)
	r := req("running", "q", 3)
	r.Expected = 10 * time.Minute
	a.Request(r)
	a.Decide(t0, bed(4))
	a.Request(req("head", "q", 4))
	short := req("short", "q", 1)
	short.Expected = 5 * time.Minute
	long := req("long", "q", 1)
	long.Expected = time.Hour
	unknown := req("unknown", "q", 1)
	a.Request(long)
	a.Request(unknown)
	a.Request(short)
	got := granted(a.Decide(t0.Add(time.Minute), heldBed(a, 4)))
	if !slices.Equal(got, []string{"short:[3]"}) {
		t.Fatalf("backfilled %v; only the short job ends before the head's start (t0+10m)", got)
	}
}
