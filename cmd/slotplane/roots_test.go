package main

import (
	"crypto/x509"
	"os"
	"os/exec"
	"testing"
)

// In the image there is no CA bundle: the binary's own roots stand in for the system's, so
// -temporal-tls-ca can be left out for a Temporal frontend with a public certificate. The
// check runs in a child process that sees no system roots at all.
func TestRoots_TheBinaryCarriesItsOwnWhereTheSystemHasNone(t *testing.T) {
	if os.Getenv("SLOTPLANE_ROOTS_CHILD") == "1" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			t.Fatalf("system pool: %v", err)
		}
		if pool.Equal(x509.NewCertPool()) {
			t.Fatal("no roots without a system CA bundle")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRoots_TheBinaryCarriesItsOwnWhereTheSystemHasNone$")
	cmd.Env = append(os.Environ(), "SLOTPLANE_ROOTS_CHILD=1", "SSL_CERT_FILE=/nonexistent", "SSL_CERT_DIR=/nonexistent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
