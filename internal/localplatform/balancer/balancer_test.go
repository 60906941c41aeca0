package balancer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// replica is a server that answers its name, ready while ready holds.
func replica(t *testing.T, name string, ready *atomic.Bool) Backend {
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return Backend{Addr: strings.TrimPrefix(s.URL, "http://"), Ready: s.URL + "/ready"}
}

// Connections go to the ready replicas in turn, to none that is not ready, and are closed
// when none is.
func TestBalancer_ReadyReplicasInTurn(t *testing.T) {
	var aReady, bReady atomic.Bool
	aReady.Store(true)
	bReady.Store(true)
	b, err := Listen("127.0.0.1:0", replica(t, "a", &aReady), replica(t, "b", &bReady))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	get := func() string {
		// A new connection each time: the balancer picks per connection.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + b.Addr + "/")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	seen := map[string]int{}
	for range 10 {
		seen[get()]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Errorf("both ready: %v, want 5 each", seen)
	}
	bReady.Store(false)
	waitFor(t, func() bool { return len(b.Ready()) == 1 })
	for range 4 {
		if got := get(); got != "a" {
			t.Fatalf("b is not ready, yet %q answered", got)
		}
	}
	aReady.Store(false)
	waitFor(t, func() bool { return len(b.Ready()) == 0 })
	if got := get(); got != "" {
		t.Errorf("none ready, yet %q answered", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
