// Package temporalcluster runs Temporal for tests as production runs it: the upstream server
// as a process of its own, built from the pinned server module (tools/temporal, `make
// temporal-tools`), on PostgreSQL (`make postgresql`) with several history shards and the
// server's default dynamic configuration, its frontend reached over TLS. Where
// temporalserver embeds the server in the test's process on SQLite to start quickly, this
// cluster shows what only a deployment shows: a server or database restarted under running
// workflows, shards taken over after a restart, clients that must bring TLS.
//
// A cluster owns its folder, ports and processes, and never touches a server it did not
// start; Stop leaves no process behind.
package temporalcluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"slotplane/internal/freeport"
)

const (
	// DefaultNamespace is the namespace a cluster's clients use unless told otherwise:
	// Temporal's own default.
	DefaultNamespace = "default"
	// NamespaceRetention is how long a namespace registered by Start keeps closed workflows.
	NamespaceRetention = 24 * time.Hour

	// stopGrace is how long a server has to stop after its signal before it is killed.
	stopGrace = 30 * time.Second
)

// Options shape a cluster. The zero value is a cluster in a temporary folder whose frontend
// serves TLS without asking clients for certificates, and with no namespace registered.
type Options struct {
	// Dir keeps the data, configuration, certificates and logs (postgres.log,
	// temporal.log); empty makes a temporary folder that Stop removes unless KeepDir is
	// set. A cluster started again on the same Dir finds its workflows again. Run as root,
	// PostgreSQL runs as the postgres user, who must be able to reach Dir.
	Dir     string
	KeepDir bool
	// Namespace is the namespace of ClientOptions, and the one registered when
	// RegisterNamespace is set; empty means DefaultNamespace.
	Namespace string
	// RegisterNamespace registers Namespace (RegisterNamespace, with NamespaceRetention)
	// once the frontend answers.
	RegisterNamespace bool
	// MutualTLS makes the frontend require a client certificate signed by the cluster's CA
	// (Cluster.ClientCertFile), as a deployment that authenticates its clients does.
	MutualTLS bool
	// Authorization makes the frontend check a JWT on every call, with the server's default
	// claim mapper and authorizer, as a deployment behind an identity provider (or Temporal
	// Cloud's API keys) does. The cluster signs the tokens (Token) and serves their keys;
	// ClientOptions carry an admin's.
	// The server then runs without its worker service (system workflows such as the
	// scanners), which an authorizer refuses without the internal frontend.
	Authorization bool
	// TemporalBin is the folder of temporal-server and temporal-sql-tool; empty asks
	// FindTools.
	TemporalBin string
	// PostgresBin is the folder of initdb, postgres and pg_isready; empty means
	// DefaultPostgresBin.
	PostgresBin string
}

// Cluster is a running PostgreSQL and Temporal server. Its methods start and stop servers one
// at a time: Stop, called while a restart is under way (a test's cleanup after a timeout),
// waits for it and then stops everything, and nothing starts after Stop.
type Cluster struct {
	// FrontendAddress is host:port of the frontend's gRPC, served over TLS only.
	FrontendAddress string
	// FrontendHTTPAddress is host:port of the frontend's HTTP API (and Nexus endpoints),
	// served over TLS only, with the same certificates.
	FrontendHTTPAddress string
	// ServerName is the name the frontend's certificate is made for: a client verifies the
	// certificate against it (ClientTLS sets it).
	ServerName string
	// CAFile is the PEM file of the CA that signed the frontend's and the client's
	// certificates.
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate the frontend accepts, PEM.
	ClientCertFile string
	ClientKeyFile  string
	// Namespace is Options.Namespace, or DefaultNamespace.
	Namespace string
	// PostgresPort is the TCP port of PostgreSQL on 127.0.0.1.
	PostgresPort int
	// PostgresDSN reaches Temporal's main database ("temporal") as its superuser, without a
	// password; the visibility store's database is "temporal_visibility".
	PostgresDSN string
	// Dir holds the data, configuration, certificates and logs.
	Dir string

	opts       Options
	removeDir  bool
	tlsConfig  *tls.Config
	configFile string
	pg         *postgres
	issuer     *issuer // with Options.Authorization
	adminToken string

	mu      sync.Mutex // held while a server is started or stopped
	server  *process
	stopped bool // by Stop: no server starts again
}

