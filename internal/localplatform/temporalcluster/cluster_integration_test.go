//go:build integration

package temporalcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/config"
)

// A workflow runs to completion through a worker over mutual TLS, and so does one after the
// Temporal server restarts, one after PostgreSQL restarts and one after the server is killed
// and started again; a workflow started before all three finishes after them. The server
// keeps its four history shards on PostgreSQL, and Stop leaves no process of the cluster
// behind.
func TestCluster_WorkflowsRunAfterTemporalAndPostgresRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startCluster(t, ctx, Options{MutualTLS: true, RegisterNamespace: true})

	cl, err := client.DialContext(ctx, c.ClientOptions())
	require.NoError(t, err)
	defer cl.Close()
	info, err := cl.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
	require.NoError(t, err)
	require.EqualValues(t, historyShards, info.GetHistoryShardCount())
	require.Equal(t, postgresPlugin, info.GetPersistenceStore())
	require.Equal(t, postgresPlugin, info.GetVisibilityStore())

	w := worker.New(cl, "greetings", worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	w.RegisterWorkflow(waitWorkflow)
	w.RegisterActivity(greetActivity)
	require.NoError(t, w.Start())
	defer w.Stop()

	waiting, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "waiting", TaskQueue: "greetings"}, waitWorkflow, greeting{})
	require.NoError(t, err)
	runGreeting(t, ctx, cl, "first")
	require.NoError(t, c.RestartTemporal(ctx))
	runGreeting(t, ctx, cl, "after-temporal-restart")
	require.NoError(t, c.RestartPostgres(ctx))
	runGreeting(t, ctx, cl, "after-postgres-restart")
	require.NoError(t, c.KillTemporal())
	require.NoError(t, c.StartTemporal(ctx))
	runGreeting(t, ctx, cl, "after-temporal-kill")
	require.NoError(t, cl.SignalWorkflow(ctx, "waiting", "", "proceed", "survived"))
	var out greeted
	require.NoError(t, waiting.Get(ctx, &out))
	require.Equal(t, "survived", out.Text)

	w.Stop()
	cl.Close()
	require.NoError(t, c.Stop())
	require.Empty(t, processesIn(t, c.Dir), "processes left after Stop")
}

// The frontend serves TLS only: a client in plain text is refused, and under mutual TLS so is
// a client without a certificate, while one with the cluster's client certificate is served;
// on gRPC and on the HTTP API.
func TestCluster_RefusesClientsWithoutTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t, ctx, Options{MutualTLS: true})
	dial := func(opts client.Options) error {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cl, err := client.DialContext(attempt, opts)
		if err == nil {
			cl.Close()
		}
		return err
	}

	plain := c.ClientOptions()
	plain.ConnectionOptions.TLS = nil
	require.Error(t, dial(plain), "a client in plain text was served")

	noCert := c.ClientOptions()
	noCert.ConnectionOptions.TLS.Certificates = nil
	require.Error(t, dial(noCert), "a client without a certificate was served under mutual TLS")

	require.NoError(t, dial(c.ClientOptions()))

	// The HTTP API alike.
	get := func(scheme string, conf *tls.Config) (int, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf}}
		resp, err := hc.Get(scheme + "://" + c.FrontendHTTPAddress + "/api/v1/namespaces/temporal-system")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get("http", nil); err == nil {
		require.NotEqual(t, http.StatusOK, code, "the HTTP API answered plain HTTP")
	}
	code, err := get("https", c.ClientTLS())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
}

// A server that finds its port taken by another process fails with errPortTaken, on which
// Start tries other free ports (freeport.Retry), rather than waiting for it to answer.
func TestCluster_APortTakenIsToldApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t, ctx, Options{})

	require.NoError(t, c.KillTemporal())
	taken, err := net.Listen("tcp", c.FrontendAddress)
	require.NoError(t, err)
	require.ErrorIs(t, c.StartTemporal(ctx), errPortTaken)
	require.NoError(t, taken.Close())

	c.mu.Lock()
	defer c.mu.Unlock()
	require.NoError(t, c.pg.stop())
	taken, err = net.Listen("tcp", hostPort(c.PostgresPort))
	require.NoError(t, err)
	defer taken.Close()
	require.ErrorIs(t, c.pg.start(ctx), errPortTaken)
}

