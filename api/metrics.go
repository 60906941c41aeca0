package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// apiMetrics are the API's own: requests by route and answer, their latency, and the change
// feed's connections and changes. Routes are the patterns (/api/v1/jobs/:name), never the
// paths a client sent, and methods a fixed set (methodLabel), so a hostile client cannot
// grow the series.
type apiMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newAPIMetrics(reg prometheus.Registerer, h *hub) *apiMetrics {
	m := &apiMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slotplane_api_requests_total",
			Help: "REST API requests by method, route pattern and HTTP status code."}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slotplane_api_request_duration_seconds",
			Help:    "Time to answer a REST API request (a websocket feed counts until it upgrades).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slotplane_api_feed_connections", Help: "Open websocket change feed connections."},
			func() float64 { return float64(h.connections()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "slotplane_api_feed_changes_total", Help: "Changes the change feed has numbered and sent out."},
			func() float64 { return float64(h.lastSeq()) }),
	)
	return m
}

// observe is the middleware that counts each request once it is answered.
func (m *apiMetrics) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	method := methodLabel(c.Request.Method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(c.Writer.Status())).Inc()
	m.latency.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
}

// methodLabel is the method a request is counted under: the standard HTTP methods by name,
// any other as "other", so that a client cannot add series by inventing methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// connections and lastSeq read a hub that may be nil (an API without the feed).
func (h *hub) connections() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns
}

func (h *hub) lastSeq() uint64 {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}
