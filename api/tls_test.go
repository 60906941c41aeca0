package api

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/extender"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
)

// With a certificate the API serves HTTPS only: a caller that trusts the certificate's CA is
// served, and a plain HTTP request, which would carry its token in the clear, is not.
func TestServe_WithACertificateSpeaksHTTPSOnly(t *testing.T) {
	certs, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	conf, err := extender.ServerTLS(certs.CertFile, certs.KeyFile, "")
	require.NoError(t, err)
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	defer tc.Close()
	s, err := Start(Options{Client: fake.NewClientBuilder().WithScheme(kubeclient.Scheme()).Build(), Temporal: tc,
		Auth: StaticTokens{"t": {Name: "alice"}}, TLS: conf}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Stop()) }()
	require.True(t, strings.HasPrefix(s.URL, "https://"), s.URL)

	clientTLS, err := certs.ClientTLS()
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(s.URL + "/api/v1/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	plain, err := http.Get("http://" + strings.TrimPrefix(s.URL, "https://") + "/api/v1/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(plain.Body)
	_ = plain.Body.Close()
	require.Equal(t, http.StatusBadRequest, plain.StatusCode, "%s", body)
}
