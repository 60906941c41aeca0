package extender

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// Server is a running extender.
type Server struct {
	// URL is the extender's base URL, what kube-scheduler's urlPrefix names.
	URL string
	// Metrics is what its /metrics serves.
	Metrics *prometheus.Registry

	srv      *http.Server
	reserver *Reserver
	cancel   context.CancelFunc
	done     chan error
}

// Limits bound what one connection may take of the server. A client that sends its
// headers slowly (slow loris) is cut off after ReadHeaderTimeout, one that sends its body
// slowly after ReadTimeout; an idle kept-alive connection is closed after IdleTimeout.
type Limits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
}

// DefaultLimits suit kube-scheduler as the only client: it sends a request of at most a
// MiB (maxBody) at once, waits httpTimeout (10 s in deploy/) for the answer, and keeps its
// connection alive between calls (its transport closes idle ones after 90 s).
var DefaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       15 * time.Second,
	// An answer may wait on live reads and a write (a binding, a claim, a ghost's
	// deletion); past the scheduler's own timeout nobody reads it.
	WriteTimeout:   30 * time.Second,
	IdleTimeout:    2 * time.Minute,
	MaxHeaderBytes: 64 << 10,
}

// Option shapes a Server.
type Option func(*options)

type options struct {
	tls    *tls.Config
	plain  bool
	limits Limits
	held   func() bool
}

// WithTLS serves HTTPS with c (see ServerTLS). When c has ClientCAs, every path but
// /healthz needs a client certificate that they signed.
func WithTLS(c *tls.Config) Option { return func(o *options) { o.tls = c } }

// WithLease makes the server decide only while held says its lease is held (lease.Elector's
// Held): a replica that lost the lease, or paused past it, answers /filter, /preempt, /bind
// and /healthz with 503 from that moment, and never places a pod beside the replica that
// took over.
func WithLease(held func() bool) Option { return func(o *options) { o.held = held } }

// WithPlainHTTP serves plain HTTP. Anyone who reaches the port can then reserve slots and
// bind pods with their claims: only for a network where nothing but the scheduler can
// reach the extender.
func WithPlainHTTP() Option { return func(o *options) { o.plain = true } }

// Start serves the extender on addr (host:port; port 0 picks a free one). Its informers
// watch TestBeds and the pods of test beds (nothing else), and it answers only after they
// have synced, so a restarted extender never decides on an empty picture. It serves HTTPS
// (WithTLS), or plain HTTP only when asked to (WithPlainHTTP).
func Start(ctx context.Context, cfg *rest.Config, addr string, log *slog.Logger, opts ...Option) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("extender listen on %s: %w", addr, err)
	}
	s, err := Serve(ctx, cfg, l, log, opts...)
	if err != nil {
		_ = l.Close()
	}
	return s, err
}

