package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/experiment"
	"slotplane/internal/localplatform/standin"
	"slotplane/queue"
	"slotplane/schedkit"
	"slotplane/schedkit/fifo"
	"slotplane/schedkit/sjf"
	"slotplane/simulation"
	"slotplane/simulation/replay"
)

// Schedulers are the schedulers `slotplane experiment` has built in, by name: the two
// examples, and "queues", which hands every job to the test bed's queues (QueueBased) and
// lets Admission decide.
var Schedulers = map[string]func() schedkit.Scheduler{
	"fifo":   func() schedkit.Scheduler { return fifo.New() },
	"sjf":    func() schedkit.Scheduler { return sjf.New() },
	"queues": func() schedkit.Scheduler { return schedkit.SchedulerFunc(toTheQueues) },
}

// toTheQueues places every waiting job in the queues, with its own count of slots.
func toTheQueues(v *schedkit.View) []schedkit.Placement {
	out := make([]schedkit.Placement, 0, len(v.Waiting))
	for _, j := range v.Waiting {
		out = append(out, schedkit.Placement{Job: j.Name, Replicas: j.Replicas})
	}
	return out
}

// ExperimentOptions are an experiment's inputs.
type ExperimentOptions struct {
	// Trace is the workload (the simulator's CSV); Scale multiplies its submit and run times
	// (0.05 runs a trace of minutes in seconds).
	Trace string
	Scale float64
	// TestBed is the live test bed the jobs run on.
	TestBed string
	// Scheduler is a built-in scheduler's name (Schedulers), or Command an external
	// scheduler to start, with the environment schedkit.FromEnv reads.
	Scheduler string
	Command   []string
	// Name names the experiment: its jobs are <Name>-<trace name>, labelled
	// schedkit.ExperimentLabel=<Name>, and its Schedulings start with it.
	Name string
	// Out is the folder the results go to (made if missing).
	Out string
	// AsTraceUsers submits each job as the trace's user and groups (the token must be
	// allowed to act as them); otherwise as the caller.
	AsTraceUsers bool
	// StartUp is the prediction's time from a grant to running executors; Allocations the
	// allocation file the "queues" scheduler's prediction replays (empty: the example), and
	// Settings its yarn-site.xml (readAllocations).
	StartUp               time.Duration
	Allocations, Settings string
	// Timeout bounds the wait for the jobs to end; what has not ended by then is reported
	// unfinished.
	Timeout time.Duration
	// Image is the image the jobs name (the local platform's stand-in runs none).
	Image string
}

// ExperimentFiles are where an experiment's results went.
type ExperimentFiles struct {
	Runs, Predicted, Report, SchedulerLog string
}

