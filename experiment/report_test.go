package experiment

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

const hostile = `<script>alert(1)</script>`

// sampleResult is a small experiment on 8 slots of 2 nodes with two queues, a job that
// failed, one released and run again, one still running at the end and one with a hostile
// name.
func sampleResult() Result {
	return Result{
		Name: "exp", Trace: "traces/small.csv", Scale: 0.5, Scheduler: "yunikorn", Bed: bed(2, 4),
		Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Runs: []Run{
			makeRun("a").Queue("root.alpha").User("ann").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("node-0", 0, 1, 2).Obj(),
			makeRun("b").Queue("root.beta").User("bob").Arrive(1).Admit(1).End(4, OutcomeReleased).On("node-1", 4, 5).Obj(),
			makeRun("b").Attempt(2).Queue("root.beta").User("bob").Arrive(1).Admit(10).End(20, OutcomeCompleted).On("node-0", 0, 1).Obj(),
			makeRun("c").Queue("root.alpha").User("ann").Arrive(2).Admit(4).End(9, OutcomeFailed).On("node-1", 4, 5, 6, 7).Obj(),
			makeRun(hostile).Queue(`"><img src=x onerror=alert(1)>`).User("<b>eve</b>").Arrive(3).Admit(10).End(18, OutcomeCompleted).On("node-0", 2, 3).Obj(),
			makeRun("d").Queue("root.beta").User("bob").Arrive(5).Admit(12).On("node-1", 6).Obj(),
			makeRun("e").Queue("root.alpha").User("ann").Arrive(6).Obj(),
		},
		Predicted: &Prediction{Policy: "fifo", Jobs: map[string]Run{
			"a": {Arrival: 0, Admitted: 0, Ended: sec(10), Width: 3},
			"b": {Arrival: sec(1), Admitted: sec(1), Ended: sec(11), Width: 2},
		}},
	}
}

// render writes r's report and parses it back as a browser would.
func render(t *testing.T, r Result) (string, *html.Node) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteReport(&buf, r))
	doc, err := html.Parse(strings.NewReader(buf.String()))
	require.NoError(t, err)
	return buf.String(), doc
}

// all are the elements under n that match, in document order.
func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			found = append(found, d)
		}
	}
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(attr(n, "class")), class)
}

