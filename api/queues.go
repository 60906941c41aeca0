package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
	"slotplane/workflows"
)

// The forms of the queues answer (?format=): slotplane's own, and the YARN
// ResourceManager's scheduler answer for the Fair Scheduler.
const (
	queuesFormatDefault = ""
	queuesFormatYARN    = "yarn"
)

// getQueues answers a test bed's queue picture: each queue's shares, usage and pending
// demand, and the first waiting and running jobs (?limit=, 500 unless asked; 0 for none),
// each waiting one with the reason it waits; or, with ?format=yarn, the queues as YARN's
// ResourceManager shows a Fair Scheduler's. It is the Admission workflow's queues query.
func (s *server) getQueues(c *gin.Context) {
	format := c.Query("format")
	if format != queuesFormatDefault && format != queuesFormatYARN {
		fail(c, invalid(apitypes.FieldError{Field: "format", Message: fmt.Sprintf("%q is not a form of the answer: leave it out, or yarn for the ResourceManager's scheduler answer", format)}))
		return
	}
	opts := workflows.ReportOptions{Jobs: -1}
	if format == queuesFormatDefault {
		limit, err := queuesLimit(c.Query("limit"))
		if err != nil {
			fail(c, err)
			return
		}
		opts.Jobs = limit
	}
	var tb v1alpha1.TestBed
	if err := s.get(c, "test bed", &tb); err != nil {
		fail(c, err)
		return
	}
	v, err := s.Temporal.QueryWorkflow(c.Request.Context(), s.IDs.AdmissionID(tb.Namespace, tb.Name), "", workflows.QueuesQuery, opts)
	var report workflows.AdmissionReport
	if err == nil {
		err = v.Get(&report)
	}
	if err != nil {
		fail(c, temporalError(err, fmt.Sprintf("test bed %s has no queues yet: they start with its first Scheduling", tb.Name)))
		return
	}
	if format == queuesFormatYARN {
		c.JSON(http.StatusOK, yarnSchedulerOf(&report))
		return
	}
	c.JSON(http.StatusOK, queueTreeOf(tb.Name, &report))
}

// maxQueuesLimit bounds ?limit= of the queues answer: 10,000 jobs of each list is some 4 MB
// of JSON.
const maxQueuesLimit = 10000

