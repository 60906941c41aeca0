//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/internal/freeport"
	"slotplane/internal/localplatform/localcluster"
)

// Two extenders with -leader-elect: one decides, the other stands by without listening. A
// paused active one (a partition, a stalled node) keeps the lease until it runs out, and the
// standby decides only from then on; resumed, the old one decides no more and exits. A killed
// active one is replaced within 15 s.
func TestExtender_StandbyTakesOverThroughTheLease(t *testing.T) {
	t.Parallel()
	c := localcluster.New(t, localcluster.Options{Nodes: 1})
	logs := t.TempDir()
	type replica struct {
		name           string
		cmd            *exec.Cmd
		listen, health string
	}
	start := func(name string) *replica {
		ports, err := freeport.Get(2)
		require.NoError(t, err)
		r := &replica{name: name, listen: "127.0.0.1:" + strconv.Itoa(ports[0]), health: "127.0.0.1:" + strconv.Itoa(ports[1])}
		out, err := os.Create(filepath.Join(logs, name+".log"))
		require.NoError(t, err)
		r.cmd = exec.Command(binary, "extender", "-plain-http", "-kubeconfig", c.Kubeconfig, "-listen", r.listen, "-health-listen", r.health,
			"-metrics-listen", "0", "-leader-elect", "-lease-namespace", "default", "-lease-name", "extender-test")
		r.cmd.Stdout, r.cmd.Stderr = out, out
		require.NoError(t, r.cmd.Start())
		t.Cleanup(func() {
			_ = r.cmd.Process.Signal(syscall.SIGCONT)
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
			_ = out.Close()
			if t.Failed() {
				b, _ := os.ReadFile(out.Name())
				t.Logf("%s's log:\n%s", name, b)
			}
		})
		return r
	}
	status := func(url string, body *strings.Reader) int {
		hc := http.Client{Timeout: time.Second}
		var resp *http.Response
		var err error
		if body == nil {
			resp, err = hc.Get(url)
		} else {
			resp, err = hc.Post(url, "application/json", body)
		}
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// decides: the replica runs a /filter call (an empty one is answered); a
	// standby answers 503 or does not listen.
	decides := func(r *replica) bool {
		code := status("http://"+r.listen+"/filter", strings.NewReader("{}"))
		return code != 0 && code != http.StatusServiceUnavailable
	}
	ready := func(r *replica) bool { return status("http://"+r.health+"/readyz", nil) == http.StatusOK }
	live := func(r *replica) bool { return status("http://"+r.health+"/healthz", nil) == http.StatusOK }
	leaseRunsOut := func() time.Time {
		l, err := c.Client().CoordinationV1().Leases("default").Get(context.Background(), "extender-test", metav1.GetOptions{})
		require.NoError(t, err)
		return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	}

	a := start("a")
	require.Eventually(t, func() bool { return ready(a) && decides(a) }, time.Minute, 100*time.Millisecond, "a never decided")
	b := start("b")
	require.Eventually(t, func() bool { return live(b) }, 30*time.Second, 100*time.Millisecond, "b never came up")
	require.False(t, ready(b), "a standby is not ready")
	require.False(t, decides(b), "a standby decides")

	// a pauses: it keeps the lease until it runs out, and b decides only after.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	paused := time.Now()
	runsOut := leaseRunsOut()
	for !decides(b) {
		require.Less(t, time.Since(paused), 15*time.Second, "b did not take over within 15 s of a's pause")
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Now()
	require.False(t, took.Before(runsOut), "b decided at %s, before a's lease ran out at %s", took.Format(time.StampMilli), runsOut.Format(time.StampMilli))
	require.True(t, ready(b))
	t.Logf("a paused: b decided %s later, %s after a's lease ran out", took.Sub(paused).Round(10*time.Millisecond), took.Sub(runsOut).Round(10*time.Millisecond))

	// a resumes: it decides no more, and exits to stand by again once restarted.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		require.False(t, decides(a), "a resumed and decided beside b")
		select {
		case err := <-exited:
			require.Error(t, err, "a lost its lease: it exits with an error")
			goto restarted
		default:
		}
		require.True(t, time.Now().Before(deadline), "a did not exit after losing its lease")
		time.Sleep(20 * time.Millisecond)
	}
restarted:
	a = start("a-again")
	require.Eventually(t, func() bool { return live(a) }, 30*time.Second, 100*time.Millisecond)

	// b dies: a takes over within 15 s.
	require.NoError(t, b.cmd.Process.Kill())
	killed := time.Now()
	for !decides(a) {
		require.Less(t, time.Since(killed), 15*time.Second, "a did not take over within 15 s of b's death")
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("extender takeover: %s after the active one's pause, %s after its death\n",
		took.Sub(paused).Round(100*time.Millisecond), time.Since(killed).Round(100*time.Millisecond))
}