// Serve is Start on a listener the caller opened, so that the scheduler can be told the
// address before the extender serves (Stop closes the listener). Connections wait in the
// listener's backlog until the informers have synced.
func Serve(ctx context.Context, cfg *rest.Config, l net.Listener, log *slog.Logger, opts ...Option) (*Server, error) {
	o, err := serveOptions(opts)
	if err != nil {
		return nil, err
	}
	informers, err := newInformers(cfg)
	if err != nil {
		return nil, err
	}
	cl, err := kubeclient.Live(cfg)
	if err != nil {
		return nil, err
	}
	testBeds, slotSlices, pods, err := getInformers(ctx, informers)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	reserver := NewReserver(runCtx, informers, cl, log)
	if _, err := pods.AddEventHandler(onDelete(reserver.PodDeleted)); err != nil {
		cancel()
		return nil, fmt.Errorf("extender pod handler: %w", err)
	}
	// A deleted TestBed takes its state and flusher along; state is made only for TestBeds
	// the cache has (Reserver.bed).
	if _, err := testBeds.AddEventHandler(onDelete(reserver.TestBedDeleted)); err != nil {
		cancel()
		return nil, fmt.Errorf("extender test bed handler: %w", err)
	}
	if _, err := slotSlices.AddEventHandler(onDelete(reserver.SliceDeleted)); err != nil {
		cancel()
		return nil, fmt.Errorf("extender slot slice handler: %w", err)
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- informers.Start(runCtx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !informers.WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.New("extender informers did not sync within a minute")
	}

	h := NewHandler(reserver, log, func() bool { return true })
	var served http.Handler = h
	if o.held != nil {
		served = leased(h, o.held)
	}
	s := &Server{
		Metrics:  h.Metrics,
		srv:      httpServer(served, o, log),
		reserver: reserver,
		cancel:   cancel,
		done:     make(chan error, 1),
	}
	s.URL = "http://" + l.Addr().String() + "/"
	if o.tls != nil {
		s.URL = "https://" + l.Addr().String() + "/"
	}
	go func() {
		s.done <- errors.Join(serveOn(s.srv, l), <-cacheDone)
	}()
	return s, nil
}

// serveOptions applies opts to the defaults and checks that the server is to serve either
// HTTPS with a certificate or plain HTTP.
func serveOptions(opts []Option) (options, error) {
	o := options{limits: DefaultLimits}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.tls == nil && !o.plain:
		return o, errors.New("the extender serves HTTPS: give it a certificate (WithTLS), or ask for plain HTTP (WithPlainHTTP)")
	case o.tls != nil && o.plain:
		return o, errors.New("the extender was given both a certificate and plain HTTP: choose one")
	case o.tls != nil && o.tls.Certificates == nil && o.tls.GetCertificate == nil && o.tls.GetConfigForClient == nil:
		return o, errors.New("the extender's TLS configuration has no certificate")
	}
	return o, nil
}

// newInformers makes the extender's cache, not started yet. It keeps of pods and BatchJobs
// only what the extender reads (slotPodView, grantView), and does not copy
// TestBeds on reads.
func newInformers(cfg *rest.Config) (cache.Cache, error) {
	cacheOpts := kubeclient.CacheOptions()
	// Every call reads its test bed and the bed's slot slices; copying thousands of slots
	// each time would cost more than the decision. The Reserver never modifies what the
	// cache returns: it copies a slice before it writes one.
	noCopy := true
	cacheOpts.ByObject[&v1alpha1.TestBed{}] = cache.ByObject{UnsafeDisableDeepCopy: &noCopy}
	cacheOpts.ByObject[&v1alpha1.SlotSlice{}] = cache.ByObject{UnsafeDisableDeepCopy: &noCopy}
	for obj, byObject := range cacheOpts.ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			byObject.Transform = slotPodView
			cacheOpts.ByObject[obj] = byObject
		}
	}
	cacheOpts.ByObject[batchJobMeta()] = cache.ByObject{Transform: grantView}
	informers, err := cache.New(cfg, cacheOpts)
	if err != nil {
		return nil, fmt.Errorf("extender informers: %w", err)
	}
	return informers, nil
}

// slotPodView narrows a pod, before the cache stores it, to what the extender reads of a
// slot pod: its metadata (identity, labels, annotations, deletion), the node it is bound
// to and its phase. Every call copies its pod out of the cache; a Spark executor's spec is
// most of it. Any new reader of another field must widen this.
func slotPodView(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields, p.OwnerReferences = nil, nil
		p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
		p.Status = corev1.PodStatus{Phase: p.Status.Phase}
	}
	return obj, nil
}

// grantView narrows a BatchJob's metadata, before the cache stores it, to its identity and
// what Reserver.Granted reads: the granted test bed label, the creation request and the
// assigned slots.
func grantView(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		kept := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
		if v, ok := m.Labels[v1alpha1.GrantedTestBedLabel]; ok {
			kept.Labels = map[string]string{v1alpha1.GrantedTestBedLabel: v}
		}
		for _, k := range []string{v1alpha1.CreationRequestAnnotation, v1alpha1.AssignedSlotsAnnotation} {
			if v, ok := m.Annotations[k]; ok {
				if kept.Annotations == nil {
					kept.Annotations = map[string]string{}
				}
				kept.Annotations[k] = v
			}
		}
		m.ObjectMeta = kept
	}
	return obj, nil
}

