package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/internal/kubeclient"
)

// writeKubeconfig writes a kubeconfig naming a server that is never called.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	return file
}

// The worker, bridge and API (connectionFlags) and the extender take the same -kube-qps and
// -kube-burst, with the same defaults, into their clients' configuration.
func TestKubeRates_SameFlagsEverywhere(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	cases := map[string]struct {
		args []string
		want kubeclient.Rates
	}{
		"defaults": {want: kubeclient.DefaultRates()},
		"set":      {args: []string{"-kube-qps=300", "-kube-burst=600"}, want: kubeclient.Rates{QPS: 300, Burst: 600}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-kubeconfig", kubeconfig}, tc.args...)
			cfg, err := parseConnections(t, args...).kubeConfig()
			require.NoError(t, err)
			require.Equal(t, float32(tc.want.QPS), cfg.QPS)
			require.Equal(t, tc.want.Burst, cfg.Burst)
			require.True(t, strings.HasPrefix(cfg.UserAgent, "slotplane-test/"), "the command (here the flag set \"test\") names its requests: %s", cfg.UserAgent)

			f, err := parseExtenderFlags(append([]string{"-plain-http"}, args...))
			require.NoError(t, err)
			require.Equal(t, tc.want, f.rates)
		})
	}
}

// A rate that is not positive is refused, naming the flag, before anything is dialled or
// started.
func TestKubeRates_NonPositiveRefused(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	cases := map[string]struct {
		args []string
		want string
	}{
		"zero qps":       {args: []string{"-kube-qps=0"}, want: "-kube-qps must be a positive, finite number of requests per second, got 0"},
		"negative qps":   {args: []string{"-kube-qps=-10"}, want: "-kube-qps must be a positive, finite number of requests per second, got -10"},
		"zero burst":     {args: []string{"-kube-burst=0"}, want: "-kube-burst must be a positive number of requests, got 0"},
		"negative burst": {args: []string{"-kube-burst=-1"}, want: "-kube-burst must be a positive number of requests, got -1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-kubeconfig", kubeconfig}, tc.args...)
			// dial checks the rates before it reaches for Temporal: no server runs here.
			_, _, err := parseConnections(t, args...).dial()
			require.ErrorContains(t, err, tc.want)

			_, err = parseExtenderFlags(append([]string{"-plain-http"}, args...))
			require.ErrorContains(t, err, tc.want)
			err = runExtender(t.Context(), append([]string{"-plain-http"}, args...))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The extender's serving flags still fit together as before the rates joined them.
func TestExtenderFlags_ServingMode(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"plain":                {args: []string{"-plain-http"}},
		"tls":                  {args: []string{"-tls-cert-file=c", "-tls-key-file=k"}},
		"tls with a client CA": {args: []string{"-tls-cert-file=c", "-tls-key-file=k", "-client-ca-file=ca"}},
		"neither":              {wantErr: "give -tls-cert-file and -tls-key-file"},
		"a key without a cert": {args: []string{"-tls-key-file=k"}, wantErr: "give -tls-cert-file and -tls-key-file"},
		"plain with a cert":    {args: []string{"-plain-http", "-tls-cert-file=c"}, wantErr: "-plain-http excludes"},
		"plain with a CA":      {args: []string{"-plain-http", "-client-ca-file=ca"}, wantErr: "-plain-http excludes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("SLOTPLANE_EXTENDER_TLS_CERT", "")
			t.Setenv("SLOTPLANE_EXTENDER_TLS_KEY", "")
			t.Setenv("SLOTPLANE_EXTENDER_CLIENT_CA", "")
			_, err := parseExtenderFlags(tc.args)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
