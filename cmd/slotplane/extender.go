package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"k8s.io/client-go/tools/clientcmd"

	"slotplane/extender"
)

func runExtender(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("extender", flag.ContinueOnError)
	addr := fs.String("listen", envOr("SLOTPLANE_EXTENDER_LISTEN", ":8888"), "address to serve /filter, /preempt, /healthz and /metrics on")
	kubeconfig := fs.String("kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes config: %w", err)
	}
	srv, err := extender.Start(ctx, cfg, *addr, slog.Default())
	if err != nil {
		return err
	}
	slog.Info("extender serving", "url", srv.URL)
	<-ctx.Done()
	return srv.Stop()
}
