package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// Every check runs; a failing one and one that does not answer within Timeout make the
// report failing, with each one's reason.
func TestRun_ReportsEachFailure(t *testing.T) {
	ok := Check{Name: "ok", Run: func(context.Context) error { return nil }}
	down := Check{Name: "temporal", Run: func(context.Context) error { return errors.New("connection refused") }}
	slow := Check{Name: "kube-apiserver", Run: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	if r := Run(context.Background(), ok); r.Status != "ok" || r.Error() != nil {
		t.Errorf("all pass: %+v", r)
	}
	r := Run(context.Background(), ok, down, slow)
	if r.Status != "failing" || len(r.Failed) != 2 || r.Failed["temporal"] != "connection refused" || r.Failed["kube-apiserver"] != context.DeadlineExceeded.Error() {
		t.Errorf("got %+v", r)
	}
	if r.Error() == nil {
		t.Error("a failing report is an error")
	}
}

// The endpoints answer 200 or 503 with the report as JSON: liveness from the process's
// own state, readiness from the checks.
func TestServe_LivenessAndReadiness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var alive error
	var reach error
	addr, err := Serve(ctx, "127.0.0.1:0", func() error { return alive },
		Check{Name: "temporal", Run: func(context.Context) error { return reach }})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, Report) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r Report
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, r
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("readyz %d", code)
	}
	reach = errors.New("no route to host")
	if code, r := get("/readyz"); code != http.StatusServiceUnavailable || r.Failed["temporal"] != "no route to host" {
		t.Errorf("readyz with Temporal gone: %d %+v", code, r)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("a lost dependency does not make the process unhealthy: %d", code)
	}
	alive = errors.New("the Temporal worker stopped")
	if code, r := get("/healthz"); code != http.StatusServiceUnavailable || r.Failed["process"] != "the Temporal worker stopped" {
		t.Errorf("healthz of a stopped worker: %d %+v", code, r)
	}
	cancel()
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			break
		}
		_ = resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still serving after its context ended")
		}
	}
}
