//go:build integration

package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"slotplane/api"
	"slotplane/internal/testbrowser"
	"slotplane/internal/testobjects"
	"slotplane/internal/testplatform"
)

type slotCounts struct {
	Free, Reserved, Occupied int
	Done, Total              int
	Queues                   []string
	Live                     bool
	// DoneWidth is the drawn width of the progress bar's done part, in pixels: styles set
	// by the script must survive the page's content security policy.
	DoneWidth float64
}

// The dashboard in headless Chromium follows a Scheduling as it runs: slots turn occupied
// and back to free, the progress bar fills, and the queue appears; the page throws no
// error under its content security policy.
func TestDashboard_ShowsSlotsChangingWhileASchedulingRuns(t *testing.T) {
	p := testplatform.Start(t, testplatform.DefaultBed)
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Config: p.Cluster.Config,
		Auth: api.StaticTokens{token: {Name: "alice"}}}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	c := client{t: t, base: srv.URL + "/api/v1"}

	ctx, pageErrors := testbrowser.Open(t)
	dir := testbrowser.ArtifactDir(t, "dashboard")
	shoot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot: %s", path)
	}
	read := func() slotCounts {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[slotCounts](`(() => {
			const n = (st) => document.querySelectorAll('#beds .slot[data-state="' + st + '"]').length;
			const bar = document.querySelector('#schedulings tr[data-scheduling="show"] .bar');
			return { Free: n("free"), Reserved: n("reserved"), Occupied: n("occupied"),
				Done: bar ? +bar.dataset.done : -1, Total: bar ? +bar.dataset.total : -1,
				Queues: [...document.querySelectorAll('#queues .queue')].map((q) => q.dataset.queue),
				Live: document.querySelector('#connection').classList.contains('up'),
				DoneWidth: bar ? bar.querySelector('.done').getBoundingClientRect().width : 0 };
		})()`))
		require.NoError(t, err)
		return s
	}

	// The token travels in the fragment, which the browser never sends to the server. The
	// page has 30 s to draw the slots.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#token="+token)))
	first, stopFirst := context.WithTimeout(ctx, 30*time.Second)
	defer stopFirst()
	require.NoError(t, chromedp.Do(first, chromedp.WaitVisible(chromedp.CSS("#beds .slot"))))
	require.Eventually(t, func() bool { s := read(); return s.Free == 8 && s.Live }, 20*time.Second, 100*time.Millisecond, "the page never showed 8 free slots")
	shoot("dashboard-idle.png")

	var jobs []map[string]any
	for i, n := range []int32{3, 3, 2} {
		j := testobjects.BatchJob(fmt.Sprintf("show-%d", i)).RunFor("6s").Driver("250m", "512Mi").Obj()
		require.NoError(t, p.Client.Create(context.Background(), j))
		jobs = append(jobs, map[string]any{"name": j.Name, "replication": n})
	}
	var created api.Scheduling
	require.Equal(t, 201, c.call("POST", "/schedulings", map[string]any{"name": "show", "testBed": "bed", "mode": "QueueBased", "jobs": jobs}, &created))

	// Sample the page as the Scheduling runs: the slots must be seen taken, then free again.
	var seen []slotCounts
	maxOccupied, shot := 0, false
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		s := read()
		if len(seen) == 0 || fmt.Sprint(s) != fmt.Sprint(seen[len(seen)-1]) {
			seen = append(seen, s)
		}
		maxOccupied = max(maxOccupied, s.Occupied)
		if s.Occupied >= 6 && !shot {
			shoot("dashboard-running.png")
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
	require.Contains(t, last.Queues, "root.default", "the queue the jobs went through")
	shoot("dashboard-done.png")

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
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]ganttBar](`[...document.querySelectorAll('#gantt svg[data-bed="bed"] rect.bar')]
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
		var job api.Job
		require.Equal(t, 200, c.call("GET", "/jobs/"+j.Name, nil, &job))
		require.Len(t, job.Status.History, 1)
		for _, b := range bars {
			if b.Job == j.Name {
				require.Contains(t, job.Status.History[0].Slots, int32(b.Slot), "a bar of %s in a slot it did not hold", j.Name)
			}
		}
	}

	// Nothing in the page failed, and it kept a bad token out.
	require.Empty(t, pageErrors())
	// A new query makes it a new page load, not a jump within the page.
	step, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	require.NoError(t, chromedp.Do(step, chromedp.Navigate(srv.URL+"/?again#token=wrong"), chromedp.WaitVisible(chromedp.CSS("#login"))))
	require.Eventually(t, func() bool {
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#login-error').textContent.includes('not known')`))
		return err == nil && shown
	}, 10*time.Second, 100*time.Millisecond, "a wrong token must bring the form back with the reason")
}
