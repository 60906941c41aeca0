// Command slotplane is the one binary of slotplane. Each subcommand only wires packages
// together; what it runs lives in those packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	// The image has no CA bundle of its own: the binary carries Mozilla's roots, which Go
	// uses where the system has none (TLS to Temporal without -temporal-tls-ca).
	_ "golang.org/x/crypto/x509roots/fallback"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

var commands = []command{
	{"dev", "run the local platform: control plane, fake nodes, extender, embedded Temporal and its Web UI", runDev},
	{"extender", "serve the kube-scheduler extender that places slot pods into their slots", runExtender},
	{"worker", "run slotplane's workflows and activities against a Temporal server", runWorker},
	{"bridge", "turn changes of TestBeds, nodes and slot pods into workflow signals", runBridge},
	{"api", "serve the REST API for external schedulers (Schedulings, jobs, test beds)", runAPI},
	{"temporal-namespace", "register the Temporal namespace slotplane runs in (or set its retention) and check its visibility store", runTemporalNamespace},
	{"queues", "check an allocation file (fair-scheduler.xml): the queue tree, shares, placement and ACLs", runQueues},
	{"simulate", "replay a workload trace (CSV) through an allocation file's queues in virtual time: waits, utilization, fairness", runSimulate},
	{"experiment", "run a workload trace on the live test bed with a scheduler (built in or your own) and report it beside the simulator's prediction", runExperiment},
	{"submit", "create BatchJobs and Schedulings from their YAML or JSON (as kubectl takes them) through the REST API", runSubmit},
	{"get", "show jobs, Schedulings, a test bed's slots or its queues, from the REST API", runGet},
	{"watch", "follow Schedulings' progress on the API's change feed until they end", runWatch},
	{"kill", "kill a job's run: it ends Failed (reason Killed) and its Scheduling goes on", runKill},
	{"move", "move a waiting or running job to another queue", runMove},
	{"load", "load a running REST API with reads and job creations for a while and print latency percentiles", runLoad},
}

func main() {
	// Text at info until a component's -log-format and -log-level say otherwise.
	setLogger(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Asked for, the usage is the answer (stdout, exit 0); a missing command is an error.
	if len(os.Args) >= 2 && (os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help") {
		usage(os.Stdout)
		return
	}
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands {
		if c.name == os.Args[1] {
			err := c.run(ctx, os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				os.Exit(2)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "slotplane %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "slotplane: unknown command %q\n\n", os.Args[1])
	usage(os.Stderr)
	os.Exit(2)
}

// logOut is where every component's log lines go: stderr, or a file (slotplane dev without
// -v keeps the console for its steps and banner).
var logOut = &switchWriter{w: os.Stderr}

// switchWriter is a writer that can be pointed elsewhere while loggers hold it.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w = w
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: slotplane <command> [flags]\n\ncommands:")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'slotplane <command> -h' for the flags of a command.")
}

// envOr returns the environment variable key, or def when it is unset: every flag can also be
// given as SLOTPLANE_<FLAG>.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
