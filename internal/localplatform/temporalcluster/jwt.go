package temporalcluster

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"
)

// issuer mints the JWTs an authorizing frontend accepts (Options.Authorization), as an
// identity provider or Temporal Cloud's API keys would: RS256, signed with its key, whose
// public half it serves as a JWKS the frontend reads.
type issuer struct {
	key  *rsa.PrivateKey
	kid  string
	url  string // the JWKS
	http *http.Server
}

// systemAdmin is the permission the default claim mapper reads as an admin of the whole
// server (its system namespace): the cluster's own checks and namespace registration.
const systemAdmin = "temporal-system:admin"

func newIssuer() (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("jwt signing key: %w", err)
	}
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return nil, fmt.Errorf("jwks listener: %w", err)
	}
	i := &issuer{key: key, kid: "slotplane-test-1", url: "http://" + l.Addr().String() + "/jwks.json"}
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": i.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		_ = l.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	})
	i.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = i.http.Serve(l) }()
	return i, nil
}

// token is a JWT for subject with permissions ("namespace:role", role one of read, write,
// worker, admin), valid from a minute ago until ttl from now.
func (i *issuer) token(subject string, ttl time.Duration, permissions ...string) (string, error) {
	now := time.Now()
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": i.kid})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{
		"sub": subject, "permissions": permissions,
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix(),
	})
	if err != nil {
		return "", err
	}
	signed := b64(header) + "." + b64(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	return signed + "." + b64(sig), nil
}

func (i *issuer) close() error {
	if err := i.http.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
