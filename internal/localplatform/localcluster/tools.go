package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The tools `make build` names at link time (-X), so bin/slotplane finds exactly the builds
// of its own pins. Empty in a binary built by plain `go build`.
var (
	builtKubeBin string
	builtKwok    string
)

// EnvCache names the folder the Makefile builds its tools into (its CACHE); empty means
// ~/.cache/slotplane, the Makefile's default.
const EnvCache = "SLOTPLANE_CACHE"

// FindTools locates the control plane's binaries: the environment (EnvKubeBin, EnvKwok: the
// Makefile exports them), then the builds the binary was linked against, then the newest
// complete builds in the tool cache. So `bin/slotplane dev`, run by hand, finds what
// `make tools` built, and a binary of `go build` finds it too.
func FindTools() (kubeBin, kwok string, err error) {
	kubeBin, kwok = os.Getenv(EnvKubeBin), os.Getenv(EnvKwok)
	if kubeBin == "" && builtKubeBin != "" && usable(filepath.Join(builtKubeBin, ".built")) {
		kubeBin = builtKubeBin
	}
	if kwok == "" && usable(builtKwok) {
		kwok = builtKwok
	}
	if kubeBin != "" && kwok != "" {
		return kubeBin, kwok, nil
	}
	cache, err := ToolCache()
	if err != nil {
		return "", "", fmt.Errorf("control plane binaries unknown: %w; set %s and %s", err, EnvKubeBin, EnvKwok)
	}
	if kubeBin == "" {
		kubeBin = NewestBuild(filepath.Join(cache, "kube-v*"))
	}
	if kwok == "" {
		kwok = newest(filepath.Join(cache, "bin", "kwok-v*"), usable)
	}
	if kubeBin == "" || kwok == "" {
		return "", "", fmt.Errorf("control plane binaries not found in %s: run `make tools` (or set %s and %s)", cache, EnvKubeBin, EnvKwok)
	}
	return kubeBin, kwok, nil
}

// ToolCache is the folder the Makefile builds its tools into: EnvCache, or
// ~/.cache/slotplane.
func ToolCache() (string, error) {
	if cache := os.Getenv(EnvCache); cache != "" {
		return cache, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder for the tool cache (%w)", err)
	}
	return filepath.Join(home, ".cache", "slotplane"), nil
}

// NewestBuild is the most recently changed folder matching pattern that holds a complete
// build (its .built marker), "" when none: after a pin changes, the build of the new pins.
func NewestBuild(pattern string) string {
	return newest(pattern, func(dir string) bool { return usable(filepath.Join(dir, ".built")) })
}

// usable: path names an existing file.
func usable(path string) bool {
	if path == "" {
		return false
	}
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// newest is the most recently changed match of pattern that ok accepts ("" when none):
// after a pin changes, the build of the new pins.
func newest(pattern string, ok func(string) bool) string {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return ""
	}
	var best string
	var bestTime time.Time
	for _, m := range matches {
		info, err := os.Stat(m)
		if err != nil || !ok(m) {
			continue
		}
		if best == "" || info.ModTime().After(bestTime) {
			best, bestTime = m, info.ModTime()
		}
	}
	return best
}
