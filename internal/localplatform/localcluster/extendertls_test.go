package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"
)

// kube-scheduler calls an https extender with the cluster's CA and client certificate; a
// plain one only when asked for.
func TestSchedulerConfig_CallsTheExtenderOverMutualTLS(t *testing.T) {
	certs, err := NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	out, err := SchedulerConfig("/kubeconfig", "https://127.0.0.1:1234/", certs)
	require.NoError(t, err)
	var conf schedulerv1.KubeSchedulerConfiguration
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &conf))
	require.Len(t, conf.Extenders, 1)
	e := conf.Extenders[0]
	require.True(t, e.EnableHTTPS)
	require.Equal(t, "https://127.0.0.1:1234/", e.URLPrefix)
	require.Equal(t, &schedulerv1.ExtenderTLSConfig{CAData: certs.CA, CertData: certs.ClientCert, KeyData: certs.ClientKey}, e.TLSConfig,
		"the file names of deploy/ must not stay beside the data")

	// The serving certificate names the host and chains to the CA; the client one is for
	// clients only.
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certs.CA))
	block, _ := pem.Decode(certs.ClientCert)
	client, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	_, err = client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.Error(t, err, "the scheduler's certificate must not serve")

	out, err = SchedulerConfig("/kubeconfig", "http://127.0.0.1:1234/", nil)
	require.NoError(t, err)
	require.NotContains(t, out, "tlsConfig")
	require.NotContains(t, out, "enableHTTPS: true")
}

func TestExtenderHost_PlainHTTPOnlyWhenAsked(t *testing.T) {
	cases := map[string]struct {
		opts    Options
		want    string
		wantErr string
	}{
		"no extender":          {Options{}, "", ""},
		"https":                {Options{ExtenderURL: "https://127.0.0.1:8888/"}, "127.0.0.1", ""},
		"a host name":          {Options{ExtenderURL: "https://localhost:8888/"}, "localhost", ""},
		"http, asked for":      {Options{ExtenderURL: "http://127.0.0.1:8888/", ExtenderPlainHTTP: true}, "", ""},
		"http, not asked for":  {Options{ExtenderURL: "http://127.0.0.1:8888/"}, "", "plain HTTP needs ExtenderPlainHTTP"},
		"another scheme":       {Options{ExtenderURL: "ftp://127.0.0.1/"}, "", "no http(s) URL"},
		"https without a host": {Options{ExtenderURL: "https:///x"}, "", "no http(s) URL"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := extenderHost(tc.opts)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := NewExtenderCerts(t.TempDir())
	require.True(t, err != nil && strings.Contains(err.Error(), "no host"))
}
