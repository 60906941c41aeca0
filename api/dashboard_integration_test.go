//go:build integration

package api_test

import (
	"context"
	"fmt"
	"k8s.io/client-go/util/retry"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/testbrowser"
	"slotplane/internal/testobjects"
)

type slotCounts struct {
	Free, Reserved, Occupied int
	Done, Total              int
	Queues                   []string
	// TeamsActive and TeamsPending are the active and pending jobs the parent queue
	// root.teams shows (-1: no row), its subtree's.
	TeamsActive, TeamsPending int
	Live                      bool
	// DoneWidth is the drawn width of the progress bar's done part, in pixels: styles set
	// by the script must survive the page's content security policy.
	DoneWidth float64
}

// dashboardQueues is the allocation file of the dashboard test: a parent queue with limits
// over one leaf. Root's ACLs are left open, so the page warns of it.
const dashboardQueues = `<allocations>
  <queue name="teams" type="parent">
    <minResources>16384 mb, 4 vcores</minResources>
    <maxResources>57344 mb, 14 vcores</maxResources>
    <queue name="etl"/>
  </queue>
</allocations>
`

// The dashboard in headless Chromium follows a Scheduling as it runs: slots turn occupied
// and back to free, the progress bar fills, and the queues appear, the parent root.teams
// with its subtree's jobs and its limits and shares, under the warning that root's ACLs
// leave every queue open; the page throws no error under its content security policy.
// Each step goes on from the page the one before it left, so the first to fail ends the
// test.
func TestDashboard_ShowsSlotsChangingWhileASchedulingRuns(t *testing.T) {
	t.Parallel()
	p := platformtest.Start(t, platformtest.DefaultBed)
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Config: p.Cluster.Config,
		Auth: api.StaticTokens{token: {Name: "alice"}}}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	ctx, pageErrors := testbrowser.Open(t)
	d := &dashboard{p: p, url: srv.URL, ctx: ctx, dir: testbrowser.ArtifactDir(t, "dashboard")}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("the page shows the idle bed's free slots", d.showsTheIdleBed)
	var created apitypes.Scheduling
	step("slots turn occupied and free again as a Scheduling runs", func(t *testing.T) { created = d.followsAScheduling(t) })
	step("the parent queue shows its limits and shares under the ACL warning", d.showsTheParentQueue)
	step("a test bed's failing workflow is shown above its slots", d.showsAFailingWorkflow)
	step("the Gantt chart draws each run in the slots it held", func(t *testing.T) { d.drawsTheGanttChart(t, created) })
	step("a job is killed from its row", d.killsAJob)
	step("the page has no errors and keeps a bad token out", func(t *testing.T) {
		// Nothing in the page failed, and it kept a bad token out.
		require.Empty(t, pageErrors())
		d.refusesABadToken(t)
	})
}

// dashboard is the API's dashboard, open in a headless Chromium, and the platform under it.
type dashboard struct {
	p   *platformtest.Platform
	url string
	// ctx is the browser's.
	ctx context.Context
	// dir is where the screenshots go.
	dir string
}

// client is a client of the API as alice, failing t.
func (d *dashboard) client(t *testing.T) client { return client{t: t, base: d.url + "/api/v1"} }

