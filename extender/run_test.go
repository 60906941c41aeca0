package extender

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"

	"slotplane/internal/localplatform/localcluster"
)

// startTestServer serves h as Serve does (httpServer, serveOn) on a loopback port.
func startTestServer(t *testing.T, h http.Handler, o options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpServer(h, o, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- serveOn(srv, l) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-done)
	})
	return l.Addr().String()
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") })
}

// With TLS and a client CA: the scheduler's certificate gets through; plain HTTP, no
// certificate or one of another CA do not, and /healthz stays open for probes.
func TestServer_TLSLetsOnlyTheSchedulersCertificateIn(t *testing.T) {
	certs, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	strangers, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	conf, err := ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	require.NoError(t, err)
	addr := startTestServer(t, okHandler(), options{tls: conf, limits: DefaultLimits})

	scheduler, err := certs.ClientTLS()
	require.NoError(t, err)
	stranger, err := strangers.ClientTLS()
	require.NoError(t, err)
	noCert := scheduler.Clone()
	noCert.Certificates = nil
	strangerTrustingUs := stranger.Clone()
	strangerTrustingUs.RootCAs = scheduler.RootCAs

	post := func(scheme string, c *tls.Config, path string) (int, error) {
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Post(scheme+"://"+addr+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}
	cases := map[string]struct {
		scheme, path string
		client       *tls.Config
		wantCode     int
		wantErr      string
	}{
		"the scheduler":                       {"https", "/filter", scheduler, http.StatusOK, ""},
		"plain HTTP":                          {"http", "/filter", nil, http.StatusBadRequest, ""},
		"no client certificate":               {"https", "/preempt", noCert, http.StatusUnauthorized, ""},
		"a client certificate of another CA":  {"https", "/filter", strangerTrustingUs, 0, "tls: "},
		"a client that does not trust the CA": {"https", "/filter", stranger, 0, "certificate signed by unknown authority"},
		"a probe without certificate":         {"https", "/healthz", noCert, http.StatusOK, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, err := post(tc.scheme, tc.client, tc.path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantCode, code)
		})
	}
}

// A renewed certificate is served without a restart; a broken file leaves the last good one.
func TestServerTLS_ReloadsARenewedCertificate(t *testing.T) {
	dir := t.TempDir()
	first, err := localcluster.NewExtenderCerts(dir, "127.0.0.1")
	require.NoError(t, err)
	conf, err := ServerTLS(first.CertFile, first.KeyFile, "")
	require.NoError(t, err)
	serial := func() string {
		c, err := conf.GetCertificate(&tls.ClientHelloInfo{})
		require.NoError(t, err)
		return string(c.Certificate[0])
	}
	before := serial()
	second, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	later := time.Now().Add(time.Minute)
	for _, f := range [][2]string{{second.CertFile, first.CertFile}, {second.KeyFile, first.KeyFile}} {
		data, err := os.ReadFile(f[0])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f[1], data, 0o600))
		require.NoError(t, os.Chtimes(f[1], later, later))
	}
	renewed := serial()
	require.NotEqual(t, before, renewed, "the renewed certificate was not picked up")

	require.NoError(t, os.WriteFile(first.CertFile, []byte("not a certificate"), 0o600))
	require.NoError(t, os.Chtimes(first.CertFile, later.Add(time.Minute), later.Add(time.Minute)))
	require.Equal(t, renewed, serial(), "a broken file must leave the last good certificate")

	_, err = ServerTLS(first.CertFile, first.KeyFile, "")
	require.ErrorContains(t, err, "load the extender's certificate")
	_, err = ServerTLS(first.CertFile, "", "")
	require.ErrorContains(t, err, "both a certificate file and a key file")
}

