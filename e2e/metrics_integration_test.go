//go:build integration

package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"slotplane/metrics"
)

// scrape reads one component's /metrics as Prometheus would.
func (p *e2ePlatform) scrape(t *testing.T, component string) metricFamilies {
	t.Helper()
	addr, ok := p.metricsAt[component]
	require.True(t, ok, "no metrics endpoint for %s", component)
	return scrapeURL(t, component, "http://"+addr+"/metrics")
}

// scrapeURL reads the Prometheus metrics at url (of what, for the failure's message) as
// Prometheus would.
func scrapeURL(t testing.TB, what, url string) metricFamilies {
	t.Helper()
	client := http.Client{Timeout: 15 * time.Second}
	resp, err := client.Get(url)
	require.NoError(t, err, what)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, what)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "%s's metrics are not in the text format", what)
	return mfs
}

type metricFamilies map[string]*dto.MetricFamily

// sum adds up every series of the family whose labels include match (metrics.Sum); the
// second result is false when the family is missing or no series matches.
func (m metricFamilies) sum(name string, match map[string]string) (float64, bool) {
	return metrics.Sum(m[name], match)
}

// need is sum that fails the test when nothing matches.
func (m metricFamilies) need(t *testing.T, component, name string, match map[string]string) float64 {
	t.Helper()
	v, ok := m.sum(name, match)
	require.True(t, ok, "%s exports no %s%v", component, name, match)
	return v
}

// requireMetricsAfterRun checks every component's metrics after a run of n jobs, each
// completed, in the test bed "bed" with capacity slots: the counts add up to the run, the
// queues are empty again, and each component reports its build and its Temporal client.
func requireMetricsAfterRun(t *testing.T, p *e2ePlatform, n int, capacity int32) {
	t.Helper()
	bed := map[string]string{"namespace": "default", "testbed": "bed"}
	for _, c := range []string{"worker", "api", "bridge", "extender"} {
		m := p.scrape(t, c)
		require.Equal(t, 1.0, m.need(t, c, "slotplane_build_info", map[string]string{"component": c}), c)
		require.Positive(t, m.need(t, c, "go_goroutines", nil), c)
		require.Positive(t, m.need(t, c, "process_resident_memory_bytes", nil), c)
		if c != "extender" {
			require.Positive(t, m.need(t, c, "temporal_request_total", nil), "%s's Temporal client is counted", c)
		}
	}

	// The worker: the lifecycle counters equal the run, and the gauges are back at rest. The
	// gauges are read at the scrape, and a freed slot's status lags its job's end a little.
	require.Eventually(t, func() bool {
		w := p.scrape(t, "worker")
		pending, _ := w.sum("slotplane_queue_pending_jobs", bed)
		admitted, _ := w.sum("slotplane_queue_admitted_jobs", bed)
		free, _ := w.sum("slotplane_testbed_slots", map[string]string{"testbed": "bed", "state": "free"})
		return pending == 0 && admitted == 0 && free == float64(capacity)
	}, time.Minute, time.Second, "the queues never showed empty and the slots free")
	w := p.scrape(t, "worker")
	require.Equal(t, float64(n), w.need(t, "worker", "slotplane_admitted_jobs_total", bed), "one admission per job run")
	require.Equal(t, float64(n), w.need(t, "worker", "slotplane_admission_wait_time_seconds", bed), "one wait per admission")
	require.Equal(t, float64(n), w.need(t, "worker", "slotplane_job_startup_time_seconds", bed), "one start-up per run")
	decisions := w.need(t, "worker", "slotplane_admission_decision_seconds", bed)
	require.GreaterOrEqual(t, decisions, 1.0, "Admission's decisions are timed")
	require.Equal(t, decisions, w.need(t, "worker", "slotplane_admission_decision_cpu_seconds", bed), "each decision's CPU time is measured (Linux)")
	require.Equal(t, float64(n), w.need(t, "worker", "slotplane_finished_jobs_total", map[string]string{"testbed": "bed", "outcome": "Completed"}))
	if v, ok := w.sum("slotplane_finished_jobs_total", map[string]string{"testbed": "bed", "outcome": "Failed"}); ok {
		require.Zero(t, v, "no run failed")
	}
	require.Equal(t, float64(capacity), w.need(t, "worker", "slotplane_testbed_capacity_slots", bed))
	require.Zero(t, w.need(t, "worker", "slotplane_testbed_slot_utilization", bed))
	for _, share := range []string{"slotplane_queue_steady_fair_share", "slotplane_queue_max_resources"} {
		require.Positive(t, w.need(t, "worker", share, map[string]string{"testbed": "bed", "queue": "root", "resource": "memory"}), share)
	}
	require.Positive(t, w.need(t, "worker", "temporal_workflow_task_execution_latency_seconds", nil), "the SDK's worker metrics")
	require.Positive(t, w.need(t, "worker", "temporal_activity_execution_latency_seconds", nil))
	if v, ok := w.sum("slotplane_queue_report_errors_total", nil); ok {
		require.Zero(t, v, "every queue query answered")
	}

	// The API counted the jobs it created, by route pattern.
	a := p.scrape(t, "api")
	require.GreaterOrEqual(t, a.need(t, "api", "slotplane_api_requests_total", map[string]string{"method": "POST", "route": "/api/v1/jobs", "code": "201"}), float64(n))
	require.Positive(t, a.need(t, "api", "slotplane_api_request_duration_seconds", map[string]string{"route": "/api/v1/schedulings/:name"}))

	// The bridge reconciled the jobs and signalled their workflows.
	b := p.scrape(t, "bridge")
	require.GreaterOrEqual(t, b.need(t, "bridge", "controller_runtime_reconcile_total", map[string]string{"result": "success"}), float64(n))
	require.GreaterOrEqual(t, b.need(t, "bridge", "temporal_request_total", map[string]string{"operation": "SignalWithStartWorkflowExecution"}), float64(n))

	// The extender placed at least one pod per job in its slot.
	e := p.scrape(t, "extender")
	placed := e.need(t, "extender", "slotplane_extender_requests_total", map[string]string{"verb": "filter", "result": "placed"})
	require.GreaterOrEqual(t, placed, float64(n), fmt.Sprintf("the extender placed %v slot pods for %d jobs", placed, n))
}