// shoot saves a screenshot of the page as name.
func (d *dashboard) shoot(t *testing.T, name string) {
	png, err := chromedp.Run(d.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(d.dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}

// read is what the page shows now of the slots, the progress bar and the queues.
func (d *dashboard) read(t *testing.T) slotCounts {
	s, err := chromedp.Run(d.ctx, chromedp.Evaluate[slotCounts](`(() => {
		const n = (st) => document.querySelectorAll('#beds .slot[data-state="' + st + '"]').length;
		const bar = document.querySelector('#schedulings tr[data-scheduling="show"] .bar');
		const teams = document.querySelector('#queues tr.queue[data-queue="root.teams"]');
		const cell = (f) => teams ? +teams.querySelector('[data-field="' + f + '"]').textContent : -1;
		return { Free: n("free"), Reserved: n("reserved"), Occupied: n("occupied"),
			Done: bar ? +bar.dataset.done : -1, Total: bar ? +bar.dataset.total : -1,
			Queues: [...document.querySelectorAll('#queues .queue')].map((q) => q.dataset.queue),
			TeamsActive: cell("active"), TeamsPending: cell("pending"),
			Live: document.querySelector('#connection').classList.contains('up'),
			DoneWidth: bar ? bar.querySelector('.done').getBoundingClientRect().width : 0 };
	})()`))
	require.NoError(t, err)
	return s
}

// showsTheIdleBed opens the page and waits for the bed's 8 free slots.
func (d *dashboard) showsTheIdleBed(t *testing.T) {
	// The token travels in the fragment, which the browser never sends to the server. The
	// page has 30 s to draw the slots.
	require.NoError(t, chromedp.Do(d.ctx, chromedp.Navigate(d.url+"/#token="+token)))
	first, stopFirst := context.WithTimeout(d.ctx, 30*time.Second)
	defer stopFirst()
	require.NoError(t, chromedp.Do(first, chromedp.WaitVisible(chromedp.CSS("#beds .slot"))))
	require.Eventually(t, func() bool { s := d.read(t); return s.Free == 8 && s.Live }, 20*time.Second, 100*time.Millisecond, "the page never showed 8 free slots")
	d.shoot(t, "dashboard-idle.png")
}

// followsAScheduling runs the Scheduling "show" of three jobs and samples the page as it
// runs: its slots are seen taken, then free again, its progress bar fills, and the queues
// it went through appear. It returns the Scheduling as the API made it.
func (d *dashboard) followsAScheduling(t *testing.T) apitypes.Scheduling {
	// The jobs go to root.teams.etl. Its parent takes at most 7 of the 8 slots, so the jobs
	// of 3 slots run side by side and the one of 2 waits for one of them.
	require.NoError(t, d.p.Client.Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
		Data:       map[string]string{v1alpha1.QueuesConfigMapKey: dashboardQueues},
	}))
	var jobs []map[string]any
	for i, n := range []int32{3, 3, 2} {
		j := testobjects.BatchJob(fmt.Sprintf("show-%d", i)).RunFor("6s").Driver("250m", "512Mi").Obj()
		require.NoError(t, d.p.Client.Create(context.Background(), j))
		jobs = append(jobs, map[string]any{"name": j.Name, "replication": n})
	}
	var created apitypes.Scheduling
	require.Equal(t, 201, d.client(t).call("POST", "/schedulings", map[string]any{"name": "show", "testBed": "bed", "mode": "QueueBased", "queue": "teams.etl", "jobs": jobs}, &created))

	// Sample the page as the Scheduling runs: the slots must be seen taken, then free again.
	var seen []slotCounts
	maxOccupied, maxTeamsActive, maxTeamsPending, shot := 0, 0, 0, false
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		s := d.read(t)
		if len(seen) == 0 || fmt.Sprint(s) != fmt.Sprint(seen[len(seen)-1]) {
			seen = append(seen, s)
		}
		maxOccupied = max(maxOccupied, s.Occupied)
		maxTeamsActive, maxTeamsPending = max(maxTeamsActive, s.TeamsActive), max(maxTeamsPending, s.TeamsPending)
		if s.Occupied >= 6 && !shot {
			d.shoot(t, "dashboard-running.png")
			shot = true
		}
		if s.Total > 0 && s.Done == s.Total && s.Free == 8 && len(s.Queues) > 0 {
			break
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Logf("the page went through %d pictures; at most %d slots occupied", len(seen), maxOccupied)
	last := seen[len(seen)-1]
	require.Equal(t, 3, last.Total, "%+v", seen)
	require.Equal(t, 3, last.Done, "the progress bar is full at the end")
	require.Equal(t, 8, last.Free, "every slot is free again")
	require.Greater(t, last.DoneWidth, 100.0, "the full bar is drawn")
	require.GreaterOrEqual(t, maxOccupied, 3, "the page showed a job's slots occupied: %+v", seen)
	require.Contains(t, last.Queues, "root.teams.etl", "the queue the jobs went through")
	require.Equal(t, []string{"root", "root.teams", "root.teams.etl"}, last.Queues, "every queue, parents included, in tree order")
	t.Logf("root.teams showed at most %d active and %d pending jobs", maxTeamsActive, maxTeamsPending)
	require.GreaterOrEqual(t, maxTeamsActive, 1, "the parent counts the running jobs of its leaf: %+v", seen)
	return created
}

// showsTheParentQueue checks the row of root.teams once the jobs are done, and the warning
// about root's ACLs above the queues.
func (d *dashboard) showsTheParentQueue(t *testing.T) {
	// The parent's row with its values once the jobs are done: nothing used or waiting, its
	// limits, and its shares (the bed is 65536 MB and 16 vcores; the parent alone under root
	// gets all of it up to its maxResources); and the warning about root's ACLs above.
	type queueRow struct {
		Parent, Indented                              bool
		Used, Active, Pending, Min, Max, Fair, Steady string
	}
	var teams queueRow
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(d.ctx, chromedp.Evaluate[queueRow](`(() => {
			const row = document.querySelector('#queues tr.queue[data-queue="root.teams"]');
			const name = row.querySelector('.name'), leaf = document.querySelector('#queues tr.queue[data-queue="root.teams.etl"] .name');
			const f = (k) => row.querySelector('[data-field="' + k + '"]').textContent;
			return { Parent: row.classList.contains('parent'), Indented: parseFloat(getComputedStyle(leaf).paddingLeft) > parseFloat(getComputedStyle(name).paddingLeft),
				Used: f("used"), Active: f("active"), Pending: f("pending"), Min: f("min"), Max: f("max"), Fair: f("fair"), Steady: f("steady") };
		})()`))
		teams = got
		return err == nil && got.Active == "0" && got.Used == "0 MB, 0 vcores"
	}, 10*time.Second, 200*time.Millisecond, "the root.teams row: %+v", teams)
	require.Equal(t, queueRow{Parent: true, Indented: true, Used: "0 MB, 0 vcores", Active: "0", Pending: "0", Min: "16384 MB, 4 vcores",
		Max: "57344 MB, 14 vcores", Fair: "0 MB, 0 vcores", Steady: "57344 MB, 14 vcores"}, teams)
	warned, err := chromedp.Run(d.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#queues .warning')].map((w) => w.textContent)`))
	require.NoError(t, err)
	require.Len(t, warned, 1)
	require.Contains(t, warned[0], "every user may submit to and administer every queue")
	d.shoot(t, "dashboard-done.png")
}

