package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ExtenderCerts are the TLS credentials of the local platform's extender, made in Go for
// every start (nothing outlives the processes that use them): a CA of their own, the
// extender's serving certificate, signed by it, and the client certificate kube-scheduler
// presents. kube-scheduler gets the CA and its client pair in its extender tlsConfig; the
// extender gets its pair and the CA as its client CA, so each side checks the other.
type ExtenderCerts struct {
	// CA is the PEM certificate of the CA that signed both pairs.
	CA []byte
	// CertFile and KeyFile are the extender's serving pair (`slotplane extender
	// -tls-cert-file -tls-key-file`); ClientCAFile holds CA (-client-ca-file).
	CertFile, KeyFile, ClientCAFile string
	// ClientCert and ClientKey (PEM) are kube-scheduler's client pair.
	ClientCert, ClientKey []byte
}

// NewExtenderCerts makes the credentials for an extender reached at hosts (IP addresses or
// DNS names) and writes the extender's files into dir, readable by their owner only.
func NewExtenderCerts(dir string, hosts ...string) (*ExtenderCerts, error) {
	if len(hosts) == 0 {
		return nil, errors.New("extender certificate: no host to make it for")
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "slotplane-extender-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, ca, err := sign(caTmpl, nil, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("extender CA: %w", err)
	}

	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "slotplane-extender"},
		NotBefore:   caTmpl.NotBefore,
		NotAfter:    caTmpl.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			serving.IPAddresses = append(serving.IPAddresses, ip)
		} else {
			serving.DNSNames = append(serving.DNSNames, h)
		}
	}
	servingPEM, servingKeyPEM, err := leaf(serving, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("extender serving certificate: %w", err)
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-scheduler"},
		NotBefore:   caTmpl.NotBefore,
		NotAfter:    caTmpl.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	clientPEM, clientKeyPEM, err := leaf(client, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("kube-scheduler's client certificate: %w", err)
	}

	e := &ExtenderCerts{
		CA:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertFile:     filepath.Join(dir, "extender.crt"),
		KeyFile:      filepath.Join(dir, "extender.key"),
		ClientCAFile: filepath.Join(dir, "extender-ca.crt"),
		ClientCert:   clientPEM,
		ClientKey:    clientKeyPEM,
	}
	for path, data := range map[string][]byte{e.CertFile: servingPEM, e.KeyFile: servingKeyPEM, e.ClientCAFile: e.CA} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// ClientTLS is a client configuration as kube-scheduler's: it trusts the CA and presents
// the scheduler's client certificate.
func (e *ExtenderCerts) ClientTLS() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(e.ClientCert, e.ClientKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.CA) {
		return nil, errors.New("extender CA does not parse")
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// sign makes a certificate from tmpl, self-signed when parent is nil.
func sign(tmpl, parent *x509.Certificate, pub any, signer *ecdsa.PrivateKey) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

// leaf makes a key and a certificate for it signed by ca, both PEM.
func leaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, _, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
