//go:build integration

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"slotplane/internal/cli"
	"slotplane/internal/freeport"
)

// TestDev_ComesUpAndStopsCleanly runs `slotplane dev` as a user would, twice on the same
// state: both times it must come up, print where everything is, serve the cluster and the
// Temporal UI, and leave no process behind after Ctrl-C.
func TestDev_ComesUpAndStopsCleanly(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	require.NoError(t, os.Chmod(state, 0o755)) // as an older slotplane left it
	var tokens []string
	for run := range 2 {
		cmd, out, ports, banner := startDev(t, state, 3)
		info, err := os.Stat(state)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the state folder holds keys and the API token: its owner's only")
		exited := make(chan error, 1)
		out.discard()
		go func() { exited <- cmd.Wait() }()

		// Up to the banner the console holds the numbered steps only: the components log
		// to slotplane.log in the state folder.
		steps := regexp.MustCompile(`^(\[\d+/\d+\] .* \.\.\.|      done in \d+\.\ds)$`)
		head, _, ok := strings.Cut(banner, "slotplane dev is up")
		require.True(t, ok, "run %d", run)
		for _, line := range strings.Split(strings.TrimSpace(head), "\n") {
			require.Regexp(t, steps, line, "run %d: a line on the console that is not a step", run)
		}
		logged, err := os.ReadFile(filepath.Join(state, "slotplane.log"))
		require.NoError(t, err)
		require.NotEmpty(t, logged, "the components' log lines go to the file")
		require.NotContains(t, string(logged), "level=DEBUG")

		kubeconfig := filepath.Join(state, "cluster", "kubeconfig")
		for _, want := range []string{"slotplane dev is up", kubeconfig, "127.0.0.1:" + strconv.Itoa(ports[0]), "http://127.0.0.1:" + strconv.Itoa(ports[1])} {
			require.Contains(t, banner, want, "run %d", run)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "slotplane.io/node"})
		require.NoError(t, err)
		require.Len(t, nodes.Items, 3, "run %d", run)
		_, err = cs.Discovery().ServerResourcesForGroupVersion("slotplane.io/v1alpha1")
		require.NoError(t, err, "CRDs not installed in run %d", run)
		extURL := regexp.MustCompile(`extender\s+(https://\S+/) .*CA (\S+)\)`).FindStringSubmatch(banner)
		require.Len(t, extURL, 3, "the banner names the extender, over HTTPS, and its CA")
		ca, err := os.ReadFile(extURL[2])
		require.NoError(t, err)
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM(ca))
		extClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		resp, err := extClient.Get(extURL[1] + "healthz")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "extender not serving")
		resp, err = extClient.Post(extURL[1]+"filter", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the extender took a call without the scheduler's certificate")
		extClient.CloseIdleConnections()
		resp, err = http.Get("http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/")
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)

		// The platform starts with its default test bed (2 slots on each of the 3 nodes) and
		// queues, made in the first run; in the second, after a restart on the same state,
		// the bed's workflow is still there and puts back a ghost that goes.
		require.Contains(t, banner, "[8/8] waiting for the test bed's ghosts", "the start shows its steps")
		_, err = cs.CoreV1().ConfigMaps("default").Get(context.Background(), "slotplane-queues", metav1.GetOptions{})
		require.NoError(t, err, "run %d: the default queues", run)
		ghosts := waitGhosts(t, cs, 6)
		// The REST API serves the test bed to the printed token, and only to it; the token
		// is kept across runs.
		token := regexp.MustCompile(`export SLOTPLANE_TOKEN=(\S+)`).FindStringSubmatch(banner)
		require.Len(t, token, 2, "the banner prints the API token")
		tokens = append(tokens, token[1])
		bedURL := "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/api/v1/testbeds/bed"
		require.Contains(t, banner, bedURL)
		req, err := http.NewRequest("GET", bedURL, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token[1])
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "run %d: the API with the token", run)
		resp, err = http.Get(bedURL)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "run %d: the API without a token", run)
		// The dashboard: its address carries the token in the fragment.
		base := "http://127.0.0.1:" + strconv.Itoa(ports[2])
		require.Contains(t, banner, base+"/#token="+token[1])
		resp, err = http.Get(base + "/")
		require.NoError(t, err)
		page, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(page), "<title>slotplane</title>")
		// slotplane's metrics: the in-process components' on one endpoint, the test bed's
		// slots among them.
		metricsURL := "http://127.0.0.1:" + strconv.Itoa(ports[3]) + "/metrics"
		require.Contains(t, banner, metricsURL)
		require.Eventually(t, func() bool {
			resp, err := http.Get(metricsURL)
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			text := string(body)
			return resp.StatusCode == http.StatusOK && strings.Contains(text, `slotplane_testbed_capacity_slots{namespace="default",testbed="bed"} 6`) &&
				strings.Contains(text, "slotplane_api_requests_total") && strings.Contains(text, "temporal_request_total") &&
				strings.Contains(text, `slotplane_build_info{component="dev"`)
		}, 30*time.Second, 500*time.Millisecond, "run %d: the metrics endpoint serves the components' metrics", run)
		if run == 1 {
			require.NoError(t, cs.CoreV1().Pods("default").Delete(context.Background(), ghosts[0].Name, metav1.DeleteOptions{}))
			require.Eventually(t, func() bool {
				now := waitGhosts(t, cs, 6)
				// A recreated ghost has the same name, but not the same uid.
				return !slices.Contains(now, ghosts[0])
			}, time.Minute, 200*time.Millisecond, "the resumed workflow did not replace a deleted ghost")
		}

		require.Positive(t, len(processesUsing(state)), "the control plane should be running")
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		select {
		case err := <-exited:
			require.NoError(t, err, "run %d: dev should exit 0 on Ctrl-C", run)
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("run %d: dev did not stop within a minute of Ctrl-C", run)
		}
		require.Empty(t, processesUsing(state), "run %d: processes left behind", run)
	}
	require.Equal(t, tokens[0], tokens[1], "a restart keeps the API token")
}

