package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"slotplane/apitypes"
)

// fuzzRoutes are the routes that decode what a client sends: bodies, queries and path
// names.
var fuzzRoutes = []struct{ method, path string }{
	{http.MethodPost, "/api/v1/jobs"},
	{http.MethodPost, "/api/v1/schedulings"},
	{http.MethodPatch, "/api/v1/schedulings/nightly"},
	{http.MethodPost, "/api/v1/jobs/etl/move"},
	{http.MethodGet, "/api/v1/jobs"},
	{http.MethodGet, "/api/v1/schedulings"},
	{http.MethodDelete, "/api/v1/schedulings/nightly"},
	{http.MethodGet, "/api/v1/watch"},
}

// FuzzAPIRequests sends arbitrary bodies and query strings to every route that decodes
// them. Whatever comes in, the API must not panic (a panic becomes a 500 "internal"), and
// every answer but a success is the API's JSON error with its code and a message; nothing
// comes back as a 500 but Kubernetes' or Temporal's absence (503 here: Temporal is never
// reached).
func FuzzAPIRequests(f *testing.F) {
	f.Add(uint8(0), "", []byte(`{"name":"j","framework":"spark","application":{"image":"i","mainApplicationFile":"local:///a.jar"}}`))
	f.Add(uint8(0), "namespace=other", []byte(`{"name":"j","framework":"spark","sparkApplication":{"driver":{"hostNetwork":true}},"application":{"image":"i"}}`))
	f.Add(uint8(0), "", []byte(`{"name":"j","framework":"flink","labels":{"slotplane.io/active-scheduling":"x"},"user":"bob"}`))
	f.Add(uint8(1), "", []byte(`{"name":"s","testBed":"bed","mode":"QueueBased","jobs":[{"name":"etl","replication":1}]}`))
	f.Add(uint8(1), "", []byte(`{"name":"s","testBed":"bed","mode":"SlotBased","jobs":[{"name":"etl","replication":2,"slotIDs":[0,0]}]}`))
	f.Add(uint8(2), "", []byte(`{"append":[{"name":"etl","replication":1}],"resourceVersion":"x"}`))
	f.Add(uint8(3), "", []byte(`{"queue":"root.other"}`))
	f.Add(uint8(4), "limit=2&continue=djEvam9i&state=Running", []byte(nil))
	f.Add(uint8(5), "limit=-1", []byte(nil))
	f.Add(uint8(6), "resourceVersion=12", []byte(nil))
	f.Add(uint8(7), "resourceVersion=abc&kinds=jobs,nope", []byte(nil))
	f.Add(uint8(0), "", []byte(strings.Repeat(`[`, 10_000)))
	f.Add(uint8(1), "", []byte(`{"name":"s","jobs":null}`))
	h := newTestHandler(f)
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		// Temporal is never reached: a request that gets that far would wait for it as long
		// as its client lets it (the SDK retries an unreachable server), so it gets a
		// deadline, as a client that hangs up would give it.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, r.method, r.path, bytes.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer t")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code < 300 {
			return
		}
		var e apitypes.Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
			t.Fatalf("%s %s?%s answered %d without the API's error: %q", r.method, r.path, query, w.Code, w.Body.String())
		}
		if e.Code == apitypes.CodeInternal || (w.Code >= 500 && w.Code != http.StatusServiceUnavailable) {
			t.Fatalf("%s %s?%s answered %d %s: %s", r.method, r.path, query, w.Code, e.Code, e.Message)
		}
	})
}
