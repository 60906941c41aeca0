package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"slotplane/internal/cli"
	"slotplane/internal/loadgen"
)

// runLoad drives a running API with a mix of reads and BatchJob creations for a fixed time
// and prints each kind's latency percentiles; any failed request makes it fail. The jobs
// it creates are named load-<time>-<n> and are left for the caller to delete.
func runLoad(ctx context.Context, args []string) error { return load(ctx, args, os.Stdout) }

func load(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	server := fs.String("server", envOr("SLOTPLANE_SERVER", "http://127.0.0.1:8088"), "the API's address")
	token := fs.String("token", envOr("SLOTPLANE_TOKEN", ""), "the API's bearer token")
	namespace := fs.String("namespace", envOr("SLOTPLANE_NAMESPACE", ""), "namespace (default: the API's)")
	bed := fs.String("testbed", "bed", "the test bed the reads ask about")
	duration := fs.Duration("duration", 30*time.Second, "how long to load")
	workers := fs.Int("workers", 8, "requests in flight at once")
	writes := fs.Float64("writes", 0.2, "share of requests that create a BatchJob")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" {
		return fmt.Errorf("no token: set -token or SLOTPLANE_TOKEN (slotplane dev prints it)")
	}
	if *writes < 0 || *writes > 1 {
		return fmt.Errorf("-writes %v: want a share between 0 and 1", *writes)
	}
	share := *writes
	if share == 0 {
		share = -1 // loadgen reads a zero as its default
	}
	return cli.Load(ctx, loadgen.Options{Server: *server, Token: *token, Namespace: *namespace, TestBed: *bed,
		Duration: *duration, Workers: *workers, WriteShare: share}, out)
}
