// Package freeport finds TCP ports on loopback that nothing listens on, so several local
// control planes and Temporal servers can run side by side (parallel test packages).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the lowest port Get picks: well above the ports daemons are configured on.
const lowest = 15000

// Get returns n distinct free ports on 127.0.0.1, chosen at random below the kernel's range
// of ephemeral ports. A port from that range, once its listener closes, can be taken by the
// local end of any outgoing connection before the caller binds it; below the range only
// another caller of a fixed or chosen port can take it. The listeners are held until all n
// are found, so one call never returns the same port twice. A caller that binds the port
// later can still lose it to another process, and should retry then (Retry). Within one process no
// port is handed out twice: parallel tests that each start a platform (one test binary) cannot
// pick a port another has been given and not yet bound.
func Get(n int) ([]int, error) {
	given.Lock()
	defer given.Unlock()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	hi := ephemeralLow()
	for tries := 0; len(ports) < n && hi-lowest > 1000 && tries < 100*n; tries++ {
		p := lowest + rand.IntN(hi-lowest)
		if given.ports[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // in use: pick another
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for len(ports) < n { // no room below the ephemeral range: let the kernel choose
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		if p := l.Addr().(*net.TCPAddr).Port; !given.ports[p] {
			ports = append(ports, p)
		}
	}
	for _, p := range ports {
		given.ports[p] = true
	}
	return ports, nil
}

// Attempts bounds Retry's tries.
const Attempts = 5

// Retry runs start, which takes ports (Get's) and binds them, and runs it again while lost
// says its error came from a port another process took between the search and the bind,
// up to Attempts times in all. It returns start's last error.
func Retry(start func() error, lost func(error) bool) error {
	var err error
	for range Attempts {
		if err = start(); err == nil || !lost(err) {
			return err
		}
	}
	return err
}

// InUse tells whether text (an error's, a process's log) says a listener found its address
// in use.
func InUse(text string) bool { return strings.Contains(text, "address already in use") }

// given holds every port Get has returned in this process. The set grows by a handful of
// ports per platform a test starts, far below the range it is drawn from.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default, 32768,
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return lo
}