// getInformers asks the cache for every informer the extender reads (TestBeds, their slot
// slices, BatchJobs, pods) and the pods' ghost index, and returns the TestBeds', the slot
// slices' and the pods' informers.
func getInformers(ctx context.Context, informers cache.Cache) (testBeds, slotSlices, pods cache.Informer, err error) {
	// Ask for every informer before starting, so all are synced when the wait returns.
	testBeds, err = informers.GetInformer(ctx, &v1alpha1.TestBed{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("extender informer for TestBeds: %w", err)
	}
	slotSlices, err = informers.GetInformer(ctx, &v1alpha1.SlotSlice{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("extender informer for SlotSlices: %w", err)
	}
	// BatchJobs carry the slots a preempted job still holds (Reserver.Assigned): their
	// metadata is all the extender reads of them.
	if _, err := informers.GetInformer(ctx, batchJobMeta()); err != nil {
		return nil, nil, nil, fmt.Errorf("extender informer for BatchJobs: %w", err)
	}
	pods, err = informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("extender informer for pods: %w", err)
	}
	err = informers.IndexField(ctx, &corev1.Pod{}, GhostIndex, func(o client.Object) []string {
		if v := GhostIndexValue(o.(*corev1.Pod)); v != "" {
			return []string{v}
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("extender ghost index: %w", err)
	}
	return testBeds, slotSlices, pods, nil
}

// onDelete is an event handler that calls deleted with every deleted object of type T, also
// when the informer missed the deletion and has only the object's last known state.
func onDelete[T any](deleted func(T)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(T); ok {
				deleted(o)
			}
		},
	}
}

// httpServer is the server of h under the options' TLS and limits.
func httpServer(h http.Handler, o options, log *slog.Logger) *http.Server {
	if o.tls != nil && o.tls.ClientCAs != nil {
		h = clientVerified(h)
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         o.tls,
		ReadHeaderTimeout: o.limits.ReadHeaderTimeout,
		ReadTimeout:       o.limits.ReadTimeout,
		WriteTimeout:      o.limits.WriteTimeout,
		IdleTimeout:       o.limits.IdleTimeout,
		MaxHeaderBytes:    o.limits.MaxHeaderBytes,
		// A refused handshake or a cut slow client is the client's failure: debug level,
		// not an error line for every port scan.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// serveOn runs srv on l until it is shut down, over TLS when it has a TLS configuration.
func serveOn(srv *http.Server, l net.Listener) error {
	var err error
	if srv.TLSConfig != nil {
		err = srv.ServeTLS(l, "", "")
	} else {
		err = srv.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// TestBeds is the number of test beds the extender keeps state for (one flusher each).
func (s *Server) TestBeds() int { return s.reserver.Beds() }

// clientVerified turns away every call without a client certificate the server verified,
// but /healthz: kubelet probes present none. The TLS handshake has already refused a
// certificate of another CA (tls.VerifyClientCertIfGiven); this refuses none at all.
func clientVerified(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(struct{ Error string }{"a client certificate signed by the extender's client CA is required"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Stop ends the server, letting calls in flight finish for up to five seconds.
func (s *Server) Stop() error {
	// net/http counts a connection that has sent no request yet as busy for its first 5 s, so
	// a shutdown given only 5 s can time out on a client's spare connection; 10 s lets those
	// age out while still bounding a request that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.cancel()
	return errors.Join(err, <-s.done)
}

// leased answers the decisions and /healthz with 503 while held says the lease is not held.
func leased(next http.Handler, held func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/filter", "/preempt", "/bind", "/healthz":
			if !held() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(struct{ Error string }{"this extender does not hold the lease: another one decides"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
