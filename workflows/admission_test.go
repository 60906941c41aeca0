package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/metrics"
	"slotplane/queue"
)

// allocFile is the allocation file as the fake ConfigMap holds it.
type allocFile struct {
	Exists        bool
	Data, Version string
	// Settings is the yarn-site.xml next to it ("": none).
	Settings string
}

func jk(scheduling, job string) queue.JobKey {
	return queue.JobKey{Scheduling: scheduling, SchedulingUID: "uid-" + scheduling, Job: job, Run: 1}
}

type admissionWorld struct {
	mu   sync.Mutex
	file allocFile
	// malformed are file versions the activity hands over broken (a parse result without a
	// root queue, which the queue core cannot build), as a bug on the far side of the
	// activity boundary would.
	malformed map[string]bool
	// loads are the LoadAllocationFile calls, each true when it asked for the API server's
	// file (Fresh).
	loads []bool
	// gone are Scheduling workflows that are not there: a signal to them fails.
	gone map[string]bool
	// unheld says why nobody holds a key any more ("": held).
	unheld func(queue.JobKey) string
	// inUse are runs granted in the bed as the jobs show them: CheckHolds finds those the
	// workflow does not hold.
	inUse  []activities.FoundGrant
	grants []AdmissionGrant
	at     []time.Time // when each grant was sent (the test clock)
	// signals are the grant signals as sent: the workflow each went to, and its grants.
	signals []grantSignal
	// queues are the queues written to jobs' statuses ("scheduling/job" -> queue), and
	// recordFails how many RecordQueues attempts fail first.
	queues      map[string]string
	recordFails int
	// written counts the queue writes of each job ("scheduling/job").
	written map[string]int
	// kills are the kills written on jobs.
	kills []activities.KillJobInput
	// calls are the grants each SignalWorkflows call carried.
	calls []int
}

func (w *admissionWorld) queueOf(scheduling, job string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queues[scheduling+"/"+job]
}

// newAdmissionEnv is a test environment of an Admission workflow on nSlots slots; the
// workflow's metrics go to m when given.
func newAdmissionEnv(t *testing.T, w *admissionWorld, nSlots int, m ...*metrics.Temporal) *testsuite.TestWorkflowEnvironment {
	env := workflowEnv(AdmissionWorkflow, m...)
	positions := make([]int32, nSlots)
	for i := range positions {
		positions[i] = int32(i)
	}
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(activities.TestBedSlots{
		Exists: true, Positions: positions, Free: positions,
		SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}, nil)
	env.OnActivity(acts.LoadAllocationFile, mock.Anything, mock.Anything).Return(func(_ context.Context, ref activities.AllocationFileRef) (*queue.ConfigUpdate, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.loads = append(w.loads, ref.Fresh)
		held := queue.Config{Version: ref.Version, RejectedVersion: ref.RejectedVersion}
		u := queue.ReadConfigFiles(held, queue.ConfigFiles{Allocations: []byte(w.file.Data), HasAllocations: w.file.Exists,
			Settings: []byte(w.file.Settings), HasSettings: w.file.Settings != ""}, w.file.Version)
		if u != nil && w.malformed[u.Version] {
			u.Allocations, u.Rejected = &queue.Allocations{}, ""
		}
		return u, nil
	})
	env.OnActivity(acts.CheckHolds, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CheckHoldsInput) (activities.HoldsCheck, error) {
		var out activities.HoldsCheck
		known := map[queue.JobKey]bool{}
		for _, k := range in.Keys {
			known[k] = true
			if w.unheld != nil && w.unheld(k) != "" {
				out.Unheld = append(out.Unheld, activities.Unheld{Key: k, Reason: w.unheld(k)})
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, f := range w.inUse {
			if !known[f.Key] && in.TestBed != "" {
				out.Found = append(out.Found, f)
			}
		}
		return out, nil
	})
	env.OnActivity(acts.RecordQueues, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.RecordQueuesInput) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.recordFails > 0 {
			w.recordFails--
			return errors.New("the API server is away")
		}
		if w.queues == nil {
			w.queues = map[string]string{}
		}
		if w.written == nil {
			w.written = map[string]int{}
		}
		for _, p := range in.Placements {
			w.queues[p.Scheduling+"/"+p.Job] = p.Queue
			w.written[p.Scheduling+"/"+p.Job]++
		}
		return nil
	})
	env.OnActivity(acts.KillJob, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.KillJobInput) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.kills = append(w.kills, in)
		return nil
	})
	deliver := func(id string, gs ...AdmissionGrant) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.signals = append(w.signals, grantSignal{id, gs})
		if w.gone[id] {
			return errors.New("workflow not found")
		}
		for _, g := range gs {
			w.grants = append(w.grants, g)
			w.at = append(w.at, env.Now())
		}
		return nil
	}
	onSignalsCounting(env, map[string]func(string, any) error{
		AdmittedBatchSignal: func(id string, arg any) error { return deliver(id, arg.([]AdmissionGrant)...) },
	}, &w.calls)
	return env
}

// queryReport reads Admission's queue report (QueuesQuery) into into.
func queryReport(t *testing.T, env *testsuite.TestWorkflowEnvironment, into *AdmissionReport) {
	t.Helper()
	v, err := env.QueryWorkflow(QueuesQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(into))
}

// reportAt is Admission's queue report as the workflow answers it at time at of the test
// clock; it is filled in then.
func reportAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration) *AdmissionReport {
	r := &AdmissionReport{}
	env.RegisterDelayedCallback(func() { queryReport(t, env, r) }, at)
	return r
}

// grantSignal is one signal of grants: its workflow, and the grants it carries.
type grantSignal struct {
	to     string
	grants []AdmissionGrant
}