// `slotplane dev -demo` submits the demo through the API and follows it to the end; a
// second start on the same state follows the same Scheduling instead of submitting again.
func TestDev_DemoCompletesAndResumes(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	for run := range 2 {
		// One reader for all of the output: the banner, then the demo's lines.
		cmd, console, _, banner := startDev(t, state, 4, "-demo")
		rest, ended := console.until(t, "The platform keeps running", 5*time.Minute)
		require.False(t, ended, "run %d: output ended before the demo did:\n%s", run, banner+rest)
		out := banner + rest
		t.Logf("run %d printed:\n%s", run, out)
		if run == 0 {
			require.Contains(t, out, "demo: submitting 6 jobs")
		} else {
			require.Contains(t, out, "exists from an earlier run")
			require.NotContains(t, out, "demo: submitting")
		}
		require.Contains(t, out, "demo: Scheduling demo is Completed", out)
		for _, name := range cli.DemoJobNames() {
			require.Regexp(t, regexp.MustCompile(name+`\s+Completed`), out)
		}
		console.discard()
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait(), "run %d: Ctrl-C ends dev cleanly", run)
		require.Empty(t, processesUsing(state), "run %d: processes left behind", run)
	}
}

// A dev process that is killed outright takes its control plane with it: no orphan keeps
// ports or etcd data busy.
func TestDev_KilledTakesItsChildrenWithIt(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cmd, _, _, _ := startDev(t, state, 1)
	require.Len(t, processesUsing(state), 5, "dev, etcd, kube-apiserver, kube-scheduler and kwok should run")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesUsing(state)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	require.Empty(t, processesUsing(state), "children outlived a killed dev")
}

