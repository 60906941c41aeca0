package temporalcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"slotplane/internal/localplatform/localcluster"
)

const (
	// EnvTemporalBin names the folder holding temporal-server and temporal-sql-tool, as
	// `make temporal-tools` builds them; the Makefile exports it.
	EnvTemporalBin = "SLOTPLANE_TEMPORAL_BIN"

	// DefaultPostgresBin is where Debian's postgresql-15 package (`make postgresql`) puts
	// initdb, postgres and pg_isready.
	DefaultPostgresBin = "/usr/lib/postgresql/15/bin"

	serverBinary  = "temporal-server"
	sqlToolBinary = "temporal-sql-tool"
)

// FindTools locates the folder of temporal-server and temporal-sql-tool: EnvTemporalBin when
// set, else the newest complete build in the tool cache (after a pin changes, the build of the
// new pins). So a test run without the Makefile finds what `make temporal-tools` built.
func FindTools() (string, error) {
	if dir := os.Getenv(EnvTemporalBin); dir != "" {
		return dir, checkTools(dir)
	}
	cache, err := localcluster.ToolCache()
	if err != nil {
		return "", fmt.Errorf("temporal binaries unknown: %w; set %s", err, EnvTemporalBin)
	}
	dir := localcluster.NewestBuild(filepath.Join(cache, "temporal-v*"))
	if dir == "" {
		return "", fmt.Errorf("temporal binaries not found in %s: run `make temporal-tools` (or set %s)", cache, EnvTemporalBin)
	}
	return dir, checkTools(dir)
}

// checkTools tells whether dir holds both binaries.
func checkTools(dir string) error {
	for _, name := range []string{serverBinary, sqlToolBinary} {
		if !isFile(filepath.Join(dir, name)) {
			return fmt.Errorf("%s not found in %s: run `make temporal-tools` (or set %s)", name, dir, EnvTemporalBin)
		}
	}
	return nil
}

// checkPostgres tells whether dir holds the PostgreSQL programs the cluster runs.
func checkPostgres(dir string) error {
	for _, name := range []string{"initdb", "postgres", "pg_isready"} {
		if !isFile(filepath.Join(dir, name)) {
			return fmt.Errorf("%s not found in %s: run `make postgresql`", name, dir)
		}
	}
	return nil
}

// isFile: path names an existing regular file.
func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