// showsAFailingWorkflow marks the bed's workflows unhealthy and waits for the page to say so.
func (d *dashboard) showsAFailingWorkflow(t *testing.T) {
	// A test bed whose workflow cannot go on says so above its slots, in the words of its
	// WorkflowsHealthy condition (the bridge writes it; here, the test).
	// The bed's reconcile writes its status too: the write is retried on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var tb v1alpha1.TestBed
		if err := d.p.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "default", Name: "bed"}, &tb); err != nil {
			return err
		}
		meta.SetStatusCondition(&tb.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWorkflowsHealthy, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonWorkflowTaskFailing, Message: "the admission workflow admission/default/bed has failed its workflow task 3 times"})
		return d.p.Client.Status().Update(context.Background(), &tb)
	}))
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`(() => { const w = document.querySelector('#beds .warning[data-kind="workflows"]'); return w ? w.textContent : ""; })()`))
		return err == nil && strings.Contains(got, "has failed its workflow task 3 times")
	}, 10*time.Second, 200*time.Millisecond, "the page shows the failing workflow")
}

// drawsTheGanttChart checks the live Gantt chart against the runs of created's jobs.
func (d *dashboard) drawsTheGanttChart(t *testing.T, created apitypes.Scheduling) {
	// The live Gantt chart: one bar per run in each slot it held, the jobs' own slots, and
	// no two bars overlapping in a slot.
	type ganttBar struct {
		Job   string
		Slot  int
		Start float64
		End   float64
	}
	var bars []ganttBar
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(d.ctx, chromedp.Evaluate[[]ganttBar](`[...document.querySelectorAll('#gantt svg[data-bed="bed"] rect.bar')]
			.filter((r) => r.getBoundingClientRect().width > 0)
			.map((r) => ({ Job: r.dataset.job, Slot: +r.dataset.slot, Start: +r.dataset.start, End: +r.dataset.end }))`))
		bars = got
		return err == nil && len(got) == 8
	}, 10*time.Second, 200*time.Millisecond, "the chart never drew a bar per slot of each run: %+v", bars)
	perJob := map[string]int{}
	for i, b := range bars {
		perJob[b.Job]++
		for _, o := range bars[i+1:] {
			if o.Slot == b.Slot {
				require.True(t, o.End <= b.Start || b.End <= o.Start, "%s and %s overlap in slot %d", b.Job, o.Job, b.Slot)
			}
		}
	}
	require.Equal(t, map[string]int{"show-0": 3, "show-1": 3, "show-2": 2}, perJob)
	for _, j := range created.Jobs {
		var job apitypes.Job
		require.Equal(t, 200, d.client(t).call("GET", "/jobs/"+j.Name, nil, &job))
		require.Len(t, job.Status.History, 1)
		for _, b := range bars {
			if b.Job == j.Name {
				require.Contains(t, job.Status.History[0].Slots, int32(b.Slot), "a bar of %s in a slot it did not hold", j.Name)
			}
		}
	}
}

