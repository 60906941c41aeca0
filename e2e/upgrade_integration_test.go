//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/standin"
)

// upgradeChange is the change build B makes to the BatchJob workflow, under the upgrade
// policy (docs/operations.md, "Upgrades"): a patch, workflow.GetVersion, at the top of a
// run, whose new branch records a memo. Recording the memo is a command that build A never
// makes, so a history of A that passed this point replays on B only through the patch.
const (
	upgradeChangeID = "upgrade-test"
	upgradeAnchor   = "func (j *jobRunner) run(ctx workflow.Context, holder string, req v1alpha1.CreationRequest) error {\n"
	upgradeChange   = upgradeAnchor + `	if workflow.GetVersion(ctx, "` + upgradeChangeID + `", workflow.DefaultVersion, 1) == 1 {
		if err := workflow.UpsertMemo(ctx, map[string]any{"` + upgradeChangeID + `": "B"}); err != nil {
			return err
		}
	}
`
)

// buildB builds the slotplane binary with the upgrade change (build B) and returns its path:
// the same sources as build A through an overlay of workflows/batchjob.go.
func buildB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs(filepath.Join("..", "workflows", "batchjob.go"))
	require.NoError(t, err)
	code, err := os.ReadFile(src)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(code), upgradeAnchor),
		"the upgrade test changes BatchJob runs at the start of jobRunner.run: move its change where the workflow now starts a run")
	patched := filepath.Join(dir, "batchjob.go")
	require.NoError(t, os.WriteFile(patched, []byte(strings.Replace(string(code), upgradeAnchor, upgradeChange, 1)), 0o644))
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {src: patched}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644))
	bin := filepath.Join(dir, "slotplane-b")
	out, err := exec.Command("go", "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, "slotplane/cmd/slotplane").CombinedOutput()
	require.NoError(t, err, "build B: %s", out)
	return bin
}

// A worker upgrade in the middle of a run, as docs/operations.md says to make one: jobs run
// on build A; the worker stops, and build B, which changes the BatchJob workflow through a
// patch, starts in its place (no two builds poll at once). The Scheduling and Admission
// continue as new every 10 steps, so their runs of A go on and are replaced on B.
//
// Checked: every job Completed exactly once, in run 1, with one application; no slot held
// twice while they ran, none left held after; no workflow task of any workflow failed (a
// nondeterministic replay fails its task). The patch took effect as it should: runs that
// began on A and ended on B kept A's path, runs that began on B took the new one.
func TestE2E_AWorkerUpgradeMidRunEndsEveryJobOnce(t *testing.T) {
	t.Parallel() // no timing it asserts on
	binB := buildB(t)
	p := startE2E(t, `<allocations><queue name="batch"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`,
		"-scheduling-steps-per-run", "10", "-admission-steps-per-run", "10")
	ctx := context.Background()
	const jobs = 48
	var entries []v1alpha1.SchedulingJob
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		_, err := p.api.CreateJob(ctx, apitypes.JobRequest{Name: name, Framework: v1alpha1.FrameworkSpark, Queue: "root.batch",
			Application:     v1alpha1.Application{Image: "registry.example/job:1", MainClass: "org.example.Main", MainApplicationFile: "local:///opt/app.jar"},
			DriverResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Annotations:     map[string]string{standin.SimDurationAnnotation: "3s"}})
		require.NoError(t, err, name)
		entries = append(entries, v1alpha1.SchedulingJob{Name: name, Replication: 1})
	}
	w, err := p.api.Watch(ctx, []string{apiclient.WatchSchedulings, apiclient.WatchJobs}, apiclient.Position{})
	require.NoError(t, err)
	defer w.Close()
	ledger := followFeed(w)
	_, err = p.api.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "roll", TestBed: "bed", Mode: v1alpha1.QueueBased, Queue: "root.batch", Jobs: entries})
	require.NoError(t, err)

	// The roll, once a quarter of the jobs ended and the bed's slots are all in use.
	require.Eventually(t, func() bool { return ledger.endedCount() >= jobs/4 && len(ledger.holders()) > 0 },
		5*time.Minute, 50*time.Millisecond, "a quarter of the jobs never ended on build A")
	// A worker's identity in a history starts with its process id.
	pidA := fmt.Sprintf("%d@", p.pid("worker"))
	worker := p.parts["worker"]
	worker.stop()
	worker.bin = binB
	worker.start()
	pidB := fmt.Sprintf("%d@", p.pid("worker"))
	t.Logf("the worker rolled from A to B with %d jobs ended and %d running", ledger.endedCount(), len(ledger.holders()))

	require.Eventually(t, func() bool { return ledger.schedulingEnded("roll") }, 5*time.Minute, 250*time.Millisecond, "the Scheduling never ended: a replay that fails stalls the runs that crossed the upgrade")
	s, err := p.api.GetScheduling(ctx, "roll")
	require.NoError(t, err)
	require.Equal(t, v1alpha1.SchedulingCompleted, s.Status.State, s.Status.Message)
	ledger.check(t)
	p.waitSlotsFree(t, 2*time.Minute)

	// Each job's path, from its history: the worker whose workflow task started the run
	// (made its application) decides it.
	var kept, took int
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		j, err := p.api.GetJob(ctx, name)
		require.NoError(t, err)
		require.Equal(t, v1alpha1.JobCompleted, j.Status.State, "%s: %s", name, j.Status.Message)
		require.Equal(t, int32(1), j.Status.Run, name)
		require.Len(t, j.Status.History, 1, name)
		path := readJobPath(t, p, installation.Default.BatchJobID("default", name), pidB)
		switch {
		case strings.HasPrefix(path.began, pidA):
			require.False(t, path.marked, "%s began its run on build A: B replays it on A's path", name)
			if path.byB {
				kept++
			}
		case strings.HasPrefix(path.began, pidB):
			require.True(t, path.marked, "%s began its run on build B: it takes the new path", name)
			took++
		default:
			t.Fatalf("%s: its run began in a workflow task of %q, neither build's worker", name, path.began)
		}
	}
	t.Logf("%d runs began on A and went on on B on A's path; %d began on B on the new one", kept, took)
	require.Positive(t, kept, "no run crossed the upgrade")
	require.Positive(t, took, "no run began on build B")
	requireNoWorkflowTaskFailed(t, p)
	require.Eventually(t, func() bool {
		q, err := p.api.Queues(ctx, "bed")
		return err == nil && len(q.Running) == 0 && len(q.Waiting) == 0
	}, time.Minute, 500*time.Millisecond, "Admission still holds jobs")
}

