//go:build integration

package temporalserver_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// requireHTTPBody waits up to ten seconds for url to answer 200 with a body containing want.
func requireHTTPBody(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return
			}
			last = resp.Status + ": " + string(body[:min(len(body), 200)])
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s never answered 200 with %q; last: %s", url, want, last)
}