func byID(doc *html.Node, id string) *html.Node {
	found := all(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(found) != 1 {
		panic(fmt.Sprintf("%d elements with id %q", len(found), id))
	}
	return found[0]
}

// bars are the Gantt chart's bars.
func bars(doc *html.Node) []*html.Node {
	return all(byID(doc, "gantt"), func(n *html.Node) bool { return n.Data == "rect" && hasClass(n, "bar") })
}

func num(t *testing.T, n *html.Node, key string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(attr(n, key), 64)
	require.NoError(t, err, "attribute %s of %v", key, n.Attr)
	return f
}

func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func TestWriteReport_OneBarPerRunAndSlotInThatSlotsRow(t *testing.T) {
	r := sampleResult()
	want := map[string]int{}
	for _, run := range r.Runs {
		if run.Admitted < 0 {
			continue // e never got slots: no bar
		}
		for _, s := range run.Slots {
			want[fmt.Sprintf("%s/%d/%d", run.Job, run.Attempt, s)]++
		}
	}
	_, doc := render(t, r)
	got := map[string]int{}
	for _, b := range bars(doc) {
		got[attr(b, "data-job")+"/"+attr(b, "data-attempt")+"/"+attr(b, "data-slot")]++
		slot := num(t, b, "data-slot")
		row := b.Parent
		require.Equal(t, "g", row.Data)
		assert.Equal(t, attr(b, "data-slot"), attr(row, "data-slot"), "bar %v drawn in another slot's row", b.Attr)
		lanes := all(row, func(n *html.Node) bool { return hasClass(n, "lane") })
		require.Len(t, lanes, 1)
		laneY, laneH := num(t, lanes[0], "y"), num(t, lanes[0], "height")
		assert.Equal(t, chartTop+slot*rowHeight, laneY, "row of slot %v out of place", slot)
		y, h := num(t, b, "y"), num(t, b, "height")
		assert.True(t, y >= laneY && y+h <= laneY+laneH, "bar %v at y %v..%v outside its row %v..%v", b.Attr, y, y+h, laneY, laneY+laneH)
		assert.Greater(t, num(t, b, "width"), 0.0)
		assert.Len(t, all(b, func(n *html.Node) bool { return n.Data == "title" }), 1, "bar %v has no tooltip", b.Attr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bars by job/attempt/slot (-want +got):\n%s", diff)
	}
	rows := all(byID(doc, "gantt"), func(n *html.Node) bool { return hasClass(n, "slot") })
	require.Len(t, rows, 8)
	assert.Equal(t, "slot 5 · node-1", text(all(rows[5], func(n *html.Node) bool { return n.Data == "text" })[0]))
}

func TestWriteReport_BarsSpanTheirRunAndDoNotOverlapInASlot(t *testing.T) {
	_, doc := render(t, sampleResult())
	type span struct {
		start, end float64
		job        string
	}
	bySlot := map[string][]span{}
	for _, b := range bars(doc) {
		start, end := num(t, b, "data-start"), num(t, b, "data-end")
		// x follows the start on the chart's scale: the experiment's last moment is 20 s.
		assert.InDelta(t, chartLeft+chartWidth*start/20, num(t, b, "x"), 0.01, "bar %v", b.Attr)
		assert.InDelta(t, chartWidth*(end-start)/20, num(t, b, "width"), 0.02, "bar %v", b.Attr)
		bySlot[attr(b, "data-slot")] = append(bySlot[attr(b, "data-slot")], span{start, end, attr(b, "data-job")})
	}
	for slot, spans := range bySlot {
		slices.SortFunc(spans, func(a, b span) int { return cmpFloat(a.start, b.start) })
		for i := 1; i < len(spans); i++ {
			assert.GreaterOrEqual(t, spans[i].start, spans[i-1].end, "slot %s: %s overlaps %s", slot, spans[i].job, spans[i-1].job)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestWriteReport_MarksRunsByHowTheyEnded(t *testing.T) {
	_, doc := render(t, sampleResult())
	class := map[string]string{}
	for _, b := range bars(doc) {
		class[attr(b, "data-job")+"/"+attr(b, "data-attempt")] = attr(b, "class")
		if attr(b, "data-job") == "d" {
			// Still running: drawn to the last moment the experiment saw.
			assert.Equal(t, "20.000", attr(b, "data-end"))
			assert.Contains(t, text(b), "still running")
		}
	}
	want := map[string]string{
		"a/1": "bar", "b/1": "bar released", "b/2": "bar", "c/1": "bar failed", hostile + "/1": "bar", "d/1": "bar open",
	}
	if diff := cmp.Diff(want, class); diff != "" {
		t.Errorf("class by job/attempt (-want +got):\n%s", diff)
	}
}

func TestWriteReport_EscapesHostileNames(t *testing.T) {
	out, doc := render(t, sampleResult())
	assert.NotContains(t, out, hostile)
	assert.NotContains(t, out, "<img")
	assert.NotContains(t, out, "<b>eve")
	for _, n := range all(doc, func(*html.Node) bool { return true }) {
		assert.NotContains(t, []atom.Atom{atom.Script, atom.Img, atom.B}, n.DataAtom, "the page grew a %s element", n.Data)
		for _, a := range n.Attr {
			assert.False(t, strings.HasPrefix(a.Key, "on"), "the page grew an event handler %s=%q on %s", a.Key, a.Val, n.Data)
		}
	}
	// Escaped, the names still read as they were given.
	var found bool
	for _, b := range bars(doc) {
		if attr(b, "data-job") == hostile {
			found = true
			assert.Contains(t, text(b), hostile+" (exp-"+hostile+")")
			assert.Contains(t, text(b), `queue "><img src=x onerror=alert(1)> · user <b>eve</b>`)
		}
	}
	assert.True(t, found, "no bar carries the hostile job's name")
	cells := all(doc, func(n *html.Node) bool { return n.Data == "td" && text(n) == hostile })
	assert.Len(t, cells, 1, "the table of runs shows the name once, as text")
}

func TestWriteReport_IsSelfContained(t *testing.T) {
	out, doc := render(t, sampleResult())
	assert.NotRegexp(t, regexp.MustCompile(`(?i)https?:|//[a-z]`), out, "the page refers to something outside itself")
	for _, n := range all(doc, func(*html.Node) bool { return true }) {
		assert.NotContains(t, []atom.Atom{atom.Script, atom.Link, atom.Img, atom.Iframe}, n.DataAtom, "the page has a %s element", n.Data)
		assert.Empty(t, attr(n, "src"), "%s loads something", n.Data)
		assert.Empty(t, attr(n, "href"), "%s links something", n.Data)
	}
	csp := all(doc, func(n *html.Node) bool { return attr(n, "http-equiv") == "Content-Security-Policy" })
	require.Len(t, csp, 1)
	assert.Contains(t, attr(csp[0], "content"), "default-src 'none'", "scripts and loads are forbidden even if escaping failed")
}

func TestWriteReport_FiguresShowThePredictionOrWhyThereIsNone(t *testing.T) {
	withPrediction := sampleResult()
	without := sampleResult()
	without.Predicted, without.NoPrediction = nil, "the scheduler is an external command"
	cases := map[string]struct {
		r           Result
		wantColumns []string
		wantGap     []string
	}{
		"with a prediction": {
			r:           withPrediction,
			wantColumns: []string{"", "Measured", "Predicted", "Gap"},
			// Measured makespan 20 s (d never ended) against 11 s predicted.
			wantGap: []string{"Simulated policy fifo", "Makespan ratio (measured / predicted) ×1.818", "Jobs whose starts are compared 2"},
		},
		"without one": {
			r:           without,
			wantColumns: []string{"", "Measured"},
			wantGap:     []string{"No prediction the scheduler is an external command"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, doc := render(t, tc.r)
			table := all(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "figures") })[0]
			var columns []string
			for _, th := range all(table, func(n *html.Node) bool { return n.Data == "th" }) {
				columns = append(columns, text(th))
			}
			if diff := cmp.Diff(tc.wantColumns, columns); diff != "" {
				t.Errorf("figures columns (-want +got):\n%s", diff)
			}
			firstRow := all(table, func(n *html.Node) bool { return n.Data == "tr" })[1]
			assert.Equal(t, "Makespan", text(firstRow.FirstChild))
			assert.Equal(t, "20.000 s", text(firstRow.FirstChild.NextSibling))
			var gap []string
			for _, tr := range all(all(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "gap") })[0], func(n *html.Node) bool { return n.Data == "tr" }) {
				gap = append(gap, text(tr.FirstChild)+" "+text(tr.LastChild))
			}
			for _, line := range tc.wantGap {
				assert.Contains(t, gap, line)
			}
		})
	}
}

func TestWriteReport_HeaderNamesTheInputs(t *testing.T) {
	_, doc := render(t, sampleResult())
	inputs := map[string]string{}
	for _, dt := range all(doc, func(n *html.Node) bool { return n.Data == "dt" }) {
		inputs[text(dt)] = text(dt.NextSibling)
	}
	want := map[string]string{
		"Trace": "traces/small.csv", "Scale": "0.5", "Scheduler": "yunikorn", "Test bed": "bed (8 slots on 2 nodes)",
		"Started": "2026-03-01T12:00:00Z", "Runs": "7",
	}
	if diff := cmp.Diff(want, inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	assert.Equal(t, "Experiment exp", text(all(doc, func(n *html.Node) bool { return n.Data == "h1" })[0]))
}

func TestWriteReport_UtilizationStepsFollowTheSlotsHeld(t *testing.T) {
	r := Result{Name: "u", Bed: bed(1, 4), Runs: []Run{
		makeRun("a").Arrive(0).Admit(0).End(10, OutcomeCompleted).On("node-0", 0, 1).Obj(),
		makeRun("b").Arrive(0).Admit(5).End(15, OutcomeCompleted).On("node-0", 2).Obj(),
		makeRun("c").Arrive(0).Admit(10).End(12, OutcomeCompleted).On("node-0", 0, 1, 3).Obj(),
		// Still running: the chart ends when it was seen running, at 16.5 s.
		makeRun("d").Arrive(0).Admit(16).On("node-0", 0).Obj(),
	}}
	_, doc := render(t, r)
	lines := all(byID(doc, "utilization"), func(n *html.Node) bool { return hasClass(n, "util-line") })
	require.Len(t, lines, 1)
	// The path is M x,y then H x V y per change: read the levels back from the V's.
	var levels []int
	var times []float64
	for _, m := range regexp.MustCompile(`H([0-9.]+) V([0-9.]+)`).FindAllStringSubmatch(attr(lines[0], "d"), -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		times = append(times, math.Round((x-chartLeft)/chartWidth*16.5*100)/100)
		levels = append(levels, int(math.Round((chartTop+utilHeight-y)/utilHeight*4)))
	}
	// c takes over a's two slots at 10 s, and adds one.
	assert.Equal(t, []float64{0, 5, 10, 12, 15, 16}, times)
	assert.Equal(t, []int{2, 3, 4, 1, 0, 1}, levels)
}

func TestWriteReport_AThousandRunsStillMakeOnePage(t *testing.T) {
	r := Result{Name: "big", Bed: bed(16, 4)}
	free := make([]float64, 64) // when each slot is next free
	for i := range 1000 {
		s := i % 32 * 2 // two slots side by side
		start := max(free[s], free[s+1], float64(i)/10)
		end := start + 3 + float64(i%7)
		r.Runs = append(r.Runs, makeRun(fmt.Sprintf("job-%04d", i)).Queue(fmt.Sprintf("root.q%d", i%3)).User(fmt.Sprintf("u%d", i%5)).
			Arrive(float64(i)/10).Admit(start).End(end, OutcomeCompleted).On(fmt.Sprintf("node-%d", s/4), int32(s), int32(s+1)).Obj())
		free[s], free[s+1] = end, end
	}
	out, doc := render(t, r)
	assert.Len(t, bars(doc), 2000)
	assert.Less(t, len(out), 2<<20, "the page should stay well under a few megabytes")
}

func TestTicks_AreRoundSteps(t *testing.T) {
	cases := map[string]struct {
		end  time.Duration
		want []string
	}{
		"95 s in tens":     {end: sec(95), want: []string{"0 s", "10 s", "20 s", "30 s", "40 s", "50 s", "60 s", "70 s", "80 s", "90 s"}},
		"7 s in seconds":   {end: sec(7), want: []string{"0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s"}},
		"an hour in 500 s": {end: time.Hour, want: []string{"0 s", "500 s", "1000 s", "1500 s", "2000 s", "2500 s", "3000 s", "3500 s"}},
		"1.2 s in fifths":  {end: sec(1.2), want: []string{"0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s", "1 s", "1.2 s"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, tk := range ticks(tc.end) {
				got = append(got, tk.Label)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ticks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFill_AQueueKeepsItsHueAndNeighbouringJobsDiffer(t *testing.T) {
	hue := func(f string) string { return strings.SplitN(f, ",", 2)[0] }
	assert.Equal(t, fill("root.alpha", 0), fill("root.alpha", 0), "stable from one report to the next")
	assert.NotEqual(t, hue(fill("root.alpha", 0)), hue(fill("root.beta", 0)), "another queue, another hue")
	for n := range 10 {
		assert.Equal(t, hue(fill("root.alpha", 0)), hue(fill("root.alpha", n)))
		assert.NotEqual(t, fill("root.alpha", n), fill("root.alpha", n+1), "jobs %d and %d of a queue look alike", n, n+1)
	}
}
