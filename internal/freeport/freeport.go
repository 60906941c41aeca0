// Package freeport finds TCP ports on loopback that nothing listens on, so several local
// control planes and Temporal servers can run side by side (parallel test packages).
package freeport

import (
	"fmt"
	"net"
)

// Get returns n distinct free ports on 127.0.0.1. The listeners are held until all n are
// found, so one call never returns the same port twice. Another process may still take a
// port between this call and its use; callers that bind the port themselves should retry.
func Get(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
