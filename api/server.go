// Package api is slotplane's REST API for external schedulers and people: Schedulings,
// BatchJobs and test beds under /api/v1, without Kubernetes details. A namespace is
// implied (Options.Namespace), and a request may name another with ?namespace=.
package api

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	temporal "go.temporal.io/sdk/client"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/apitypes"
	"slotplane/installation"
	"slotplane/internal/health"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 1 << 20

// Options wire the API to the cluster and Temporal.
type Options struct {
	// Client reads and writes slotplane's objects. A cached client serves reads from its
	// informers; the API writes with optimistic concurrency either way.
	Client client.Client
	// TLS, when set, makes Start and Serve serve HTTPS: callers send bearer tokens, which
	// must not cross a network in the clear.
	TLS *tls.Config
	// Temporal starts and cancels the Schedulings' workflows.
	Temporal temporal.Client
	// IDs names the installation's workflows and task queue (zero: the default one).
	IDs installation.Names
	// Namespace is where objects live when a request names none (default "default").
	Namespace string
	// Auth checks bearer tokens.
	Auth Authenticator
	// Authorizer decides what each user may do (default AllowAll).
	Authorizer Authorizer
	// Reader serves the API's lists of Schedulings and BatchJobs when set: Serve sets it
	// to an informers' cache it makes from Config, so a list costs the API server
	// nothing. A GET of one object, writes, and the reads a write decides on go to Client,
	// so that a client reads what it has just written. A new Scheduling's check of its
	// jobs reads Reader, and Client for the jobs Reader lacks (jobOwners).
	Reader client.Reader
	// Config is the cluster Start and Serve watch for the websocket change feed
	// (/api/v1/watch); without it (and from New) the feed answers 503.
	Config *rest.Config
	// AllowedOrigins are the browser origins, besides the API's own, that may open the
	// change feed (scheme://host:port).
	AllowedOrigins []string
	// FeedConnections and FeedConnectionsPerUser cap the change feed's open connections, in
	// all and for one user (0: DefaultFeedConnections, DefaultFeedConnectionsPerUser). A
	// connection over either cap is answered 429 with Retry-After.
	FeedConnections, FeedConnectionsPerUser int
	Log                                     *slog.Logger
	// Metrics gets the API's metrics (requests, the feed) registered, when set.
	Metrics prometheus.Registerer
}

type server struct {
	Options
	hub *hub
	// stopping closes when the server stops: the feed's connections, hijacked from the
	// HTTP server, end on it.
	stopping chan struct{}
	// requestLines bounds the request lines written above debug (logRequests): a client
	// that sends bad requests cannot flood the log. dropped counts those left out.
	requestLines *rate.Limiter
	dropped      atomic.Int64
}

// The request lines written above debug: requestLinesBurst at once, then requestLinesRate a
// second.
const (
	requestLinesRate  = 10
	requestLinesBurst = 100
)

// New returns the API's handler.
func New(o Options) (http.Handler, error) {
	_, h, err := newServer(o, false)
	return h, err
}

