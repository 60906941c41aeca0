package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A worker told to poll a task queue slotplane does not have fails at once, naming the flag
// and the queues it may poll, before it dials anything.
func TestWorker_RefusesAnUnknownTaskQueue(t *testing.T) {
	for list, want := range map[string]string{
		"admission":             `-task-queues: task queue "admission": a slotplane worker polls slotplane and slotplane-admission`,
		"slotplane,slotplane":   `-task-queues: task queue "slotplane" is named twice`,
		"slotplane-admission,,": `-task-queues: task queue "": a slotplane worker polls`,
	} {
		err := runWorker(context.Background(), []string{"-task-queues", list, "-temporal-address", "127.0.0.1:1"})
		require.ErrorContains(t, err, want, list)
	}
	t.Setenv("SLOTPLANE_TASK_QUEUES", "jobs")
	require.ErrorContains(t, runWorker(context.Background(), nil), `task queue "jobs"`, "the environment's list is checked too")
}
