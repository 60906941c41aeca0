package worker

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdklog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"slotplane/activities"
	"slotplane/installation"
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

// A slotplane worker polls the task queues of its installation (installation.Names):
// Queue runs the test beds', Schedulings' and jobs' workflows and their activities;
// AdmissionQueue runs the beds' Admission workflows and theirs. A worker polls both unless
// told otherwise (ParseQueues). A bed of thousands of slots is better served by a worker of
// AdmissionQueue alone: every grant of the bed waits on Admission's tasks, and in a process
// of its own they wait neither for the CPU that thousands of job workflows share nor for
// their heap's garbage collection.

// ParseQueues reads a list of task queues to poll, separated by commas: each one of the
// installation's, none twice. The empty list is both.
func ParseQueues(ids installation.Names, list string) ([]string, error) {
	all := ids.Queues()
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var queues []string
	for q := range strings.SplitSeq(list, ",") {
		q = strings.TrimSpace(q)
		switch {
		case !slices.Contains(all, q):
			return nil, fmt.Errorf("task queue %q: a slotplane worker polls %s", q, strings.Join(all, " and "))
		case slices.Contains(queues, q):
			return nil, fmt.Errorf("task queue %q is named twice", q)
		}
		queues = append(queues, q)
	}
	return queues, nil
}

// Polls says whether a worker of queues (nil: all of its installation's) polls queue.
func Polls(queues []string, queue string) bool {
	return len(queues) == 0 || slices.Contains(queues, queue)
}

// New returns a worker of the installation ids that polls queues (nil: both of ids), each with
// the workflows it runs and every activity registered; the caller starts and stops it. It
// polls ids.Queue with Pollers pollers and ids.AdmissionQueue with AdmissionPollers. The activities get c to
// signal-with-start workflows, unless they carry a Temporal client already, send Admission's
// job keys in batches (workflows.AdmissionBatched) unless told which messages to batch, and
// send Admission's messages as updates (workflows.AdmissionUpdates) unless told which. What
// is registered on the worker returned is registered on its first queue alone.
func New(c client.Client, acts *activities.Activities, ids installation.Names, queues []string) sdkworker.Worker {
	return NewStopping(c, acts, ids, queues, nil)
}

// NewStopping is New with onFatal called when a task queue's worker stops for good (the SDK's
// OnFatalError: its namespace is gone, its credentials are refused). The SDK's worker then
// polls no more while the process lives on, so the process should end and be restarted.
func NewStopping(c client.Client, acts *activities.Activities, ids installation.Names, queues []string, onFatal func(error)) sdkworker.Worker {
	if acts.Temporal == nil {
		acts.Temporal = c
	}
	if acts.Batched == nil {
		acts.Batched = workflows.AdmissionBatched
	}
	if acts.Updates == nil {
		acts.Updates = workflows.AdmissionUpdates
	}
	if len(queues) == 0 {
		queues = ids.Queues()
	}
	var g group
	for i, queue := range queues {
		admission := queue == ids.AdmissionQueue()
		w := sdkworker.New(c, queue, options(admission, acts, onFatal))
		if admission {
			w.RegisterWorkflow(workflows.AdmissionWorkflow)
		} else {
			w.RegisterWorkflow(workflows.TestBedWorkflow)
			w.RegisterWorkflow(workflows.BatchJobWorkflow)
			w.RegisterWorkflow(workflows.SchedulingWorkflow)
		}
		w.RegisterActivity(acts)
		if i == 0 {
			g.Worker = w
		} else {
			g.others = append(g.others, w)
		}
	}
	return &g
}

// options are the SDK worker's options for a task queue, the Admission queue or the other.
func options(admission bool, acts *activities.Activities, onFatal func(error)) sdkworker.Options {
	pollers := Pollers
	if admission {
		pollers = AdmissionPollers
	}
	return sdkworker.Options{MaxConcurrentWorkflowTaskPollers: pollers, MaxConcurrentActivityTaskPollers: pollers,
		MaxConcurrentActivityExecutionSize: ActivitySlots,
		StickyScheduleToStartTimeout:       StickyTimeout, MaxHeartbeatThrottleInterval: HeartbeatThrottle, Identity: Identity,
		DeadlockDetectionTimeout: workflows.TaskTimeout, BuildID: BuildID(),
		Interceptors: []interceptor.WorkerInterceptor{workflows.CopiesInterceptor(acts.Changes)}, OnFatalError: onFatal}
}

// ActivitySlots is how many activities a worker runs at once on each task queue. Every job
// that starts or runs holds one for as long as it does: its wait for its pods' placement or
// for its end (activities.WaitPlaced, WaitFinished), a goroutine parked on the worker's
// watch that heartbeats. When the slots run out, every other activity of the queue (a
// bed's reconcile, a Scheduling's claims) waits for a job to end: at the SDK's default of
// 1,000, a bed of 8,000 slots that ran 2,000 jobs of 4 slots kept its ghosts and slot
// states as they were for as long as those jobs ran. The bound is ten times the jobs 8,000
// slots run at once; a worker past it shows temporal_worker_task_slots_available at 0.
const ActivitySlots = 100_000

// AdmissionPollers is how many long polls the worker keeps open on AdmissionTaskQueue for
// workflow tasks, and as many for activity tasks. A bed's Admission runs one task at a time,
// but a worker runs every bed's, and the SDK keeps as many of its workflow polls on the
// normal queue, where a running Admission's tasks seldom go, as on the sticky queue until
// that reports a backlog: with 2, ten busy beds mostly shared one poll of the sticky queue,
// a task waited up to 2 s for it, and 8 waited out the sticky timeout into a replay of
// their run.
const AdmissionPollers = 8

// group is the worker of a first task queue, with the workers of the others (if any)
// started and stopped alongside; registrations go to the first.
type group struct {
	sdkworker.Worker
	others []sdkworker.Worker
}

func (g *group) Start() error {
	if err := startAll(g.others); err != nil {
		return err
	}
	if err := g.Worker.Start(); err != nil {
		stopAll(g.others)
		return err
	}
	return nil
}

func (g *group) Run(interrupt <-chan any) error {
	if err := startAll(g.others); err != nil {
		return err
	}
	defer stopAll(g.others)
	return g.Worker.Run(interrupt)
}

func (g *group) Stop() {
	g.Worker.Stop()
	stopAll(g.others)
}

// startAll starts ws in order; when one fails, it stops those it started.
func startAll(ws []sdkworker.Worker) error {
	for i, w := range ws {
		if err := w.Start(); err != nil {
			stopAll(ws[:i])
			return err
		}
	}
	return nil
}

func stopAll(ws []sdkworker.Worker) {
	for _, w := range ws {
		w.Stop()
	}
}

// BuildID names the code a worker runs, in the Temporal server's record of which worker
// completed each workflow task: the module's version and the commit the binary was built
// from, as Go stamped them. Given one, the SDK does not make its default, an MD5 of the
// whole executable, which for slotplane's binary (250 MB, the embedded Temporal server and
// its UI included) costs about 0.4 s of CPU at every start, before the worker polls: a
// worker that restarts after a crash, on a machine its jobs keep busy, would take that
// long longer to take up their tasks. The build ID is only a label here: slotplane does not use
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
