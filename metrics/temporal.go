package metrics

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// TimerBuckets are the histogram buckets of every Temporal timer, in seconds: from a
// millisecond (a local activity, a poll answered at once) to an hour (a job's wait for its
// queue). 0.2 is the bound slotplane holds Admission's workflow tasks to (docs/scale.md), so
// temporal_workflow_task_execution_latency_seconds tells a task under it from one over.
var TimerBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Temporal is a Temporal SDK metrics handler (client.Options.MetricsHandler) that keeps what
// the SDK and slotplane's workflows record and hands it to Prometheus as a collector.
//
// The SDK names a metric and gives it tags at each use, and one name does not always come
// with the same tags (a request's "operation", a poll's "poller_type"). A Prometheus family
// needs one set of label names, so each family's labels are the union of the tags its series
// were given, and a series lacks none: a tag it was not given is the empty string. Counters
// get the "_total" suffix and timers become histograms in seconds with "_seconds", as
// Prometheus names them.
type Temporal struct {
	mu       sync.Mutex
	families map[string]*family
}

type kind int

const (
	counterKind kind = iota
	gaugeKind
	timerKind
)

type family struct {
	kind   kind
	series map[string]*series // by their labels, encoded
}

type series struct {
	labels map[string]string
	value  float64  // a counter's count, a gauge's value
	counts []uint64 // a timer's, per bucket (not cumulative)
	sum    float64
	n      uint64
}

// NewTemporal returns an empty handler; register it (it is a prometheus.Collector) and give
// its Handler to the Temporal client.
func NewTemporal() *Temporal { return &Temporal{families: map[string]*family{}} }

// Handler is the client.MetricsHandler of the SDK and of workflow.GetMetricsHandler.
func (t *Temporal) Handler() client.MetricsHandler { return tagged{t: t} }

type tagged struct {
	t    *Temporal
	tags map[string]string
}

func (h tagged) WithTags(tags map[string]string) client.MetricsHandler {
	merged := maps.Clone(h.tags)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range tags {
		merged[sanitize(k)] = v
	}
	return tagged{t: h.t, tags: merged}
}

func (h tagged) Counter(name string) client.MetricsCounter {
	name = sanitize(name)
	if !strings.HasSuffix(name, "_total") { // the SDK's temporal_local_activity_total has it already
		name += "_total"
	}
	return counterFunc(func(d int64) {
		h.t.record(counterKind, name, h.tags, func(s *series) { s.value += float64(d) })
	})
}

func (h tagged) Gauge(name string) client.MetricsGauge {
	name = sanitize(name)
	return gaugeFunc(func(v float64) {
		h.t.record(gaugeKind, name, h.tags, func(s *series) { s.value = v })
	})
}

func (h tagged) Timer(name string) client.MetricsTimer {
	name = sanitize(name) + "_seconds"
	return timerFunc(func(d time.Duration) {
		sec := d.Seconds()
		h.t.record(timerKind, name, h.tags, func(s *series) {
			if s.counts == nil {
				s.counts = make([]uint64, len(TimerBuckets)+1)
			}
			s.counts[sort.SearchFloat64s(TimerBuckets, sec)]++
			s.sum += sec
			s.n++
		})
	})
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// record finds or makes the series and changes it under the lock. A name first seen as one
// kind keeps it: a later use as another kind is dropped rather than corrupting the family.
func (t *Temporal) record(k kind, name string, tags map[string]string, change func(*series)) {
	key := encode(tags)
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.families[name]
	if f == nil {
		f = &family{kind: k, series: map[string]*series{}}
		t.families[name] = f
	}
	if f.kind != k {
		return
	}
	s := f.series[key]
	if s == nil {
		s = &series{labels: maps.Clone(tags)}
		f.series[key] = s
	}
	change(s)
}

func encode(tags map[string]string) string {
	keys := slices.Sorted(maps.Keys(tags))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(tags[k])
		b.WriteByte(0)
	}
	return b.String()
}

// Describe sends nothing: the families are known only once recorded, so the handler is an
// unchecked collector.
func (t *Temporal) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series, its family's labels filled in.
func (t *Temporal) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, f := range t.families {
		names := map[string]bool{}
		for _, s := range f.series {
			for k := range s.labels {
				names[k] = true
			}
		}
		labels := slices.Sorted(maps.Keys(names))
		desc := prometheus.NewDesc(name, help(f.kind), labels, nil)
		for _, s := range f.series {
			values := make([]string, len(labels))
			for i, l := range labels {
				values[i] = s.labels[l]
			}
			var m prometheus.Metric
			var err error
			switch f.kind {
			case counterKind:
				m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.value, values...)
			case gaugeKind:
				m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.value, values...)
			case timerKind:
				buckets := make(map[float64]uint64, len(TimerBuckets))
				var cum uint64
				for i, ub := range TimerBuckets {
					cum += s.counts[i]
					buckets[ub] = cum
				}
				m, err = prometheus.NewConstHistogram(desc, s.n, s.sum, buckets, values...)
			}
			if err != nil {
				m = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- m
		}
	}
}

func help(k kind) string {
	switch k {
	case counterKind:
		return "A Temporal SDK or workflow counter."
	case gaugeKind:
		return "A Temporal SDK or workflow gauge."
	}
	return "A Temporal SDK or workflow timer, in seconds."
}

// sanitize makes a name or tag key a valid Prometheus name: what is not a letter, a digit or
// an underscore becomes an underscore, and so does a leading digit.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}
