// Command benchtable runs slotplane's benchmarks, the pure ones and those on the real
// platform, and prints their headline figures as one table (`make bench`). The benchmarks on
// the real platform run three times: their figures move by a tenth or more between runs on
// a busy machine, so the table gives the median, with the range, and for the figures issue
// 16 set targets for, whether the median meets its target and how many runs did. The full
// output of every run is kept in a file it names, for the figures the table leaves out.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// run is one `go test -bench` invocation.
type run struct {
	what string
	args []string
}

var runs = []run{
	// One package at a time (-p 1): the next package's test binary is not built beside a
	// benchmark that is running.
	{"decision cores (slots, extender handlers, queues)", []string{"test", "-p", "1", "-run", "^$", "-bench", ".", "-benchmem", "./slots/", "./extender/", "./queue/", "./simulation/replay/"}},
	{"the embedded Temporal server's CPU per hop of a workflow, three times", []string{"test", "-tags", "integration", "-run", "^$", "-bench", "ActivityHop", "-benchtime", "300x", "-count", "3", "-timeout", "10m", "./internal/localplatform/temporalserver/"}},
	{"500 plain pods, 500 slot pods by preemption and 500 of granted slots on the real scheduler, three times", []string{"test", "-tags", "integration", "-run", "^$", "-bench", "EndToEnd", "-benchtime", "1x", "-count", "3", "-timeout", "30m", "./extender/"}},
	{"16 and 64 one-second jobs through Schedulings on the real platform, three times", []string{"test", "-tags", "integration", "-run", "^$", "-bench", "Orchestration", "-benchtime", "1x", "-count", "3", "-timeout", "30m", "./e2e/"}},
	{"10 s of mixed API load on the real platform", []string{"test", "-tags", "integration", "-run", "^$", "-bench", "API_MixedLoad", "-benchtime", "1x", "-timeout", "10m", "./internal/loadgen/"}},
}

// row picks one figure: the metric unit of the first benchmark whose name starts with
// bench, shown with a scale and a unit of its own, and the target issue 16 set for it, if
// any.
type row struct {
	label, bench, unit string
	scale              float64
	show               string
	target             target
}

// target is a bound on a row's figure, in the row's shown unit: "<", "<=" or ">=" a value.
// The zero target sets none.
type target struct {
	op    string
	value float64
}

func (t target) met(v float64) bool {
	switch t.op {
	case "<":
		return v < t.value
	case "<=":
		return v <= t.value
	case ">=":
		return v >= t.value
	}
	return false
}

