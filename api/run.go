package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
)

// Server is a running API.
type Server struct {
	// URL is the API's base address, http://host:port (routes are under /api/v1).
	URL       string
	http      *http.Server
	done      chan error
	srv       *server
	stopCache context.CancelFunc
}

// Start serves the API on addr until Stop. Given Options.Config and no Informers, it
// watches the cluster for the change feed, and returns once it has read it.
func Start(o Options, addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen on %s: %w", addr, err)
	}
	s, err := Serve(o, l)
	if err != nil {
		_ = l.Close()
	}
	return s, err
}

// Serve is Start on a listener the caller opened (and which Stop closes).
func Serve(o Options, l net.Listener) (*Server, error) {
	ctx, stopCache := context.WithCancel(context.Background())
	readerSynced := func(context.Context) bool { return true }
	if o.Config != nil && o.Reader == nil {
		c, err := cache.New(o.Config, cache.Options{Scheme: kubeclient.Scheme()})
		if err != nil {
			stopCache()
			return nil, fmt.Errorf("api: informers: %w", err)
		}
		// The lists' kinds are read from the start: a first list does not wait for a sync.
		for _, obj := range []client.Object{&v1alpha1.Scheduling{}, &v1alpha1.BatchJob{}, &v1alpha1.TestBed{}} {
			if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
				stopCache()
				return nil, fmt.Errorf("api: informers: %w", err)
			}
		}
		go func() { _ = c.Start(ctx) }()
		o.Reader = c
		readerSynced = c.WaitForCacheSync
	}
	srv, h, err := newServer(o, o.Config != nil)
	if err != nil {
		stopCache()
		return nil, err
	}
	if srv.hub != nil {
		if err := srv.hub.watch(ctx, o.Config); err != nil {
			stopCache()
			return nil, fmt.Errorf("api: change feed: %w", err)
		}
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !readerSynced(wait) {
		stopCache()
		return nil, errors.New("api: the informers did not read the cluster within a minute")
	}
	if srv.hub != nil {
		for !srv.hub.ready() {
			select {
			case <-wait.Done():
				stopCache()
				return nil, errors.New("api: the change feed did not read the cluster within a minute")
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	scheme := "http://"
	if o.TLS != nil {
		l, scheme = tls.NewListener(l, o.TLS), "https://"
	}
	s := &Server{
		URL:       scheme + l.Addr().String(),
		http:      httpServer(h),
		done:      make(chan error, 1),
		srv:       srv,
		stopCache: stopCache,
	}
	go func() {
		err := s.http.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Stop lets requests in flight finish (up to 10s) and stops serving.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	close(s.srv.stopping) // the feed's connections are not the HTTP server's to close
	err := s.http.Shutdown(ctx)
	s.stopCache()
	return errors.Join(err, <-s.done)
}

// The API server's limits. A request must send its headers within ReadHeaderTimeout and
// its body within ReadTimeout, and its answer must be written within WriteTimeout; the
// longest wait of a handler (an extension waiting for its workflow, extendWait) is well
// inside it. The feed's websocket connections set their own deadlines once upgraded (a
// ping every 30 s, each write within 10 s, a client silent for 70 s is gone), which
// replace these. A kept-alive connection idle for IdleTimeout is closed.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

func httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		// A client cut for being slow is its own failure: debug, not a warning per scan.
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
}
