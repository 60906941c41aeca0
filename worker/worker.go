package worker

import (
	"log/slog"
	"runtime/debug"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"slotplane/activities"
	"slotplane/workflows"
)

// DefaultNamespace is the Temporal namespace slotplane uses unless told otherwise.
const DefaultNamespace = "default"

// Pollers is how many long polls the worker keeps open for workflow tasks, and as many for
// activity tasks. The SDK's default of 2 made a burst (eight jobs granted at once, a
// Scheduling's first jobs) queue on the poll: each task waited for a poller to come back
// from handing over the one before. With 8, the orchestration bench's first wave starts about
// a fifth sooner.
const Pollers = 8

// A worker that dies (a crash, an evicted pod) is noticed by the Temporal server only through
// timeouts, and every running job waits on them. In the long run each kill of the worker cost
// 11-12 s before the jobs it ran went on: a wait's heartbeat timeout ran out (5 s), then
// the job's next workflow task went to the dead worker's sticky queue and waited out the
// SDK's default StickyScheduleToStartTimeout (5 s) before the server gave it to anyone.
// StickyTimeout is that timeout here: a live worker takes its sticky tasks in milliseconds,
// and one it does not take within 2 s is replayed from history by any worker (slower, never
// wrong). HeartbeatThrottle is the most the SDK holds a heartbeat back: by default it holds
// them for 80% of the heartbeat timeout, which would leave a wait's timeout
// (workflows.WaitHeartbeatTimeout, three heartbeats) a margin of a fifth; sent as they come,
// they leave two heartbeats' margin.
const (
	StickyTimeout     = 2 * time.Second
	HeartbeatThrottle = activities.HeartbeatEvery
)

// The SDK's deadlock detector fails a workflow task whose code runs a second of wall time
// without yielding. On a starved machine (2,000 slots filling on 2 cores, or a pod at its CPU
// limit) Admission's decisions of a few milliseconds passed that second while the process
// waited for CPU, and each failure cost a replay of the whole run, which starved it more.
// The worker's detector has the workflow task timeout as its bound: it fails a task only
// when the server would have timed it out anyway. How long the tasks take is measured
// (slotplane_admission_decision_seconds, the SDK's workflow task metrics), not enforced.

// New returns a worker of slotplane's task queues with every workflow and activity
// registered; the caller starts and stops it. It polls TaskQueue with Pollers pollers, and
// AdmissionTaskQueue with AdmissionPollers of its own (workflows.AdmissionTaskQueue says
// why). The activities get c to signal-with-start workflows, unless they carry a Temporal
// client already, send Admission's job keys in batches (workflows.AdmissionBatched) unless
// told which messages to batch, and send Admission's messages as updates
// (workflows.AdmissionUpdates) unless told which. What is registered on the worker
// returned is registered on TaskQueue alone.
func New(c client.Client, acts *activities.Activities) sdkworker.Worker {
	if acts.Temporal == nil {
		acts.Temporal = c
	}
	if acts.Batched == nil {
		acts.Batched = workflows.AdmissionBatched
	}
	if acts.Updates == nil {
		acts.Updates = workflows.AdmissionUpdates
	}
	one := func(queue string, pollers int) sdkworker.Worker {
		w := sdkworker.New(c, queue, sdkworker.Options{MaxConcurrentWorkflowTaskPollers: pollers, MaxConcurrentActivityTaskPollers: pollers,
			StickyScheduleToStartTimeout: StickyTimeout, MaxHeartbeatThrottleInterval: HeartbeatThrottle, Identity: Identity,
			DeadlockDetectionTimeout: workflows.TaskTimeout, BuildID: BuildID(),
			Interceptors: []interceptor.WorkerInterceptor{workflows.CopiesInterceptor(acts.Changes)}})
		w.RegisterWorkflow(workflows.TestBedWorkflow)
		w.RegisterWorkflow(workflows.BatchJobWorkflow)
		w.RegisterWorkflow(workflows.SchedulingWorkflow)
		w.RegisterWorkflow(workflows.AdmissionWorkflow)
		w.RegisterActivity(acts)
		return w
	}
	return &pair{Worker: one(workflows.TaskQueue, Pollers), admission: one(workflows.AdmissionTaskQueue, AdmissionPollers)}
}

// AdmissionPollers is how many long polls the worker keeps open on AdmissionTaskQueue for
// workflow tasks, and as many for activity tasks: a bed's Admission runs one task at a time.
const AdmissionPollers = 2

// pair is the worker of TaskQueue with the worker of AdmissionTaskQueue started and stopped
// alongside.
type pair struct {
	sdkworker.Worker
	admission sdkworker.Worker
}

func (p *pair) Start() error {
	if err := p.admission.Start(); err != nil {
		return err
	}
	if err := p.Worker.Start(); err != nil {
		p.admission.Stop()
		return err
	}
	return nil
}

func (p *pair) Run(interrupt <-chan any) error {
	if err := p.admission.Start(); err != nil {
		return err
	}
	defer p.admission.Stop()
	return p.Worker.Run(interrupt)
}

func (p *pair) Stop() {
	p.Worker.Stop()
	p.admission.Stop()
}

// BuildID names the code a worker runs, in the Temporal server's record of which worker
// completed each workflow task: the module's version and the commit the binary was built
// from, as Go stamped them. Given one, the SDK does not make its default, an MD5 of the
// whole executable, which for slotplane's binary (250 MB, the embedded Temporal server and
// its UI included) costs about 0.4 s of CPU at every start, before the worker polls: a
// worker that restarts after a crash, on a machine its jobs keep busy, took that long
// longer to take up their tasks. The build ID is only a label here: slotplane does not use
// Temporal's worker versioning, whose deployment versions the SDK offers instead of this
// field but which do not spare the hash. A binary built without version control stamps
// (go build -buildvcs=false) is "slotplane (devel)".
func BuildID() string {
	id := "slotplane"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return id
	}
	if v := info.Main.Version; v != "" {
		id += " " + v
	}
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			id += " " + s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			id += " (modified)"
		}
	}
	return id
}

// ClientLogger is the Temporal SDK's logger for slotplane's clients and workers: slog's
// default logger, at its level (the SDK's own default prints debug lines to stdout).
func ClientLogger() sdklog.Logger { return sdklog.NewStructuredLogger(slog.Default()) }
