// Package metrics is what every slotplane component shares for Prometheus: a registry with the
// Go runtime, process and build collectors, the /metrics server, and the Temporal SDK's
// metrics handler. docs/metrics.md lists every metric the components export.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Namespace prefixes slotplane's own metrics.
const Namespace = "slotplane"

// NewRegistry returns a registry with the Go runtime's and the process's metrics and
// slotplane_build_info for the component.
func NewRegistry(component string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), BuildInfo(component))
	return reg
}

// BuildInfo is slotplane_build_info: always 1, labelled with the component, the module's
// version and the commit the binary was built from, as Go stamped them.
func BuildInfo(component string) prometheus.Collector {
	version, revision := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   Namespace,
		Name:        "build_info",
		Help:        "Always 1; its labels say which component runs and what it was built from.",
		ConstLabels: prometheus.Labels{"component": component, "version": version, "revision": revision},
	})
	g.Set(1)
	return g
}

// Handler serves the registry's metrics in the Prometheus text format (or OpenMetrics, when
// the scraper asks for it). A collector's failure is reported in the answer, not as a 500:
// the other metrics still arrive.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// Off reports whether a listen address turns the metrics server off.
func Off(addr string) bool { return addr == "" || addr == "0" }

// Serve serves /metrics on addr until ctx ends. It returns once it listens, with the address
// it listens on (addr may have port 0); errors after that are logged by the caller's choice
// through errc, which gets at most one.
func Serve(ctx context.Context, addr string, g prometheus.Gatherer) (net.Addr, <-chan error, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", Handler(g))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	return l.Addr(), errc, nil
}

// Only is g less every family whose name does not start with prefix: one component's own
// metrics, to serve beside another registry in one process without two sets of go_* ones.
func Only(prefix string, g prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		out := mfs[:0]
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), prefix) {
				out = append(out, mf)
			}
		}
		return out, err
	})
}

// Sum adds up the series of a gathered family whose labels include match: a counter's,
// gauge's or untyped value, a histogram's or summary's count. found is false when mf is nil
// or no series matches. Checks and tests read families with it.
func Sum(mf *dto.MetricFamily, match map[string]string) (total float64, found bool) {
	if mf == nil {
		return 0, false
	}
series:
	for _, s := range mf.GetMetric() {
		labels := make(map[string]string, len(s.GetLabel()))
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if labels[k] != v {
				continue series
			}
		}
		found = true
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil:
			total += float64(s.GetHistogram().GetSampleCount())
		case s.Summary != nil:
			total += float64(s.GetSummary().GetSampleCount())
		case s.Untyped != nil:
			total += s.GetUntyped().GetValue()
		}
	}
	return total, found
}