// waitGhosts waits until n ghost pods run and returns their names and uids.
func waitGhosts(t *testing.T, cs kubernetes.Interface, n int) []ghostID {
	t.Helper()
	var names []ghostID
	require.Eventually(t, func() bool {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "slotplane.io/ghost=true"})
		require.NoError(t, err)
		names = names[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == "Running" && p.DeletionTimestamp == nil {
				names = append(names, ghostID{p.Name, string(p.UID)})
			}
		}
		return len(names) == n
	}, time.Minute, 200*time.Millisecond, "want %d running ghosts", n)
	return names
}

type ghostID struct{ Name, UID string }

// startDev runs `slotplane dev` on state with free ports and returns once it says it is up,
// with its console (still read), the Temporal, UI, API and metrics ports, and what it printed
// until then. The test picks the ports and dev binds them later, so another test package can
// take one in between: dev then exits saying the address is in use, and is started again on
// other ports, as freeport.Retry does inside one process.
func startDev(t *testing.T, state string, nodes int, extra ...string) (*exec.Cmd, *console, []int, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cmd, out, ports := launchDev(t, state, nodes, extra...)
		banner, ended := out.until(t, "Press Ctrl-C", 2*time.Minute)
		if !ended {
			return cmd, out, ports, banner
		}
		_ = cmd.Wait()
		if !freeport.InUse(banner) || attempt == freeport.Attempts {
			t.Fatalf("output ended before the banner (attempt %d):\n%s", attempt, banner)
		}
		t.Logf("attempt %d lost a port to another process; starting on other ports:\n%s", attempt, banner)
	}
}

// launchDev starts `slotplane dev` and returns at once, with its console unread.
func launchDev(t *testing.T, state string, nodes int, extra ...string) (*exec.Cmd, *console, []int) {
	t.Helper()
	ports, err := freeport.Get(4)
	require.NoError(t, err)
	cmd := exec.Command(binary, append([]string{"dev", "-state-dir", state, "-nodes", strconv.Itoa(nodes),
		"-temporal-port", strconv.Itoa(ports[0]), "-ui-port", strconv.Itoa(ports[1]), "-api-port", strconv.Itoa(ports[2]),
		"-metrics-port", strconv.Itoa(ports[3])}, extra...)...)
	// As a user runs it: without the Makefile's tool paths (the binary, a plain go build,
	// finds the tools in the cache), and with its console whole, stderr included.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "SLOTPLANE_KUBE_BIN=") || strings.HasPrefix(kv, "SLOTPLANE_KWOK=")
	})
	out, in, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = in, in
	require.NoError(t, cmd.Start())
	require.NoError(t, in.Close()) // the child holds its end
	t.Cleanup(func() { _ = out.Close() })
	return cmd, readConsole(out), ports
}

// console is dev's output, read line by line by one goroutine for the life of the process,
// so a test can wait for one marker and then another without losing the lines between.
type console struct {
	lines chan string
}

func readConsole(r io.Reader) *console {
	c := &console{lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// until returns the lines up to and including the first that contains marker, or, with
// ended set, every line until the output ended. It fails the test after timeout.
func (c *console) until(t *testing.T, marker string, timeout time.Duration) (text string, ended bool) {
	t.Helper()
	var b strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return b.String(), true
			}
			b.WriteString(line + "\n")
			if strings.Contains(line, marker) {
				return b.String(), false
			}
		case <-deadline:
			t.Fatalf("no %q within %s:\n%s", marker, timeout, b.String())
		}
	}
}

// discard reads and drops the rest of the output, so the process never blocks on writing it.
func (c *console) discard() {
	go func() {
		for range c.lines {
		}
	}()
}

// binary is the slotplane binary the tests run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotplane-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "slotplane")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build slotplane: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// processesUsing lists the pids whose command line mentions path.
func processesUsing(path string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), path) {
			pids = append(pids, pid)
		}
	}
	return pids
}
