package main

import (
	"strings"
	"testing"
)

// Three runs of a benchmark give three values per unit, the figures of a run that printed
// while it ran included; the table shows their median, with the range, in the row's own
// scale and unit.
func TestFigure_TheMedianOfSeveralRunsWithTheirRange(t *testing.T) {
	out := `goos: linux
BenchmarkOrchestration_16JobsOn8Slots-2   	       1	29006483220 ns/op	       496.0 end-to-start-p50-ms	         4.126 makespan-s
BenchmarkOrchestration_16JobsOn8Slots-2   	2026/11/25 17:30:43 INFO Started Worker
16 jobs on 8 slots: makespan 4.44s
       1	31387441402 ns/op	       618.5 end-to-start-p50-ms	         4.440 makespan-s
BenchmarkOrchestration_16JobsOn8Slots-2   	       1	29265904132 ns/op	       529.7 end-to-start-p50-ms	         3.950 makespan-s
BenchmarkHandler_Filter-2   	   27418	     43700 ns/op	    9000 B/op	      12 allocs/op
PASS
`
	metrics := map[string]map[string][]float64{}
	parse(strings.NewReader(out), metrics)
	cases := []struct {
		r    row
		want string
	}{
		{row{bench: "BenchmarkOrchestration_16JobsOn8Slots", unit: "end-to-start-p50-ms", scale: 1, show: "ms"}, "530 ms (496 to 618, 3 runs)"},
		{row{bench: "BenchmarkOrchestration_16JobsOn8Slots", unit: "makespan-s", scale: 1, show: "s"}, "4.13 s (3.95 to 4.44, 3 runs)"},
		{row{bench: "BenchmarkHandler_Filter", unit: "ns/op", scale: 1e-3, show: "µs"}, "43.7 µs"},
		{row{bench: "BenchmarkNotThere", unit: "ns/op", scale: 1}, "not run"},
	}
	for _, c := range cases {
		if got := figure(metrics[c.r.bench][c.r.unit], c.r); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.r.bench, c.r.unit, got, c.want)
		}
	}
}

// A row with a target says whether the median meets it, and in how many runs the figure
// did; a row without one, or a benchmark that did not run, says nothing.
func TestVerdict_TheMedianAgainstTheTargetAndTheRunsThatMetIt(t *testing.T) {
	cases := []struct {
		vs   []float64
		r    row
		want string
	}{
		{[]float64{496, 618.5, 529.7}, row{scale: 1, show: "ms", target: target{"<", 500}}, "< 500 ms: missed (1 of 3 runs)"},
		{[]float64{4.126, 4.44, 3.95}, row{scale: 1, show: "s", target: target{"<=", 4}}, "≤ 4 s: missed (1 of 3 runs)"},
		{[]float64{3.95, 4.0, 4.44}, row{scale: 1, show: "s", target: target{"<=", 4}}, "≤ 4 s: met (2 of 3 runs)"},
		{[]float64{43700}, row{scale: 1e-3, show: "µs", target: target{"<", 100}}, "< 100 µs: met"},
		{[]float64{0.49, 0.5, 0.73}, row{scale: 1, show: "x", target: target{">=", 0.5}}, "≥ 0.5 x: met (2 of 3 runs)"},
		{[]float64{0.45, 0.52}, row{scale: 1, show: "x", target: target{">=", 0.5}}, "≥ 0.5 x: missed (1 of 2 runs)"},
		{[]float64{1, 2, 3}, row{scale: 1, show: "ms"}, ""},
		{nil, row{scale: 1, show: "ms", target: target{"<", 500}}, ""},
	}
	for _, c := range cases {
		if got := verdict(c.vs, c.r); got != c.want {
			t.Errorf("%v against %+v: %q, want %q", c.vs, c.r.target, got, c.want)
		}
	}
}
