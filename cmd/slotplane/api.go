package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/api"
	"slotplane/extender"
	"slotplane/internal/kubeclient"
)

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// The values of `slotplane api -auth`.
const (
	authTokens     = "tokens"     // the -token-file's tokens, each scoped by its line's options
	authKubernetes = "kubernetes" // the cluster's TokenReview and SubjectAccessReview
)

func runAPI(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	conn := connectionFlags(fs)
	listen := fs.String("listen", envOr("SLOTPLANE_API_LISTEN", ":8088"), "address the REST API listens on")
	namespace := fs.String("namespace", envOr("SLOTPLANE_API_NAMESPACE", "default"), "namespace of requests that name none")
	mode := fs.String("auth", envOr("SLOTPLANE_API_AUTH", authTokens), "how bearer tokens are checked: "+
		authTokens+" (against -token-file; each token acts in its namespaces, for itself unless act-as allows others) or "+
		authKubernetes+" (TokenReview, and SubjectAccessReview of each action on slotplane.io resources, with the cluster's RBAC)")
	tokens := fs.String("token-file", envOr("SLOTPLANE_API_TOKEN_FILE", ""), "CSV file of bearer tokens, one per line: token,user[,group...][,namespaces=a b][,act-as=u v][,act-as-groups=g] (required with -auth="+authTokens+")")
	origins := fs.String("allowed-origins", envOr("SLOTPLANE_API_ALLOWED_ORIGINS", ""), "comma-separated browser origins (https://host:port), besides the API's own, that may open the websocket feed")
	feedConns := fs.Int("feed-connections", api.DefaultFeedConnections, "most change feed connections open at once; more are answered 429")
	feedUserConns := fs.Int("feed-connections-per-user", api.DefaultFeedConnectionsPerUser, "most change feed connections one user may have open")
	certFile := fs.String("tls-cert-file", envOr("SLOTPLANE_API_TLS_CERT", ""), "PEM certificate to serve HTTPS with (reloaded when it changes); without it the API speaks plain HTTP, for a TLS proxy in front")
	keyFile := fs.String("tls-key-file", envOr("SLOTPLANE_API_TLS_KEY", ""), "PEM key of -tls-cert-file")
	audiences := fs.String("token-audiences", envOr("SLOTPLANE_API_TOKEN_AUDIENCES", ""), "with -auth="+authKubernetes+", comma-separated audiences a token must be issued for "+
		"(kubectl create token --audience); empty takes the API server's own, so any token of the cluster works")
	metricsAddr := metricsFlag(fs)
	pprofAddr := pprofFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := conn.logs.apply(); err != nil {
		return err
	}
	var serveTLS *tls.Config
	if *certFile != "" || *keyFile != "" {
		c, err := extender.ServerTLS(*certFile, *keyFile, "")
		if err != nil {
			return fmt.Errorf("-tls-cert-file and -tls-key-file: %w", err)
		}
		serveTLS = c
	}
	if *audiences != "" && *mode != authKubernetes {
		return fmt.Errorf("-token-audiences is for -auth=%s: the token file's tokens have none", authKubernetes)
	}
	// Check the flags and read the token file before dialling anything.
	var static api.StaticTokens
	switch *mode {
	case authTokens:
		if *tokens == "" {
			return fmt.Errorf("-token-file is required with -auth=%s: the API checks bearer tokens against it", authTokens)
		}
		f, err := os.Open(*tokens)
		if err != nil {
			return err
		}
		static, err = api.ParseTokens(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *tokens, err)
		}
	case authKubernetes:
		if *tokens != "" {
			return fmt.Errorf("-token-file is not used with -auth=%s, which asks the cluster about every token: leave it out", authKubernetes)
		}
	default:
		return fmt.Errorf("-auth=%q: want %s or %s", *mode, authTokens, authKubernetes)
	}
	reg := temporalRegistry("api", &conn)
	cfg, tc, err := conn.dial()
	if err != nil {
		return err
	}
	defer tc.Close()
	cl, err := kubeclient.Live(cfg)
	if err != nil {
		return err
	}
	// Config: the change feed watches the cluster with informers of its own.
	o := api.Options{Client: cl, Temporal: tc, IDs: conn.installation(), Namespace: *namespace, Config: cfg, AllowedOrigins: splitList(*origins),
		FeedConnections: *feedConns, FeedConnectionsPerUser: *feedUserConns, Metrics: reg, TLS: serveTLS}
	o.Auth, o.Authorizer = apiAuth(*mode, static, cl, splitList(*audiences))
	s, err := api.Start(o, *listen)
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, *metricsAddr, reg); err != nil {
		_ = s.Stop()
		return err
	}
	if _, err := serveProfiles(ctx, *pprofAddr); err != nil {
		_ = s.Stop()
		return err
	}
	if *mode == authTokens {
		slog.Info("api serving", "url", s.URL+"/api/v1", "auth", *mode, "tokens", len(static))
	} else {
		slog.Info("api serving", "url", s.URL+"/api/v1", "auth", *mode)
	}
	<-ctx.Done()
	return s.Stop()
}

// apiAuth is the API's authenticator and authorizer for an -auth mode: the token file's
// tokens with what each line's options allow, or the cluster's reviews made with the command's live
// client (whose identity needs create on tokenreviews and subjectaccessreviews, as the
// ClusterRole system:auth-delegator grants).
func apiAuth(mode string, static api.StaticTokens, cl ctrlclient.Client, audiences []string) (api.Authenticator, api.Authorizer) {
	if mode == authKubernetes {
		return &api.KubeTokens{Client: cl, Audiences: audiences}, &api.KubeAccess{Client: cl}
	}
	return static, api.TokenScopes{}
}
