package extender

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ServerTLS is the extender's TLS configuration: the serving certificate and key from PEM
// files and, when clientCAFile is set, the CAs whose client certificates it accepts (then
// every path but /healthz needs one; see WithTLS).
//
// The key pair is read again when either file changes, so a certificate that a Secret
// volume or cert-manager renews takes effect without a restart; until a new pair loads
// cleanly, the last good one is served. The client CAs are read once.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	kp := &keyPair{certFile: certFile, keyFile: keyFile}
	if _, err := kp.load(); err != nil {
		return nil, err
	}
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.current() },
	}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA file %s holds no PEM certificate", clientCAFile)
		}
		c.ClientCAs = pool
		// Not RequireAndVerifyClientCert: kubelet probes of /healthz present no certificate.
		// A certificate of another CA still fails the handshake; none at all is refused by
		// the handler (clientVerified).
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, nil
}

// keyPair serves a certificate from files, reloading it when their modification times move.
type keyPair struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
}

func (k *keyPair) current() (*tls.Certificate, error) {
	mod, err := k.modTimes()
	k.mu.Lock()
	cert, same := k.cert, mod == k.modTime
	k.mu.Unlock()
	if err != nil || same {
		return cert, nil // a file being replaced right now: keep serving the last good pair
	}
	if fresh, err := k.load(); err == nil {
		return fresh, nil
	}
	return cert, nil
}

func (k *keyPair) load() (*tls.Certificate, error) {
	mod, err := k.modTimes()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		return nil, fmt.Errorf("load the extender's certificate %s and key %s: %w", k.certFile, k.keyFile, err)
	}
	k.mu.Lock()
	k.cert, k.modTime = &cert, mod
	k.mu.Unlock()
	return &cert, nil
}

func (k *keyPair) modTimes() ([2]time.Time, error) {
	var out [2]time.Time
	for i, path := range []string{k.certFile, k.keyFile} {
		fi, err := os.Stat(path)
		if err != nil {
			return out, fmt.Errorf("extender TLS: %w", err)
		}
		out[i] = fi.ModTime()
	}
	return out, nil
}
