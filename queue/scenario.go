package queue

import (
	"fmt"
	"time"
)

// DriverDeadlockJobs is the seeds' deadlock: 10 Spark jobs submitted at once into one queue
// (root.spark) whose resources fit three drivers and their executors. A driver is 2 vcores
// and 8 GB, each of its 2 executors 1 vcore and 4 GB; the queue has 12 vcores and 48 GB. A
// driver starts up for 10s before it asks for executors; a job works a minute once it has
// them all.
func DriverDeadlockJobs() ([]SimJob, SimOptions) {
	jobs := make([]SimJob, 10)
	for i := range jobs {
		jobs[i] = SimJob{
			ID: fmt.Sprintf("spark-%02d", i), Queue: "root.spark", User: "etl",
			Driver: MBVCores(8192, 2), Executor: MBVCores(4096, 1), Executors: 2,
			StartUp: 10 * time.Second, Work: time.Minute,
		}
	}
	return jobs, SimOptions{Total: MBVCores(3*16384, 12), Limit: time.Hour}
}

// DeadlockVariant is one queue set-up for DriverDeadlockJobs.
type DeadlockVariant struct {
	Name string
	// Policy and MaxAMShare configure root.spark.
	Policy, MaxAMShare string
	// Gang grants a job everything at once, as slotplane's Admission does.
	Gang bool
}

// DriverDeadlockVariants: plain FIFO without an AM limit (it deadlocks), StateAware,
// FIFO with maxAMShare 0.5, and FIFO with gang grants.
var DriverDeadlockVariants = []DeadlockVariant{
	{Name: "fifo, no AM limit", Policy: "fifo", MaxAMShare: "-1.0"},
	{Name: "stateaware", Policy: "stateaware", MaxAMShare: "-1.0"},
	{Name: "fifo, maxAMShare 0.5", Policy: "fifo", MaxAMShare: "0.5"},
	{Name: "fifo, gang (slotplane)", Policy: "fifo", MaxAMShare: "-1.0", Gang: true},
}

// Run simulates DriverDeadlockJobs under the variant.
func (v DeadlockVariant) Run() (SimResult, error) {
	a, err := ParseAllocations(fmt.Appendf(nil, `<allocations>
  <queue name="spark"><schedulingPolicy>%s</schedulingPolicy><maxAMShare>%s</maxAMShare></queue>
</allocations>`, v.Policy, v.MaxAMShare))
	if err != nil {
		return SimResult{}, err
	}
	jobs, opts := DriverDeadlockJobs()
	opts.Gang = v.Gang
	return Simulate(NewTree(a), jobs, opts), nil
}
