package queue

import (
	"fmt"
	"time"
)

// SimJob is one Spark-like application of a simulation: it asks for its driver, and once the
// driver has run for StartUp, for its executors one at a time. It finishes Work after it
// holds all of them.
type SimJob struct {
	ID, Queue, User string
	// Submit is when the job is submitted, from the start of the simulation.
	Submit           time.Duration
	Driver, Executor Resources
	Executors        int
	StartUp, Work    time.Duration
}

// SimOptions set a simulation's cluster and clock.
type SimOptions struct {
	// Total is what the queues share.
	Total Resources
	// Gang: a job gets its driver and all its executors at once, as slotplane's Admission
	// grants slots. Otherwise the driver comes first and executors one by one, as YARN and
	// YuniKorn allocate.
	Gang bool
	// Limit bounds the simulated time: a run that has not finished by then is stuck.
	Limit time.Duration
	// StateAware tunes the StateAware leaves.
	StateAware StateAwareOptions
}

// SimResult is how a simulation ended.
type SimResult struct {
	// Completed counts finished jobs; Makespan is when the last one finished.
	Completed int
	Makespan  time.Duration
	// Stuck: the jobs could not all finish: nothing could be allocated and nothing was left
	// to happen (a deadlock), or Limit passed. At is when it was seen; Drivers and
	// Executors are what the unfinished jobs held then, Held the resources that was.
	Stuck              bool
	At                 time.Duration
	Drivers, Executors int
	Held               Resources
	// Finished is when each job finished.
	Finished map[string]time.Duration
}

// String is one line for a table.
func (r SimResult) String() string {
	if r.Stuck {
		return fmt.Sprintf("stuck at %s: %d of the jobs done; %d drivers and %d executors hold %s", r.At, r.Completed, r.Drivers, r.Executors, r.Held)
	}
	return fmt.Sprintf("all %d done, makespan %s", r.Completed, r.Makespan)
}

// simState is where one job stands.
type simState struct {
	job       SimJob
	driver    bool
	driverAt  time.Duration
	executors int
	finishAt  time.Duration
	done      bool
}

// Simulate runs jobs through the tree's queues with Next deciding every allocation, and
// reports when they finished, or that they could not. It is deterministic: the clock jumps
// from one event (a submission, a driver asking for executors, a job finishing, StateAware's
// starting timeout) to the next.
func Simulate(t *Tree, jobs []SimJob, opts SimOptions) SimResult {
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	states := make([]*simState, len(jobs))
	byID := map[string]*simState{}
	for i, j := range jobs {
		states[i] = &simState{job: j}
		byID[j.ID] = states[i]
	}
	res := SimResult{Finished: map[string]time.Duration{}}
	now := time.Duration(0)
	for {
		// Allocate all the policies allow now.
		for {
			c := Cluster{Total: opts.Total, Now: epoch.Add(now), StateAware: opts.StateAware}
			for i, s := range states {
				if s.done || s.job.Submit > now {
					continue
				}
				j := s.job
				demand := j.Driver.Add(times(j.Executor, int64(j.Executors)))
				a := App{ID: j.ID, Queue: j.Queue, User: j.User, Order: int64(i), AM: j.Driver, Demand: demand}
				switch {
				case !s.driver && opts.Gang:
					a.Ask = demand
				case !s.driver:
					a.Ask = j.Driver
				default:
					a.Running = true
					a.Usage = j.Driver.Add(times(j.Executor, int64(s.executors)))
					a.State, a.StartingSince = Running, epoch.Add(s.driverAt)
					if s.executors == 0 {
						a.State = Starting
					}
					a.Pending = s.executors < j.Executors && now >= s.driverAt+j.StartUp
					a.Ask = j.Executor
				}
				c.Apps = append(c.Apps, a)
			}
			app, _, ok := t.Next(c)
			if !ok {
				break
			}
			s := byID[app.ID]
			switch {
			case !s.driver && opts.Gang:
				s.driver, s.driverAt, s.executors = true, now, s.job.Executors
			case !s.driver:
				s.driver, s.driverAt = true, now
			default:
				s.executors++
			}
			if s.executors == s.job.Executors && s.job.Executors > 0 || s.driver && s.job.Executors == 0 {
				if s.finishAt == 0 {
					// The driver starts up before it uses its executors, however early they came.
					s.finishAt = max(now, s.driverAt+s.job.StartUp) + s.job.Work
				}
			}
		}
		// The next event.
		next, any := time.Duration(0), false
		consider := func(at time.Duration) {
			if at > now && (!any || at < next) {
				next, any = at, true
			}
		}
		left := 0
		for _, s := range states {
			if s.done {
				continue
			}
			left++
			j := s.job
			consider(j.Submit)
			if s.driver {
				consider(s.driverAt + j.StartUp)
				if q := t.Queue(j.Queue); s.executors == 0 && q != nil && t.Policy(q) == PolicyStateAware {
					consider(s.driverAt + StartingTimeout)
				}
			}
			if s.finishAt > 0 {
				consider(s.finishAt)
			}
		}
		if left == 0 {
			return res
		}
		if !any || next > opts.Limit {
			res.Stuck, res.At = true, now
			if any {
				res.At = opts.Limit
			}
			for _, s := range states {
				if !s.done && s.driver {
					res.Drivers++
					res.Executors += s.executors
					res.Held = res.Held.Add(s.job.Driver.Add(times(s.job.Executor, int64(s.executors))))
				}
			}
			return res
		}
		now = next
		for _, s := range states {
			if !s.done && s.finishAt > 0 && s.finishAt <= now {
				s.done = true
				res.Completed++
				res.Finished[s.job.ID] = s.finishAt
				res.Makespan = max(res.Makespan, s.finishAt)
			}
		}
	}
}

// times is n of r: n slots of one size, say.
func times(r Resources, n int64) Resources {
	return Resources{MemoryBytes: r.MemoryBytes * n, MilliCores: r.MilliCores * n}
}