func (o *ExperimentOptions) check() error {
	switch {
	case o.Trace == "":
		return errors.New("-trace names the workload trace (see examples/traces/)")
	case o.Scale <= 0 || o.Scale > 1000:
		return fmt.Errorf("-scale must be above 0 and at most 1000, got %g", o.Scale)
	case (o.Scheduler == "") == (len(o.Command) == 0):
		return fmt.Errorf("name one scheduler: -scheduler %s, or an external one after --", strings.Join(slices.Sorted(maps.Keys(Schedulers)), "|"))
	case o.Scheduler != "" && Schedulers[o.Scheduler] == nil:
		return fmt.Errorf("-scheduler %q is not built in (%s); an external one goes after --", o.Scheduler, strings.Join(slices.Sorted(maps.Keys(Schedulers)), ", "))
	case o.Timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 40 {
		return fmt.Errorf("-name %q must be a DNS label of at most 40 characters (it starts the jobs' names)", o.Name)
	}
	return nil
}

// Experiment runs a trace on the live test bed: it submits the trace's jobs at their
// (scaled) submit times, lets the scheduler place them, waits until they ended, and writes
// every run as CSV, the simulator's prediction for the same trace and policy, and an HTML
// report of both; it prints the figures. The stand-in operators of the local platform run
// each job for its trace run time (standin's sim-duration annotation).
func Experiment(ctx context.Context, conn Connection, o ExperimentOptions, out io.Writer) (*experiment.Result, ExperimentFiles, error) {
	var files ExperimentFiles
	if err := o.check(); err != nil {
		return nil, files, err
	}
	c, err := conn.Client()
	if err != nil {
		return nil, files, err
	}
	trace, err := readTrace(o.Trace)
	if err != nil {
		return nil, files, err
	}
	bed, err := c.GetTestBed(ctx, o.TestBed)
	if err != nil {
		return nil, files, explain(err, conn.Server)
	}
	if len(bed.Status.Slots) == 0 {
		return nil, files, fmt.Errorf("test bed %s has no slots yet", o.TestBed)
	}
	jobs, left := scaleTrace(trace, o.Scale, len(bed.Status.Slots))
	for _, l := range left {
		fmt.Fprintf(out, "experiment: left out %s\n", l)
	}
	if len(jobs) == 0 {
		return nil, files, errors.New("no job of the trace fits the test bed")
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, files, err
	}
	res := &experiment.Result{Name: o.Name, Trace: o.Trace, Scale: o.Scale, Scheduler: cmp.Or(o.Scheduler, strings.Join(o.Command, " ")),
		Bed: experiment.Bed{Name: bed.Name}}
	for _, s := range bed.Status.Slots {
		res.Bed.SlotNodes = append(res.Bed.SlotNodes, s.NodeName)
	}

	runCtx, stopScheduler := context.WithCancel(ctx)
	defer stopScheduler()
	schedDone, logPath, err := startScheduler(runCtx, c, conn, o, out)
	if err != nil {
		return nil, files, err
	}
	files.SchedulerLog = logPath

	fmt.Fprintf(out, "experiment %s: %d jobs of %s (times x%g) on test bed %s (%d slots), scheduler %s\n",
		o.Name, len(jobs), o.Trace, o.Scale, bed.Name, len(bed.Status.Slots), res.Scheduler)
	res.Start = time.Now()
	submitted, err := submitTrace(ctx, c, o, jobs, res.Start)
	if err != nil {
		return nil, files, err
	}
	fmt.Fprintf(out, "experiment %s: every job submitted; waiting for them to end (at most %s)\n", o.Name, o.Timeout)
	final, refused, err := waitEnded(ctx, c, o, jobs, o.Timeout, schedDone)
	stopScheduler()
	if err != nil {
		return nil, files, err
	}
	res.Runs = measuredRuns(jobs, submitted, final, refused, res.Start, o.Name)
	res.Predicted, res.NoPrediction = predict(o, jobs, bed)

	files.Runs, files.Predicted, files.Report = filepath.Join(o.Out, "runs.csv"), filepath.Join(o.Out, "predicted.csv"), filepath.Join(o.Out, "report.html")
	if err := writeFile(files.Runs, func(w io.Writer) error { return experiment.WriteCSV(w, *res) }); err != nil {
		return nil, files, err
	}
	if res.Predicted != nil {
		pred := *res
		pred.Runs, pred.Predicted = res.Predicted.Runs(), nil
		if err := writeFile(files.Predicted, func(w io.Writer) error { return experiment.WriteCSV(w, pred) }); err != nil {
			return nil, files, err
		}
	} else {
		files.Predicted = ""
	}
	if err := writeFile(files.Report, func(w io.Writer) error { return experiment.WriteReport(w, *res) }); err != nil {
		return nil, files, err
	}
	printFigures(out, res, files)
	return res, files, nil
}

// scaleTrace scales the trace's times and leaves out what cannot run: jobs larger than the
// bed (they would wait forever) are named in left.
func scaleTrace(trace []simulation.Job, scale float64, slots int) (jobs []simulation.Job, left []string) {
	for _, j := range trace {
		if j.Executors > slots {
			left = append(left, fmt.Sprintf("%s: %d executors, the test bed has %d slots", j.Name, j.Executors, slots))
			continue
		}
		j.Submit = time.Duration(float64(j.Submit) * scale).Round(time.Millisecond)
		j.Runtime = max(time.Duration(float64(j.Runtime)*scale).Round(time.Millisecond), time.Millisecond)
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b simulation.Job) int { return cmp.Compare(a.Submit, b.Submit) })
	return jobs, left
}

// jobName is the BatchJob of a trace job in an experiment.
func jobName(experimentName, traceName string) string {
	return experimentName + "-" + strings.ToLower(traceName)
}

