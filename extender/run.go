package extender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
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

	srv    *http.Server
	cancel context.CancelFunc
	done   chan error
}

// Start serves the extender on addr (host:port; port 0 picks a free one). Its informers
// watch TestBeds and the pods of test beds (nothing else), and it answers only after they
// have synced, so a restarted extender never decides on an empty picture.
func Start(ctx context.Context, cfg *rest.Config, addr string, log *slog.Logger) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("extender listen on %s: %w", addr, err)
	}
	s, err := Serve(ctx, cfg, l, log)
	if err != nil {
		_ = l.Close()
	}
	return s, err
}

// Serve is Start on a listener the caller opened, so that the scheduler can be told the
// address before the extender serves (Stop closes the listener). Connections wait in the
// listener's backlog until the informers have synced.
func Serve(ctx context.Context, cfg *rest.Config, l net.Listener, log *slog.Logger) (*Server, error) {
	opts := kubeclient.CacheOptions()
	// Every call reads its test bed; copying a status of thousands of slots each time would
	// cost more than the decision. The Reserver never modifies what the cache returns: it
	// copies a TestBed when it keeps it.
	noCopy := true
	opts.ByObject[&v1alpha1.TestBed{}] = cache.ByObject{UnsafeDisableDeepCopy: &noCopy}
	informers, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("extender informers: %w", err)
	}
	cl, err := kubeclient.Live(cfg)
	if err != nil {
		return nil, err
	}
	// Ask for every informer before starting, so all are synced when the wait returns.
	if _, err := informers.GetInformer(ctx, &v1alpha1.TestBed{}); err != nil {
		return nil, fmt.Errorf("extender informer for TestBeds: %w", err)
	}
	// BatchJobs carry the slots a preempted job still holds (Reserver.Assigned).
	if _, err := informers.GetInformer(ctx, &v1alpha1.BatchJob{}); err != nil {
		return nil, fmt.Errorf("extender informer for BatchJobs: %w", err)
	}
	pods, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("extender informer for pods: %w", err)
	}
	err = informers.IndexField(ctx, &corev1.Pod{}, GhostIndex, func(o client.Object) []string {
		if v := GhostIndexValue(o.(*corev1.Pod)); v != "" {
			return []string{v}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("extender ghost index: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	reserver := NewReserver(runCtx, informers, cl, log)
	_, err = pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				reserver.PodDeleted(pod)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("extender pod handler: %w", err)
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
	s := &Server{
		URL:    "http://" + l.Addr().String() + "/",
		srv:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		cancel: cancel,
		done:   make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- errors.Join(err, <-cacheDone)
	}()
	return s, nil
}

// Stop ends the server, letting calls in flight finish for up to five seconds.
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	s.cancel()
	return errors.Join(err, <-s.done)
}
