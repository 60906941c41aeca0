package temporalcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"slotplane/internal/freeport"
)

// errPortTaken is a server's failure to bind a port another process took after it was found
// free: another try on other ports may succeed (freeport.Retry).
var errPortTaken = errors.New("port taken")

// postgres is the cluster's PostgreSQL server: a data folder of its own made by initdb, with
// trust authentication on loopback and its unix socket beside the data.
type postgres struct {
	bin  string // the folder of initdb, postgres and pg_isready
	dir  string // holds data/ and the unix socket
	port int
	// cred is the user PostgreSQL runs as when this process is root (which PostgreSQL
	// refuses to run as); nil runs it as this process's user.
	cred *syscall.Credential
	proc *process
	log  string
}

// newPostgres prepares the folder of a PostgreSQL server below clusterDir. As root it hands
// the folder to the postgres system user, and lets that user pass through clusterDir.
func newPostgres(bin, clusterDir string) (*postgres, error) {
	pg := &postgres{bin: bin, dir: filepath.Join(clusterDir, "postgres"), log: filepath.Join(clusterDir, "postgres.log")}
	if err := os.MkdirAll(pg.dir, 0o700); err != nil {
		return nil, fmt.Errorf("postgres folder: %w", err)
	}
	if os.Geteuid() != 0 {
		return pg, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and no postgres user runs it instead (run `make postgresql`): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's id %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's group %q: %w", u.Gid, err)
	}
	pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chown(pg.dir, int(uid), int(gid)); err != nil {
		return nil, fmt.Errorf("hand %s to the postgres user: %w", pg.dir, err)
	}
	info, err := os.Stat(clusterDir)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(clusterDir, info.Mode().Perm()|0o001); err != nil {
		return nil, fmt.Errorf("let the postgres user reach %s: %w", clusterDir, err)
	}
	return pg, nil
}

func (pg *postgres) dataDir() string { return filepath.Join(pg.dir, "data") }

// initialize makes the data folder, unless an earlier start on the same folder made it.
// fsync is off for the whole life of the data (initdb --no-sync, and the server's settings):
// a test's data need not survive a power cut.
func (pg *postgres) initialize(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(pg.dataDir(), "PG_VERSION")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(pg.bin, "initdb"),
		"--pgdata", pg.dataDir(), "--username", postgresUser, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync", "--no-instructions")
	cmd.Dir = pg.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: pg.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb %s: %w: %s", pg.dataDir(), err, out)
	}
	return nil
}

// startOnFreePort starts the server on a free port, trying other ports while the one found
// free is taken before the server binds it.
func (pg *postgres) startOnFreePort(ctx context.Context) error {
	return freeport.Retry(func() error {
		ports, err := freeport.Get(1)
		if err != nil {
			return err
		}
		pg.port = ports[0]
		return pg.start(ctx)
	}, func(err error) bool { return errors.Is(err, errPortTaken) })
}

// start starts the server on pg.port and returns once it accepts connections.
func (pg *postgres) start(ctx context.Context) error {
	proc, err := startProcess("postgres", pg.log, pg.dir, pg.cred, filepath.Join(pg.bin, "postgres"),
		"-D", pg.dataDir(),
		"-p", strconv.Itoa(pg.port),
		"-c", "listen_addresses="+loopback,
		"-c", "unix_socket_directories="+pg.dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		// Each of the server's four services keeps its own pools to both stores (at most
		// 20 and 10 connections: 120 in all), and the schema tool and tests need a few.
		"-c", "max_connections=200")
	if err != nil {
		return err
	}
	pg.proc = proc
	if err := pg.waitAccepting(ctx); err != nil {
		_ = proc.kill()
		if proc.portTaken() {
			return fmt.Errorf("%w: postgres on %d: %v", errPortTaken, pg.port, err)
		}
		return err
	}
	return nil
}

// waitAccepting returns once the server accepts connections on its TCP port (pg_isready).
func (pg *postgres) waitAccepting(ctx context.Context) error {
	for {
		if ended, err := pg.proc.exited(); ended {
			return err
		}
		check := exec.CommandContext(ctx, filepath.Join(pg.bin, "pg_isready"), "--quiet",
			"--host", loopback, "--port", strconv.Itoa(pg.port), "--username", postgresUser, "--dbname", "postgres", "--timeout", "2")
		if check.Run() == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres on port %d not accepting connections (log %s): %w", pg.port, pg.log, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop shuts the server down with SIGINT, PostgreSQL's fast shutdown: open sessions are ended
// and the data is consistent on disk.
func (pg *postgres) stop() error {
	if pg.proc == nil {
		return nil
	}
	return pg.proc.stop(syscall.SIGINT, 30*time.Second)
}

// setUpTemporalDatabases makes Temporal's two databases and brings their schemas to the
// versions the server expects, with temporal-sql-tool and the schemas built into it. Every
// step is a no-op on databases an earlier start set up: a cluster started again on its folder
// keeps its workflows.
func (pg *postgres) setUpTemporalDatabases(ctx context.Context, sqlTool string) error {
	for _, db := range []struct{ name, schema string }{
		{mainDatabase, "postgresql/v12/temporal"},
		{visibilityDatabase, "postgresql/v12/visibility"},
	} {
		if out, err := pg.sqlTool(ctx, sqlTool, db.name, "create-database", "--defaultdb", "postgres"); err != nil && !strings.Contains(out, "already exists") {
			return fmt.Errorf("create database %s: %w", db.name, err)
		}
		if _, err := pg.sqlTool(ctx, sqlTool, db.name, "setup-schema", "--version", "0.0"); err != nil {
			return fmt.Errorf("set up schema versioning in %s: %w", db.name, err)
		}
		if _, err := pg.sqlTool(ctx, sqlTool, db.name, "update-schema", "--schema-name", db.schema); err != nil {
			return fmt.Errorf("update schema of %s: %w", db.name, err)
		}
	}
	return nil
}

// sqlTool runs temporal-sql-tool on database with args, and returns its output; a failure's
// error holds the output.
func (pg *postgres) sqlTool(ctx context.Context, sqlTool, database string, args ...string) (string, error) {
	global := []string{
		"--endpoint", loopback, "--port", strconv.Itoa(pg.port), "--user", postgresUser,
		"--plugin", postgresPlugin, "--db", database,
	}
	out, err := exec.CommandContext(ctx, sqlTool, append(global, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("temporal-sql-tool %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
