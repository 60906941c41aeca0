//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/internal/localplatform/platformtest"
)

// cliObjects are two short jobs and a QueueBased Scheduling of them, as a user writes them
// for kubectl.
const cliObjects = `apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata:
  name: cli-etl
  annotations:
    slotplane.io/sim-duration: 3s
spec:
  framework: spark
  queue: root.a
  application:
    image: registry.example/etl:1
    mainClass: org.example.Etl
    mainApplicationFile: local:///opt/etl.jar
  driverResources: {cpu: 250m, memory: 512Mi}
---
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata:
  name: cli-report
  annotations:
    slotplane.io/sim-duration: 4s
spec:
  framework: flink
  queue: root.a
  application:
    image: registry.example/report:1
    mainClass: org.example.Report
    mainApplicationFile: local:///opt/report.jar
  driverResources: {cpu: 250m, memory: 512Mi}
---
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata:
  name: cli-run
  namespace: default
spec:
  testBed: bed
  mode: QueueBased
  jobs:
  - name: cli-etl
    replication: 2
  - name: cli-report
    replication: 3
`

// The CLI against the real platform: submit a file, watch its Scheduling to the end, and
// read the jobs, Schedulings, slots and queues back as tables.
func TestCLI_SubmitWatchAndGet(t *testing.T) {
	t.Parallel()
	p := platformtest.Start(t, platformtest.DefaultBed)
	srv, err := api.Start(api.Options{Client: p.Client, Temporal: p.Temporal, Config: p.Cluster.Config,
		Auth: api.StaticTokens{"cli-token": {Name: "alice", Groups: []string{"analysts"}}}}, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	flags := func(args ...string) []string {
		return append([]string{"-server", srv.URL, "-token", "cli-token"}, args...)
	}
	file := writeFile(t, cliObjects)

	var out bytes.Buffer
	require.NoError(t, submitCommand(ctx, flags("-f", file), nil, &out))
	require.Equal(t, "batchjob/cli-etl created in namespace default\n"+
		"batchjob/cli-report created in namespace default\n"+
		"scheduling/cli-run created in namespace default\n", out.String())

	started := time.Now()
	out.Reset()
	require.NoError(t, watchCommand(ctx, flags("cli-run"), &out))
	t.Logf("watch ended after %s:\n%s", time.Since(started).Round(time.Millisecond), out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	require.Equal(t, "cli-run [####################] 2/2 finished, 0 running, Completed", lines[len(lines)-2])
	require.Equal(t, "all 1 Schedulings ended: 1 Completed", lines[len(lines)-1])
	for _, l := range lines[:len(lines)-1] {
		require.True(t, strings.HasPrefix(l, "cli-run ["), "one bar per change: %q", l)
	}

	get := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, getCommand(ctx, flags(args...), &out), "get %v", args)
		t.Logf("get %s:\n%s", strings.Join(args, " "), out.String())
		return out.String()
	}
	// A row is its cells separated by two spaces or more.
	row := func(cells ...string) *regexp.Regexp {
		for i, c := range cells {
			cells[i] = regexp.QuoteMeta(c)
		}
		return regexp.MustCompile(`(?m)^` + strings.Join(cells, `\s{2,}`) + `\s*$`)
	}

	jobs := get("jobs")
	require.Regexp(t, row("NAME", "FRAMEWORK", "STATE", "QUEUE", "USER", "SCHEDULING", "SLOTS"), jobs)
	require.Regexp(t, regexp.MustCompile(`(?m)^cli-etl\s+spark\s+Completed\s+root\.a\s+alice\s+cli-run\s+\d+,\d+\s*$`), jobs)
	require.Regexp(t, regexp.MustCompile(`(?m)^cli-report\s+flink\s+Completed\s+root\.a\s+alice\s+cli-run\s+\d+,\d+,\d+\s*$`), jobs)
	require.Equal(t, 3, strings.Count(jobs, "\n"))

	require.Regexp(t, row("cli-run", "QueueBased", "Completed", "2", "2", "0", "bed"), get("schedulings"))
	require.Regexp(t, row("cli-run", "QueueBased", "Completed", "2", "2", "0", "bed"), get("scheduling", "cli-run"))

	// The jobs ended: the slots are free again (their ghosts come back shortly).
	var slots string
	require.Eventually(t, func() bool {
		var b bytes.Buffer
		require.NoError(t, getCommand(ctx, flags("slots"), &b))
		slots = b.String()
		return strings.Contains(slots, "8 slots on 4 nodes: 8 free, 0 reserved, 0 occupied")
	}, time.Minute, 500*time.Millisecond, "the slots did not all come free: %s", slots)
	t.Logf("get slots:\n%s", slots)
	require.Regexp(t, row("POSITION", "NODE", "STATE", "POD", "JOB"), slots)
	for pos := range 8 {
		require.Regexp(t, regexp.MustCompile(`(?m)^`+string(rune('0'+pos))+`\s+\S+\s+free\s+\S+\s+-\s*$`), slots)
	}

	// The bed: its counts, and Ready once every free slot holds its ghost again.
	bedRow := regexp.MustCompile(`(?m)^bed\s+\S+\s+4\s+8\s+8\s+0\s+0\s+True\s*$`)
	var beds string
	require.Eventually(t, func() bool {
		var b bytes.Buffer
		require.NoError(t, getCommand(ctx, flags("beds"), &b))
		beds = b.String()
		return bedRow.MatchString(beds)
	}, time.Minute, 500*time.Millisecond, "the bed is not shown whole and Ready: %s", beds)
	require.Regexp(t, row("NAME", "LABEL", "NODES", "SLOTS", "FREE", "RESERVED", "OCCUPIED", "READY"), beds)
	require.Regexp(t, bedRow, get("bed", "bed"))
	var bedList apitypes.TestBedList
	require.NoError(t, json.Unmarshal([]byte(get("testbeds", "-o", "json")), &bedList))
	require.Len(t, bedList.Items, 1)
	require.Empty(t, bedList.Items[0].Status.Slots, "a list carries the counts, not the slots")

	queues := get("queues", "bed")
	require.Regexp(t, row("PATH", "STEADY SHARE", "FAIR SHARE", "USAGE", "RUNNING", "PENDING"), queues)
	require.Regexp(t, regexp.MustCompile(`(?m)^root\s+.*\s0\s+0\s*$`), queues, "nothing runs or waits any more")
	require.Regexp(t, regexp.MustCompile(`(?m)^root\.a\s`), queues, "the jobs' queue")

	// -o json is the API's answer, as the client decodes it.
	var list apitypes.JobList
	require.NoError(t, json.Unmarshal([]byte(get("jobs", "-o", "json", "-scheduling", "cli-run")), &list))
	require.Len(t, list.Items, 2)

	// Submitting the same file again: the first object exists, nothing else is sent.
	err = submitCommand(ctx, flags("-f", file), nil, &out)
	require.ErrorContains(t, err, file+" document 1 (BatchJob cli-etl): create batch job default/cli-etl:")
	require.ErrorContains(t, err, "already exists")
	require.ErrorContains(t, err, "(nothing was created)")

	// A token nobody issued: said plainly, by every command.
	bad := []string{"-server", srv.URL, "-token", "not-a-token"}
	const badToken = "the bearer token is not known\n(the API at "
	err = getCommand(ctx, append(bad, "jobs"), &out)
	require.ErrorContains(t, err, badToken)
	require.ErrorContains(t, err, "check -token or SLOTPLANE_TOKEN")
	require.ErrorContains(t, watchCommand(ctx, append(bad, "cli-run"), &out), badToken)
	err = submitCommand(ctx, append(bad, "-f", file), nil, &out)
	require.ErrorContains(t, err, "document 1 (BatchJob cli-etl): "+badToken)
}
