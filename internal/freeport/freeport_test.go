package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The ports are distinct, bindable, and below the kernel's ephemeral range, where no
// outgoing connection takes them.
func TestGet_DistinctFreePortsBelowTheEphemeralRange(t *testing.T) {
	ports, err := Get(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	lo := ephemeralLow()
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice", p)
		}
		seen[p] = true
		if lo-lowest > 1000 && (p < lowest || p >= lo) {
			t.Errorf("port %d is outside [%d, %d)", p, lowest, lo)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		_ = l.Close()
	}
}

// Two calls in one process never share a port, even once the first call's ports are free
// again (their holder has not bound them yet, or has let them go).
func TestGet_NeverGivesAPortTwiceInOneProcess(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		ports, err := Get(10)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d given twice", p)
			}
			seen[p] = true
		}
	}
}
