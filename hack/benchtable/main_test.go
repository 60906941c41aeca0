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
