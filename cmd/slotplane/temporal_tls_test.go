package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// issue makes a certificate for name signed by ca (self-signed when ca is nil) and writes
// it and its key as PEM files into dir.
func issue(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IsCA: isCA, BasicConstraintsValid: true,
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return cert, key, certFile, keyFile
}

func parseConnections(t *testing.T, args ...string) connections {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c := connectionFlags(fs)
	require.NoError(t, fs.Parse(args))
	return c
}

// The TLS flags make a configuration that completes a mutual-TLS handshake with a server
// whose certificate the CA signed and which demands a client certificate from that CA.
func TestTemporalTLS_MutualHandshake(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := issue(t, dir, "temporal-ca", nil, nil, true)
	_, _, srvCert, srvKey := issue(t, dir, "temporal.example", ca, caKey, false)
	_, _, cliCert, cliKey := issue(t, dir, "slotplane-worker", ca, caKey, false)

	require.Nil(t, must(parseConnections(t).temporalTLS()), "no TLS flag: a plain connection")

	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			_ = conn.Close()
		}
	}()

	handshake := func(c connections) error {
		conf, err := c.temporalTLS()
		require.NoError(t, err)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), conf)
		if err != nil {
			return err
		}
		defer conn.Close()
		// A refused client certificate shows on the first read.
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		if err != nil && err.Error() == "EOF" {
			return nil
		}
		return err
	}
	require.NoError(t, handshake(parseConnections(t, "-temporal-tls-ca", caFile, "-temporal-tls-cert", cliCert, "-temporal-tls-key", cliKey,
		"-temporal-tls-server-name", "temporal.example")))
	require.Error(t, handshake(parseConnections(t, "-temporal-tls-ca", caFile, "-temporal-tls-server-name", "temporal.example")), "no client certificate")
	require.Error(t, handshake(parseConnections(t, "-temporal-tls-ca", caFile, "-temporal-tls-cert", cliCert, "-temporal-tls-key", cliKey,
		"-temporal-tls-server-name", "other.example")), "the wrong server name")
}

func TestTemporalTLS_BadFlags(t *testing.T) {
	dir := t.TempDir()
	_, _, cert, key := issue(t, dir, "x", nil, nil, false)
	_, err := parseConnections(t, "-temporal-tls-cert", cert).temporalTLS()
	require.ErrorContains(t, err, "go together")
	_, err = parseConnections(t, "-temporal-tls-ca", filepath.Join(dir, "missing.pem")).temporalTLS()
	require.ErrorContains(t, err, "-temporal-tls-ca")
	_, err = parseConnections(t, "-temporal-tls-ca", key).temporalTLS()
	require.ErrorContains(t, err, "holds no PEM certificate")
	_, err = parseConnections(t, "-temporal-tls-cert", key, "-temporal-tls-key", key).temporalTLS()
	require.ErrorContains(t, err, "temporal client certificate")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
