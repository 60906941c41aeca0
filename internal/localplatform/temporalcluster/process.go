package temporalcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"slotplane/internal/freeport"
)

// process is one server of the cluster (PostgreSQL or Temporal), appending its output to a
// log file that outlives restarts, so the log of a failure shows what came before it.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFrom int64         // the log's size when this run started: where its own lines begin
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, valid after done
}

// startProcess starts bin in its own process group, as cred's user when cred is set (nil runs
// it as this process's user), in folder dir.
func startProcess(name, logPath, dir string, cred *syscall.Credential, bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	info, err := logFile.Stat()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A group of its own: PostgreSQL forks a process per connection, and Stop kills the
		// whole group, so none is left behind. A Ctrl-C in the terminal reaches only the
		// parent, which stops the servers in order.
		Setpgid: true,
		// If the parent dies without stopping it, the kernel kills it: nothing outlives the
		// test. (PostgreSQL's backends notice their postmaster's death and end too.)
		Pdeathsig:  syscall.SIGKILL,
		Credential: cred,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFrom: info.Size(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("%s exited: %v (log %s)", p.name, p.err, p.logPath)
	default:
		return false, nil
	}
}

// stop sends sig to the process alone, waits up to grace for it to end, and then kills
// whatever is left of its process group (the process too, if grace ran out). The signal goes
// to the leader only because PostgreSQL's backends take SIGINT and SIGTERM as requests to
// cancel a query or end a session, and the postmaster ends them in order by itself.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	var err error
	if ended, _ := p.exited(); !ended {
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(grace):
			err = fmt.Errorf("%s did not stop within %s of %s and was killed", p.name, grace, sig)
		}
	}
	return errors.Join(err, p.kill())
}

// kill ends the process and every other member of its group at once (SIGKILL) and waits for
// the process to be reaped.
func (p *process) kill() error {
	// ESRCH once the group is empty: nothing left to kill.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s survived SIGKILL", p.name)
	}
}

// output is what the process has logged since it started.
func (p *process) output() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(p.logFrom, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// portTaken tells whether the process's log says one of its listeners found its port taken.
// PostgreSQL capitalizes the system's message ("Address already in use").
func (p *process) portTaken() bool {
	return freeport.InUse(strings.ToLower(p.output()))
}
