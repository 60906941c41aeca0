package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one binary of the control plane, logging to <dir>/<name>.log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, valid after done
	// dir, bin and args start it again (again).
	dir, bin string
	args     []string
	// logFrom is where in its log this start's output begins.
	logFrom int64
}

func startProcess(dir, name, bin string, args ...string) (*process, error) {
	return runProcess(dir, name, bin, os.O_TRUNC, args...)
}

// again starts the process anew, with the same arguments, its output appended to its log.
func (p *process) again() (*process, error) {
	return runProcess(p.dir, p.name, p.bin, os.O_APPEND, p.args...)
}

// runProcess starts bin, its output in <dir>/<name>.log, opened with logFlag (truncated or
// appended to).
func runProcess(dir, name, bin string, logFlag int, args ...string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s binary: %w (run `make tools`, or set %s / %s)", name, err, EnvKubeBin, EnvKwok)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|logFlag, 0o644)
	if err != nil {
		return nil, err
	}
	var logFrom int64
	if info, err := logFile.Stat(); err == nil {
		logFrom = info.Size()
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches only the parent, which stops
		// the children in order (etcd last).
		Setpgid: true,
		// If the parent dies without stopping us, the kernel kills us: nothing outlives it.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{}), dir: dir, bin: bin, args: args, logFrom: logFrom}
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
		return true, fmt.Errorf("%s exited: %v (see %s)", p.name, p.err, p.log.Name())
	default:
		return false, nil
	}
}

// stop asks the process to end (SIGTERM), and kills it if it has not within grace.
func (p *process) stop(grace time.Duration) error {
	if ended, _ := p.exited(); ended {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %s and was killed", p.name, grace)
	case <-time.After(5 * time.Second):
		return errors.New(p.name + " survived SIGKILL")
	}
}
