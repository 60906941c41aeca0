package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Without the Makefile's environment, the tools are found in the cache: the newest complete
// kube build (a build cut short has no .built) and the newest kwok. The environment wins
// when set; an empty cache is a clear error.
func TestFindTools_FromTheCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvKubeBin, "")
	t.Setenv(EnvKwok, "")
	t.Setenv(EnvCache, cache)
	if _, _, err := FindTools(); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("an empty cache: %v", err)
	}
	old := time.Now().Add(-time.Hour)
	mk := func(path string, at time.Time) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		for p := path; p != cache; p = filepath.Dir(p) {
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk(filepath.Join(cache, "kube-v1.36.2-aaaa", ".built"), old)
	mk(filepath.Join(cache, "kube-v1.36.3-bbbb", ".built"), time.Now())
	if err := os.MkdirAll(filepath.Join(cache, "kube-v1.36.4-cccc"), 0o755); err != nil { // unfinished
		t.Fatal(err)
	}
	mk(filepath.Join(cache, "bin", "kwok-v0.6.0"), old)
	mk(filepath.Join(cache, "bin", "kwok-v0.7.0"), time.Now())
	kube, kwok, err := FindTools()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(kube) != "kube-v1.36.3-bbbb" || filepath.Base(kwok) != "kwok-v0.7.0" {
		t.Fatalf("found %s and %s", kube, kwok)
	}
	t.Setenv(EnvKubeBin, "/opt/kube")
	t.Setenv(EnvKwok, "/opt/kwok")
	if kube, kwok, err := FindTools(); err != nil || kube != "/opt/kube" || kwok != "/opt/kwok" {
		t.Fatalf("the environment: %s %s %v", kube, kwok, err)
	}
}
