package freeport

import (
	"errors"
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

// Retry tries again only while the error says a port was lost, and at most Attempts times.
func TestRetry_AgainOnlyForALostPort(t *testing.T) {
	lost := errors.New("listen tcp 127.0.0.1:1: bind: address already in use")
	other := errors.New("no such binary")
	for name, tc := range map[string]struct {
		errs  []error // start's answers, in turn; nil once they run out
		want  error
		tries int
	}{
		"at once":          {want: nil, tries: 1},
		"after two losses": {errs: []error{lost, lost}, want: nil, tries: 3},
		"another error":    {errs: []error{lost, other, lost}, want: other, tries: 2},
		"every try lost":   {errs: []error{lost, lost, lost, lost, lost, lost}, want: lost, tries: Attempts},
	} {
		t.Run(name, func(t *testing.T) {
			tries := 0
			err := Retry(func() error {
				tries++
				if tries <= len(tc.errs) {
					return tc.errs[tries-1]
				}
				return nil
			}, func(err error) bool { return InUse(err.Error()) })
			if err != tc.want || tries != tc.tries {
				t.Fatalf("got %v after %d tries, want %v after %d", err, tries, tc.want, tc.tries)
			}
		})
	}
}