func (w *admissionWorld) slotsOf(queuePath string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, g := range w.grants {
		if g.Queue == queuePath {
			n += len(g.Slots)
		}
	}
	return n
}

// The answers of one step go to each Scheduling in one signal, in the order they were made;
// a Scheduling that does not run has every grant of its signal released.
func TestAdmissionWorkflow_EachSchedulingHearsAStepInOneSignal(t *testing.T) {
	w := &admissionWorld{gone: map[string]bool{installation.Default.SchedulingID("ns", "gone"): true}}
	env := newAdmissionEnv(t, w, 8)
	env.RegisterDelayedCallback(func() {
		var reqs []AdmissionRequest
		for _, k := range []queue.JobKey{jk("s1", "a"), jk("s2", "b"), jk("s1", "c"), jk("gone", "d"), jk("gone", "e")} {
			reqs = append(reqs, AdmissionRequest{JobKey: k, User: "u", Slots: 1})
		}
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
	}, time.Second)
	report := reportAt(t, env, 5*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 4})

	require.Len(t, w.signals, 3, "one signal per Scheduling: %+v", w.signals)
	names := func(gs []AdmissionGrant) (out []string) {
		for _, g := range gs {
			out = append(out, g.Job)
		}
		return out
	}
	require.Equal(t, installation.Default.SchedulingID("ns", "s1"), w.signals[0].to)
	require.Equal(t, []string{"a", "c"}, names(w.signals[0].grants))
	require.Equal(t, []string{"b"}, names(w.signals[1].grants))
	require.Equal(t, []string{"d", "e"}, names(w.signals[2].grants))
	var running []string
	for _, e := range report.Running {
		running = append(running, e.Request.Scheduling+"/"+e.Request.Job)
	}
	require.ElementsMatch(t, []string{"s1/a", "s2/b", "s1/c"}, running, "the grants of the Scheduling that does not run are released")
}

// A fresh Admission (its predecessor's state lost) takes in the grants its bed's jobs show
// before it decides anything: a waiting job gets only the other slots, a repeat of a
// restored job's request gets its grant back, and once the restored job ends its slots go
// to the next.
func TestAdmissionWorkflow_AFreshRunTakesInTheGrantsInUse(t *testing.T) {
	granted := metav1.NewMicroTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	w := &admissionWorld{inUse: []activities.FoundGrant{{
		Key: jk("s", "old"),
		Job: activities.JobInfo{Name: "old", Exists: true, User: "u"},
		Granted: activities.GrantedRun{Request: v1alpha1.CreationRequest{Scheduling: "s", SchedulingUID: "uid-s", TestBed: "bed", Run: 1,
			Slots: []int32{0, 1, 2}, GrantedAt: &granted, Queue: "root.default"}, Slots: []int32{0, 1, 2}, State: v1alpha1.JobRunning},
	}}}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{{JobKey: jk("s", "new"), User: "u", Slots: 2}})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		require.Empty(t, w.grants, "slots 0-2 are in use: the new job waits")
		w.mu.Unlock()
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{{JobKey: jk("s", "old"), User: "u", Slots: 3}})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		require.Len(t, w.grants, 1)
		require.Equal(t, "old", w.grants[0].Job, "a repeat of the restored job's request gets its grant")
		require.Equal(t, []int32{0, 1, 2}, w.grants[0].Slots)
		w.inUse = nil // the run ends: the job no longer shows it
		w.mu.Unlock()
		env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{AdmissionEndedUpdate: {jk("s", "old")}})
	}, 20*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 6})

	require.Len(t, w.grants, 2, "%+v", w.grants)
	require.Equal(t, "new", w.grants[1].Job)
	require.Len(t, w.grants[1].Slots, 2)
}

// unboundedStarts are settings without a bound on the jobs starting at once: one decision
// may grant every slot of the bed.
var unboundedStarts = allocFile{Version: "1", Settings: `<configuration><property><name>` + queue.PropMaxStartingApps + `</name><value>0</value></property></configuration>`}

// With slotplane.max-starting-apps, a burst of requests is granted as the granted jobs
// start: two at first, the third once the first says it started, the fourth when the
// second's starting timeout passes without a word.
func TestAdmissionWorkflow_TheStartingBoundPacesABurst(t *testing.T) {
	w := &admissionWorld{file: allocFile{Version: "1", Settings: `<configuration><property><name>` + queue.PropMaxStartingApps + `</name><value>2</value></property></configuration>`}}
	env := newAdmissionEnv(t, w, 8)
	env.RegisterDelayedCallback(func() {
		reqs := make([]AdmissionRequest, 4)
		for i := range reqs {
			reqs[i] = AdmissionRequest{JobKey: jk("s", fmt.Sprintf("j%d", i)), User: "u", Slots: 1}
		}
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		require.Len(t, w.grants, 2, "two start at once")
		for _, g := range w.grants {
			require.False(t, g.QuietStart, "%s need not tell of its start: the bound would never free", g.Job)
		}
		var report AdmissionReport
		queryReport(t, env, &report)
		require.Len(t, report.Waiting, 2)
		require.Contains(t, report.Waiting[0].Reason, queue.PropMaxStartingApps)
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{AdmissionStartedUpdate: {jk("s", "j0")}})
	}, 40*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 40})

	require.Len(t, w.grants, 4)
	for i, g := range w.grants {
		require.Equal(t, fmt.Sprintf("j%d", i), g.Job)
	}
	require.GreaterOrEqual(t, w.at[2].Sub(w.at[0]), 38*time.Second, "j2 starts before j0 did")
	require.Less(t, w.at[2].Sub(w.at[0]), 60*time.Second, "j2 waits long past j0's start")
	require.GreaterOrEqual(t, w.at[3].Sub(w.at[0]), queue.StartingTimeout-2*time.Second, "j3 starts before j1's starting timeout")
}