var rows = []row{
	{"extender /filter, 1,000 node names, decoding included (pod holds its slot)", "BenchmarkHandler_Filter", "ns/op", 1e-3, "µs", target{"<", 100}},
	{"extender /filter, first reservation (in memory: the claim waits for /bind)", "BenchmarkHandler_FilterFirstReservation", "ns/op", 1e-3, "µs", target{}},
	{"extender /preempt decision", "BenchmarkHandler_Preempt", "ns/op", 1e-3, "µs", target{}},
	{"slot search, 1000 nodes x 8 slots", "BenchmarkChoose_Filter1000Nodes8000Slots", "ns/op", 1e-3, "µs", target{}},
	{"ghost plan, 8000 slots", "BenchmarkPlanGhosts8000Slots", "ns/op", 1e-6, "ms", target{}},
	{"policy choice (Tree.Next), 10,000 waiting jobs in 200 queues", "BenchmarkNext_10000Waiting200Queues", "ns/op", 1e-6, "ms", target{}},
	{"whole admission decision (Admitter.Decide), 10,000 waiting jobs, 8,000 slots", "BenchmarkAdmitterDecide_10000Waiting200Queues8000Slots", "ns/op", 1e-6, "ms", target{}},
	{"admission decision filling 8,000 free slots from 10,000 waiting jobs", "BenchmarkAdmitterDecide_Fill8000SlotsFrom10000Waiting", "ns/op", 1e-6, "ms", target{}},
	{"admission decision after a slot frees, 8,000 held, 10,000 waiting", "BenchmarkAdmitterDecide_OneFreedOf8000With10000Waiting", "ns/op", 1e-6, "ms", target{}},
	{"admission state packed for continue-as-new, 8,000 held, 10,000 waiting", "BenchmarkPackState_8000Held10000Waiting/pack", "ns/op", 1e-6, "ms", target{}},
	{"  its size", "BenchmarkPackState_8000Held10000Waiting/pack", "bytes", 1.0 / 1024, "KiB", target{}},
	{"fair shares of 1,000 queues", "BenchmarkComputeShares1000Queues", "ns/op", 1e-6, "ms", target{}},
	{"trace replay, 10,000 jobs", "BenchmarkReplayTrace_10000Jobs", "ns/op", 1e-6, "ms", target{}},
	{"embedded Temporal server: CPU per hop (an activity, the workflow task after it, a local activity)", "BenchmarkEmbeddedTemporal_ActivityHop", "busy-cpu-µs/hop", 1e-3, "ms", target{}},
	{"plain pods placed (default profile)", "BenchmarkEndToEnd_500SlotPods", "plain-pods/s", 1, "pods/s", target{}},
	{"a grant clearing 500 slots' ghosts, until they are gone", "BenchmarkEndToEnd_500SlotPods", "grant-clear-s", 1, "s", target{}},
	{"slot pods of granted slots placed, once the grant cleared the ghosts", "BenchmarkEndToEnd_500SlotPods", "granted-pods/s", 1, "pods/s", target{}},
	{"  against plain pods, same run", "BenchmarkEndToEnd_500SlotPods", "granted/plain", 1, "x", target{">=", 0.5}},
	{"slot pods placed by preemption (ghost evicted)", "BenchmarkEndToEnd_500SlotPods", "slot-pods/s", 1, "pods/s", target{}},
	{"  against plain pods, same run", "BenchmarkEndToEnd_500SlotPods", "slot/plain", 1, "x", target{}},
	{"API writes per pod: plain", "BenchmarkEndToEnd_500SlotPods", "plain-writes/pod", 1, "", target{}},
	{"API writes per pod: granted slot pod", "BenchmarkEndToEnd_500SlotPods", "granted-writes/pod", 1, "", target{}},
	{"API writes per pod: slot pod by preemption", "BenchmarkEndToEnd_500SlotPods", "preempt-writes/pod", 1, "", target{}},
	{"orchestration: Scheduling created to a first-wave job running, p50", "BenchmarkOrchestration_16JobsOn8Slots", "create-to-running-p50-ms", 1, "ms", target{"<", 1500}},
	{"orchestration: grant to running, p50 (64 jobs)", "BenchmarkOrchestration_16JobsOn8Slots", "admitted-to-running-p50-ms", 1, "ms", target{}},
	{"orchestration: a job's end to the next one running in its slot, p50", "BenchmarkOrchestration_16JobsOn8Slots", "end-to-start-p50-ms", 1, "ms", target{"<", 500}},
	{"orchestration: a job's end to the next one running in its slot, p99", "BenchmarkOrchestration_16JobsOn8Slots", "end-to-start-p99-ms", 1, "ms", target{"<", 1000}},
	{"orchestration: 16 one-second jobs on 8 slots (ideal 2 s)", "BenchmarkOrchestration_16JobsOn8Slots", "makespan-s", 1, "s", target{"<=", 4}},
	{"  the same, the jobs made right before their Scheduling", "BenchmarkOrchestration_16JobsOn8Slots", "makespan-new-jobs-s", 1, "s", target{}},
	{"  the same 16 runs without slotplane (the platform's floor, same minute)", "BenchmarkOrchestration_16JobsOn8Slots", "bare-makespan-s", 1, "s", target{}},
	{"  slotplane's makespan against that floor, same run", "BenchmarkOrchestration_16JobsOn8Slots", "makespan/bare", 1, "x", target{}},
	{"  without slotplane: one run's end to the next one's executor bound, p50", "BenchmarkOrchestration_16JobsOn8Slots", "bare-end-to-start-p50-ms", 1, "ms", target{}},
	{"  the machine's CPU per job over the 16 jobs' makespan", "BenchmarkOrchestration_16JobsOn8Slots", "cpu-ms/job", 1, "ms", target{}},
	{"  the same without slotplane (the floor's runs)", "BenchmarkOrchestration_16JobsOn8Slots", "bare-cpu-ms/job", 1, "ms", target{}},
	{"  slotplane's CPU per job against the floor's, same run", "BenchmarkOrchestration_16JobsOn8Slots", "cpu/bare", 1, "x", target{}},
	{"orchestration: 64 one-second jobs on 8 slots (ideal 8 jobs/s)", "BenchmarkOrchestration_16JobsOn8Slots", "jobs/s", 1, "jobs/s", target{}},
	{"orchestration: 16 one-second Flink jobs on 8 slots (ideal 2 s)", "BenchmarkOrchestration_16JobsOn8Slots", "flink-makespan-s", 1, "s", target{}},
	{"  a Flink job's end to the next one running in its slot, p50", "BenchmarkOrchestration_16JobsOn8Slots", "flink-end-to-start-p50-ms", 1, "ms", target{}},
	{"  the same, p99", "BenchmarkOrchestration_16JobsOn8Slots", "flink-end-to-start-p99-ms", 1, "ms", target{}},
	{"API p50 under mixed load", "BenchmarkAPI_MixedLoad10s", "p50-ms", 1, "ms", target{}},
	{"API p99 under mixed load", "BenchmarkAPI_MixedLoad10s", "p99-ms", 1, "ms", target{}},
	{"API requests answered", "BenchmarkAPI_MixedLoad10s", "req/s", 1, "req/s", target{}},
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-from" {
		// The table again, from the output a run kept.
		in, err := os.Open(os.Args[2])
		if err != nil {
			fail(err)
		}
		defer in.Close()
		metrics := map[string]map[string][]float64{}
		parse(in, metrics)
		table(metrics)
		return
	}
	log, err := os.CreateTemp("", "slotplane-bench-*.txt")
	if err != nil {
		fail(err)
	}
	defer log.Close()
	metrics := map[string]map[string][]float64{} // benchmark -> unit -> one value per run
	started := time.Now()
	for i, r := range runs {
		fmt.Fprintf(os.Stderr, ">> [%d/%d] %s\n", i+1, len(runs), r.what)
		var out bytes.Buffer
		cmd := exec.Command("go", r.args...)
		cmd.Stdout = io.MultiWriter(&out, log)
		cmd.Stderr = log
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("go %s: %w (output in %s)", strings.Join(r.args, " "), err, log.Name()))
		}
		parse(&out, metrics)
	}
	table(metrics)
	fmt.Printf("\n%d runs in %s; every figure of every benchmark: %s\n", len(runs), time.Since(started).Round(time.Second), log.Name())
}

