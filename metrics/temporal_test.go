package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestTemporal_KindsNamesAndLabels(t *testing.T) {
	tm := NewTemporal()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tm)
	h := tm.Handler().WithTags(map[string]string{"namespace": "default"})
	h.WithTags(map[string]string{"operation": "StartWorkflow"}).Counter("temporal_request").Inc(2)
	h.Counter("temporal_request").Inc(1)              // no operation tag: the family still has one label set
	h.Counter("temporal_local_activity_total").Inc(4) // named as a counter already: no second suffix
	h.WithTags(map[string]string{"task-queue": "slotplane"}).Gauge("temporal_num_pollers").Update(8)
	timer := h.Timer("temporal_request_latency")
	timer.Record(3 * time.Millisecond)
	timer.Record(2 * time.Hour)           // beyond the last bucket: counted in +Inf only
	h.Gauge("temporal_request").Update(5) // a name used as another kind is dropped

	want := `
# HELP temporal_request_total A Temporal SDK or workflow counter.
# TYPE temporal_request_total counter
temporal_request_total{namespace="default",operation=""} 1
temporal_request_total{namespace="default",operation="StartWorkflow"} 2
# HELP temporal_num_pollers A Temporal SDK or workflow gauge.
# TYPE temporal_num_pollers gauge
temporal_num_pollers{namespace="default",task_queue="slotplane"} 8
`
	want += `# HELP temporal_local_activity_total A Temporal SDK or workflow counter.
# TYPE temporal_local_activity_total counter
temporal_local_activity_total{namespace="default"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "temporal_request_total", "temporal_num_pollers", "temporal_local_activity_total"); err != nil {
		t.Fatal(err)
	}
	hist := histogram(t, reg, "temporal_request_latency_seconds")
	if hist.GetSampleCount() != 2 || hist.GetSampleSum() < 7200 {
		t.Fatalf("the timer's histogram: count %d sum %v", hist.GetSampleCount(), hist.GetSampleSum())
	}
	for _, b := range hist.GetBucket() {
		want := uint64(1)
		if b.GetUpperBound() < 0.003 {
			want = 0
		}
		if b.GetCumulativeCount() != want {
			t.Fatalf("bucket le=%v has %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// histogram is the first series of the histogram family name that reg gathers.
func histogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no %s family", name)
	return nil
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{"task-queue": "task_queue", "9lives": "_lives", "ok_1": "ok_1", "a.b/c": "a_b_c"} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSum_MatchesLabelsAcrossKinds(t *testing.T) {
	tm := NewTemporal()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tm)
	h := tm.Handler()
	h.WithTags(map[string]string{"queue": "a", "outcome": "Completed"}).Counter("jobs").Inc(2)
	h.WithTags(map[string]string{"queue": "b", "outcome": "Completed"}).Counter("jobs").Inc(3)
	h.WithTags(map[string]string{"queue": "a"}).Timer("wait").Record(time.Second)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		total float64
		found bool
	}{
		{"jobs_total", nil, 5, true},
		{"jobs_total", map[string]string{"queue": "a"}, 2, true},
		{"jobs_total", map[string]string{"queue": "c"}, 0, false},
		{"wait_seconds", map[string]string{"queue": "a"}, 1, true}, // a histogram's count
		{"absent", nil, 0, false},
	} {
		if total, found := Sum(byName[c.name], c.match); total != c.total || found != c.found {
			t.Errorf("Sum(%s, %v) = %v, %v; want %v, %v", c.name, c.match, total, found, c.total, c.found)
		}
	}
}

// A workflow task's latency tells 200 ms, the bound Admission's tasks are held to, apart.
func TestTemporal_TimersSplitAt200ms(t *testing.T) {
	tm := NewTemporal()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tm)
	timer := tm.Handler().Timer("temporal_workflow_task_execution_latency")
	timer.Record(150 * time.Millisecond)
	timer.Record(220 * time.Millisecond)
	below := map[float64]uint64{}
	for _, b := range histogram(t, reg, "temporal_workflow_task_execution_latency_seconds").GetBucket() {
		below[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	if below[0.1] != 0 || below[0.2] != 1 || below[0.25] != 2 {
		t.Fatalf("cumulative counts at 0.1, 0.2, 0.25 s: %d, %d, %d; want 0, 1, 2", below[0.1], below[0.2], below[0.25])
	}
}