// madeApplication: a local activity's marker data names CreateApplication.
func madeApplication(data []*commonpb.Payload) bool {
	for _, pl := range data {
		if strings.Contains(string(pl.GetData()), `"CreateApplication"`) {
			return true
		}
	}
	return false
}

// jobPath is what a BatchJob workflow's history says of its run across the upgrade.
type jobPath struct {
	// began is the identity of the worker whose workflow task made the run's application.
	began string
	// marked: build B's memo was recorded; byB: B's worker completed a workflow task.
	marked, byB bool
}

func readJobPath(t *testing.T, p *e2ePlatform, id string, pidB string) jobPath {
	t.Helper()
	var path jobPath
	// The runs come latest first; in each, the events in order. A command's events follow
	// the completion of the task that made it.
	by := ""
	eachRunEvent(t, p, id, func(ev *historypb.HistoryEvent) {
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			by = a.GetIdentity()
			path.byB = path.byB || strings.HasPrefix(by, pidB)
		}
		if a := ev.GetMarkerRecordedEventAttributes(); a != nil && path.began == "" && a.GetMarkerName() == "LocalActivity" &&
			madeApplication(a.GetDetails()["data"].GetPayloads()) {
			path.began = by
		}
		if a := ev.GetWorkflowPropertiesModifiedEventAttributes(); a != nil && a.GetUpsertedMemo().GetFields()[upgradeChangeID] != nil {
			path.marked = true
		}
	})
	return path
}

// requireNoWorkflowTaskFailed reads the history of every workflow run of the namespace:
// none has a failed workflow task, which a nondeterministic replay would leave.
func requireNoWorkflowTaskFailed(t *testing.T, p *e2ePlatform) {
	t.Helper()
	ctx := context.Background()
	var token []byte
	histories := 0
	for {
		page, err := p.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 200, NextPageToken: token})
		require.NoError(t, err)
		for _, e := range page.GetExecutions() {
			histories++
			it := p.temporal.GetWorkflowHistory(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				require.NoError(t, err)
				// A task that completed while new events came is failed by the server as
				// UnhandledCommand and run again with them: Temporal's way, not a fault.
				if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() != enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND {
					t.Errorf("%s: a workflow task failed (%s): %s", e.GetExecution().GetWorkflowId(), a.GetCause(), a.GetFailure().GetMessage())
				}
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	t.Logf("%d workflow runs read, none with a failed task but for new events", histories)
	require.Greater(t, histories, 48, "the list holds every job's workflow")
}
