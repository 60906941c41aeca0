package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outage stops the control plane's etcd or kube-apiserver (name) as a crash of its machine
// would (SIGKILL), keeps it down for d, starts it again on the same ports and data, and
// returns once it is healthy again. Everything else keeps running through it.
func (c *Cluster) Outage(ctx context.Context, name string, d time.Duration) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == name })
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
	c.procs[i] = p
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

// Schedulers is how many kube-scheduler replicas the cluster runs.
func (c *Cluster) Schedulers() int { return len(c.schedulers) }

// SchedulerLeader is the index of the kube-scheduler replica that leads: the live one whose
// log, since its last start, says it acquired the lease. A replica that acquired it leads
// until it dies: kube-scheduler exits when it loses its lease.
func (c *Cluster) SchedulerLeader() (int, error) {
	for i, s := range c.schedulers {
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

// KillScheduler kills kube-scheduler replica i (SIGKILL), as a crash would.
func (c *Cluster) KillScheduler(i int) {
	p := c.schedulers[i].proc
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// StartScheduler starts kube-scheduler replica i again after KillScheduler, on its port,
// and returns once it is ready (as a standby, when another replica leads).
func (c *Cluster) StartScheduler(ctx context.Context, i int) error {
	old := c.schedulers[i]
	p, err := old.proc.again()
	if err != nil {
		return err
	}
	c.procs[slices.Index(c.procs, old.proc)] = p
	c.schedulers[i].proc = p
	return c.waitHTTP(ctx, p, "https://127.0.0.1:"+strconv.Itoa(old.port)+"/readyz",
		&tls.Config{InsecureSkipVerify: true}, "", "ok") //nolint:gosec // loopback health probe
}