// startScheduler starts the built-in scheduler in this process, or the external command
// with the scheduler's environment (its output goes to a log in the results folder). The
// channel closes when the scheduler stopped.
func startScheduler(ctx context.Context, c *apiclient.Client, conn Connection, o ExperimentOptions, out io.Writer) (<-chan error, string, error) {
	done := make(chan error, 1)
	if o.Scheduler != "" {
		s := Schedulers[o.Scheduler]()
		opts := schedkit.Options{Client: c, TestBed: o.TestBed, Name: o.Name,
			Select: func(j apitypes.Job) bool { return j.Labels[schedkit.ExperimentLabel] == o.Name }}
		go func() { done <- schedkit.Run(ctx, s, opts) }()
		return done, "", nil
	}
	logPath := filepath.Join(o.Out, "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, o.Command[0], o.Command[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(),
		schedkit.EnvServer+"="+conn.Server, schedkit.EnvToken+"="+conn.Token, schedkit.EnvNamespace+"="+conn.Namespace,
		schedkit.EnvTestBed+"="+o.TestBed, schedkit.EnvExperiment+"="+o.Name)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, "", fmt.Errorf("start the scheduler %q: %w", strings.Join(o.Command, " "), err)
	}
	fmt.Fprintf(out, "experiment %s: scheduler %q started (pid %d), its output in %s\n", o.Name, strings.Join(o.Command, " "), cmd.Process.Pid, logPath)
	go func() {
		err := cmd.Wait()
		logFile.Close()
		if ctx.Err() != nil {
			err = nil // stopped by the experiment
		}
		done <- err
	}()
	return done, logPath, nil
}

// submitTrace creates each job at its submit time after start, and answers when each was
// submitted. A name an earlier experiment took is refused before anything is made.
func submitTrace(ctx context.Context, c *apiclient.Client, o ExperimentOptions, jobs []simulation.Job, start time.Time) (map[string]time.Time, error) {
	for _, j := range jobs {
		name := jobName(o.Name, j.Name)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("job %s: %q is not a BatchJob name: %s", j.Name, name, errs[0])
		}
	}
	if _, err := c.GetJob(ctx, jobName(o.Name, jobs[0].Name)); err == nil {
		return nil, fmt.Errorf("the jobs of an experiment %s exist already: pick another -name", o.Name)
	}
	submitted := map[string]time.Time{}
	for _, j := range jobs {
		if d := time.Until(start.Add(j.Submit)); d > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(d):
			}
		}
		req := apitypes.JobRequest{Name: jobName(o.Name, j.Name), Framework: v1alpha1.FrameworkSpark, Queue: j.Queue,
			Application: v1alpha1.Application{Image: cmp.Or(o.Image, "registry.example/experiment:1"), MainClass: "org.example.Experiment", MainApplicationFile: "local:///opt/experiment.jar"},
			DriverResources: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(max(j.Driver.MilliCores, 100), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(max(j.Driver.MemoryBytes, 64<<20), resource.BinarySI)},
			Labels:        map[string]string{schedkit.ExperimentLabel: o.Name},
			Annotations:   map[string]string{standin.SimDurationAnnotation: j.Runtime.String()},
			SchedulerData: map[string]string{schedkit.ReplicasNote: strconv.Itoa(j.Executors)},
		}
		if o.AsTraceUsers {
			req.User, req.Groups = j.User, j.Groups
		}
		at := time.Now()
		req.SchedulerData[schedkit.ArrivalNote] = at.UTC().Format(time.RFC3339Nano)
		err := retryAPI(ctx, func() error { _, err := c.CreateJob(ctx, req); return err })
		if err != nil {
			return nil, fmt.Errorf("submit %s: %w", req.Name, explain(err, c.Server()))
		}
		submitted[j.Name] = at
	}
	return submitted, nil
}