// A step that grants more jobs of one Scheduling than one signal carries sends them in
// several, in order.
func TestAdmissionWorkflow_ABigStepGoesInSeveralSignals(t *testing.T) {
	w := &admissionWorld{file: unboundedStarts}
	n := grantsPerSignal + 5
	env := newAdmissionEnv(t, w, n)
	env.RegisterDelayedCallback(func() {
		reqs := make([]AdmissionRequest, n)
		for i := range reqs {
			reqs[i] = AdmissionRequest{JobKey: jk("s1", fmt.Sprintf("j%03d", i)), User: "u", Slots: 1}
		}
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 3})

	require.Len(t, w.signals, 2)
	require.Len(t, w.signals[0].grants, grantsPerSignal)
	require.Len(t, w.signals[1].grants, 5)
	for i, g := range w.grants {
		require.Equal(t, fmt.Sprintf("j%03d", i), g.Job, "the grants keep their order across the signals")
	}
}

// A step that grants more jobs than one call may carry sends them in several calls, none
// over grantsPerCall; a call whose Scheduling does not run releases its grants only.
func TestAdmissionWorkflow_AStepThatFillsABigBedGoesInSeveralCalls(t *testing.T) {
	w := &admissionWorld{file: unboundedStarts, gone: map[string]bool{installation.Default.SchedulingID("ns", "gone"): true}}
	n := 2*grantsPerCall + 50
	env := newAdmissionEnv(t, w, n)
	env.RegisterDelayedCallback(func() {
		reqs := make([]AdmissionRequest, n)
		for i := range reqs {
			s := fmt.Sprintf("s%d", i%3)
			if i == n-1 {
				s = "gone"
			}
			reqs[i] = AdmissionRequest{JobKey: jk(s, fmt.Sprintf("j%05d", i)), User: "u", Slots: 1}
		}
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
	}, time.Second)
	report := reportAt(t, env, 5*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 3})

	require.Greater(t, len(w.calls), 2, "calls: %v", w.calls)
	total := 0
	for _, c := range w.calls {
		require.LessOrEqual(t, c, grantsPerCall)
		total += c
	}
	require.Equal(t, n, total, "every grant was sent")
	require.Len(t, w.grants, n-1, "all but the grant to the Scheduling that does not run")
	require.Equal(t, n-1, len(report.Running)+report.MoreRunning, "the grant of the Scheduling that does not run is released, and only it")
}

// Two queues of weight 2 and 1 competing for 12 slots with jobs of 2 slots: 8/4.
func TestAdmissionWorkflow_WeightsSplitTheSlots(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="gold"><weight>2</weight></queue><queue name="silver"/>
</allocations>`}}
	env := newAdmissionEnv(t, w, 12)
	env.RegisterDelayedCallback(func() {
		for i := range 6 {
			for _, q := range []string{"gold", "silver"} {
				env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s-"+q, fmt.Sprintf("%s-%d", q, i)), Queue: q, User: "u", Slots: 2})
			}
		}
	}, time.Second)
	report := reportAt(t, env, time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 6})

	require.Equal(t, 8, w.slotsOf("root.gold"))
	require.Equal(t, 4, w.slotsOf("root.silver"))
	seen := map[int32]bool{}
	for _, g := range w.grants {
		for _, s := range g.Slots {
			require.False(t, seen[s], "slot %d granted twice", s)
			seen[s] = true
		}
	}
	var gold QueueReport
	for _, q := range report.Queues {
		if q.Path == "root.gold" {
			gold = q
		}
	}
	require.Equal(t, 4, gold.RunningJobs)
	require.Equal(t, 2, gold.WaitingJobs)
	require.Equal(t, queue.MBVCores(4*1024, 4), gold.PendingDemand)
	require.Len(t, report.Waiting, 6)
	require.Contains(t, report.Waiting[0].Reason, "not enough free resources")
}

// A user over the queue's ACL is refused for good; a release frees slots for the next job;
// a broken allocation file leaves the last good one in force and says why.
// The requests come one to a signal, or in a batch: the same answers, in the same order.
func TestAdmissionWorkflow_ACLReleaseAndBadFile(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) { aclReleaseAndBadFile(t, batched) })
	}
}

func aclReleaseAndBadFile(t *testing.T, batched bool) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="root"><aclSubmitApps>alice</aclSubmitApps><aclAdministerApps>alice</aclAdministerApps>
    <queue name="a"><maxRunningApps>1</maxRunningApps></queue>
  </queue>
</allocations>`}}
	recorded := metrics.NewTemporal()
	env := newAdmissionEnv(t, w, 4, recorded)
	env.RegisterDelayedCallback(func() {
		reqs := []AdmissionRequest{
			{JobKey: jk("s", "mallory-job"), Queue: "a", User: "mallory", Slots: 1},
			{JobKey: jk("s", "first"), Queue: "a", User: "alice", Slots: 1},
			{JobKey: jk("s", "second"), Queue: "a", User: "alice", Slots: 1},
		}
		if batched {
			env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, reqs)
			return
		}
		for _, r := range reqs {
			env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, r)
		}
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		w.file = allocFile{Exists: true, Version: "2", Data: "<allocations>\n<queue name=\"a\"><maxRunningApps>one</maxRunningApps></queue>\n</allocations>"}
		w.mu.Unlock()
		env.UpdateWorkflowNoRejection(AdmissionConfigUpdate, "", t)
		env.UpdateWorkflowNoRejection(AdmissionReleaseUpdate, "", t, jk("s", "first"))
	}, time.Minute)
	report := reportAt(t, env, 2*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 10})

	require.Len(t, w.grants, 3)
	require.Equal(t, "mallory-job", w.grants[0].Job)
	require.Contains(t, w.grants[0].Refused, `user "mallory" may not submit to queue root.a`)
	require.Equal(t, "first", w.grants[1].Job)
	require.Equal(t, "second", w.grants[2].Job, "second starts once first is released (maxRunningApps 1)")
	require.Equal(t, "1", report.ConfigVersion, "the bad version 2 is not in force")
	require.Contains(t, report.ConfigError, "line 2, <maxRunningApps>: \"one\" is not a whole")
	require.Equal(t, 1.0, counted(t, recorded, "slotplane_rejected_jobs_total", map[string]string{"namespace": "ns", "testbed": "bed"}),
		"the refusal is counted once")
}

