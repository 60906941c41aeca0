package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/experiment"
	"slotplane/simulation"
)

func goodExperiment() ExperimentOptions {
	return ExperimentOptions{Trace: "t.csv", Scale: 1, TestBed: "bed", Scheduler: "fifo", Name: "exp-1", Out: "out", Timeout: time.Minute}
}

// Options no experiment can run with are refused with what to change, before anything is
// sent.
func TestExperiment_RefusesBadOptions(t *testing.T) {
	cases := map[string]struct {
		edit func(o *ExperimentOptions)
		want string
	}{
		"no trace":             {func(o *ExperimentOptions) { o.Trace = "" }, "-trace"},
		"no scale":             {func(o *ExperimentOptions) { o.Scale = 0 }, "-scale"},
		"no scheduler":         {func(o *ExperimentOptions) { o.Scheduler = "" }, "name one scheduler: -scheduler fifo|queues|sjf"},
		"two schedulers":       {func(o *ExperimentOptions) { o.Command = []string{"./mine"} }, "name one scheduler"},
		"an unknown scheduler": {func(o *ExperimentOptions) { o.Scheduler = "lottery" }, `"lottery" is not built in`},
		"a bad name":           {func(o *ExperimentOptions) { o.Name = "Exp_1" }, "DNS label"},
		"a long name":          {func(o *ExperimentOptions) { o.Name = strings.Repeat("e", 41) }, "at most 40"},
		"no timeout":           {func(o *ExperimentOptions) { o.Timeout = 0 }, "-timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := goodExperiment()
			tc.edit(&o)
			_, _, err := Experiment(context.Background(), Connection{Server: "http://127.0.0.1:1", Token: "t"}, o, &bytes.Buffer{})
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.NoError(t, (&ExperimentOptions{Trace: "t", Scale: 1, Command: []string{"x"}, Name: "e", Timeout: 1}).check())
}

// The trace's times scale; a job larger than the bed is left out and named; the jobs come in
// submit order.
func TestScaleTrace(t *testing.T) {
	jobs, left := scaleTrace([]simulation.Job{
		{Name: "b", Submit: 20 * time.Second, Executors: 2, Runtime: time.Minute},
		{Name: "a", Submit: 10 * time.Second, Executors: 8, Runtime: 30 * time.Second},
		{Name: "huge", Submit: 0, Executors: 9, Runtime: time.Minute},
		{Name: "tiny", Submit: 0, Executors: 1, Runtime: time.Microsecond},
	}, 0.05, 8)
	require.Equal(t, []string{"huge: 9 executors, the test bed has 8 slots"}, left)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Name+" "+j.Submit.String()+" "+j.Runtime.String())
	}
	require.Equal(t, []string{"tiny 0s 1ms", "a 500ms 1.5s", "b 1s 3s"}, got)
}

// Every run in the jobs' histories is a run of the CSV, at its offsets from the start; a job
// that never ran is one run that reached nothing.
func TestMeasuredRuns(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.MicroTime { t := metav1.NewMicroTime(start.Add(d)); return &t }
	trace := []simulation.Job{{Name: "a", User: "ann", Queue: "root.q", Runtime: 3 * time.Second}, {Name: "b", User: "ben", Queue: "root.q"}}
	final := map[string]apitypes.Job{
		"e-a": {Name: "e-a", Queue: "root.q", Status: v1alpha1.BatchJobStatus{History: []v1alpha1.RunRecord{
			{Run: 1, Scheduling: "e-slots-1", Slots: []int32{1}, Nodes: []string{"n1"}, AdmittedAt: at(time.Second), RunningAt: at(2 * time.Second), EndedAt: at(5 * time.Second), Outcome: v1alpha1.RunReleased},
			{Run: 2, Scheduling: "e-slots-1", Slots: []int32{3, 4}, Nodes: []string{"n1", "n0"}, AdmittedAt: at(6 * time.Second), RunningAt: at(7 * time.Second), EndedAt: at(10 * time.Second), Outcome: v1alpha1.RunCompleted},
		}}},
	}
	runs := measuredRuns(trace, map[string]time.Time{"a": start.Add(500 * time.Millisecond), "b": start.Add(time.Second)}, final, map[string]string{"e-b": "not admitted"}, start, "e")
	require.Len(t, runs, 3)
	require.Equal(t, experiment.Run{Job: "a", BatchJob: "e-a", Queue: "root.q", User: "ann", Attempt: 2, Arrival: 500 * time.Millisecond,
		Admitted: 6 * time.Second, Running: 7 * time.Second, Ended: 10 * time.Second, Slots: []int32{3, 4}, Nodes: []string{"n1", "n0"},
		Outcome: "Completed", Expected: 3 * time.Second}, runs[1])
	require.Equal(t, "Released", runs[0].Outcome)
	require.Equal(t, experiment.NotReached, runs[2].Admitted)
	require.Equal(t, experiment.NotReached, runs[2].Ended)
	require.Equal(t, 1, runs[2].Attempt)
	require.Equal(t, experiment.OutcomeRefused, runs[2].Outcome, "its Scheduling said its queue refused it")
}