// retryAPI retries a call the API did not answer (a lost connection, a 5xx, a 429) for a
// while; a refusal comes back at once.
func retryAPI(ctx context.Context, f func() error) error {
	wait := 100 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		s := apiclient.StatusOf(err)
		if err == nil || (s >= 400 && s < 500 && s != 429) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// waitEnded polls the jobs until each has ended once (a run in its history and an ended
// state) or was refused by its queue before it ran (its Scheduling says so: the job never
// got slots), the timeout passes, or the scheduler stops. It answers the jobs as last seen,
// and the refused ones with the reason.
func waitEnded(ctx context.Context, c *apiclient.Client, o ExperimentOptions, jobs []simulation.Job, timeout time.Duration, schedDone <-chan error) (map[string]apitypes.Job, map[string]string, error) {
	deadline := time.After(timeout)
	seen, refused := map[string]apitypes.Job{}, map[string]string{}
	for {
		list, err := c.ListJobs(ctx, apiclient.JobFilter{})
		var scheds apitypes.SchedulingList
		if err == nil {
			scheds, err = c.ListSchedulings(ctx)
		}
		if err == nil {
			clear(seen)
			for _, j := range list.Items {
				if j.Labels[schedkit.ExperimentLabel] == o.Name {
					seen[j.Name] = j
				}
			}
			clear(refused)
			for _, s := range scheds.Items {
				for _, js := range s.Status.Jobs {
					if j, ok := seen[js.Name]; ok && js.State == v1alpha1.JobFailed && len(j.Status.History) == 0 && j.Status.Phases == nil {
						refused[js.Name] = js.Message
					}
				}
			}
			done := 0
			for _, tj := range jobs {
				name := jobName(o.Name, tj.Name)
				if j, ok := seen[name]; ok && (j.Status.State.Ended() && len(j.Status.History) > 0 || refused[name] != "") {
					done++
				}
			}
			if done == len(jobs) {
				return maps.Clone(seen), maps.Clone(refused), nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-deadline:
			return maps.Clone(seen), maps.Clone(refused), nil
		case err := <-schedDone:
			if err != nil {
				return nil, nil, fmt.Errorf("the scheduler stopped: %w", err)
			}
			return nil, nil, errors.New("the scheduler stopped before the jobs ended")
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// measuredRuns are every run of every job, from the jobs' run histories, in the trace's
// order; a job that never ran is one run that reached nothing.
func measuredRuns(jobs []simulation.Job, submitted map[string]time.Time, final map[string]apitypes.Job, refused map[string]string, start time.Time, name string) []experiment.Run {
	var runs []experiment.Run
	for _, tj := range jobs {
		j := final[jobName(name, tj.Name)]
		base := experiment.Run{Job: tj.Name, BatchJob: jobName(name, tj.Name), Queue: cmp.Or(j.Queue, tj.Queue), User: tj.User,
			Arrival: submitted[tj.Name].Sub(start), Expected: tj.Runtime,
			Admitted: experiment.NotReached, Running: experiment.NotReached, Ended: experiment.NotReached}
		if len(j.Status.History) == 0 {
			base.Attempt = 1
			if refused[base.BatchJob] != "" {
				base.Outcome = experiment.OutcomeRefused
			}
			runs = append(runs, base)
			continue
		}
		for i, rec := range j.Status.History {
			r := base
			r.Attempt = i + 1
			r.Admitted = since(start, rec.AdmittedAt)
			r.Running = since(start, rec.RunningAt)
			r.Ended = since(start, rec.EndedAt)
			r.Slots, r.Nodes, r.Outcome = rec.Slots, rec.Nodes, string(rec.Outcome)
			runs = append(runs, r)
		}
	}
	return runs
}

// since is t's offset from start, NotReached when t is missing.
func since(start time.Time, t *metav1.MicroTime) time.Duration {
	if t == nil {
		return experiment.NotReached
	}
	return t.Sub(start)
}

// predict simulates the trace with the experiment's policy: a built-in scheduler's own
// Decide in schedkit's virtual time, or for "queues" the test bed's queues in replay.Run.
// An external scheduler cannot be simulated from here: the reason says so.
func predict(o ExperimentOptions, jobs []simulation.Job, bed apitypes.TestBed) (*experiment.Prediction, string) {
	nodes, perNode := int(bed.Status.Nodes), int(bed.Spec.SlotsPerNode)
	if nodes*perNode != len(bed.Status.Slots) {
		return nil, fmt.Sprintf("the test bed's %d slots are not %d nodes of %d slots: the simulators model whole nodes", len(bed.Status.Slots), nodes, perNode)
	}
	p := &experiment.Prediction{Jobs: map[string]experiment.Run{}}
	switch {
	case o.Scheduler == "queues":
		alloc := cmp.Or(o.Allocations, "the embedded example allocation file")
		_, a, err := readAllocations(o.Allocations, o.Settings)
		if err != nil {
			return nil, fmt.Sprintf("the allocation file cannot be read: %v", err)
		}
		slot := queue.Resources{MemoryBytes: bed.Spec.ResourcesPerSlot.Memory().Value(), MilliCores: bed.Spec.ResourcesPerSlot.Cpu().MilliValue()}
		res, err := replay.Run(a, jobs, replay.Options{Slots: len(bed.Status.Slots), SlotSize: slot, StartUp: o.StartUp})
		if err != nil {
			return nil, fmt.Sprintf("the replay failed: %v", err)
		}
		p.Policy = "the test bed's queues (replay.Run of " + alloc + ")"
		for i, out := range res.Outcomes {
			r := experiment.Run{Job: out.Name, User: out.User, Queue: out.Queue, Attempt: 1, Arrival: out.Submit, Width: jobs[i].Executors,
				Admitted: experiment.NotReached, Running: experiment.NotReached, Ended: experiment.NotReached}
			if out.Refused != "" {
				r.Outcome = experiment.OutcomeRefused
			}
			if out.Started {
				r.Admitted, r.Running = out.Start, out.Start+o.StartUp
			}
			if out.Finished {
				r.Ended = out.Finish
			}
			p.Jobs[out.Name] = r
		}
	case o.Scheduler != "":
		sp, err := schedulerPrediction(o.Scheduler, o.Name, jobs, bed.Name, nodes, perNode, o.StartUp)
		if err != nil {
			return nil, err.Error()
		}
		p = sp
	default:
		return nil, "an external scheduler's policy cannot be simulated from here: run it through schedkit.Simulate in Go for a prediction"
	}
	return p, ""
}

// writeFile writes a file through write, whole or not at all.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// printFigures prints the measured figures beside the predicted ones, and the files.
func printFigures(out io.Writer, r *experiment.Result, files ExperimentFiles) {
	m := experiment.Summarize(r.Runs, len(r.Bed.SlotNodes))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmeasured\tpredicted\t")
	row := func(name string, measured, predicted string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, measured, predicted)
	}
	var p *experiment.Summary
	if r.Predicted != nil {
		s := experiment.Summarize(r.Predicted.Runs(), len(r.Bed.SlotNodes))
		p = &s
	}
	pick := func(f func(experiment.Summary) string) string {
		if p == nil {
			return "-"
		}
		return f(*p)
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s" }
	row("makespan", secs(m.Makespan), pick(func(s experiment.Summary) string { return secs(s.Makespan) }))
	row("mean wait", secs(m.MeanWait), pick(func(s experiment.Summary) string { return secs(s.MeanWait) }))
	row("p95 wait", secs(m.P95Wait), pick(func(s experiment.Summary) string { return secs(s.P95Wait) }))
	row("slot utilization", fmt.Sprintf("%.1f %%", 100*m.Utilization), pick(func(s experiment.Summary) string { return fmt.Sprintf("%.1f %%", 100*s.Utilization) }))
	row("fairness (Jain)", fmt.Sprintf("%.3f", m.Fairness), pick(func(s experiment.Summary) string { return fmt.Sprintf("%.3f", s.Fairness) }))
	row("completed / failed / refused / unfinished", fmt.Sprintf("%d / %d / %d / %d", m.Completed, m.Failed, m.Refused, m.Unfinished),
		pick(func(s experiment.Summary) string {
			return fmt.Sprintf("%d / %d / %d / %d", s.Completed, s.Failed, s.Refused, s.Unfinished)
		}))
	tw.Flush()
	if r.Predicted != nil {
		g := experiment.CompareWith(r.Runs, r.Predicted)
		fmt.Fprintf(out, "measured against predicted (%s): makespan ratio %.2f; start times later by %s on average (|p50| %s, |p95| %s) over %d jobs\n",
			r.Predicted.Policy, g.MakespanRatio, g.MeanStartDiff.Round(time.Millisecond), g.P50AbsStartDiff.Round(time.Millisecond), g.P95AbsStartDiff.Round(time.Millisecond), g.Compared)
	} else {
		fmt.Fprintf(out, "no prediction: %s\n", r.NoPrediction)
	}
	fmt.Fprintf(out, "runs: %s\n", files.Runs)
	if files.Predicted != "" {
		fmt.Fprintf(out, "predicted: %s\n", files.Predicted)
	}
	fmt.Fprintf(out, "report: %s\n", files.Report)
}

// schedulerPrediction runs a built-in scheduler's own Decide on the jobs in schedkit's
// virtual time, on a bed of whole nodes; the jobs are named as the experiment named (or
// would name) their BatchJobs, so that the scheduler sees the same names.
func schedulerPrediction(scheduler, experimentName string, jobs []simulation.Job, bed string, nodes, perNode int, startUp time.Duration) (*experiment.Prediction, error) {
	sim := make([]simulation.Job, 0, len(jobs))
	for _, j := range jobs {
		if experimentName != "" {
			j.Name = jobName(experimentName, j.Name)
		}
		sim = append(sim, j)
	}
	runs, err := schedkit.Simulate(Schedulers[scheduler](), sim, schedkit.SimBed{Name: bed, Nodes: nodes, SlotsPerNode: perNode}, schedkit.SimOptions{StartUp: startUp})
	if err != nil {
		return nil, fmt.Errorf("the simulation failed: %w", err)
	}
	p := &experiment.Prediction{Policy: "scheduler " + scheduler + " in schedkit.Simulate", Jobs: map[string]experiment.Run{}}
	for i, r := range runs {
		j := jobs[i]
		p.Jobs[j.Name] = experiment.Run{Job: j.Name, User: j.User, Queue: j.Queue, Attempt: 1, Arrival: r.Arrival, Width: j.Executors,
			Admitted: r.Admitted, Running: r.Running, Ended: r.Ended, Slots: r.Slots, Nodes: r.Nodes}
	}
	return p, nil
}
