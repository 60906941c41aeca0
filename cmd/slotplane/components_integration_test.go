//go:build integration

package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/internal/freeport"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/temporaltest"
)

// The separate components, as a real cluster runs them (worker, bridge, extender as their
// own processes), keep a test bed's ghosts in place and stop on SIGTERM.
func TestComponents_RunAsSeparateProcesses(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 3})
	srv, _ := temporaltest.Start(t)
	ports, err := freeport.Get(6)
	require.NoError(t, err)
	conn := []string{"-kubeconfig", c.Kubeconfig, "-temporal-address", srv.FrontendAddress}
	certs, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	// The worker talks to the real Temporal server uncompressed (the default), the bridge
	// with gzip: the bed's ghosts come only if both reach it.
	procs := map[string][]string{
		"worker": append(append([]string{}, conn...), "-metrics-listen", "127.0.0.1:"+strconv.Itoa(ports[3]), "-health-listen", "127.0.0.1:"+strconv.Itoa(ports[5])),
		"bridge": append(append([]string{}, conn...), "-metrics-listen", "127.0.0.1:"+strconv.Itoa(ports[0]), "-health-listen", "127.0.0.1:"+strconv.Itoa(ports[1]),
			"-temporal-compression", "gzip"),
		"extender": {"-kubeconfig", c.Kubeconfig, "-listen", "127.0.0.1:" + strconv.Itoa(ports[2]),
			"-tls-cert-file", certs.CertFile, "-tls-key-file", certs.KeyFile, "-client-ca-file", certs.ClientCAFile, "-metrics-listen", "127.0.0.1:" + strconv.Itoa(ports[4])},
	}
	var cmds []*exec.Cmd
	for name, args := range procs {
		cmd := exec.Command(binary, append([]string{name}, args...)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		require.NoError(t, cmd.Start(), name)
		cmds = append(cmds, cmd)
	}
	defer func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
		}
	}()

	cs := c.Client()
	_, err = cs.CoreV1().RESTClient().Post().AbsPath("/apis/slotplane.io/v1alpha1/namespaces/default/testbeds").
		Body([]byte(`{"apiVersion":"slotplane.io/v1alpha1","kind":"TestBed","metadata":{"name":"bed"},
		"spec":{"nodeLabel":"slotplane.io/node","slotsPerNode":2,"resourcesPerSlot":{"cpu":"1","memory":"1Gi"}}}`)).
		DoRaw(context.Background())
	require.NoError(t, err)
	waitGhosts(t, cs, 6)

	// The worker and the bridge are live, and ready: they reach Temporal and the API server.
	for _, probe := range []string{
		"http://127.0.0.1:" + strconv.Itoa(ports[5]) + "/healthz", "http://127.0.0.1:" + strconv.Itoa(ports[5]) + "/readyz",
		"http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/healthz", "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/readyz",
	} {
		require.Eventually(t, func() bool {
			resp, err := http.Get(probe)
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 100*time.Millisecond, probe)
	}

	for _, cmd := range cmds {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "%v should exit 0 on SIGTERM", cmd.Args[:2])
		case <-time.After(30 * time.Second):
			t.Fatalf("%v did not stop on SIGTERM", cmd.Args[:2])
		}
	}
}