// killsAJob kills a running job from its row's Kill button.
func (d *dashboard) killsAJob(t *testing.T) {
	c := d.client(t)
	// A job that would run for ten minutes is killed from its row's Kill button: it ends
	// Failed with reason Killed, and the page says so and drops the row.
	long := testobjects.BatchJob("show-long").RunFor("10m").Driver("250m", "512Mi").Priority(4).Obj()
	require.NoError(t, d.p.Client.Create(context.Background(), long))
	var created apitypes.Scheduling
	require.Equal(t, 201, c.call("POST", "/schedulings", map[string]any{"name": "long", "testBed": "bed", "mode": "QueueBased", "queue": "teams.etl",
		"jobs": []map[string]any{{"name": long.Name, "replication": 2}}}, &created))
	row := `#jobs tr[data-job="show-long"]`
	require.Eventually(t, func() bool {
		st, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector('`+row+`'); return r ? r.dataset.state : ""; })()`))
		return err == nil && st == "Running"
	}, time.Minute, 200*time.Millisecond, "the jobs table shows the long job running")
	priority, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`document.querySelector('`+row+` td:nth-child(4)').textContent`))
	require.NoError(t, err)
	require.Equal(t, "4", priority, "the jobs table shows the job's priority")
	d.shoot(t, "dashboard-kill.png")
	// A redraw keeps the row and its button: one replaced between a click's press and its
	// release would swallow the click, and the feed redraws the page all the time.
	same, err := chromedp.Run(d.ctx, chromedp.Evaluate[bool](`(() => {
		const before = document.querySelector('`+row+` button.kill');
		drawJobs();
		return before !== null && document.querySelector('`+row+` button.kill') === before;
	})()`))
	require.NoError(t, err)
	require.True(t, same, "a redraw replaced the job's Kill button")
	click, stopClick := context.WithTimeout(d.ctx, 10*time.Second)
	defer stopClick()
	require.NoError(t, chromedp.Do(click, chromedp.Click(chromedp.CSS(row+" button.kill"))))
	var killed apitypes.Job
	var said string // what the page says of the kill, for a failure's message
	if !assert.Eventually(t, func() bool {
		said, _ = chromedp.Run(d.ctx, chromedp.Evaluate[string](`document.querySelector('#job-action').textContent`))
		return c.call("GET", "/jobs/show-long", nil, &killed) == 200 && killed.Status.State == v1alpha1.JobFailed
	}, time.Minute, 200*time.Millisecond) {
		t.Fatalf("the killed job never ended: its status %+v; the page says %q", killed.Status, said)
	}
	require.Equal(t, v1alpha1.ReasonKilled, killed.Status.Reason)
	require.Equal(t, "killed by alice (an administrator of root.teams.etl): killed from the dashboard", killed.Status.Message)
	require.Eventually(t, func() bool {
		got, err := chromedp.Run(d.ctx, chromedp.Evaluate[[]string](`[document.querySelector('#job-action').textContent, String(!!document.querySelector('`+row+`'))]`))
		return err == nil && got[0] == "show-long is killed (as an administrator of root.teams.etl); it ends Failed, reason Killed." && got[1] == "false"
	}, 10*time.Second, 200*time.Millisecond, "the page says the job is killed and drops its row")
}

// refusesABadToken loads the page again with a wrong token: the login form comes back
// with the reason.
func (d *dashboard) refusesABadToken(t *testing.T) {
	// A new query makes it a new page load, not a jump within the page.
	step, stop := context.WithTimeout(d.ctx, 30*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(step, chromedp.Navigate(d.url+"/?again#token=wrong"), chromedp.WaitVisible(chromedp.CSS("#login"))))
	require.Eventually(t, func() bool {
		shown, err := chromedp.Run(d.ctx, chromedp.Evaluate[bool](`document.querySelector('#login-error').textContent.includes('not known')`))
		return err == nil && shown
	}, 10*time.Second, 100*time.Millisecond, "a wrong token must bring the form back with the reason")
}
