package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofFlag is -pprof-listen of the long-running components: where Go's profiles of the
// process are served (/debug/pprof/). Off unless given: a profile shows the process's
// memory and command line, so it belongs on a loopback or an operator-only address.
func pprofFlag(fs *flag.FlagSet) *string {
	return fs.String("pprof-listen", envOr("SLOTPLANE_PPROF_LISTEN", ""),
		"address of Go's profiling endpoints, /debug/pprof/ (plain HTTP, no authentication: keep it on a loopback or private address); empty turns them off")
}

// serveProfiles serves net/http/pprof's handlers on addr until ctx ends; "" serves nothing
// (nil address). The mux is the process's own: nothing else registered on http's default mux
// leaks out through it.
func serveProfiles(ctx context.Context, addr string) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	// A CPU profile or trace runs as long as its seconds parameter says: no write timeout.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("pprof endpoint stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close() // a profile being taken ends with the process
	}()
	slog.Info("pprof serving", "url", "http://"+l.Addr().String()+"/debug/pprof/")
	return l.Addr(), nil
}
