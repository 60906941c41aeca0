package main

import (
	"context"
	"errors"
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
	certFile := fs.String("tls-cert-file", envOr("SLOTPLANE_EXTENDER_TLS_CERT", ""), "PEM certificate to serve HTTPS with (reloaded when the file changes)")
	keyFile := fs.String("tls-key-file", envOr("SLOTPLANE_EXTENDER_TLS_KEY", ""), "PEM private key of -tls-cert-file")
	clientCA := fs.String("client-ca-file", envOr("SLOTPLANE_EXTENDER_CLIENT_CA", ""), "PEM CA bundle: when set, every call but /healthz needs a client certificate it signed (kube-scheduler's tlsConfig certData/keyData)")
	plain := fs.Bool("plain-http", false, "serve plain HTTP without TLS: anyone who reaches the port can then reserve slots and label pods")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opt extender.Option
	switch {
	case *plain && (*certFile != "" || *keyFile != "" || *clientCA != ""):
		return errors.New("-plain-http excludes -tls-cert-file, -tls-key-file and -client-ca-file")
	case *plain:
		slog.Warn("the extender serves plain HTTP: whoever reaches it can reserve slots and label pods")
		opt = extender.WithPlainHTTP()
	case *certFile == "" || *keyFile == "":
		return errors.New("the extender serves HTTPS: give -tls-cert-file and -tls-key-file (or -plain-http to serve without TLS)")
	default:
		conf, err := extender.ServerTLS(*certFile, *keyFile, *clientCA)
		if err != nil {
			return err
		}
		opt = extender.WithTLS(conf)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes config: %w", err)
	}
	srv, err := extender.Start(ctx, cfg, *addr, slog.Default(), opt)
	if err != nil {
		return err
	}
	slog.Info("extender serving", "url", srv.URL, "client_certificates", *clientCA != "")
	<-ctx.Done()
	return srv.Stop()
}
