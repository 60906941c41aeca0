//go:build integration

package loadgen_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"slotplane/api"
	"slotplane/internal/loadgen"
	"slotplane/internal/localplatform/platformtest"
)

// BenchmarkAPI_MixedLoad10s runs the load mix (80% reads, 20% BatchJob creations, 8
// workers) for 10s against the API on the real platform and reports the latency
// percentiles of all requests and the rate. Any failed request fails it.
func BenchmarkAPI_MixedLoad10s(b *testing.B) {
	p := platformtest.Start(b, platformtest.DefaultBed)
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Auth: api.StaticTokens{"bench": {Name: "bench"}}}, "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	for i := range b.N {
		r, err := loadgen.Run(context.Background(), loadgen.Options{Server: srv.URL, Token: "bench", Duration: 10 * time.Second, Workers: 8,
			Prefix: fmt.Sprintf("bench-%d-", i)})
		if err != nil {
			b.Fatal(err)
		}
		if r.Errors() > 0 {
			for _, k := range r.Kinds {
				if k.FirstError != "" {
					b.Fatalf("%d requests failed; the first of %s: %s", r.Errors(), k.Kind, k.FirstError)
				}
			}
		}
		b.ReportMetric(float64(r.All.P50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(r.All.P99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(r.All.Count)/r.Duration.Seconds(), "req/s")
	}
}