// queuesLimit reads ?limit= as report options' Jobs: "" the default, 0 none.
func queuesLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxQueuesLimit {
		return 0, invalid(apitypes.FieldError{Field: "limit", Message: fmt.Sprintf("%q is not a number of jobs from 0 to %d", v, maxQueuesLimit)})
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

func resourcesOf(r queue.Resources) apitypes.Resources {
	return apitypes.Resources{MemoryBytes: r.MemoryBytes, MilliCores: r.MilliCores}
}

func queueTreeOf(bed string, r *workflows.AdmissionReport) apitypes.QueueTree {
	out := apitypes.QueueTree{TestBed: bed, ConfigVersion: r.ConfigVersion, ConfigError: r.ConfigError, Queues: []apitypes.Queue{}, Waiting: []apitypes.QueuedJob{}, Running: []apitypes.QueuedJob{},
		Warnings: slices.Clone(r.Warnings), MoreWaiting: r.MoreWaiting, MoreRunning: r.MoreRunning}
	for _, i := range r.Ignored {
		out.Ignored = append(out.Ignored, i.String())
	}
	for _, d := range r.Deprecated {
		out.Deprecated = append(out.Deprecated, d.String())
	}
	if r.ConfigVersion != "" || r.ConfigError != "" || len(r.Queues) > 0 {
		for _, p := range r.Settings.Properties() {
			out.Settings = append(out.Settings, apitypes.Setting{Name: p.Name, Value: p.Value})
		}
	}
	for _, q := range r.Queues {
		out.Queues = append(out.Queues, apitypes.Queue{Path: q.Path, Leaf: q.Leaf, SteadyShare: resourcesOf(q.SteadyShare), FairShare: resourcesOf(q.FairShare),
			Usage: resourcesOf(q.Usage), Demand: resourcesOf(q.Demand), PendingDemand: resourcesOf(q.PendingDemand),
			MinResources: resourcesOf(q.MinResources), MaxResources: resourcesOf(q.MaxResources), RunningJobs: q.RunningJobs, WaitingJobs: q.WaitingJobs})
	}
	entry := func(e workflows.AdmissionEntry) apitypes.QueuedJob {
		return apitypes.QueuedJob{Job: e.Request.Job, Scheduling: e.Request.Scheduling, Queue: e.Queue, User: e.Request.User, Slots: e.Request.Slots,
			SlotIDs: e.Request.SlotIDs, Priority: e.Request.Priority, Granted: e.Slots, State: string(e.State), Reason: e.Reason, Preempted: e.Preempted}
	}
	for _, e := range r.Waiting {
		out.Waiting = append(out.Waiting, entry(e))
	}
	for _, e := range r.Running {
		j := entry(e)
		if j.State == "" {
			j.State = "Running"
		}
		out.Running = append(out.Running, j)
	}
	return out
}

// yarnSchedulerOf is the queue picture in the shape of the YARN ResourceManager's scheduler
// answer for the Fair Scheduler: the tree from root, each queue with its children. The
// report lists every queue depth first, a parent before its children.
func yarnSchedulerOf(r *workflows.AdmissionReport) apitypes.YARNScheduler {
	var cluster queue.Resources
	for _, q := range r.Queues {
		if q.Path == "root" {
			cluster = q.SteadyShare // root's steady share is the whole test bed
		}
	}
	type node struct {
		q        apitypes.YARNQueue
		children []string
	}
	nodes := map[string]*node{}
	for _, q := range r.Queues {
		limit := q.MaxResources
		if !cluster.IsZero() {
			limit = limit.Min(cluster) // as the ResourceManager shows a limit above the cluster
		}
		y := apitypes.YARNQueue{QueueName: q.Path, SchedulingPolicy: string(q.Policy),
			UsedResources: yarnResources(q.Usage), MinResources: yarnResources(q.MinResources), MaxResources: yarnResources(limit),
			FairResources: yarnResources(q.FairShare), SteadyFairResources: yarnResources(q.SteadyShare), DemandResources: yarnResources(q.Demand),
			ClusterResources: yarnResources(cluster), NumActiveApps: q.RunningJobs, NumPendingApps: q.WaitingJobs}
		if q.Leaf {
			y.Type = "fairSchedulerLeafQueueInfo"
		}
		nodes[q.Path] = &node{q: y}
		if i := strings.LastIndex(q.Path, "."); i > 0 {
			if parent := nodes[q.Path[:i]]; parent != nil {
				parent.children = append(parent.children, q.Path)
			}
		}
	}
	var build func(path string) apitypes.YARNQueue
	build = func(path string) apitypes.YARNQueue {
		n := nodes[path]
		out := n.q
		if len(n.children) > 0 {
			out.ChildQueues = &apitypes.YARNQueueList{Queue: make([]apitypes.YARNQueue, 0, len(n.children))}
			for _, c := range n.children {
				out.ChildQueues.Queue = append(out.ChildQueues.Queue, build(c))
			}
		}
		return out
	}
	root := apitypes.YARNQueue{QueueName: "root"}
	if nodes["root"] != nil {
		root = build("root")
	}
	return apitypes.YARNScheduler{Scheduler: apitypes.YARNSchedulerWrapper{SchedulerInfo: apitypes.YARNSchedulerInfo{Type: "fairScheduler", RootQueue: root}}}
}

// yarnResources is an exact amount in YARN's units, whole MB and whole vcores, each rounded
// to the nearest.
func yarnResources(r queue.Resources) apitypes.YARNResources {
	const mb, milliPerVCore = 1 << 20, 1000
	return apitypes.YARNResources{Memory: (r.MemoryBytes + mb/2) / mb, VCores: (r.MilliCores + milliPerVCore/2) / milliPerVCore}
}

// moveJob moves a queued or running job to another queue, on behalf of the caller: the
// Admission workflow's move update checks the caller's right (the job's user, or an
// administrator of its queue), the target, and its limits.
func (s *server) moveJob(c *gin.Context) {
	var req apitypes.MoveRequest
	if err := decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	if req.Queue == "" || !queuePath.MatchString(req.Queue) {
		fail(c, invalid(apitypes.FieldError{Field: "queue", Message: fmt.Sprintf("%q is not a queue path such as root.analytics", req.Queue)}))
		return
	}
	job, sched, bed, ok := s.heldJob(c, "so in no queue")
	if !ok {
		return
	}
	user := userOf(c)
	var moved workflows.AdmissionMoved
	move := workflows.AdmissionMove{Scheduling: sched, Job: job.Name, Queue: req.Queue, By: user.Name, ByGroups: user.Groups}
	if err := s.updateAdmission(c, job.Namespace, bed, workflows.AdmissionMoveUpdate, move, &moved); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apitypes.MoveResult{Job: moved.Job, From: moved.From, To: moved.To})
}

