package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server is a running API.
type Server struct {
	// URL is the API's base address, http://host:port (routes are under /api/v1).
	URL  string
	http *http.Server
	done chan error
}

// Start serves the API on addr until Stop.
func Start(o Options, addr string) (*Server, error) {
	h, err := New(o)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen on %s: %w", addr, err)
	}
	s := &Server{
		URL:  "http://" + l.Addr().String(),
		http: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)},
		done: make(chan error, 1),
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
	err := s.http.Shutdown(ctx)
	return errors.Join(err, <-s.done)
}
