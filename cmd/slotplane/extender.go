package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"k8s.io/client-go/rest"

	"slotplane/extender"
	"slotplane/internal/health"
	"slotplane/internal/kubeclient"
	"slotplane/internal/lease"
)

// extenderFlags are slotplane extender's flags.
type extenderFlags struct {
	addr, kubeconfig, certFile, keyFile, clientCA, metrics, pprof string
	plain                                                         bool
	rates                                                         kubeclient.Rates
	logs                                                          logFlags
	// lease: -leader-elect and the Lease it campaigns for; health: -health-listen.
	lease  leaseFlags
	health string
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
	f.lease = addLeaseFlags(fs, "slotplane-extender", "run as one of several replicas: only the one that holds the Lease listens on -listen and decides; the others stand by and take over when it goes")
	fs.StringVar(&f.health, "health-listen", envOr("SLOTPLANE_HEALTH_LISTEN", ""),
		"address of /healthz (the process runs) and /readyz (it decides: serves -listen, and holds the Lease under -leader-elect), plain HTTP; empty: none")
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
	if _, err := serveProfiles(ctx, f.pprof); err != nil {
		return err
	}
	// serving is true while this process serves decisions on -listen.
	var serving atomic.Bool
	if !*f.lease.elect {
		if err := serveExtenderHealth(ctx, f.health, &serving, nil); err != nil {
			return err
		}
		return serveExtender(ctx, cfg, f, &serving, opt)
	}
	elector, err := f.lease.elector(cfg)
	if err != nil {
		return err
	}
	if err := serveExtenderHealth(ctx, f.health, &serving, elector.Held); err != nil {
		return err
	}
	slog.Info("extender standing by", "lease", *f.lease.namespace+"/"+*f.lease.name, "identity", elector.Identity())
	err = elector.Run(ctx, func(ctx context.Context) error {
		return serveExtender(ctx, cfg, f, &serving, opt, extender.WithLease(elector.Held))
	})
	if errors.Is(err, lease.ErrLost) {
		return errors.New("the extender lost its lease: it exits, to stand by again once restarted")
	}
	return err
}

// serveExtender serves the extender's decisions on -listen until ctx ends; serving says so
// from the moment the informers have synced.
func serveExtender(ctx context.Context, cfg *rest.Config, f extenderFlags, serving *atomic.Bool, opts ...extender.Option) error {
	srv, err := extender.Start(ctx, cfg, f.addr, slog.Default(), opts...)
	if err != nil && ctx.Err() != nil {
		return nil // stopped (SIGTERM, the lease lost) while its informers synced: a clean stop
	}
	if err != nil {
		return err
	}
	if err := serveMetrics(ctx, f.metrics, srv.Metrics); err != nil {
		_ = srv.Stop()
		return err
	}
	serving.Store(true)
	slog.Info("extender serving", "url", srv.URL, "client_certificates", f.clientCA != "")
	<-ctx.Done()
	serving.Store(false)
	return srv.Stop()
}

// serveExtenderHealth serves the extender's probes on addr unless it is empty: liveness
// while the process runs, readiness while it serves decisions (and, when held is given,
// holds its lease). A standby is live and not ready, so a Service that selects ready pods
// sends the scheduler's calls to the replica that decides.
func serveExtenderHealth(ctx context.Context, addr string, serving *atomic.Bool, held func() bool) error {
	if addr == "" {
		return nil
	}
	deciding := health.Check{Name: "decisions", Run: func(context.Context) error {
		switch {
		case held != nil && !held():
			return errors.New("a standby: another replica holds the lease")
		case !serving.Load():
			return errors.New("not serving yet: its informers are syncing")
		}
		return nil
	}}
	at, err := health.Serve(ctx, addr, func() error { return nil }, deciding)
	if err != nil {
		return err
	}
	slog.Info("health serving", "url", "http://"+at+"/healthz")
	return nil
}

// leaseFlags are -leader-elect and the Lease it campaigns for.
type leaseFlags struct {
	elect           *bool
	namespace, name *string
}

func addLeaseFlags(fs *flag.FlagSet, name, usage string) leaseFlags {
	var f leaseFlags
	f.elect = fs.Bool("leader-elect", envOr("SLOTPLANE_LEADER_ELECT", "false") == "true", usage+" (env SLOTPLANE_LEADER_ELECT=true)")
	f.namespace = fs.String("lease-namespace", envOr("SLOTPLANE_LEASE_NAMESPACE", podNamespace()), "namespace of the Lease (default: the pod's own)")
	f.name = fs.String("lease-name", envOr("SLOTPLANE_LEASE_NAME", name), "name of the Lease")
	return f
}

// elector is the elector of the Lease the flags name.
func (f leaseFlags) elector(cfg *rest.Config) (*lease.Elector, error) {
	if *f.namespace == "" {
		return nil, errors.New("-leader-elect needs -lease-namespace outside a cluster")
	}
	return lease.New(cfg, lease.Options{Namespace: *f.namespace, Name: *f.name})
}

// podNamespace is the namespace of the pod this process runs in ("" outside a cluster).
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