// counted sums a family's series whose labels include match, as Prometheus gathers them.
func counted(t *testing.T, m *metrics.Temporal, name string, match map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			total, _ := metrics.Sum(mf, match)
			return total
		}
	}
	return 0
}

// A configuration the queue core fails on (it panics building the queues) does not stop
// Admission: it is rejected like a broken file, the last good one stays in force, and the
// jobs go on being admitted under it.
func TestAdmissionWorkflow_AConfigThatBreaksTheCoreIsRejected(t *testing.T) {
	w := &admissionWorld{malformed: map[string]bool{"2": true},
		file: allocFile{Exists: true, Version: "1", Data: `<allocations><queue name="a"><maxRunningApps>1</maxRunningApps></queue></allocations>`}}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "first"), Queue: "a", User: "u", Slots: 1})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "second"), Queue: "a", User: "u", Slots: 1})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		w.mu.Lock()
		w.file = allocFile{Exists: true, Version: "2", Data: `<allocations/>`}
		w.mu.Unlock()
		env.UpdateWorkflowNoRejection(AdmissionConfigUpdate, "", t)
	}, 20*time.Second)
	var report AdmissionReport
	env.RegisterDelayedCallback(func() {
		queryReport(t, env, &report)
		env.UpdateWorkflowNoRejection(AdmissionReleaseUpdate, "", t, jk("s", "first"))
	}, 40*time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 10})

	var next *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &next, "the workflow went on to its next run, not failed")
	require.Equal(t, "1", report.ConfigVersion, "version 1 stays in force")
	require.Contains(t, report.ConfigError, "configure failed")
	require.Len(t, w.grants, 2)
	require.Equal(t, "second", w.grants[1].Job, "second starts once first is released: version 1's maxRunningApps 1 still holds")
	var in AdmissionInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(next.Input, &in))
	carried := carriedState(t, in)
	require.Equal(t, "1", carried.Config.Version)
	require.Equal(t, "2", carried.Config.RejectedVersion, "the broken version is not offered again")
	require.Greater(t, len(w.loads), 2, "the file is loaded at the start, at the signal and at resyncs")
	require.False(t, w.loads[0], "the first load may take the worker's copy's word")
	fresh := 0
	for _, f := range w.loads {
		if f {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "only the load the signal asked for reads the API server: %v", w.loads)
}

// A SlotBased request gets exactly its slots, once they are all free.
func TestAdmissionWorkflow_SlotBasedGetsItsSlots(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 8)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "pinned"), User: "u", Slots: 2, SlotIDs: []int32{3, 6}})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "overlap"), User: "u", Slots: 1, SlotIDs: []int32{3}})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "other"), User: "u", Slots: 2, SlotIDs: []int32{0, 1}})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 3})
	require.Len(t, w.grants, 2)
	require.Equal(t, AdmissionGrant{JobKey: jk("s", "pinned"), Queue: "root.u", Slots: []int32{3, 6}, Seq: 1}, w.grants[0])
	require.Equal(t, []int32{0, 1}, w.grants[1].Slots)
}