func testBedOf(nodes, perNode int) apitypes.TestBed {
	tb := apitypes.TestBed{Name: "bed", Spec: v1alpha1.TestBedSpec{SlotsPerNode: int32(perNode), ResourcesPerSlot: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}}}
	tb.Status.Nodes = int32(nodes)
	for i := range nodes * perNode {
		tb.Status.Slots = append(tb.Status.Slots, v1alpha1.SlotStatus{Position: int32(i), NodeName: "node"})
	}
	return tb
}

// A built-in scheduler is predicted by its own Decide in virtual time, the queues by a
// replay of the allocation file; an external scheduler, or a bed of uneven nodes, has no
// prediction, and says why.
func TestPredict(t *testing.T) {
	jobs := []simulation.Job{
		{Name: "a", User: "ann", Queue: "root.analytics", Executors: 8, Runtime: 10 * time.Second, Driver: apitypes.Resources{MemoryBytes: 512 << 20, MilliCores: 1000}},
		{Name: "b", User: "ben", Queue: "root.analytics", Submit: time.Second, Executors: 2, Runtime: 10 * time.Second, Driver: apitypes.Resources{MemoryBytes: 512 << 20, MilliCores: 1000}},
	}
	o := goodExperiment()
	o.StartUp = time.Second
	p, why := predict(o, jobs, testBedOf(4, 2))
	require.Empty(t, why)
	require.Equal(t, time.Duration(0), p.Jobs["a"].Admitted)
	require.Equal(t, 11*time.Second, p.Jobs["a"].Ended)
	require.Equal(t, 11*time.Second, p.Jobs["b"].Admitted, "fifo: b waits for a's slots")
	require.Equal(t, 2, p.Jobs["b"].Width)

	dir := t.TempDir()
	alloc := filepath.Join(dir, "queues.xml")
	require.NoError(t, os.WriteFile(alloc, []byte(`<allocations><queue name="analytics"/></allocations>`), 0o644))
	o.Scheduler, o.Allocations = "queues", alloc
	p, why = predict(o, jobs, testBedOf(4, 2))
	require.Empty(t, why)
	require.Contains(t, p.Policy, "replay.Run")
	require.Equal(t, 11*time.Second, p.Jobs["b"].Admitted)
	require.Equal(t, 22*time.Second, p.Jobs["b"].Ended)

	o.Scheduler, o.Command = "", []string{"./mine"}
	_, why = predict(o, jobs, testBedOf(4, 2))
	require.Contains(t, why, "external scheduler")
	o.Scheduler, o.Command = "fifo", nil
	uneven := testBedOf(4, 2)
	uneven.Status.Slots = uneven.Status.Slots[:7]
	_, why = predict(o, jobs, uneven)
	require.Contains(t, why, "not 4 nodes of 2 slots")
}

// An experiment whose jobs exist already is refused before a job is made, and the
// scheduler it started stops.
func TestExperiment_ANameTakenIsRefused(t *testing.T) {
	var posted int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/testbeds/bed":
			tb := testBedOf(1, 2)
			require.NoError(t, json.NewEncoder(w).Encode(tb))
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/jobs/"):
			w.Write([]byte(`{"name":"x","framework":"spark"}`))
		case r.Method == http.MethodPost:
			posted++
			w.WriteHeader(500)
			w.Write([]byte(`{"code":"internal","message":"no"}`))
		default:
			w.WriteHeader(404)
			w.Write([]byte(`{"code":"not_found","message":"no"}`))
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	require.NoError(t, os.WriteFile(trace, []byte("submit,name,queue,user,groups,driver,executors,runtime\n0s,a,,ann,,\"512 mb, 1 vcores\",1,1s\n"), 0o644))
	o := goodExperiment()
	o.Trace, o.Out = trace, filepath.Join(dir, "out")
	_, _, err := Experiment(context.Background(), Connection{Server: srv.URL, Token: "t"}, o, &bytes.Buffer{})
	require.ErrorContains(t, err, "exist already: pick another -name")
	require.Zero(t, posted)
}
