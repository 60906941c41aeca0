package kubeclient

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestRateFlags_DefaultsAndValues(t *testing.T) {
	cases := map[string]struct {
		args []string
		want Rates
	}{
		"none: the defaults":  {want: Rates{QPS: DefaultQPS, Burst: DefaultBurst}},
		"both":                {args: []string{"-kube-qps=250", "-kube-burst", "500"}, want: Rates{QPS: 250, Burst: 500}},
		"a fraction of a qps": {args: []string{"-kube-qps=0.5"}, want: Rates{QPS: 0.5, Burst: DefaultBurst}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			r := RateFlags(fs)
			require.NoError(t, fs.Parse(tc.args))
			require.Equal(t, tc.want, *r)
			require.NoError(t, r.Validate())
			var cfg rest.Config
			require.NoError(t, r.Apply(&cfg))
			require.Equal(t, float32(tc.want.QPS), cfg.QPS)
			require.Equal(t, tc.want.Burst, cfg.Burst)
		})
	}
}

// client-go reads a QPS of 0 as its own default of 5 and a negative one as no limit: both
// are refused, as is a burst that would stall every request, each naming its flag.
func TestRates_RefusesWhatClientGoWouldNotApplyAsWritten(t *testing.T) {
	cases := map[string]struct {
		rates Rates
		want  []string
	}{
		"zero qps":         {rates: Rates{QPS: 0, Burst: 10}, want: []string{"-kube-qps must be a positive, finite number of requests per second, got 0"}},
		"negative qps":     {rates: Rates{QPS: -1, Burst: 10}, want: []string{"-kube-qps", "got -1"}},
		"NaN qps":          {rates: Rates{QPS: math.NaN(), Burst: 10}, want: []string{"-kube-qps", "got NaN"}},
		"infinite qps":     {rates: Rates{QPS: math.Inf(1), Burst: 10}, want: []string{"-kube-qps", "got +Inf"}},
		"beyond a float32": {rates: Rates{QPS: 1e39, Burst: 10}, want: []string{"-kube-qps", "got 1e+39"}},
		"zero burst":       {rates: Rates{QPS: 10, Burst: 0}, want: []string{"-kube-burst must be a positive number of requests, got 0"}},
		"negative burst":   {rates: Rates{QPS: 10, Burst: -3}, want: []string{"-kube-burst", "got -3"}},
		"both, both named": {rates: Rates{QPS: 0, Burst: 0}, want: []string{"-kube-qps", "-kube-burst"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.rates.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			cfg := rest.Config{QPS: 7, Burst: 8}
			require.Error(t, tc.rates.Apply(&cfg))
			require.Equal(t, rest.Config{QPS: 7, Burst: 8}, cfg, "a refused rate leaves the config alone")
		})
	}
}

func TestConfig_CarriesTheRatesAndChecksThemFirst(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	cfg, err := Config(kubeconfig, "worker", DefaultRates())
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	require.Equal(t, "slotplane-worker/devel ("+runtime.GOOS+"/"+runtime.GOARCH+")", cfg.UserAgent)
	require.Equal(t, float32(DefaultQPS), cfg.QPS)
	require.Equal(t, DefaultBurst, cfg.Burst)

	_, err = Config(filepath.Join(t.TempDir(), "missing"), "worker", Rates{QPS: -5, Burst: 1})
	require.ErrorContains(t, err, "-kube-qps", "the rates are checked before the file is read")
}

// ForComponent names the component in a copy; the config it was given keeps its own header,
// and an empty name changes nothing.
func TestForComponent_NamesTheComponentInACopy(t *testing.T) {
	base := &rest.Config{Host: "https://example", UserAgent: "kubectl/v1.36"}
	named := ForComponent(base, "extender")
	require.True(t, strings.HasPrefix(named.UserAgent, "slotplane-extender/"), named.UserAgent)
	require.Equal(t, "https://example", named.Host)
	require.Equal(t, "kubectl/v1.36", base.UserAgent)
	require.Equal(t, "kubectl/v1.36", ForComponent(base, "").UserAgent)
}