// The seeds' App1/App2 run in a StateAware queue: App2 gets nothing while App1 is Starting;
// App1's first executor (the started signal) lets App2 in. Without the signal, the
// five-minute fallback does.
func TestAdmissionWorkflow_StateAwareLetsOneApplicationStartAtATime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		startedAt time.Duration // 0: never
		app2After time.Duration
		batched   bool // the start comes in a worker's batch (activities.BatchUpdate)
	}{
		{name: "first executor", startedAt: 40 * time.Second, app2After: 40 * time.Second},
		{name: "first executor, batched", startedAt: 40 * time.Second, app2After: 40 * time.Second, batched: true},
		{name: "fallback", app2After: queue.StartingTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="apps"><schedulingPolicy>stateaware</schedulingPolicy></queue>
</allocations>`}}
			env := newAdmissionEnv(t, w, 8)
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "app1"), Queue: "apps", User: "u", Slots: 2})
				env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "app2"), Queue: "apps", User: "u", Slots: 1})
			}, time.Second)
			if tc.startedAt > 0 {
				env.RegisterDelayedCallback(func() {
					if tc.batched {
						env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{AdmissionStartedUpdate: {jk("s", "app1")}})
						return
					}
					env.UpdateWorkflowNoRejection(AdmissionStartedUpdate, "", t, jk("s", "app1"))
				}, tc.startedAt)
			}
			env.RegisterDelayedCallback(func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				require.Len(t, w.grants, 1, "app2 waits while app1 is starting")
				var report AdmissionReport
				queryReport(t, env, &report)
				require.Len(t, report.Waiting, 1)
				require.Contains(t, report.Waiting[0].Reason, "StateAware")
			}, tc.app2After-5*time.Second)
			env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 40})

			require.Len(t, w.grants, 2)
			require.Equal(t, "app1", w.grants[0].Job)
			require.Equal(t, "app2", w.grants[1].Job)
			waited := w.at[1].Sub(w.at[0])
			require.GreaterOrEqual(t, waited, tc.app2After-2*time.Second)
			require.Less(t, waited, tc.app2After+20*time.Second, "app2 starts soon after app1 left Starting")
		})
	}
}

// A worker's batch of keys (activities.BatchUpdate) is taken in as its signals one by one:
// an end hands its job's slot on, a release frees a waiting job's hold.
func TestAdmissionWorkflow_TakesABatchOfKeysAsItsSignals(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 1)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "first"), User: "u", Slots: 1},
			{JobKey: jk("s", "second"), User: "u", Slots: 1},
			{JobKey: jk("s", "third"), User: "u", Slots: 1},
		})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{
			AdmissionEndedUpdate:   {jk("s", "first")},
			AdmissionReleaseUpdate: {jk("s", "second")},
		})
	}, time.Minute)
	var report AdmissionReport
	env.RegisterDelayedCallback(func() { queryReport(t, env, &report) }, 2*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 20})
	require.Len(t, w.grants, 2)
	require.Equal(t, "first", w.grants[0].Job)
	require.Equal(t, "third", w.grants[1].Job, "the end handed the slot on, past the released job")
	require.Equal(t, []int32{0}, w.grants[1].Slots)
	require.Empty(t, report.Waiting)
	require.Len(t, report.Running, 1)
}

// A batch that arrives as the run's last step waits is in the state the next run carries.
func TestAdmissionWorkflow_ABatchOfKeysCrossesContinueAsNew(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 1)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{{JobKey: jk("s", "first"), User: "u", Slots: 1}, {JobKey: jk("s", "second"), User: "u", Slots: 1}})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{AdmissionEndedUpdate: {jk("s", "first")}})
	}, time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour, StepsPerRun: 2})
	carried := carriedState(t, continuedWith[AdmissionInput](t, env))
	require.Len(t, w.grants, 1)
	require.Empty(t, carried.Running, "the end in the batch was taken in before the hand-over")
	require.Len(t, carried.Waiting, 1)
	require.Equal(t, []int32{0}, carried.Handed, "its slot is handed on in the next run")
}

// Job priorities and a driver without executors told in the run's last step cross
// continue-as-new: the next run lets the StateAware leaf go on past the job whose driver
// runs alone, and serves the high-priority job submitted last before the older one.
func TestAdmissionWorkflow_PrioritiesAndADriverAloneCrossContinueAsNew(t *testing.T) {
	file := allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="apps"><schedulingPolicy>stateaware</schedulingPolicy></queue>
</allocations>`}
	w := &admissionWorld{file: file}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, []AdmissionRequest{
			{JobKey: jk("s", "first"), Queue: "apps", User: "u", Slots: 1, Priority: 10},
			{JobKey: jk("s", "older"), Queue: "apps", User: "u", Slots: 1, Priority: -5},
			{JobKey: jk("s", "urgent"), Queue: "apps", User: "u", Slots: 1, Priority: 9},
		})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(activities.BatchUpdate, "", t, map[string][]AdmissionKey{AdmissionNoExecutorsUpdate: {jk("s", "first")}})
	}, time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour, StepsPerRun: 2})
	in := continuedWith[AdmissionInput](t, env)
	carried := carriedState(t, in)
	require.Len(t, w.grants, 1)
	require.Equal(t, "first", w.grants[0].Job)
	require.Len(t, carried.Running, 1)
	require.True(t, carried.Running[0].NoExecutors, "the driver alone, taken in before the hand-over")
	require.Len(t, carried.Waiting, 2)
	for _, e := range carried.Waiting {
		require.Equal(t, map[string]int32{"older": -5, "urgent": 9}[e.Request.Job], e.Request.Priority, e.Request.Job)
	}

	w2 := &admissionWorld{file: file}
	env2 := newAdmissionEnv(t, w2, 4)
	in.StepsPerRun = 10
	env2.ExecuteWorkflow(AdmissionWorkflow, in)
	require.Len(t, w2.grants, 2)
	require.Equal(t, "urgent", w2.grants[0].Job)
	require.Equal(t, "older", w2.grants[1].Job)
	require.GreaterOrEqual(t, w2.at[1].Sub(w2.at[0]), queue.StartingTimeout, "the urgent job held the leaf while it was starting")
}