// newServer builds the API; with a feed, its hub, which the caller starts (hub.watch).
func newServer(o Options, feed bool) (*server, http.Handler, error) {
	if o.Client == nil || o.Temporal == nil || o.Auth == nil {
		return nil, nil, errors.New("api: Client, Temporal and Auth are required")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Authorizer == nil {
		o.Authorizer = AllowAll{}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	s := &server{Options: o, stopping: make(chan struct{}), requestLines: rate.NewLimiter(requestLinesRate, requestLinesBurst)}
	if feed {
		s.hub = newHub(o.Log)
		if o.FeedConnections > 0 {
			s.hub.maxConns = o.FeedConnections
		}
		if o.FeedConnectionsPerUser > 0 {
			s.hub.maxUserConns = o.FeedConnectionsPerUser
		}
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(s.logRequests)
	if o.Metrics != nil {
		r.Use(newAPIMetrics(o.Metrics, s.hub).observe)
	}
	r.Use(s.recoverJSON)
	r.NoRoute(func(c *gin.Context) {
		fail(c, &apitypes.Error{Code: apitypes.CodeNotFound, Message: fmt.Sprintf("no route %s %s", c.Request.Method, c.Request.URL.Path), Status: http.StatusNotFound})
	})
	r.NoMethod(func(c *gin.Context) {
		fail(c, &apitypes.Error{Code: "method_not_allowed", Message: fmt.Sprintf("%s is not allowed on %s", c.Request.Method, c.Request.URL.Path), Status: http.StatusMethodNotAllowed})
	})

	serveDashboard(r)
	v1 := r.Group("/api/v1")
	v1.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	ready, err := s.readiness()
	if err != nil {
		return nil, nil, err
	}
	v1.GET("/readyz", gin.WrapH(health.Handler(ready...)))
	v1.GET("/openapi.json", serveOpenAPI)
	authed := v1.Group("", authenticate(o.Auth), s.namespace)
	authed.GET("/whoami", func(c *gin.Context) { c.JSON(http.StatusOK, userOf(c)) })
	can := func(verb, resource string) gin.HandlerFunc { return authorize(o.Authorizer, verb, resource, "") }
	authed.POST("/schedulings", can("create", "schedulings"), s.createScheduling)
	authed.GET("/schedulings", can("list", "schedulings"), s.listSchedulings)
	authed.GET("/schedulings/:name", can("get", "schedulings"), s.getScheduling)
	authed.PATCH("/schedulings/:name", can("update", "schedulings"), s.extendScheduling)
	authed.DELETE("/schedulings/:name", can("delete", "schedulings"), s.deleteScheduling)
	authed.POST("/jobs", can("create", "batchjobs"), s.createJob)
	authed.GET("/jobs", can("list", "batchjobs"), s.listJobs)
	authed.GET("/jobs/:name", can("get", "batchjobs"), s.getJob)
	authed.GET("/testbeds", can("list", "testbeds"), s.listTestBeds)
	authed.GET("/testbeds/:name", can("get", "testbeds"), s.getTestBed)
	authed.GET("/testbeds/:name/queues", can("get", "testbeds"), s.getQueues)
	// Moving is an update of the job; the queue's administer ACL is checked besides.
	authed.POST("/jobs/:name/move", can("update", "batchjobs"), s.moveJob)
	// Killing a run is an update of the job too (its application goes, as when its
	// Scheduling lets go of it); the queue's administer ACL is checked besides.
	authed.DELETE("/jobs/:name/run", can("update", "batchjobs"), s.killJob)
	authed.PATCH("/jobs/:name/scheduler-data", can("update", "batchjobs"), s.patchSchedulerData)
	authed.GET("/watch", s.watch) // authorizes each kind it is asked for
	return s, r, nil
}

const namespaceKey = "slotplane.namespace"

// namespace takes ?namespace= or the default.
func (s *server) namespace(c *gin.Context) {
	ns := c.DefaultQuery("namespace", s.Namespace)
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		fail(c, invalid(apitypes.FieldError{Field: "namespace", Message: fmt.Sprintf("%q is not a namespace name: %s", ns, errs[0])}))
		return
	}
	c.Set(namespaceKey, ns)
	c.Next()
}

func namespaceOf(c *gin.Context) string { return c.GetString(namespaceKey) }

func (s *server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	level := slog.LevelDebug
	switch {
	case c.FullPath() == "/api/v1/readyz":
		// A probe that fails says so in its answer, every second while Temporal or the API
		// server is away: not an error of the API's own.
	case c.Writer.Status() >= 500:
		level = slog.LevelError
	case c.Writer.Status() >= 400:
		level = slog.LevelInfo
	}
	ctx := c.Request.Context()
	if !s.Log.Enabled(ctx, level) {
		return
	}
	attrs := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "user", userOf(c).Name, "duration", time.Since(start)}
	if level > slog.LevelDebug {
		if !s.requestLines.Allow() {
			s.dropped.Add(1)
			return
		}
		if n := s.dropped.Swap(0); n > 0 {
			attrs = append(attrs, "dropped_before", n)
		}
	}
	s.Log.Log(ctx, level, "api request", attrs...)
}

// recoverJSON answers a panic with a JSON 500 and keeps the process up.
func (s *server) recoverJSON(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			s.Log.Error("api handler panicked", "path", c.Request.URL.Path, "panic", v)
			fail(c, &apitypes.Error{Code: apitypes.CodeInternal, Message: "internal error", Status: http.StatusInternalServerError})
		}
	}()
	c.Next()
}

// decode reads the body as exactly one JSON object of v's shape: unknown fields, trailing
// data and bodies over MaxBodyBytes are refused.
func decode(c *gin.Context, v any) error {
	body := http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.Decode(new(json.RawMessage)) != io.EOF {
		err = errors.New("more than one JSON value in the body")
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &apitypes.Error{Code: apitypes.CodeTooLarge, Message: fmt.Sprintf("the body is over %d bytes", MaxBodyBytes), Status: http.StatusRequestEntityTooLarge}
	case errors.Is(err, io.EOF):
		return &apitypes.Error{Code: apitypes.CodeBadRequest, Message: "the body is empty; a JSON object is expected", Status: http.StatusBadRequest}
	case err != nil:
		return &apitypes.Error{Code: apitypes.CodeBadRequest, Message: "the body is not valid JSON for this request: " + err.Error(), Status: http.StatusBadRequest}
	}
	return nil
}

// reader is where plain reads go: the informers' cache when there is one.
func (s *server) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

// readiness are the checks of /readyz: the API serves only while it reaches Temporal (which
// starts, extends and cancels Schedulings) and the API server (which holds every object).
func (s *server) readiness() ([]health.Check, error) {
	checks := []health.Check{health.Temporal(s.Temporal)}
	if s.Config != nil {
		kube, err := health.KubeAPI(s.Config)
		if err != nil {
			return nil, err
		}
		checks = append(checks, kube)
	}
	return checks, nil
}
