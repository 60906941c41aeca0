package replay

import (
	"fmt"
	"time"

	"slotplane/apitypes"
	"slotplane/queue"
	"slotplane/simulation"
)

// DriverDeadlockJobs is the seeds' deadlock as a trace: 10 Spark jobs submitted at once into
// one queue (root.spark). A driver is 2 vcores and 8 GB, each of its 2 executors 1 vcore and
// 4 GB; the test bed is 12 slots of one executor each, so the queue has 12 vcores and 48 GB.
// A driver starts up for 10 s; a job then works a minute once both its executors hold their
// slots (in driver-first mode the driver asks for them only after its start-up; in gang mode
// it gets them with its grant and works once the start-up is over). Driver-first, the
// drivers come from the same 12 slots' worth, so three jobs fit with their executors. In gang
// mode the drivers run outside the slots, as slotplane runs them, so six jobs fit.
func DriverDeadlockJobs() ([]simulation.Job, Options) {
	jobs := make([]simulation.Job, 10)
	for i := range jobs {
		jobs[i] = simulation.Job{
			Name: fmt.Sprintf("spark-%02d", i), Queue: "root.spark", User: "etl",
			Driver: apitypes.Resources(queue.MBVCores(8192, 2)), Executors: 2, Runtime: time.Minute,
		}
	}
	return jobs, Options{Slots: 12, SlotSize: queue.MBVCores(4096, 1), StartUp: 10 * time.Second, Limit: time.Hour}
}

// DeadlockVariant is one queue set-up for DriverDeadlockJobs.
type DeadlockVariant struct {
	Name string
	// Policy and MaxAMShare configure root.spark.
	Policy, MaxAMShare string
	// Mode is how the replay grants: DriverFirst (YARN's and YuniKorn's way) or Gang
	// (slotplane's Admission).
	Mode Mode
}

// DriverDeadlockVariants: driver-first under plain FIFO without an AM limit (it deadlocks),
// StateAware, and FIFO with maxAMShare 0.5; then FIFO under slotplane's gang grants.
var DriverDeadlockVariants = []DeadlockVariant{
	{Name: "fifo, no AM limit", Policy: "fifo", MaxAMShare: "-1.0", Mode: DriverFirst},
	{Name: "stateaware", Policy: "stateaware", MaxAMShare: "-1.0", Mode: DriverFirst},
	{Name: "fifo, maxAMShare 0.5", Policy: "fifo", MaxAMShare: "0.5", Mode: DriverFirst},
	{Name: "fifo, gang (slotplane)", Policy: "fifo", MaxAMShare: "-1.0", Mode: Gang},
}

// Run replays DriverDeadlockJobs under the variant.
func (v DeadlockVariant) Run() (Result, error) {
	a, err := queue.ParseAllocations(fmt.Appendf(nil, `<allocations>
  <queue name="spark"><schedulingPolicy>%s</schedulingPolicy><maxAMShare>%s</maxAMShare></queue>
</allocations>`, v.Policy, v.MaxAMShare))
	if err != nil {
		return Result{}, err
	}
	jobs, opts := DriverDeadlockJobs()
	opts.Mode = v.Mode
	return Run(a, jobs, opts)
}
