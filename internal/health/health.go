// Package health answers the probes of slotplane's components: liveness says the process
// works, readiness that it reaches what it needs (Temporal, the Kubernetes API server).
package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Timeout bounds each check of one probe: a kubelet's default probe timeout is 1 s, and a
// dependency that answers later than this is not one to send work to.
const Timeout = 800 * time.Millisecond

// Check is one dependency's test: nil when it answers.
type Check struct {
	Name string
	Run  func(context.Context) error
}

// Report is a probe's answer: "ok", or "failing" with each failing check's error.
type Report struct {
	Status string            `json:"status"`
	Failed map[string]string `json:"failed,omitempty"`
}

// Run runs the checks at once, each within Timeout, and reports.
func Run(ctx context.Context, checks ...Check) Report {
	var mu sync.Mutex
	var wg sync.WaitGroup
	r := Report{Status: "ok"}
	for _, c := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, Timeout)
			defer cancel()
			if err := c.Run(cctx); err != nil {
				mu.Lock()
				defer mu.Unlock()
				if r.Failed == nil {
					r.Failed = map[string]string{}
				}
				r.Status, r.Failed[c.Name] = "failing", err.Error()
			}
		})
	}
	wg.Wait()
	return r
}

// Handler answers 200 with the report when every check passes, 503 when one fails.
func Handler(checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := Run(req.Context(), checks...)
		w.Header().Set("Content-Type", "application/json")
		if r.Status != "ok" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
}

// Error is the report as an error (nil when every check passes), for controller-runtime's
// readiness checkers.
func (r Report) Error() error {
	if r.Status == "ok" {
		return nil
	}
	return fmt.Errorf("%v", r.Failed)
}

// Temporal checks that the Temporal frontend answers c's health check.
func Temporal(c client.Client) Check {
	return Check{Name: "temporal", Run: func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}}
}

// KubeAPI checks that the Kubernetes API server of cfg says it is ready (its /readyz, which
// every identity may read).
func KubeAPI(cfg *rest.Config) (Check, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Check{}, fmt.Errorf("health check client: %w", err)
	}
	rc := cs.Discovery().RESTClient()
	return Check{Name: "kube-apiserver", Run: func(ctx context.Context) error {
		return rc.Get().AbsPath("/readyz").Do(ctx).Error()
	}}, nil
}

// Serve serves liveness at /healthz (live: nil while the process works) and readiness at
// /readyz (the checks) on addr until ctx ends. It returns once it listens.
func Serve(ctx context.Context, addr string, live func() error, ready ...Check) (string, error) {
	mux := http.NewServeMux()
	mux.Handle("/healthz", Handler(Check{Name: "process", Run: func(context.Context) error { return live() }}))
	mux.Handle("/readyz", Handler(ready...))
	return serve(ctx, addr, mux)
}

func serve(ctx context.Context, addr string, h http.Handler) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("health endpoint: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("health endpoint stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return l.Addr().String(), nil
}
