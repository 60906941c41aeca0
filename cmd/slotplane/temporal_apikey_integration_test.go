//go:build integration

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	"slotplane/internal/localplatform/temporalcluster"
)

// slotplane's API key reaches a Temporal frontend that authorizes every call by its JWT (the
// server's default claim mapper and authorizer, keys read from a JWKS), as Temporal Cloud
// or a self-hosted server behind an identity provider does. The key for the namespace is
// served; none, one for another namespace and an expired one are refused; a key rotated in
// the file is sent from the next call on, without a restart.
func TestTemporalAPIKey_AFrontendThatChecksJWTsServesTheKeyInTheFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := temporalcluster.Start(ctx, temporalcluster.Options{Authorization: true, RegisterNamespace: true, Namespace: "team-x"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })

	keyFile := filepath.Join(t.TempDir(), "api-key")
	// rotate writes a new key as a Secret's volume does, a new file in the old one's place.
	// The key file is told changed by its modification time and size; two keys of one size
	// written within one tick of the file system's clock (4 ms here) would look the same,
	// which no real rotation does, so a rotation waits for the clock to move on.
	var written time.Time
	rotate := func(ttl time.Duration, permissions ...string) {
		t.Helper()
		token, err := c.Token("slotplane", ttl, permissions...)
		require.NoError(t, err)
		for {
			require.NoError(t, os.WriteFile(keyFile+".new", []byte(token+"\n"), 0o600))
			fi, err := os.Stat(keyFile + ".new")
			require.NoError(t, err)
			if !fi.ModTime().Equal(written) {
				written = fi.ModTime()
				break
			}
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, os.Rename(keyFile+".new", keyFile))
	}
	dial := func(args ...string) client.Client {
		t.Helper()
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		f := addTemporalFlags(fs)
		require.NoError(t, fs.Parse(append([]string{"-temporal-address", c.FrontendAddress, "-temporal-namespace", "team-x",
			"-temporal-tls-ca", c.CAFile, "-temporal-tls-server-name", c.ServerName}, args...)))
		opts, err := f.options()
		require.NoError(t, err)
		cl, err := client.NewLazyClient(opts)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	// A workflow start needs the namespace's write permission: it is the worker's and the
	// bridge's first call. Each try starts a workflow of its own, so that a start the server
	// took and the client did not hear of (a slow machine) cannot make the next one fail.
	var mu sync.Mutex // Eventually asks from goroutines of its own
	tries, last := 0, error(nil)
	start := func(cl client.Client, id string) error {
		mu.Lock()
		tries++
		n := tries
		mu.Unlock()
		_, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", id, n), TaskQueue: "nobody-polls"}, "NoSuchWorkflow")
		mu.Lock()
		last = err
		mu.Unlock()
		return err
	}
	refused := func(err error) bool {
		_, denied := errors.AsType[*serviceerror.PermissionDenied](err)
		return denied || serviceerror.ToStatus(err).Code() == codes.Unauthenticated
	}

	err = start(dial(), "without-a-key")
	require.True(t, refused(err), "a call without a key is refused: %v", err)

	rotate(time.Hour, "team-x:write")
	cl := dial("-temporal-api-key-file", keyFile)
	require.NoError(t, start(cl, "with-the-key"))
	_, err = cl.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "team-x"})
	require.NoError(t, err)

	rotate(time.Hour, "team-y:admin")
	eventually := func(ok func() bool, what string) {
		t.Helper()
		if !assert.Eventually(t, ok, 30*time.Second, 100*time.Millisecond) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s; the last answer: %v", what, last)
		}
	}
	eventually(func() bool { return refused(start(cl, "another-namespace-key")) }, "a key for another namespace is refused once it is in the file")
	rotate(-time.Minute, "team-x:write")
	eventually(func() bool { return refused(start(cl, "an-expired-key")) }, "an expired key is refused")
	rotate(time.Hour, "team-x:write")
	eventually(func() bool { return start(cl, "a-rotated-key") == nil }, "the rotated key is sent without a restart")
}
