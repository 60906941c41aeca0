package main

// The commands that talk to the REST API as a user does: submit, get and watch. Each is a
// function of its arguments and its output, so that tests call it as main does; what they
// do is package cli's.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"slotplane/apiclient"
	"slotplane/internal/cli"
)

// apiFlags are the flags of every command that calls the API.
type apiFlags struct {
	server, token, namespace *string
}

func addAPIFlags(fs *flag.FlagSet) *apiFlags {
	return &apiFlags{
		server: fs.String("server", envOr("SLOTPLANE_SERVER", "http://127.0.0.1:8088"), "the REST API's address (env SLOTPLANE_SERVER)"),
		token:  fs.String("token", envOr("SLOTPLANE_TOKEN", ""), "bearer token for the API; slotplane dev prints one (env SLOTPLANE_TOKEN)"),
		namespace: fs.String("namespace", envOr("SLOTPLANE_NAMESPACE", ""),
			"namespace to work in (env SLOTPLANE_NAMESPACE; default: the API's own default namespace)"),
	}
}

// connection is the API the flags name.
func (f *apiFlags) connection() cli.Connection {
	return cli.Connection{Server: *f.server, Token: *f.token, Namespace: *f.namespace}
}

// parseInterleaved parses flags that may come before, between or after the positional
// arguments (get jobs -o json), and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// --- submit ---

func runSubmit(ctx context.Context, args []string) error {
	return submitCommand(ctx, args, os.Stdin, os.Stdout)
}

// fileList is a repeatable -f.
type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(v string) error { *l = append(*l, v); return nil }

// submitCommand creates the BatchJobs and Schedulings of the files through the API
// (cli.Submit).
func submitCommand(ctx context.Context, args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	af := addAPIFlags(fs)
	var files fileList
	fs.Var(&files, "f", "file of BatchJobs and Schedulings as kubectl takes them (YAML with several documents, or JSON); - reads stdin; may be repeated")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane submit -f FILE [-f FILE...] [flags]\n\nCreates the BatchJobs, then the Schedulings, of the files through the REST API.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: name files with -f", fs.Arg(0))
	}
	if len(files) == 0 {
		return errors.New("-f names the file to submit (- for stdin)")
	}
	return cli.Submit(ctx, af.connection(), files, stdin, out)
}

// --- get ---

func runGet(ctx context.Context, args []string) error {
	return getCommand(ctx, args, os.Stdout)
}

// getCommand prints jobs, Schedulings, a test bed's slots or its queues as a table, or
// as the API's JSON with -o json (cli.Get).
func getCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	af := addAPIFlags(fs)
	output := fs.String("o", "table", "output: table, or json (the API's answer)")
	testBed := fs.String("testbed", envOr("SLOTPLANE_TESTBED", "bed"), "the test bed of get slots and get queues (or give it as NAME)")
	state := fs.String("state", "", "get jobs: only jobs in this state (Ready, InQueue, Submitted, Running, Completed, Failed)")
	queue := fs.String("queue", "", "get jobs: only jobs of this queue")
	sched := fs.String("scheduling", "", "get jobs: only jobs this Scheduling holds")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane get jobs|schedulings|beds|slots|queues [NAME] [flags]\n\n"+
			"NAME is a job, Scheduling or test bed; for slots and queues, the test bed.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return errors.New("want what to get, and at most one name: slotplane get jobs|schedulings|beds|slots|queues [NAME] [flags]")
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("-o %s: want table or json", *output)
	}
	q := cli.Query{What: pos[0], TestBed: *testBed, Jobs: apiclient.JobFilter{State: *state, Queue: *queue, Scheduling: *sched}}
	if len(pos) == 2 {
		q.Name = pos[1]
	}
	return cli.Get(ctx, af.connection(), q, *output == "json", out)
}

// --- watch ---

func runWatch(ctx context.Context, args []string) error {
	err := watchCommand(ctx, args, os.Stdout)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // Ctrl-C: the user stopped watching
	}
	return err
}

// watchBackoff, when set, replaces the first wait before watch opens a lost change feed
// again (cli.WatchOptions.Backoff): tests need not wait a second.
var watchBackoff time.Duration

// watchCommand follows Schedulings on the change feed with a progress bar each until all
// have ended (cli.Watch).
func watchCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	af := addAPIFlags(fs)
	retryFor := fs.Duration("retry-for", time.Minute, "how long to keep reconnecting after the feed is lost (0: give up at once)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane watch [SCHEDULING...] [flags]\n\n"+
			"Follows Schedulings (default: all of the namespace) until every one has ended.")
		fs.PrintDefaults()
	}
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	return cli.Watch(ctx, af.connection(), cli.WatchOptions{Names: names, RetryFor: *retryFor, Backoff: watchBackoff}, out)
}

// --- kill and move ---

func runKill(ctx context.Context, args []string) error {
	return killCommand(ctx, args, os.Stdout)
}

// killCommand kills a job's run (cli.Kill).
func killCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	af := addAPIFlags(fs)
	reason := fs.String("reason", "", "why, for the job's status message")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane kill JOB [flags]\n\nKills the job's run: its application is deleted, it ends Failed with reason Killed,\nits slots go to the next job and its Scheduling goes on. Allowed to the job's user and\nto administrators of its queue (aclAdministerApps).")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("want one job: slotplane kill JOB [-reason TEXT]")
	}
	return cli.Kill(ctx, af.connection(), pos[0], *reason, out)
}

func runMove(ctx context.Context, args []string) error {
	return moveCommand(ctx, args, os.Stdout)
}

// moveCommand moves a queued or running job to another queue (cli.Move).
func moveCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	af := addAPIFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane move JOB QUEUE [flags]\n\nMoves a waiting or running job to another leaf queue of its test bed. Allowed to the\njob's user and to administrators of its queue; the job's user must be allowed to submit\nto the target, and a running job must fit the target's limits.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return errors.New("want a job and a queue: slotplane move JOB QUEUE")
	}
	return cli.Move(ctx, af.connection(), pos[0], pos[1], out)
}
