package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
)

// kill and move call their routes as the token's user, say what happened, and pass the
// API's refusal on as its message.
func TestKillAndMove(t *testing.T) {
	f := newFakeAPI(t)
	f.on("DELETE /jobs/hog/run", 202, apitypes.KillResult{Job: "hog", Scheduling: "etl", Queue: "root.etl", As: "an administrator of root.etl", Running: true})
	f.on("POST /jobs/next/move", 200, apitypes.MoveResult{Job: "next", From: "root.etl", To: "root.adhoc"})
	f.on("DELETE /jobs/other/run", 403, apitypes.Error{Code: apitypes.CodeForbidden, Message: `user "bob" may not kill job other: it is neither the job's user ("alice") nor may it administer queue root.etl (aclAdministerApps)`})
	ctx := context.Background()

	var out bytes.Buffer
	require.NoError(t, killCommand(ctx, apiArgs(f, "hog", "-reason", "holds the bed"), &out))
	require.Equal(t, "job hog (running in queue root.etl, scheduling etl) is killed, as an administrator of root.etl: it ends Failed, reason Killed\n", out.String())
	out.Reset()
	require.NoError(t, moveCommand(ctx, apiArgs(f, "next", "root.adhoc"), &out))
	require.Equal(t, "job next moved from root.etl to root.adhoc\n", out.String())
	err := killCommand(ctx, apiArgs(f, "other"), &out)
	require.EqualError(t, err, `user "bob" may not kill job other: it is neither the job's user ("alice") nor may it administer queue root.etl (aclAdministerApps)`)

	got := f.requests()
	require.Len(t, got, 3)
	require.Equal(t, "DELETE", got[0].method)
	require.Equal(t, "reason=holds+the+bed", got[0].query)
	require.Equal(t, "Bearer tok", got[0].auth)
	require.Equal(t, map[string]any{"queue": "root.adhoc"}, got[1].body)
	require.Empty(t, got[2].query, "no reason, no parameter")

	require.ErrorContains(t, killCommand(ctx, apiArgs(f), &out), "want one job")
	require.ErrorContains(t, moveCommand(ctx, apiArgs(f, "next"), &out), "want a job and a queue")
}