// With preemption on, a queue starved of its fair share past its timeout takes slots back
// from the newest job of a queue above its share: that job's newest slots, recorded on its
// BatchJob before its pods in them go. The job asks for them again, one at a time, once the
// starving queue's job has ended.
func TestAdmissionWorkflow_PreemptionTakesSlotsBackAndReturnsThem(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="a"/><queue name="b"/>
  <defaultFairSharePreemptionTimeout>30</defaultFairSharePreemptionTimeout>
</allocations>`, Settings: `<configuration><property><name>yarn.scheduler.fair.preemption</name><value>true</value></property></configuration>`}}
	recorded := metrics.NewTemporal()
	env := newAdmissionEnv(t, w, 12, recorded)
	var assigned []activities.AssignSlotsInput
	env.OnActivity(acts.AssignSlots, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.AssignSlotsInput) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		assigned = append(assigned, in)
		return nil
	})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("sa", "big"), Queue: "a", User: "u", Slots: 12})
	}, time.Second)
	var starvedAt time.Time
	env.RegisterDelayedCallback(func() {
		starvedAt = env.Now()
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("sb", "small"), Queue: "b", User: "u", Slots: 6})
	}, 10*time.Second)
	var during, after AdmissionReport
	query := func(into *AdmissionReport) func() {
		return func() { queryReport(t, env, into) }
	}
	env.RegisterDelayedCallback(query(&during), 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionReleaseUpdate, "", t, jk("sb", "small"))
	}, 3*time.Minute)
	env.RegisterDelayedCallback(query(&after), 4*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 40})

	require.Len(t, w.grants, 2)
	require.Equal(t, "small", w.grants[1].Job)
	require.Equal(t, []int32{6, 7, 8, 9, 10, 11}, w.grants[1].Slots, "the slots taken back")
	wait := w.at[1].Sub(starvedAt)
	require.GreaterOrEqual(t, wait, 30*time.Second, "not before the fair-share preemption timeout")
	require.Less(t, wait, 30*time.Second+2*15*time.Second, "within a resync or two of it")

	require.NotEmpty(t, assigned)
	first := assigned[0]
	require.Equal(t, activities.AssignSlotsInput{Namespace: "ns", Scheduling: "sa", Job: "big", TestBed: "bed",
		Keep: []int32{0, 1, 2, 3, 4, 5}, Revoke: []int32{6, 7, 8, 9, 10, 11},
		Why: "queue root.a is above its fair share; queue root.b is below 50% of its fair share for 30s"}, first)
	require.Len(t, during.Running, 2)
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5}, during.Running[0].Slots)
	require.Equal(t, int32(6), during.Running[0].Preempted)

	// Given back one at a time after small ended.
	require.Len(t, assigned, 7)
	for i, in := range assigned[1:] {
		require.Len(t, in.Keep, 7+i)
		require.Empty(t, in.Revoke)
	}
	require.Len(t, after.Running, 1)
	require.ElementsMatch(t, []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, after.Running[0].Slots)
	require.Equal(t, 1.0, counted(t, recorded, "slotplane_preempted_jobs_total",
		map[string]string{"namespace": "ns", "testbed": "bed", "queue": "root.a", "preempting_queue": "root.b"}), "one preemption, of root.a for root.b")
}

// Moving a job: every rule the move breaks is a rejection with the reason and changes
// nothing; an allowed move takes effect at once, and the moved job starts in its new queue.
func TestAdmissionWorkflow_MoveChecksTheRulesAndWakesTheQueues(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="root">
    <aclSubmitApps> nobody</aclSubmitApps>
    <aclAdministerApps> ops</aclAdministerApps>
    <queue name="a"><maxRunningApps>1</maxRunningApps><aclSubmitApps>alice,bob</aclSubmitApps></queue>
    <queue name="b"><maxRunningApps>1</maxRunningApps><aclSubmitApps>alice,bob</aclSubmitApps></queue>
    <queue name="c"><aclSubmitApps>alice</aclSubmitApps></queue>
    <queue name="secret"><aclSubmitApps>bob</aclSubmitApps></queue>
    <queue name="p" type="parent"/>
  </queue>
</allocations>`}}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "first"), Queue: "a", User: "alice", Slots: 1})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "second"), Queue: "a", User: "alice", Slots: 1})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "bobs"), Queue: "b", User: "bob", Slots: 1})
	}, time.Second)
	rejected := map[string]error{}
	var moved AdmissionMoved
	var movedErr error
	moves := []struct {
		name string
		move AdmissionMove
	}{
		{"unknown job", AdmissionMove{Scheduling: "s", Job: "ghost", Queue: "c", By: "alice"}},
		{"nobody asks", AdmissionMove{Scheduling: "s", Job: "second", Queue: "c"}},
		{"not the owner nor an admin", AdmissionMove{Scheduling: "s", Job: "second", Queue: "c", By: "mallory"}},
		{"no such queue", AdmissionMove{Scheduling: "s", Job: "second", Queue: "nope", By: "alice"}},
		{"a parent queue", AdmissionMove{Scheduling: "s", Job: "second", Queue: "p", By: "alice"}},
		{"the user may not submit there", AdmissionMove{Scheduling: "s", Job: "second", Queue: "secret", By: "alice"}},
		{"the target runs its maximum", AdmissionMove{Scheduling: "s", Job: "first", Queue: "b", By: "alice"}},
	}
	env.RegisterDelayedCallback(func() {
		for _, m := range moves {
			env.UpdateWorkflow(AdmissionMoveUpdate, m.name, &testsuite.TestUpdateCallback{
				OnReject:   func(err error) { rejected[m.name] = err },
				OnAccept:   func() {},
				OnComplete: func(any, error) {},
			}, m.move)
		}
		// An administrator of root (by group) moves alice's waiting job to c.
		env.UpdateWorkflow(AdmissionMoveUpdate, "allowed", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { movedErr = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { moved, movedErr = v.(AdmissionMoved), err },
		}, AdmissionMove{Scheduling: "s", Job: "second", Queue: "c", By: "carol", ByGroups: []string{"ops"}})
	}, time.Minute)
	// A running job moves too, when the target has room: alice moves her own first job.
	var movedRunning AdmissionMoved
	var movedRunningErr error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(AdmissionMoveUpdate, "running", &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { movedRunningErr = err },
			OnAccept:   func() {},
			OnComplete: func(v any, err error) { movedRunning, movedRunningErr = v.(AdmissionMoved), err },
		}, AdmissionMove{Scheduling: "s", Job: "first", Queue: "c", By: "alice"})
	}, 3*time.Minute)
	report := reportAt(t, env, 2*time.Minute)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: time.Hour, StepsPerRun: 6})

	want := map[string]string{
		"unknown job":                   "job ghost of scheduling s is not in the queues",
		"nobody asks":                   "names nobody asking for it",
		"not the owner nor an admin":    `user "mallory" may not move job second: it is neither the job's user ("alice") nor may it administer queue root.a`,
		"no such queue":                 "queue nope does not exist",
		"a parent queue":                "queue root.p is a parent queue",
		"the user may not submit there": `its user "alice" may not submit there`,
		"the target runs its maximum":   "queue root.b runs its maximum of 1 applications",
	}
	for name, text := range want {
		require.ErrorContains(t, rejected[name], text, name)
	}
	kinds := map[string]string{"unknown job": MoveNotFound, "not the owner nor an admin": MoveForbidden, "the user may not submit there": MoveForbidden, "a parent queue": MoveInvalid}
	for name, kind := range kinds {
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, rejected[name], &appErr, name)
		require.Equal(t, kind, appErr.Type(), name)
	}
	require.NoError(t, movedErr)
	require.Equal(t, AdmissionMoved{Job: "second", From: "root.a", To: "root.c"}, moved)
	// second waited behind first (maxRunningApps 1 in a); moved, it starts at once in c,
	// not at the next resync an hour later.
	require.Len(t, w.grants, 3)
	last := w.grants[2]
	require.Equal(t, "second", last.Job)
	require.Equal(t, "root.c", last.Queue)
	require.Less(t, w.at[2].Sub(w.at[0]), 2*time.Minute)
	require.NoError(t, movedRunningErr)
	require.Equal(t, AdmissionMoved{Job: "first", From: "root.a", To: "root.c"}, movedRunning)
	require.Empty(t, report.Waiting)
	for _, e := range report.Running {
		if e.Request.Job == "first" {
			require.Equal(t, "root.a", e.Queue, "a rejected move changes nothing")
		}
	}
}

