package cli

import (
	"context"
	"fmt"
	"io"
)

// Kill kills a job's run through the API, as the connection's user (the job's user, or an
// administrator of its queue): the job ends Failed with reason Killed and its Scheduling goes
// on. reason goes into the job's status message.
func Kill(ctx context.Context, conn Connection, job, reason string, out io.Writer) error {
	c, err := conn.Client()
	if err != nil {
		return err
	}
	k, err := c.KillJob(ctx, job, reason)
	if err != nil {
		return explain(err, conn.Server)
	}
	what := "waiting in"
	if k.Running {
		what = "running in"
	}
	_, err = fmt.Fprintf(out, "job %s (%s queue %s, scheduling %s) is killed, as %s: it ends Failed, reason Killed\n", k.Job, what, k.Queue, k.Scheduling, k.As)
	return err
}

// Move moves a queued or running job to another queue through the API, as the connection's
// user (the job's user, or an administrator of its queue).
func Move(ctx context.Context, conn Connection, job, queue string, out io.Writer) error {
	c, err := conn.Client()
	if err != nil {
		return err
	}
	m, err := c.MoveJob(ctx, job, queue)
	if err != nil {
		return explain(err, conn.Server)
	}
	_, err = fmt.Fprintf(out, "job %s moved from %s to %s\n", m.Job, m.From, m.To)
	return err
}
