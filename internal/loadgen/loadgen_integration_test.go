//go:build integration

package loadgen_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/api"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/loadgen"
	"slotplane/internal/localplatform/platformtest"
)

// A mixed load of reads and job creations on the real platform, bounded in time, answers
// every request. The run lasts 5s here; SLOTPLANE_LOAD_DURATION=30s makes it the 30s run
// whose figures docs/benchmarks report.
func TestLoad_MixedReadsAndWritesWithoutErrors(t *testing.T) {
	d := 5 * time.Second
	if v := os.Getenv("SLOTPLANE_LOAD_DURATION"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	p := platformtest.Start(t, platformtest.DefaultBed)
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Auth: api.StaticTokens{"load-token": {Name: "load"}}}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()

	r, err := loadgen.Run(context.Background(), loadgen.Options{Server: srv.URL, Token: "load-token", Duration: d, Workers: 8})
	require.NoError(t, err)
	var table strings.Builder
	r.Table(&table)
	t.Logf("\n%s", table.String())
	require.Zero(t, r.Errors(), "\n%s", table.String())
	for _, k := range r.Kinds {
		require.Positive(t, k.Count, "%s was never sent", k.Kind)
	}
	// Every job the run says it made exists.
	var jobs v1alpha1.BatchJobList
	require.NoError(t, p.Client.List(context.Background(), &jobs))
	require.Len(t, jobs.Items, len(r.Created))
}