// countDecisions counts Admission's decisions in env: each reads the slots first.
func countDecisions(env *testsuite.TestWorkflowEnvironment) *int {
	n := new(int)
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "ReadSlots" {
			(*n)++
		}
	})
	return n
}

// A run whose carried state alone passes WorkPerRun still takes a step before it continues
// as new: a bed too large for the bound makes progress, a decision a run, and grants.
func TestAdmissionWorkflow_TakesAStepWhateverItCarries(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 1)
	decisions := countDecisions(env)
	held := queue.NewAdmitter(queue.AdmitterState{})
	for i := range 3 {
		require.Nil(t, held.Request(AdmissionRequest{JobKey: jk("s", fmt.Sprintf("job-%d", i)), User: "u", Slots: 1}))
	}
	packed, err := queue.PackState(held.State())
	require.NoError(t, err)
	// Three carried jobs count 6, over the bound of 2.
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 1000, WorkPerRun: 2,
		Carried: packed})
	carried := carriedState(t, continuedWith[AdmissionInput](t, env))
	require.Equal(t, 1, *decisions)
	require.Len(t, carried.Running, 1, "the run's one decision granted the bed's slot")
	require.Len(t, carried.Waiting, 2)
}

// A run whose history has grown to historyBytesPerRun continues as new after the step it is
// in, whatever its work: a worker that replays it fetches it whole.
func TestAdmissionWorkflow_ContinuesAsNewWhenItsHistoryIsLong(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 1)
	decisions := countDecisions(env)
	env.SetCurrentHistorySize(historyBytesPerRun)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 1000})
	continuedWith[AdmissionInput](t, env)
	require.Equal(t, 1, *decisions)
}

// A run continues as new once what a replay of it costs (admissionWork) passes WorkPerRun,
// long before StepsPerRun: a worker without the run's state replays it in one workflow task.
// The next run carries the work's bound on.
func TestAdmissionWorkflow_ContinuesAsNewAfterItsWork(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 1)
	decisions := countDecisions(env)
	var batch []AdmissionRequest
	for i := range 30 {
		batch = append(batch, AdmissionRequest{JobKey: jk("s", fmt.Sprintf("job-%02d", i)), User: "u", Slots: 1})
	}
	env.RegisterDelayedCallback(func() { env.UpdateWorkflowNoRejection(AdmissionRequestsUpdate, "", t, batch) }, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", Resync: 10 * time.Second, StepsPerRun: 1000, WorkPerRun: 300})
	in := continuedWith[AdmissionInput](t, env)
	// A decision is 64 and its grants, a request 4: the first decision (nothing waits), the
	// 30 requests, the second decision (one grant) and the third at the resync come to 313.
	require.Equal(t, 3, *decisions, "64 + 4*30 + 65 + 64 passes 300 at the third decision")
	require.Equal(t, 300, in.WorkPerRun)
	carried := carriedState(t, in)
	require.Len(t, carried.Running, 1)
	require.Len(t, carried.Waiting, 29)
}

// Continue-as-new carries the whole admission state and the configuration in force: a file
// broken after the hand-over leaves the last good one in force, not the defaults, and the
// next run starts the waiting job when the running one is released.
func TestAdmissionWorkflow_ContinueAsNewCarriesStateAndConfig(t *testing.T) {
	w := &admissionWorld{file: allocFile{Exists: true, Version: "1", Data: `<allocations>
  <queue name="a"><maxRunningApps>1</maxRunningApps><schedulingPolicy>fifo</schedulingPolicy></queue>
</allocations>`}}
	env := newAdmissionEnv(t, w, 4)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "first"), Queue: "a", User: "u", Slots: 1})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "second"), Queue: "a", User: "u", Slots: 1})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 2})
	in := continuedWith[AdmissionInput](t, env)
	carried := carriedState(t, in)
	require.Equal(t, "1", carried.Config.Version)
	require.Len(t, carried.Running, 1)
	require.Len(t, carried.Waiting, 1)
	require.Len(t, w.grants, 1)

	w2 := &admissionWorld{file: allocFile{Exists: true, Version: "2", Data: "<allocations><queue name=\"a\"><weight>heavy</weight></queue></allocations>"}}
	env2 := newAdmissionEnv(t, w2, 4)
	env2.RegisterDelayedCallback(func() {
		env2.UpdateWorkflowNoRejection(AdmissionReleaseUpdate, "", t, jk("s", "first"))
	}, time.Minute)
	report := reportAt(t, env2, 2*time.Minute)
	in.StepsPerRun = 10
	env2.ExecuteWorkflow(AdmissionWorkflow, in)
	require.Equal(t, "1", report.ConfigVersion, "the carried file stays in force")
	require.Contains(t, report.ConfigError, "is not a non-negative number")
	require.Len(t, w2.grants, 1)
	require.Equal(t, "second", w2.grants[0].Job, "the waiting job of the first run starts in the second")
}

