package experiment

import (
	"cmp"
	_ "embed"
	"fmt"
	"hash/fnv"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var reportSource string

// reportTemplate is parsed once; html/template escapes every job, queue and user name in
// the context it lands in (text, attribute, SVG title), since all of them are user input.
var reportTemplate = template.Must(template.New("report").Parse(reportSource))

// WriteReport writes r as one self-contained HTML page: the experiment's inputs, its
// figures against the prediction's, a Gantt chart of the slots, the slots held over time
// and every run. The page loads nothing and runs no script (its content security policy
// forbids both), so it can be mailed, archived and opened anywhere.
func WriteReport(w io.Writer, r Result) error {
	if err := reportTemplate.Execute(w, newReportPage(r)); err != nil {
		return fmt.Errorf("write report of %s: %w", r.Name, err)
	}
	return nil
}

// The charts' geometry, in SVG user units (pixels at 100%). Both charts share the time
// axis so that a bar and the utilization it adds line up vertically.
const (
	chartLeft   = 180.0 // room for "slot 123 · node-name"
	chartWidth  = 1000.0
	chartRight  = 24.0
	rowHeight   = 18.0
	barInset    = 2.0 // between a bar and its row's edges, so rows stay apart
	chartTop    = 8.0
	axisHeight  = 30.0
	utilHeight  = 160.0
	targetTicks = 10
)

// reportPage is what the template shows, every figure already formatted: the template
// only lays it out.
type reportPage struct {
	Name, Trace, Scale, Scheduler string
	Bed, Started                  string
	Runs, Slots, Nodes            int
	Figures                       []figure
	HasPrediction                 bool
	Gap                           []figure // Name and Measured only
	Gantt                         gantt
	Util                          utilization
	Legend                        []legendEntry
	Header                        []string
	Rows                          [][]string
}

// figure is one row of a table of figures; Predicted and Gap are empty without a
// prediction.
type figure struct{ Name, Measured, Predicted, Gap string }

type legendEntry struct{ Queue, Fill string }

type gantt struct {
	Width, Height  float64
	Top, RowHeight float64
	Ticks          []tick
	AxisY          float64
	Rows           []ganttRow
}

type tick struct {
	X     float64
	Label string
}

type ganttRow struct {
	Slot     int
	Label    string
	Class    string
	Y, TextY float64
	Bars     []bar
}

// bar is one run in one slot. Its data attributes carry the run, so a reader (or a test)
// can tell which bar is which without decoding the geometry.
type bar struct {
	Class, Job, BatchJob string
	Attempt, Slot        int
	Start, End           string // seconds, as the CSV writes them
	X, Y, Width, Height  float64
	Fill, Title          string
}

type utilization struct {
	Width, Height float64
	// Left and Right bound the plot; LabelX is where the slot counts end, left of it.
	Left, Right, LabelX float64
	Top, Bottom         float64
	Ticks               []tick
	YTicks              []yTick
	AxisY               float64
	Line, Area          string
}

type yTick struct {
	Y     float64
	Label string
}

func newReportPage(r Result) reportPage {
	slots := len(r.Bed.SlotNodes)
	for _, run := range r.Runs {
		for _, s := range run.Slots {
			slots = max(slots, int(s)+1) // a run on a slot the bed does not list still shows
		}
	}
	page := reportPage{
		Name: r.Name, Trace: r.Trace, Scale: strconv.FormatFloat(r.Scale, 'g', -1, 64), Scheduler: r.Scheduler,
		Bed: r.Bed.Name, Started: "not recorded", Runs: len(r.Runs), Slots: slots,
		Nodes:  len(slices.Compact(slices.Sorted(slices.Values(r.Bed.SlotNodes)))),
		Header: csvHeader,
	}
	if !r.Start.IsZero() {
		page.Started = r.Start.Format(time.RFC3339)
	}
	page.Figures, page.Gap = figures(r, slots)
	page.HasPrediction = r.Predicted != nil
	end := chartEnd(r.Runs)
	page.Gantt, page.Legend = newGantt(r, slots, end)
	page.Util = newUtilization(r.Runs, slots, end)
	for _, run := range r.Runs {
		page.Rows = append(page.Rows, csvRecord(run, r.Predicted))
	}
	return page
}

// figures are the measured figures beside the predicted ones, and the gap's own.
func figures(r Result, slots int) (table, gap []figure) {
	m := Summarize(r.Runs, slots)
	table = []figure{
		{Name: "Makespan", Measured: secs(m.Makespan)},
		{Name: "Mean wait", Measured: secs(m.MeanWait)},
		{Name: "P95 wait", Measured: secs(m.P95Wait)},
		{Name: "Slot utilization", Measured: percent(m.Utilization)},
		{Name: "Fairness (Jain over users)", Measured: fmt.Sprintf("%.3f", m.Fairness)},
		{Name: "Jobs completed / failed / refused", Measured: fmt.Sprintf("%d / %d / %d", m.Completed, m.Failed, m.Refused)},
	}
	if r.Predicted == nil {
		return table, []figure{{Name: "No prediction", Measured: cmp.Or(r.NoPrediction, "none was made")}}
	}
	p := Summarize(r.Predicted.Runs(), slots)
	g := CompareWith(r.Runs, r.Predicted)
	predicted := []string{secs(p.Makespan), secs(p.MeanWait), secs(p.P95Wait), percent(p.Utilization),
		fmt.Sprintf("%.3f", p.Fairness), fmt.Sprintf("%d / %d / %d", p.Completed, p.Failed, p.Refused)}
	gaps := []string{ratio(g.MakespanRatio), signedSecs(m.MeanWait - p.MeanWait), signedSecs(m.P95Wait - p.P95Wait),
		fmt.Sprintf("%+.1f points", 100*(m.Utilization-p.Utilization)), fmt.Sprintf("%+.3f", m.Fairness-p.Fairness),
		fmt.Sprintf("%+d / %+d / %+d", m.Completed-p.Completed, m.Failed-p.Failed, m.Refused-p.Refused)}
	for i := range table {
		table[i].Predicted, table[i].Gap = predicted[i], gaps[i]
	}
	gap = []figure{
		{Name: "Simulated policy", Measured: r.Predicted.Policy},
		{Name: "Makespan ratio (measured / predicted)", Measured: ratio(g.MakespanRatio)},
		{Name: "Jobs whose starts are compared", Measured: strconv.Itoa(g.Compared)},
		{Name: "Mean start difference (bias)", Measured: signedSecs(g.MeanStartDiff)},
		{Name: "Mean absolute start difference", Measured: secs(g.MeanAbsStartDiff)},
		{Name: "P50 absolute start difference", Measured: secs(g.P50AbsStartDiff)},
		{Name: "P95 absolute start difference", Measured: secs(g.P95AbsStartDiff)},
		{Name: "Finished on the bed only", Measured: names(g.OnlyMeasured)},
		{Name: "Finished in the simulation only", Measured: names(g.OnlyPredicted)},
	}
	return table, gap
}

// chartEnd is the latest moment any run was seen at: the makespan when the trace starts
// at zero, later when a run was still going, so a run still holding its slots at the end
// is drawn to the end of what was observed.
func chartEnd(runs []Run) time.Duration {
	var end time.Duration
	for _, r := range runs {
		end = max(end, r.Arrival, r.Admitted, r.Running, r.Ended)
	}
	return end
}

func newGantt(r Result, slots int, end time.Duration) (gantt, []legendEntry) {
	g := gantt{Width: chartLeft + chartWidth + chartRight, Top: chartTop, RowHeight: rowHeight, Rows: make([]ganttRow, slots)}
	node, alt := "", false
	for i := range g.Rows {
		row := &g.Rows[i]
		row.Slot, row.Y = i, chartTop+float64(i)*rowHeight
		row.TextY = row.Y + rowHeight*0.7
		name := "?"
		if i < len(r.Bed.SlotNodes) {
			name = r.Bed.SlotNodes[i]
		}
		// Rows are shaded by node, so the slots of one node read as a group.
		if i > 0 && name != node {
			alt = !alt
		}
		node = name
		row.Label, row.Class = fmt.Sprintf("slot %d · %s", i, name), "lane"
		if alt {
			row.Class = "lane alt"
		}
	}
	g.AxisY = chartTop + float64(slots)*rowHeight
	g.Height = g.AxisY + axisHeight
	g.Ticks = ticks(end)
	fills := colours(r.Runs)
	for _, run := range r.Runs {
		if run.Admitted < 0 {
			continue
		}
		to, class := run.Ended, "bar"
		switch {
		case to < 0:
			to, class = end, "bar open"
		case run.Outcome == OutcomeFailed:
			class = "bar failed"
		case run.Outcome == OutcomeReleased:
			class = "bar released"
		}
		x0, x1 := xAt(run.Admitted, end), xAt(to, end)
		title := fmt.Sprintf("%s (%s) attempt %d\nqueue %s · user %s\nadmitted %s, %s",
			run.Job, run.BatchJob, run.Attempt, run.Queue, cmp.Or(run.User, "-"), secs(run.Admitted), endText(run, end))
		for _, s := range run.Slots {
			if s < 0 {
				continue // no row to draw it in; the table of runs still lists it
			}
			row := &g.Rows[s]
			row.Bars = append(row.Bars, bar{
				Class: class, Job: run.Job, BatchJob: run.BatchJob, Attempt: run.Attempt, Slot: int(s),
				Start: seconds(run.Admitted), End: seconds(to),
				// At least a pixel wide, so a run that held its slot for an instant shows.
				X: x0, Width: max(x1-x0, 1), Y: row.Y + barInset, Height: rowHeight - 2*barInset,
				Fill: fills[run.Job], Title: title,
			})
		}
	}
	var legend []legendEntry
	for _, q := range slices.Sorted(maps.Keys(queueSet(r.Runs))) {
		legend = append(legend, legendEntry{Queue: cmp.Or(q, "(no queue)"), Fill: fill(q, 0)})
	}
	return g, legend
}

func endText(run Run, end time.Duration) string {
	if run.Ended < 0 {
		return "still running at " + secs(end)
	}
	return fmt.Sprintf("ended %s (%s, held %s)", secs(run.Ended), cmp.Or(run.Outcome, "no outcome"), secs(run.RunTime()))
}

func queueSet(runs []Run) map[string]bool {
	qs := map[string]bool{}
	for _, r := range runs {
		qs[r.Queue] = true
	}
	return qs
}

// colours gives each job its fill: the hue says the queue, the lightness steps from one
// job of the queue to the next, in arrival order, so jobs that follow each other in a slot
// are told apart.
func colours(runs []Run) map[string]string {
	fills := map[string]string{}
	perQueue := map[string]int{}
	for _, r := range runs {
		if _, ok := fills[r.Job]; ok {
			continue
		}
		fills[r.Job] = fill(r.Queue, perQueue[r.Queue])
		perQueue[r.Queue]++
	}
	return fills
}

// lightnesses are far enough apart for neighbours to differ, and all dark enough for the
// bars to stand out from the lanes.
var lightnesses = []int{46, 62, 36, 54, 70}

// fill is the colour of a queue's nth job: a hue hashed from the queue's name, so a queue
// keeps its colour from one report to the next.
func fill(queue string, n int) string {
	h := fnv.New32a()
	h.Write([]byte(queue))
	return fmt.Sprintf("hsl(%d, 62%%, %d%%)", h.Sum32()%360, lightnesses[n%len(lightnesses)])
}

func xAt(t, end time.Duration) float64 {
	return round(chartLeft + chartWidth*t.Seconds()/max(end.Seconds(), 1e-3))
}

// round keeps the coordinates short: a hundredth of a pixel is beyond what a screen shows.
func round(f float64) float64 { return math.Round(f*100) / 100 }

// ticks are the time axis's marks: a round step (1, 2 or 5 times a power of ten seconds)
// that gives about targetTicks of them.
func ticks(end time.Duration) []tick {
	span := max(end.Seconds(), 1e-3)
	step := math.Pow(10, math.Floor(math.Log10(span/targetTicks)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= targetTicks {
			step *= m
			break
		}
	}
	var ts []tick
	for i := 0; float64(i)*step <= span*(1+1e-9); i++ {
		// Rounded, or 3 x 0.2 would read 0.6000000000000001.
		s := math.Round(float64(i)*step*1e9) / 1e9
		ts = append(ts, tick{X: xAt(time.Duration(s*float64(time.Second)), end), Label: strconv.FormatFloat(s, 'f', -1, 64) + " s"})
	}
	return ts
}

func newUtilization(runs []Run, slots int, end time.Duration) utilization {
	u := utilization{Width: chartLeft + chartWidth + chartRight, Left: chartLeft, Right: chartLeft + chartWidth, LabelX: chartLeft - 10,
		Top: chartTop, Bottom: chartTop + utilHeight}
	u.AxisY, u.Height = u.Bottom, u.Bottom+axisHeight
	u.Ticks = ticks(end)
	yAt := func(level int) float64 {
		return round(u.Bottom - utilHeight*float64(level)/float64(max(slots, 1)))
	}
	for _, l := range []int{0, slots / 2, slots} {
		u.YTicks = append(u.YTicks, yTick{Y: yAt(l), Label: strconv.Itoa(l)})
	}
	// Every admission adds the run's slots, every end takes them back; a run still running
	// holds them to the end of the chart.
	delta := map[time.Duration]int{}
	for _, r := range runs {
		if r.Admitted < 0 {
			continue
		}
		delta[r.Admitted] += r.SlotCount()
		if r.Ended >= 0 {
			delta[r.Ended] -= r.SlotCount()
		}
	}
	var line strings.Builder
	fmt.Fprintf(&line, "M%g,%g", xAt(0, end), yAt(0))
	level := 0
	for _, t := range slices.Sorted(maps.Keys(delta)) {
		level += delta[t]
		fmt.Fprintf(&line, " H%g V%g", xAt(t, end), yAt(level))
	}
	fmt.Fprintf(&line, " H%g", xAt(end, end))
	u.Line = line.String()
	u.Area = fmt.Sprintf("%s V%g H%g Z", u.Line, yAt(0), xAt(0, end))
	return u
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s" }

// signedSecs always shows the sign: a difference of +2 s and one of -2 s mean opposite
// things (see Gap).
func signedSecs(d time.Duration) string { return fmt.Sprintf("%+.3f s", d.Seconds()) }

func percent(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }

func ratio(f float64) string {
	if f == 0 {
		return "n/a"
	}
	return fmt.Sprintf("×%.3f", f)
}

// names lists a few job names and counts the rest: the page must stay readable when a
// whole trace went astray.
func names(jobs []string) string {
	const shown = 12
	if len(jobs) == 0 {
		return "none"
	}
	s := fmt.Sprintf("%d: %s", len(jobs), strings.Join(jobs[:min(len(jobs), shown)], ", "))
	if len(jobs) > shown {
		s += ", …"
	}
	return s
}