// The server reads every key of the configuration the cluster writes: it ignores a key it
// does not know, so a misspelt one would go unnoticed until its setting was missed.
func TestWriteServerConfig_TheServerReadsEveryKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.yaml")
	certs := &pki{caFile: "/c/ca.crt", serverCert: "/c/frontend.crt", serverKey: "/c/frontend.key", clientCert: "/c/client.crt", clientKey: "/c/client.key"}
	ports := map[string]servicePorts{
		"frontend": {grpc: 17001, membership: 17002, http: 17009}, "history": {grpc: 17003, membership: 17004},
		"matching": {grpc: 17005, membership: 17006}, "worker": {grpc: 17007, membership: 17008},
	}
	require.NoError(t, writeServerConfig(path, 16000, ports, certs, true, "http://127.0.0.1:16100/jwks.json"))
	conf, err := config.Load(config.WithConfigFile(path))
	require.NoError(t, err)

	require.EqualValues(t, historyShards, conf.Persistence.NumHistoryShards)
	for name, store := range map[string]string{conf.Persistence.DefaultStore: mainDatabase, conf.Persistence.VisibilityStore: visibilityDatabase} {
		sql := conf.Persistence.DataStores[name].SQL
		require.NotNil(t, sql, name)
		require.Equal(t, postgresPlugin, sql.PluginName)
		require.Equal(t, store, sql.DatabaseName)
		require.Equal(t, "127.0.0.1:16000", sql.ConnectAddr)
		require.Equal(t, postgresUser, sql.User)
		require.NotZero(t, sql.MaxConns)
		require.Equal(t, time.Hour, sql.MaxConnLifetime)
	}
	for name, p := range ports {
		rpc := conf.Services[name].RPC
		require.Equal(t, p.grpc, rpc.GRPCPort, name)
		require.Equal(t, p.membership, rpc.MembershipPort, name)
		require.Equal(t, loopback, rpc.BindOnIP, name)
		require.Equal(t, p.http, rpc.HTTPPort, name)
	}
	tlsConf := conf.Global.TLS
	require.Equal(t, certs.serverCert, tlsConf.Frontend.Server.CertFile)
	require.Equal(t, certs.serverKey, tlsConf.Frontend.Server.KeyFile)
	require.True(t, tlsConf.Frontend.Server.RequireClientAuth)
	require.Equal(t, []string{certs.caFile}, tlsConf.Frontend.Server.ClientCAFiles)
	require.Equal(t, certs.clientCert, tlsConf.SystemWorker.CertFile)
	auth := conf.Global.Authorization
	require.Equal(t, []string{"http://127.0.0.1:16100/jwks.json"}, auth.JWTKeyProvider.KeySourceURIs)
	require.Equal(t, time.Minute, auth.JWTKeyProvider.RefreshInterval)
	require.Equal(t, "permissions", auth.PermissionsClaimName)
	require.Equal(t, "default", auth.Authorizer)
	require.Equal(t, "default", auth.ClaimMapper)
	require.Equal(t, certs.clientKey, tlsConf.SystemWorker.KeyFile)
	require.Equal(t, frontendServerName, tlsConf.SystemWorker.Client.ServerName)
	require.Equal(t, []string{certs.caFile}, tlsConf.SystemWorker.Client.RootCAFiles)
	require.Equal(t, 30*time.Second, conf.Global.Membership.MaxJoinDuration)
	require.Equal(t, loopback, conf.Global.Membership.BroadcastAddress)
	require.Equal(t, clusterName, conf.ClusterMetadata.CurrentClusterName)
	require.Equal(t, "127.0.0.1:17001", conf.ClusterMetadata.ClusterInformation[clusterName].RPCAddress)
	require.Equal(t, "127.0.0.1:17009", conf.ClusterMetadata.ClusterInformation[clusterName].HTTPAddress)
	require.Equal(t, "disabled", conf.Archival.History.State)
	require.Equal(t, "disabled", conf.NamespaceDefaults.Archival.Visibility.State)
	require.True(t, conf.Log.Stdout)
	require.Nil(t, conf.DynamicConfigClient, "the server runs on its default dynamic configuration")
}

type greeting struct{ Name string }

type greeted struct{ Text string }

func greetWorkflow(ctx workflow.Context, in greeting) (greeted, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	var out greeted
	err := workflow.ExecuteActivity(ctx, greetActivity, in).Get(ctx, &out)
	return out, err
}

// waitWorkflow waits for the signal "proceed" and returns its text.
func waitWorkflow(ctx workflow.Context, _ greeting) (greeted, error) {
	var out greeted
	workflow.GetSignalChannel(ctx, "proceed").Receive(ctx, &out.Text)
	return out, nil
}

func greetActivity(_ context.Context, in greeting) (greeted, error) {
	return greeted{Text: "hello " + in.Name}, nil
}

// runGreeting runs greetWorkflow for name to completion through the worker.
func runGreeting(t *testing.T, ctx context.Context, cl client.Client, name string) {
	t.Helper()
	run, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-" + name, TaskQueue: "greetings"}, greetWorkflow, greeting{Name: name})
	require.NoError(t, err, name)
	var out greeted
	require.NoError(t, run.Get(ctx, &out), name)
	require.Equal(t, "hello "+name, out.Text)
}

// startCluster starts a cluster for t and stops it when t ends. If t failed, the folder is
// kept and named, with the last lines of the logs.
func startCluster(t *testing.T, ctx context.Context, opts Options) *Cluster {
	t.Helper()
	opts.KeepDir = true
	started := time.Now()
	c, err := Start(ctx, opts)
	require.NoError(t, err)
	t.Logf("cluster started in %s", time.Since(started).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(c.Dir)
			return
		}
		t.Logf("cluster folder kept: %s", c.Dir)
		for _, name := range []string{"postgres.log", "temporal.log"} {
			t.Logf("--- last lines of %s:\n%s", name, tail(filepath.Join(c.Dir, name), 20))
		}
	})
	return c
}

// processesIn lists the processes whose command line or working folder is within dir: the
// postmaster names its data folder, and its backends (whose command lines PostgreSQL
// rewrites) work in it.
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var found []string
	for _, proc := range procs {
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil {
			continue // ended meanwhile
		}
		cwd, _ := os.Readlink(filepath.Join(proc, "cwd"))
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(args, dir) || cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			found = append(found, fmt.Sprintf("%s: %s (in %s)", filepath.Base(proc), args, cwd))
		}
	}
	return found
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
