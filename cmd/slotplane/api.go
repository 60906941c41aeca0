package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"slotplane/api"
)

func runAPI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	conn := connectionFlags(fs)
	listen := fs.String("listen", envOr("SLOTPLANE_API_LISTEN", ":8088"), "address the REST API listens on")
	namespace := fs.String("namespace", envOr("SLOTPLANE_API_NAMESPACE", "default"), "namespace of requests that name none")
	tokens := fs.String("token-file", envOr("SLOTPLANE_API_TOKEN_FILE", ""), "CSV file of bearer tokens, one per line: token,user[,group...] (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokens == "" {
		return fmt.Errorf("-token-file is required: the API checks bearer tokens against it")
	}
	f, err := os.Open(*tokens)
	if err != nil {
		return err
	}
	auth, err := api.ParseTokens(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *tokens, err)
	}
	tc, cl, err := conn.dialLive()
	if err != nil {
		return err
	}
	defer tc.Close()
	s, err := api.Start(api.Options{Client: cl, Temporal: tc, Namespace: *namespace, Auth: auth}, *listen)
	if err != nil {
		return err
	}
	slog.Info("api serving", "url", s.URL+"/api/v1", "tokens", len(auth))
	<-ctx.Done()
	return s.Stop()
}