// A client that sends its request a byte at a time (slow loris) is cut off once the header
// timeout has passed, in plain HTTP and in the TLS handshake alike.
func TestServer_SlowLorisIsCutOff(t *testing.T) {
	certs, err := localcluster.NewExtenderCerts(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	conf, err := ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	require.NoError(t, err)
	limits := DefaultLimits
	limits.ReadHeaderTimeout = 500 * time.Millisecond
	cases := map[string]struct {
		opts  options
		bytes string // dribbled one by one
	}{
		"headers over plain HTTP": {options{plain: true, limits: limits}, "POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)},
		// A TLS record header and the start of a ClientHello that never ends.
		"a TLS handshake": {options{tls: conf, limits: limits}, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + strings.Repeat("\x00", 200)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			addr := startTestServer(t, okHandler(), tc.opts)
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			start := time.Now()
			var writeErr error
			for i := 0; i < len(tc.bytes) && writeErr == nil; i++ {
				_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
				_, writeErr = conn.Write([]byte{tc.bytes[i]})
				time.Sleep(50 * time.Millisecond)
				if time.Since(start) > 5*time.Second {
					break
				}
				// The server closes the connection; a read tells at once.
				_ = conn.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := conn.Read(make([]byte, 512)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					writeErr = err
				}
			}
			took := time.Since(start)
			require.Error(t, writeErr, "the slow client was never cut off")
			t.Logf("cut off after %s (header timeout %s): %v", took.Round(time.Millisecond), limits.ReadHeaderTimeout, writeErr)
			require.Less(t, took, limits.ReadHeaderTimeout+2*time.Second)
		})
	}
}

// BenchmarkServer_Filter is one /filter call (BenchmarkHandler_Filter's) through the HTTP
// server on loopback, on a kept-alive connection as kube-scheduler's: plain HTTP against
// mutual TLS, to show what TLS costs a call once the handshake is behind it.
func BenchmarkServer_Filter(b *testing.B) {
	certs, err := localcluster.NewExtenderCerts(b.TempDir(), "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	serverTLS, err := ServerTLS(certs.CertFile, certs.KeyFile, certs.ClientCAFile)
	if err != nil {
		b.Fatal(err)
	}
	clientTLS, err := certs.ClientTLS()
	if err != nil {
		b.Fatal(err)
	}
	m, names := benchBed()
	h, _ := newBenchHandler(b, m, &recordingClient{})
	body := filterBody(b, heldPod(), names)
	for _, tc := range []struct {
		name   string
		opts   options
		scheme string
	}{
		{"plain", options{plain: true, limits: DefaultLimits}, "http"},
		{"mutual TLS", options{tls: serverTLS, limits: DefaultLimits}, "https"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := httpServer(h, tc.opts, slog.New(slog.DiscardHandler))
			go func() { _ = serveOn(srv, l) }()
			defer srv.Close()
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
			defer hc.CloseIdleConnections()
			url := tc.scheme + "://" + l.Addr().String() + "/filter"
			post := func() {
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d", resp.StatusCode)
				}
			}
			post() // the handshake, once, as the scheduler's first call
			for b.Loop() {
				post()
			}
		})
	}
}

// The cache keeps of a pod what the extender reads, and of a BatchJob its assigned slots;
// a second pass changes nothing.
func TestCacheViews_KeepWhatTheExtenderReads(t *testing.T) {
	full := heldPod()
	now := metav1.Now()
	full.DeletionTimestamp = &now
	full.Spec.NodeName = "node-0999"
	full.Status.Phase = corev1.PodRunning
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	want := &corev1.Pod{
		ObjectMeta: *full.ObjectMeta.DeepCopy(),
		Spec:       corev1.PodSpec{NodeName: "node-0999"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	want.ManagedFields, want.OwnerReferences = nil, nil
	for range 2 {
		got, err := slotPodView(full)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}

	job := bigBatchJob()
	job.Annotations[v1alpha1.AssignedSlotsAnnotation] = "1,2"
	meta := batchJobMeta()
	job.ObjectMeta.DeepCopyInto(&meta.ObjectMeta)
	wantMeta := batchJobMeta()
	wantMeta.ObjectMeta = metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID, ResourceVersion: job.ResourceVersion,
		Labels:      map[string]string{v1alpha1.GrantedTestBedLabel: "bed"},
		Annotations: map[string]string{v1alpha1.AssignedSlotsAnnotation: "1,2", v1alpha1.CreationRequestAnnotation: job.Annotations[v1alpha1.CreationRequestAnnotation]}}
	for range 2 {
		got, err := grantView(meta)
		require.NoError(t, err)
		require.Equal(t, wantMeta, got)
	}
}
