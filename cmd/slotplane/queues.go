package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"slotplane/internal/cli"
)

// runQueues checks an allocation file and shows what it means: the queue tree with each
// queue's settings and steady fair share for a capacity, warnings where the file does not do
// what it seems to (root's ACLs leaving every queue open), and, for a submitter, where the
// placement policy puts a job and whether the ACLs let it in.
func runQueues(_ context.Context, args []string) error {
	return queuesCommand(args, os.Stdout)
}

func queuesCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("queues", flag.ContinueOnError)
	file := fs.String("f", "", "allocation file (fair-scheduler.xml format) to check")
	settings := fs.String("settings", "", "its settings (yarn-site.xml format), the ConfigMap's key next to it; default: the defaults")
	capacity := fs.String("capacity", "98304 mb, 48 vcores", "what the queues share, for the fair shares")
	user := fs.String("user", "", "show where a job of this user goes (with -queue and -groups)")
	requested := fs.String("queue", "", "the queue the job asks for")
	groups := fs.String("groups", "", "the user's groups, primary first, comma-separated")
	deadlock := fs.Bool("deadlock", false, "replay the seeds' driver deadlock (10 Spark jobs on 12 slots) under each queue set-up and print the outcomes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *deadlock {
		return cli.Deadlock(out)
	}
	if *file == "" {
		return errors.New("-f names the allocation file to check")
	}
	return cli.Queues(cli.QueuesOptions{File: *file, Settings: *settings, Capacity: *capacity, User: *user, Queue: *requested, Groups: *groups}, out)
}
