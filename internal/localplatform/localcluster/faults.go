package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Outage stops the control plane's etcd or kube-apiserver (name) as a crash of its machine
// would (SIGKILL), keeps it down for d, starts it again on the same ports and data, and
// returns once it is healthy again. Everything else keeps running through it.
func (c *Cluster) Outage(ctx context.Context, name string, d time.Duration) error {
	c.mu.Lock()
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == name })
	c.mu.Unlock()
	if i < 0 || (name != "etcd" && name != "kube-apiserver") {
		return fmt.Errorf("no outage of %q: etcd or kube-apiserver", name)
	}
	old := c.procs[i]
	_ = syscall.Kill(-old.cmd.Process.Pid, syscall.SIGKILL)
	<-old.done
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	p, err := old.again()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	if name == "etcd" {
		return c.waitHTTP(ctx, p, argValue(p.args, "--listen-client-urls=")+"/health", nil, "", `"health":"true"`)
	}
	return c.waitHTTP(ctx, p, c.APIServerURL+"/readyz", &tls.Config{RootCAs: mustPool(c.Config.CAData)}, adminToken, "ok")
}

// argValue is the value of the argument that starts with prefix ("" when none).
func argValue(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

// SchedulerLeader is the index of the kube-scheduler replica that leads: the live one whose
// log, since its last start, says it acquired the lease. A replica that acquired it leads
// until it dies: kube-scheduler exits when it loses its lease.
func (c *Cluster) SchedulerLeader() (int, error) {
	c.mu.Lock()
	schedulers := slices.Clone(c.schedulers)
	c.mu.Unlock()
	for i, s := range schedulers {
		if ended, _ := s.proc.exited(); ended {
			continue
		}
		log, err := os.ReadFile(s.proc.log.Name())
		if err != nil {
			return -1, err
		}
		if int64(len(log)) > s.proc.logFrom && strings.Contains(string(log[s.proc.logFrom:]), "Successfully acquired lease") {
			return i, nil
		}
	}
	return -1, errors.New("no kube-scheduler leads")
}

// KillScheduler kills kube-scheduler replica i (SIGKILL), as a crash would. Replicated
// schedulers are supervised: the replica starts again schedulerRestartDelay later.
func (c *Cluster) KillScheduler(i int) {
	c.mu.Lock()
	p := c.schedulers[i].proc
	c.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// schedulerRestartDelay is how long a replicated scheduler that exited stays down: a
// kubelet's first back-off. A scheduler exits when it loses its lease (the API server or
// etcd out for longer than its renew deadline), as well as when it crashes.
const schedulerRestartDelay = 2 * time.Second

// superviseScheduler starts replica i again whenever it exits, as a kubelet does a static
// pod's container, until the cluster closes.
func (c *Cluster) superviseScheduler(i int) {
	for {
		c.mu.Lock()
		p := c.schedulers[i].proc
		c.mu.Unlock()
		select {
		case <-c.closing:
			return
		case <-p.done:
		}
		select {
		case <-c.closing:
			return
		case <-time.After(schedulerRestartDelay):
		}
		next, err := p.again()
		if err != nil {
			continue // the binary is gone: nothing to start
		}
		c.mu.Lock()
		if k := slices.Index(c.procs, p); k >= 0 {
			c.procs[k] = next
		}
		c.schedulers[i].proc = next
		c.mu.Unlock()
	}
}