// Start starts PostgreSQL and the Temporal server in their folder and returns once the
// frontend answers health checks over TLS and reaches its database (and the namespace is
// registered, if asked). On error, whatever started is stopped again and the folder is kept
// for its logs.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.removeDir = false // keep the logs that explain the failure
			_ = c.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, c.Dir)
		}
	}()
	certs, err := newPKI(filepath.Join(c.Dir, "tls"))
	if err != nil {
		return nil, err
	}
	if err := c.useCertificates(certs); err != nil {
		return nil, err
	}
	if opts.Authorization {
		if c.issuer, err = newIssuer(); err != nil {
			return nil, err
		}
		// A day outlives any test; a deployment's tokens expire and are replaced, which
		// slotplane's -temporal-api-key-file follows.
		if c.adminToken, err = c.issuer.token("temporalcluster", 24*time.Hour, systemAdmin); err != nil {
			return nil, err
		}
	}
	if c.pg, err = newPostgres(opts.PostgresBin, c.Dir); err != nil {
		return nil, err
	}
	if err := c.pg.initialize(ctx); err != nil {
		return nil, err
	}
	if err := c.pg.startOnFreePort(ctx); err != nil {
		return nil, err
	}
	c.PostgresPort = c.pg.port
	c.PostgresDSN = fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", postgresUser, hostPort(c.pg.port), mainDatabase)
	if err := c.pg.setUpTemporalDatabases(ctx, filepath.Join(opts.TemporalBin, sqlToolBinary)); err != nil {
		return nil, err
	}
	if err := c.startTemporalOnFreePorts(ctx, certs); err != nil {
		return nil, err
	}
	if opts.RegisterNamespace {
		if err := RegisterNamespace(ctx, c.ClientOptions(), NamespaceRetention); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// withDefaults fills in the options left unset, and checks that the binaries are there.
func (opts Options) withDefaults() (Options, error) {
	opts.Namespace = cmp.Or(opts.Namespace, DefaultNamespace)
	opts.PostgresBin = cmp.Or(opts.PostgresBin, DefaultPostgresBin)
	if err := checkPostgres(opts.PostgresBin); err != nil {
		return opts, err
	}
	if opts.TemporalBin == "" {
		bin, err := FindTools()
		if err != nil {
			return opts, err
		}
		opts.TemporalBin = bin
	}
	return opts, checkTools(opts.TemporalBin)
}

// newCluster makes a cluster of nothing yet but its folder: opts.Dir, or a temporary one
// removed on Stop unless opts.KeepDir.
func newCluster(opts Options) (*Cluster, error) {
	c := &Cluster{opts: opts, Dir: opts.Dir, Namespace: opts.Namespace}
	if c.Dir == "" {
		var err error
		if c.Dir, err = os.MkdirTemp("", "slotplane-temporalcluster-"); err != nil {
			return nil, fmt.Errorf("cluster folder: %w", err)
		}
		c.removeDir = !opts.KeepDir
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster folder: %w", err)
	}
	return c, nil
}

// useCertificates makes the client's TLS configuration from the certificates, once: every
// ClientTLS is a copy of it.
func (c *Cluster) useCertificates(p *pki) error {
	caPEM, err := os.ReadFile(p.caFile)
	if err != nil {
		return fmt.Errorf("read ca: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", p.caFile)
	}
	cert, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	c.ServerName = frontendServerName
	c.CAFile, c.ClientCertFile, c.ClientKeyFile = p.caFile, p.clientCert, p.clientKey
	c.tlsConfig = &tls.Config{
		RootCAs:      roots,
		ServerName:   frontendServerName,
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
	return nil
}

// startTemporalOnFreePorts writes the server's configuration for free ports and starts it,
// on other free ports while one found free is taken before the server binds it.
func (c *Cluster) startTemporalOnFreePorts(ctx context.Context, certs *pki) error {
	c.configFile = filepath.Join(c.Dir, "temporal.yaml")
	return freeport.Retry(func() error {
		free, err := freeport.Get(2*len(services) + 1)
		if err != nil {
			return err
		}
		ports := map[string]servicePorts{}
		for i, name := range services {
			ports[name] = servicePorts{grpc: free[2*i], membership: free[2*i+1]}
		}
		frontend := ports["frontend"]
		frontend.http = free[len(free)-1]
		ports["frontend"] = frontend
		c.FrontendAddress = hostPort(frontend.grpc)
		c.FrontendHTTPAddress = hostPort(frontend.http)
		jwks := ""
		if c.issuer != nil {
			jwks = c.issuer.url
		}
		if err := writeServerConfig(c.configFile, c.pg.port, ports, certs, c.opts.MutualTLS, jwks); err != nil {
			return err
		}
		return c.StartTemporal(ctx)
	}, func(err error) bool { return errors.Is(err, errPortTaken) })
}

// StartTemporal starts the Temporal server on the cluster's ports and configuration, and
// returns once it is ready (as Start waits). The server must not be running: it starts one
// stopped by KillTemporal.
func (c *Cluster) StartTemporal(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startTemporal(ctx)
}

// startTemporal is StartTemporal with c.mu held.
func (c *Cluster) startTemporal(ctx context.Context) error {
	if c.stopped {
		return errors.New("cluster stopped")
	}
	if c.server != nil {
		if ended, _ := c.server.exited(); !ended {
			return errors.New("temporal server is running")
		}
	}
	// --config-file is the server's current way to name one configuration file; --root,
	// --config and --env name a folder of files and are deprecated. --allow-no-auth says
	// that running without an authorizer is meant, which the server otherwise warns about.
	args := []string{"--config-file", c.configFile, "--allow-no-auth", "start"}
	if c.issuer != nil {
		// The worker service's system workflows call the frontend without a token; behind an
		// authorizer they need the internal frontend, which this cluster does not set up, and
		// the service exits when refused. Its workflows (scanners, batch operations) are not
		// what the tests of an authorizing frontend are about.
		for _, svc := range services {
			if svc != "worker" {
				args = append(args, "--service", svc)
			}
		}
	}
	proc, err := startProcess("temporal", filepath.Join(c.Dir, "temporal.log"), c.Dir, nil,
		filepath.Join(c.opts.TemporalBin, serverBinary), args...)
	if err != nil {
		return err
	}
	c.server = proc
	if err := c.waitTemporal(ctx); err != nil {
		_ = proc.kill()
		if proc.portTaken() {
			return fmt.Errorf("%w: temporal server: %v", errPortTaken, err)
		}
		return err
	}
	return nil
}

// waitTemporal returns once the frontend answers a health check over TLS and can read the
// server's own namespace from the database. The frontend accepts connections, and even
// reports itself serving, before it can serve: a health check alone proves little.
func (c *Cluster) waitTemporal(ctx context.Context) error {
	opts := c.ClientOptions()
	opts.Namespace = "temporal-system"
	cl, err := client.NewLazyClient(opts)
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	defer cl.Close()
	var last error
	for {
		if ended, err := c.server.exited(); ended {
			return err
		}
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = cl.CheckHealth(attempt, &client.CheckHealthRequest{})
		if last == nil {
			_, last = cl.WorkflowService().DescribeNamespace(attempt, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
		}
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal server at %s not ready: %w", c.FrontendAddress, errors.Join(ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KillTemporal kills the Temporal server (SIGKILL), as a crash would, and returns once it has
// ended. StartTemporal starts it again.
func (c *Cluster) KillTemporal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server == nil {
		return nil
	}
	return c.server.kill()
}

// RestartTemporal stops the Temporal server as a deployment's rollout does (SIGTERM, and
// SIGKILL if it has not ended within 30 s), starts it again on the same ports and
// configuration, and returns once it is ready.
func (c *Cluster) RestartTemporal(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopTemporal(); err != nil {
		return err
	}
	return c.startTemporal(ctx)
}

// stopTemporal stops the Temporal server with SIGTERM; c.mu is held.
func (c *Cluster) stopTemporal() error {
	if c.server == nil {
		return nil
	}
	if err := c.server.stop(syscall.SIGTERM, stopGrace); err != nil {
		return fmt.Errorf("stop temporal server: %w", err)
	}
	return nil
}

// RestartPostgres stops PostgreSQL with a fast shutdown (every session ended, the Temporal
// server's included), starts it again on the same port and data, and returns once it
// accepts connections. The Temporal server keeps running and must reconnect by itself.
func (c *Cluster) RestartPostgres(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("cluster stopped")
	}
	if err := c.pg.stop(); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	if err := c.pg.start(ctx); err != nil {
		return fmt.Errorf("start postgres again: %w", err)
	}
	return nil
}

// Stop stops the Temporal server, then PostgreSQL, kills whatever is left of either's
// process group, and removes the folder if Start made it (and KeepDir is not set).
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	err := c.stopTemporal()
	if c.issuer != nil {
		err = errors.Join(err, c.issuer.close())
	}
	if c.pg != nil {
		if perr := c.pg.stop(); perr != nil {
			err = errors.Join(err, fmt.Errorf("stop postgres: %w", perr))
		}
	}
	if c.removeDir {
		if rerr := os.RemoveAll(c.Dir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", c.Dir, rerr))
		}
		c.removeDir = false
	}
	return err
}

// ClientTLS is the TLS configuration a client of the frontend needs: the cluster's CA, the
// frontend's server name and the client certificate. Each call returns a copy to change at
// will.
func (c *Cluster) ClientTLS() *tls.Config { return c.tlsConfig.Clone() }

// ClientOptions are the Temporal SDK's options for a client of the cluster's namespace over
// TLS, logging through slog's default logger.
func (c *Cluster) ClientOptions() client.Options {
	o := client.Options{
		HostPort:          c.FrontendAddress,
		Namespace:         c.Namespace,
		ConnectionOptions: client.ConnectionOptions{TLS: c.ClientTLS()},
		Logger:            sdklog.NewStructuredLogger(slog.Default()),
	}
	if c.adminToken != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(c.adminToken)
	}
	return o
}

// Token is a JWT the frontend of a cluster with Options.Authorization accepts, for subject
// with permissions ("namespace:role", role one of read, write, worker, admin), valid for
// ttl (less than 0: expired already).
func (c *Cluster) Token(subject string, ttl time.Duration, permissions ...string) (string, error) {
	if c.issuer == nil {
		return "", errors.New("the cluster was started without Options.Authorization")
	}
	return c.issuer.token(subject, ttl, permissions...)
}

// RegisterNamespace registers opts.Namespace with the frontend opts reaches, keeping closed
// workflows for retention. A namespace that exists already is left as it is.
func RegisterNamespace(ctx context.Context, opts client.Options, retention time.Duration) error {
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return fmt.Errorf("temporal namespace client: %w", err)
	}
	defer nc.Close()
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        opts.Namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	if _, exists := errors.AsType[*serviceerror.NamespaceAlreadyExists](err); err != nil && !exists {
		return fmt.Errorf("register namespace %s: %w", opts.Namespace, err)
	}
	return nil
}
