package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"

	"slotplane/extender"
	"slotplane/internal/kubeclient"
)

// extenderFlags are slotplane extender's flags.
type extenderFlags struct {
	addr, kubeconfig, certFile, keyFile, clientCA, metrics, pprof string
	plain                                                         bool
	rates                                                         kubeclient.Rates
	logs                                                          logFlags
}

// parseExtenderFlags reads the flags (and their SLOTPLANE_* variables) and checks that they
// fit together, before anything is read or started.
func parseExtenderFlags(args []string) (extenderFlags, error) {
	var f extenderFlags
	fs := flag.NewFlagSet("extender", flag.ContinueOnError)
	fs.StringVar(&f.addr, "listen", envOr("SLOTPLANE_EXTENDER_LISTEN", ":8888"), "address to serve /filter, /preempt, /healthz and /metrics on")
	fs.StringVar(&f.kubeconfig, "kubeconfig", envOr("KUBECONFIG", ""), "kubeconfig file; empty uses the in-cluster service account")
	fs.StringVar(&f.certFile, "tls-cert-file", envOr("SLOTPLANE_EXTENDER_TLS_CERT", ""), "PEM certificate to serve HTTPS with (reloaded when the file changes)")
	fs.StringVar(&f.keyFile, "tls-key-file", envOr("SLOTPLANE_EXTENDER_TLS_KEY", ""), "PEM private key of -tls-cert-file")
	fs.StringVar(&f.clientCA, "client-ca-file", envOr("SLOTPLANE_EXTENDER_CLIENT_CA", ""), "PEM CA bundle: when set, every call but /healthz needs a client certificate it signed (kube-scheduler's tlsConfig certData/keyData)")
	fs.StringVar(&f.metrics, "metrics-listen", envOr("SLOTPLANE_METRICS_LISTEN", ":8080"), "address of a plain-HTTP /metrics endpoint for Prometheus, besides /metrics on -listen (which needs a client certificate under -client-ca-file); 0 turns it off")
	fs.BoolVar(&f.plain, "plain-http", false, "serve plain HTTP without TLS: anyone who reaches the port can then reserve slots and label pods")
	pprofAddr := pprofFlag(fs)
	rates := kubeclient.RateFlags(fs)
	f.logs = addLogFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	f.pprof = *pprofAddr
	f.rates = *rates
	switch {
	case f.plain && (f.certFile != "" || f.keyFile != "" || f.clientCA != ""):
		return f, errors.New("-plain-http excludes -tls-cert-file, -tls-key-file and -client-ca-file")
	case !f.plain && (f.certFile == "" || f.keyFile == ""):
		return f, errors.New("the extender serves HTTPS: give -tls-cert-file and -tls-key-file (or -plain-http to serve without TLS)")
	}
	return f, f.rates.Validate()
}

func runExtender(ctx context.Context, args []string) error {
	f, err := parseExtenderFlags(args)
	if err != nil {
		return err
	}
	if err := f.logs.apply(); err != nil {
		return err
	}
	var opt extender.Option
	if f.plain {
		slog.Warn("the extender serves plain HTTP: whoever reaches it can reserve slots and label pods")
		opt = extender.WithPlainHTTP()
	} else {
		conf, err := extender.ServerTLS(f.certFile, f.keyFile, f.clientCA)
		if err != nil {
			return err
		}
		opt = extender.WithTLS(conf)
	}
	cfg, err := kubeclient.Config(f.kubeconfig, "extender", f.rates)
	if err != nil {
		return err
	}
	srv, err := extender.Start(ctx, cfg, f.addr, slog.Default(), opt)
	if err != nil && ctx.Err() != nil {
		return nil // stopped (SIGTERM) while its informers synced: a clean stop
	}
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, f.metrics, srv.Metrics); err != nil {
		_ = srv.Stop()
		return err
	}
	if _, err := serveProfiles(ctx, f.pprof); err != nil {
		_ = srv.Stop()
		return err
	}
	slog.Info("extender serving", "url", srv.URL, "client_certificates", f.clientCA != "")
	<-ctx.Done()
	return srv.Stop()
}