// A grant its Scheduling cannot take (the workflow is gone) is released at once: the slots go
// to the next job, not to nobody.
func TestAdmissionWorkflow_UndeliverableGrantIsReleased(t *testing.T) {
	w := &admissionWorld{gone: map[string]bool{installation.Default.SchedulingID("ns", "gone"): true}}
	env := newAdmissionEnv(t, w, 2)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("gone", "lost"), User: "u", Slots: 2})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "next"), User: "u", Slots: 2})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 4})
	require.Len(t, w.grants, 1)
	require.Equal(t, "next", w.grants[0].Job)
	require.Equal(t, []int32{0, 1}, w.grants[0].Slots)
}

// orphanThenNext asks, a second in, for both slots for "orphan", whose release is lost
// (nobody holds it, for why), then for "next": next gets the slots only once a resync
// releases the orphan.
func orphanThenNext(t *testing.T, env *testsuite.TestWorkflowEnvironment, w *admissionWorld, why string) {
	w.unheld = func(k queue.JobKey) string {
		if k.Job == "orphan" {
			return why
		}
		return ""
	}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "orphan"), User: "u", Slots: 2})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "next"), User: "u", Slots: 2})
	}, time.Second)
}

// Every resync the keys are checked against the claims: a job nobody holds any more (its
// release was lost) gives its slots back.
func TestAdmissionWorkflow_ReleasesWhatNobodyHolds(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 2)
	orphanThenNext(t, env, w, "BatchJob orphan was deleted")
	var checked [][]queue.JobKey
	unheld := w.unheld
	w.unheld = func(k queue.JobKey) string {
		checked = append(checked, []queue.JobKey{k})
		return unheld(k)
	}
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 5, Resync: 15 * time.Second})
	require.Len(t, w.grants, 2)
	require.Equal(t, "orphan", w.grants[0].Job)
	require.Equal(t, "next", w.grants[1].Job)
	require.Less(t, w.at[1].Sub(w.at[0]), 20*time.Second, "within a resync")
	require.NotEmpty(t, checked)
}

// Messages that come more often than Resync do not put the resync off: a job whose release
// was lost gives its slots back within a resync while the queues stay busy.
func TestAdmissionWorkflow_ResyncsWhileMessagesKeepComing(t *testing.T) {
	w := &admissionWorld{}
	env := newAdmissionEnv(t, w, 2)
	orphanThenNext(t, env, w, "BatchJob orphan's run 1 ended Completed")
	// Every 4 s for two minutes, news of a job Admission does not know (a repeat changes
	// nothing): a message well within each 15 s resync.
	for at := 3 * time.Second; at < 2*time.Minute; at += 4 * time.Second {
		env.RegisterDelayedCallback(func() { env.UpdateWorkflowNoRejection(AdmissionStartedUpdate, "", t, jk("s", "elsewhere")) }, at)
	}
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 200, Resync: 15 * time.Second})
	require.Len(t, w.grants, 2, "the orphan's slots went to the next job while the messages kept coming")
	require.Equal(t, "next", w.grants[1].Job)
	require.Less(t, w.at[1].Sub(w.at[0]), 20*time.Second, "within a resync")
}

// When its test bed is deleted, Admission refuses what waits and ends.
func TestAdmissionWorkflow_EndsWhenTheTestBedIsDeleted(t *testing.T) {
	w := &admissionWorld{}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AdmissionWorkflow)
	env.RegisterActivity(&activities.Activities{})
	reads := 0
	env.OnActivity(acts.ReadSlots, mock.Anything, mock.Anything).Return(func(context.Context, activities.TestBedRef) (activities.TestBedSlots, error) {
		reads++
		if reads > 2 {
			return activities.TestBedSlots{}, nil
		}
		return activities.TestBedSlots{Exists: true, Positions: []int32{0}, Free: []int32{0},
			SlotSize: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}, nil
	})
	env.OnActivity(acts.LoadAllocationFile, mock.Anything, mock.Anything).Return(nil, nil)
	env.OnActivity(acts.CheckHolds, mock.Anything, mock.Anything).Return(activities.HoldsCheck{}, nil)
	env.OnActivity(acts.RecordQueues, mock.Anything, mock.Anything).Return(nil)
	onSignals(env, map[string]func(string, any) error{AdmittedBatchSignal: func(_ string, arg any) error {
		w.grants = append(w.grants, arg.([]AdmissionGrant)...)
		return nil
	}})
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "runs"), User: "u", Slots: 1})
		env.UpdateWorkflowNoRejection(AdmissionRequestUpdate, "", t, AdmissionRequest{JobKey: jk("s", "waits"), User: "u", Slots: 1})
	}, time.Second)
	env.ExecuteWorkflow(AdmissionWorkflow, AdmissionInput{Namespace: "ns", TestBed: "bed", StepsPerRun: 50})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "it ends, not continues as new")
	require.Len(t, w.grants, 2)
	require.Equal(t, "runs", w.grants[0].Job)
	require.Equal(t, "waits", w.grants[1].Job)
	require.Contains(t, w.grants[1].Refused, "test bed bed was deleted")
}

// carriedState is the admission state a continue-as-new hands over.
func carriedState(t *testing.T, in AdmissionInput) queue.AdmitterState {
	t.Helper()
	require.NotEmpty(t, in.Carried, "the state is carried")
	st, err := queue.UnpackState(in.Carried)
	require.NoError(t, err)
	return st
}
