//go:build integration

package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/api"
	"slotplane/internal/health"
	"slotplane/internal/kubeclient"
	"slotplane/internal/localplatform/localcluster"
	"slotplane/internal/localplatform/temporaltest"
)

// The API is ready while it reaches Temporal and the API server, and says which it lost
// when it does not; its liveness does not depend on either.
func TestAPI_ReadyWhileItReachesTemporalAndTheAPIServer(t *testing.T) {
	t.Parallel()
	cluster := localcluster.New(t, localcluster.Options{})
	srv, tc := temporaltest.Start(t)
	kube, err := kubeclient.Live(cluster.Config)
	require.NoError(t, err)
	h, err := api.New(api.Options{Client: kube, Temporal: tc, Config: cluster.Config, Auth: api.StaticTokens{}})
	require.NoError(t, err)
	s := httptest.NewServer(h)
	defer s.Close()
	probe := func(path string) (int, health.Report) {
		resp, err := http.Get(s.URL + "/api/v1/" + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		var r health.Report
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		return resp.StatusCode, r
	}
	code, r := probe("readyz")
	require.Equal(t, http.StatusOK, code, "%+v", r)

	srv.Stop()
	code, r = probe("readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, r.Failed, "temporal")
	require.NotContains(t, r.Failed, "kube-apiserver")
	code, _ = probe("healthz")
	require.Equal(t, http.StatusOK, code, "liveness stays: a restart would not bring Temporal back")

	require.NoError(t, cluster.Close())
	code, r = probe("readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, r.Failed, "kube-apiserver")
}
