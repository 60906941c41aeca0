package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.temporal.io/sdk/client"

	"slotplane/internal/namespace"
)

func runTemporalNamespace(ctx context.Context, args []string) error {
	return temporalNamespaceCommand(ctx, args, os.Stdout)
}

// temporalNamespaceCommand registers the Temporal namespace (or sets its retention) and checks
// that its visibility store answers the bridge's queries (namespace.Ensure, CheckVisibility).
func temporalNamespaceCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("temporal-namespace", flag.ContinueOnError)
	tf := addTemporalFlags(fs)
	retention := fs.Duration("retention", namespace.DefaultRetention, "how long closed workflow runs stay readable (at least 24h)")
	timeout := fs.Duration("timeout", time.Minute, "how long to try before giving up")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane temporal-namespace [flags]\n\n"+
			"Registers the Temporal namespace slotplane runs in (-temporal-namespace), or sets an\n"+
			"existing one's retention, and checks that its visibility store answers the queries\n"+
			"the bridge makes for this installation (-task-queue, -workflow-id-prefix). Run it\n"+
			"once before the components start, and again after changing any of these; a second\n"+
			"run changes nothing.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	opts, err := tf.options()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := client.NewNamespaceClient(opts)
	if err != nil {
		return fmt.Errorf("dial temporal at %s: %w", *tf.temporal, err)
	}
	defer nc.Close()
	r, err := namespace.Ensure(ctx, nc, *tf.namespace, *retention)
	if err != nil {
		return err
	}
	switch {
	case r.Registered:
		fmt.Fprintf(out, "namespace %s registered, retention %s\n", *tf.namespace, r.Retention)
	case r.Updated:
		fmt.Fprintf(out, "namespace %s: retention set to %s (was %s)\n", *tf.namespace, r.Retention, r.Was)
	default:
		fmt.Fprintf(out, "namespace %s exists, retention %s\n", *tf.namespace, r.Retention)
	}
	tc, err := client.Dial(opts)
	if err != nil {
		return fmt.Errorf("dial temporal at %s: %w", *tf.temporal, err)
	}
	defer tc.Close()
	ids := tf.installation()
	if err := namespace.CheckVisibility(ctx, tc, ids); err != nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	fmt.Fprintf(out, "visibility answers the bridge's queries for task queue %s%s\n", ids.Queue(), prefixNote(ids.IDPrefix))
	return nil
}

func prefixNote(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " and workflow ids under " + prefix
}
