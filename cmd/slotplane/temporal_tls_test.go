package main

import (
	"context"
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

// A client certificate rotated on disk is the one the next connection presents; a rotation
// caught half written (a key that does not match) keeps the last good pair.
func TestTemporalTLS_ClientCertificateReloads(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := issue(t, dir, "temporal-ca", nil, nil, true)
	_, _, srvCert, srvKey := issue(t, dir, "temporal.example", ca, caKey, false)
	_, _, cliCert, cliKey := issue(t, dir, "worker-1", ca, caKey, false)
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	require.NoError(t, err)
	defer l.Close()
	presented := make(chan string, 1)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			tc := conn.(*tls.Conn)
			if tc.Handshake() == nil {
				presented <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			_ = conn.Close()
		}
	}()
	conf, err := parseConnections(t, "-temporal-tls-ca", caFile, "-temporal-tls-cert", cliCert, "-temporal-tls-key", cliKey,
		"-temporal-tls-server-name", "temporal.example").temporalTLS()
	require.NoError(t, err)
	connect := func() string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), conf)
		require.NoError(t, err)
		defer conn.Close()
		select {
		case cn := <-presented:
			return cn
		case <-time.After(5 * time.Second):
			t.Fatal("the server saw no certificate")
			return ""
		}
	}
	require.Equal(t, "worker-1", connect())

	// The new pair replaces the files, as a Secret's rotation does.
	_, _, newCert, newKey := issue(t, t.TempDir(), "worker-2", ca, caKey, false)
	replace := func(from, to string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to+".tmp", b, 0o600))
		require.NoError(t, os.Rename(to+".tmp", to))
	}
	replace(newCert, cliCert)
	require.Equal(t, "worker-1", connect(), "a certificate without its key yet: the last good pair")
	replace(newKey, cliKey)
	require.Equal(t, "worker-2", connect(), "the rotated pair")
}

// The API key is read from its file at every use and again after the file changes; an empty
// or missing file is refused at the start.
func TestTemporalAPIKey_ReadAgainWhenTheFileChanges(t *testing.T) {
	file := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(file, []byte("key-one\n"), 0o600))
	c := parseConnections(t, "-temporal-api-key-file", file)
	conf, err := c.temporalTLS()
	require.NoError(t, err)
	require.NotNil(t, conf, "an API key travels over TLS only")
	key, err := apiKey(file)
	require.NoError(t, err)
	got, err := key(context.Background())
	require.NoError(t, err)
	require.Equal(t, "key-one", got)
	require.NoError(t, os.WriteFile(file, []byte("key-two-longer"), 0o600))
	got, err = key(context.Background())
	require.NoError(t, err)
	require.Equal(t, "key-two-longer", got)
	require.NoError(t, os.Remove(file))
	got, err = key(context.Background())
	require.NoError(t, err)
	require.Equal(t, "key-two-longer", got, "a file gone for a moment keeps the last key")

	_, err = parseConnections(t, "-temporal-api-key-file", file).credentials()
	require.ErrorContains(t, err, "-temporal-api-key-file")
	require.NoError(t, os.WriteFile(file, []byte(" \n"), 0o600))
	_, err = parseConnections(t, "-temporal-api-key-file", file).credentials()
	require.ErrorContains(t, err, "is empty")
}
