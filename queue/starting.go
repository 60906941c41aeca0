package queue

import (
	"fmt"
	"time"
)

// maxStarting is the bound on the jobs starting at once (slotplane.max-starting-apps), 0
// for none.
func (a *Admitter) maxStarting() int {
	if al := a.st.Config.Allocations; al != nil {
		return al.Settings.MaxStartingApps
	}
	return 0
}

// startingRoom is how many more jobs may start now under the bound: the bound less the
// granted jobs still Starting (for less than StartingTimeout, StateAware's fallback), or
// -1 without a bound.
func (a *Admitter) startingRoom(now time.Time) int {
	most := a.maxStarting()
	if most == 0 {
		return -1
	}
	n := 0
	for i := range a.st.Running {
		if e := &a.st.Running[i]; !e.gone && e.State == Starting && now.Sub(e.StartingSince) < StartingTimeout {
			n++
		}
	}
	return max(most-n, 0)
}

// startingFull says every waiting job waits for a granted one to start (startingRoom 0).
func (a *Admitter) startingFull() {
	why := fmt.Sprintf("%d granted jobs are starting, the most %s allows: it waits for one to start", a.maxStarting(), PropMaxStartingApps)
	a.explain = nil
	for i := range a.st.Waiting {
		if e := &a.st.Waiting[i]; !e.gone {
			e.Reason = why
		}
	}
}

// quietStart says whether a granted entry's job need not tell of its start: it counts as
// Running already, from its grant in a leaf that is not StateAware, or from the start it
// told.
func (a *Admitter) quietStart(e *Entry) bool {
	return e.State == Running
}
