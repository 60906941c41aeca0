// Package balancer stands in, on one machine, for a Kubernetes Service in front of a
// component's replicas: it takes TCP connections on one address and hands each to the next
// ready replica in turn, as kube-proxy does with a Service's ready endpoints. A replica is
// ready while its readiness URL answers 200, checked every ProbeEvery; a connection that
// finds none ready is closed at once, like a Service without endpoints.
package balancer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ProbeEvery is how often each replica's readiness is checked (a kubelet's readinessProbe
// periodSeconds of 1 at its shortest).
const ProbeEvery = 500 * time.Millisecond

// Backend is one replica: where it listens, and the URL of its readiness ("": always ready).
type Backend struct {
	Addr, Ready string
}

// Balancer is a running balancer.
type Balancer struct {
	// Addr is where it listens.
	Addr string

	backends []Backend
	ready    []atomic.Bool
	next     atomic.Uint64
	l        net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

// Listen balances connections to addr over backends until Close.
func Listen(addr string, backends ...Backend) (*Balancer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Balancer{Addr: l.Addr().String(), backends: backends, ready: make([]atomic.Bool, len(backends)), l: l, cancel: cancel, conns: map[net.Conn]bool{}}
	for i := range backends {
		b.probe(ctx, i)
		b.wg.Go(func() {
			t := time.NewTicker(ProbeEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					b.probe(ctx, i)
				}
			}
		})
	}
	b.wg.Go(b.accept)
	return b, nil
}

// probe checks backend i's readiness.
func (b *Balancer) probe(ctx context.Context, i int) {
	url := b.backends[i].Ready
	if url == "" {
		b.ready[i].Store(true)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		b.ready[i].Store(false)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.ready[i].Store(false)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	b.ready[i].Store(resp.StatusCode == http.StatusOK)
}

// Ready is the addresses of the replicas ready now.
func (b *Balancer) Ready() []string {
	var out []string
	for i := range b.backends {
		if b.ready[i].Load() {
			out = append(out, b.backends[i].Addr)
		}
	}
	return out
}

// pick is the next ready backend in turn ("" when none is ready).
func (b *Balancer) pick() string {
	n := uint64(len(b.backends))
	start := b.next.Add(1)
	for k := range n {
		i := (start + k) % n
		if b.ready[i].Load() {
			return b.backends[i].Addr
		}
	}
	return ""
}

func (b *Balancer) accept() {
	for {
		c, err := b.l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Warn("balancer stopped accepting", "addr", b.Addr, "err", err)
			}
			return
		}
		b.wg.Go(func() { b.relay(c) })
	}
}

// relay joins the client's connection to a ready backend until either side closes.
func (b *Balancer) relay(client net.Conn) {
	to := b.pick()
	if to == "" {
		_ = client.Close()
		return
	}
	server, err := net.DialTimeout("tcp", to, 2*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !b.track(client, server) {
		return
	}
	defer b.untrack(client, server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// track records an open pair, so Close can cut it; false (both closed) once Close began.
func (b *Balancer) track(cs ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		b.conns[c] = true
	}
	return true
}

func (b *Balancer) untrack(cs ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(b.conns, c)
	}
}

// Close stops listening, cuts every relayed connection and waits for its goroutines.
func (b *Balancer) Close() error {
	err := b.l.Close()
	b.cancel()
	b.mu.Lock()
	for c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
	b.wg.Wait()
	return err
}
