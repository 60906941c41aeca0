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
}

func startProcess(dir, name, bin string, args ...string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s binary: %w (run `make tools`, or set %s / %s)", name, err, EnvKubeBin, EnvKwok)
	}
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
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
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
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