// table prints the rows.
func table(metrics map[string]map[string][]float64) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tfigure\ttarget (issue 16)\tbenchmark")
	for _, r := range rows {
		vs := metrics[r.bench][r.unit]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.label, figure(vs, r), verdict(vs, r), strings.TrimPrefix(r.bench, "Benchmark"))
	}
	_ = tw.Flush()
}

// verdict is a row's target and whether its median meets it, with how many runs did: on 2
// busy cores a figure moves by a tenth or more between runs, and so does its verdict.
func verdict(vs []float64, r row) string {
	if r.target.op == "" || len(vs) == 0 {
		return ""
	}
	bound := strings.TrimSpace(fmt.Sprintf("%s %s %s", map[string]string{"<": "<", "<=": "≤", ">=": "≥"}[r.target.op],
		strconv.FormatFloat(r.target.value, 'f', -1, 64), r.show))
	met := 0
	for _, v := range vs {
		if r.target.met(v * r.scale) {
			met++
		}
	}
	word := "missed"
	if r.target.met(median(vs) * r.scale) {
		word = "met"
	}
	if len(vs) == 1 {
		return bound + ": " + word
	}
	return fmt.Sprintf("%s: %s (%d of %d runs)", bound, word, met, len(vs))
}

// median is the middle value of vs, or the mean of the two middle ones.
func median(vs []float64) float64 {
	sorted := slices.Sorted(slices.Values(vs))
	if len(sorted)%2 == 0 {
		return (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return sorted[len(sorted)/2]
}

// figure is a row's cell: the value of a single run, or the median of several with their
// range and count.
func figure(vs []float64, r row) string {
	if len(vs) == 0 {
		return "not run"
	}
	format := func(v float64) string {
		v *= r.scale
		return strconv.FormatFloat(v, 'f', decimals(v), 64)
	}
	sorted := slices.Sorted(slices.Values(vs))
	out := strings.TrimSpace(format(median(vs)) + " " + r.show)
	if len(sorted) > 1 {
		out += fmt.Sprintf(" (%s to %s, %d runs)", format(sorted[0]), format(sorted[len(sorted)-1]), len(sorted))
	}
	return out
}

// parse reads `go test -bench` lines: name-procs, iterations, then value-unit pairs. A
// benchmark run more than once (-count) gives a value per run. A benchmark that prints
// while it runs has its name on a line of its own and its figures on a later line that
// starts with the iteration count.
func parse(r io.Reader, into map[string]map[string][]float64) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	current := ""
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(f[0], "Benchmark") {
			current = f[0]
			if i := strings.LastIndex(current, "-"); i > 0 {
				current = current[:i] // the GOMAXPROCS suffix
			}
			f = f[1:]
		}
		// Figures: iterations, then value-unit pairs, the first of them ns/op.
		if current == "" || len(f) < 3 || f[2] != "ns/op" {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		name := current
		if into[name] == nil {
			into[name] = map[string][]float64{}
		}
		for k := 1; k+1 < len(f); k += 2 {
			if v, err := strconv.ParseFloat(f[k], 64); err == nil {
				into[name][f[k+1]] = append(into[name][f[k+1]], v)
			}
		}
	}
}

func decimals(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	default:
		return 2
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}
