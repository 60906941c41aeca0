//go:build integration

package experiment

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"slotplane/internal/testbrowser"
)

// packedResult is 40 jobs of two queues placed first come, first served on 8 slots of 2
// nodes, each in the slots that free up first, so no two runs share a slot at once. The
// last job is still running at the end, and one job has a hostile name.
func packedResult() Result {
	r := Result{Name: "browser", Trace: "traces/packed.csv", Scale: 1, Scheduler: "fifo", Bed: bed(2, 4),
		Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), NoPrediction: "not simulated in this test"}
	free := make([]float64, 8) // when each slot is next free
	for i := range 40 {
		width, arrival := 1+i%4, float64(i)*1.5
		order := []int{0, 1, 2, 3, 4, 5, 6, 7}
		slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(free[a], free[b]) })
		chosen := order[:width]
		start := arrival
		for _, s := range chosen {
			start = max(start, free[s])
		}
		end := start + 4 + float64(i%5)
		job, queue := fmt.Sprintf("job-%02d", i), []string{"root.etl", "root.ml"}[i%2]
		if i == 7 {
			job = hostile
		}
		b := makeRun(job).Queue(queue).User(fmt.Sprintf("user-%d", i%3)).Arrive(arrival).Admit(start)
		if i < 39 {
			b.End(end, OutcomeCompleted)
		}
		for _, s := range chosen {
			b.On(r.Bed.SlotNodes[s], int32(s))
			free[s] = end
		}
		r.Runs = append(r.Runs, b.Obj())
	}
	return r
}

type pageBars struct {
	Bars int
	// MinWidth is the narrowest bar's drawn width, in CSS pixels.
	MinWidth float64
	// OutOfRow counts bars whose drawn middle is not inside their slot's lane.
	OutOfRow int
	Rows     int
	Steps    bool
}

// The report opened in Chromium draws every bar, visibly and in its slot's row, without a
// single error, and a picture of it is left for a person to look at.
func TestReport_RendersInChromium(t *testing.T) {
	r := packedResult()
	want := 0
	for _, run := range r.Runs {
		if run.Admitted >= 0 {
			want += len(run.Slots)
		}
	}
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, WriteReport(f, r))
	require.NoError(t, f.Close())

	ctx, errs := testbrowser.Open(t)
	step, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	page := (&url.URL{Scheme: "file", Path: path}).String()
	require.NoError(t, chromedp.Do(step, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#gantt"))))

	got, err := chromedp.Run(step, chromedp.Evaluate[pageBars](`(() => {
		const bars = [...document.querySelectorAll('#gantt rect.bar')];
		const inRow = (bar) => {
			const lane = bar.parentElement.querySelector('.lane').getBoundingClientRect();
			const b = bar.getBoundingClientRect();
			const mid = b.top + b.height / 2;
			return bar.parentElement.dataset.slot === bar.dataset.slot && mid > lane.top && mid < lane.bottom;
		};
		return {
			Bars: bars.length,
			MinWidth: Math.min(...bars.map((b) => b.getBoundingClientRect().width)),
			OutOfRow: bars.filter((b) => !inRow(b)).length,
			Rows: document.querySelectorAll('#gantt g.slot').length,
			Steps: document.querySelector('#utilization path.util-line').getTotalLength() > 0,
		};
	})()`))
	require.NoError(t, err)
	assert.Equal(t, want, got.Bars, "one bar per run and slot")
	assert.Greater(t, got.MinWidth, 0.0, "every bar shows on screen")
	assert.Zero(t, got.OutOfRow, "bars drawn outside their slot's row")
	assert.Equal(t, 8, got.Rows)
	assert.True(t, got.Steps, "the utilization line is drawn")

	hostileText, err := chromedp.Run(step, chromedp.Evaluate[string](
		`document.querySelector('#gantt rect.bar[data-job^="<script"]').dataset.job`))
	require.NoError(t, err)
	assert.Equal(t, hostile, hostileText, "the hostile name shows as text")

	png, err := chromedp.Run(step, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(testbrowser.ArtifactDir(t, "experiment"), "report.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot: %s", shot)

	assert.Empty(t, errs(), "the page raised errors")
}