// heldJob reads the request's BatchJob, the Scheduling that holds it and that Scheduling's
// test bed (the job's status names it once a run began). A job no Scheduling holds is
// answered 409, its message ending with none; ok is false once an answer was sent.
func (s *server) heldJob(c *gin.Context, none string) (job v1alpha1.BatchJob, scheduling, bed string, ok bool) {
	if err := s.get(c, "batch job", &job); err != nil {
		fail(c, err)
		return job, "", "", false
	}
	scheduling, bed = job.Labels[v1alpha1.ActiveSchedulingLabel], job.Status.TestBed
	if scheduling != "" && bed == "" {
		var sched v1alpha1.Scheduling
		if err := s.Client.Get(c.Request.Context(), keyOf(job.Namespace, scheduling), &sched); err == nil {
			bed = sched.Spec.TestBed
		}
	}
	if scheduling == "" || bed == "" {
		fail(c, &apitypes.Error{Code: apitypes.CodeConflict, Message: fmt.Sprintf("batch job %s is in no Scheduling, %s", job.Name, none), Status: http.StatusConflict})
		return job, "", "", false
	}
	return job, scheduling, bed, true
}

// updateAdmission sends an update to a test bed's Admission workflow as the caller's request
// and decodes its answer into out, waiting for it; a refusal or a missing workflow comes back
// as the error to answer (temporalError).
func (s *server) updateAdmission(c *gin.Context, namespace, bed, update string, arg, out any) *apitypes.Error {
	handle, err := s.Temporal.UpdateWorkflow(c.Request.Context(), temporalclient.UpdateWorkflowOptions{
		WorkflowID: s.IDs.AdmissionID(namespace, bed), UpdateName: update,
		Args: []any{arg}, WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = handle.Get(c.Request.Context(), out)
	}
	if err != nil {
		return temporalError(err, fmt.Sprintf("test bed %s has no queues yet", bed))
	}
	return nil
}

// temporalError maps a failed query or update: a missing workflow is a 404 saying
// missing; a rejected move keeps its reason under the status its kind calls for.
func temporalError(err error, missing string) *apitypes.Error {
	var nf *serviceerror.NotFound
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &nf):
		return notFound("%s", missing)
	case errors.As(err, &app):
		status, code := http.StatusUnprocessableEntity, apitypes.CodeInvalid
		switch app.Type() {
		case workflows.MoveForbidden:
			status, code = http.StatusForbidden, apitypes.CodeForbidden
		case workflows.MoveNotFound:
			status, code = http.StatusConflict, apitypes.CodeConflict
		case workflows.MoveNotReady:
			status, code = http.StatusServiceUnavailable, apitypes.CodeUnavailable
		}
		return &apitypes.Error{Code: code, Message: app.Message(), Status: status}
	}
	return &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "Temporal: " + err.Error(), Status: http.StatusServiceUnavailable}
}
