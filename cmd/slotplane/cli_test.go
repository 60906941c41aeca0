package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// recorded is a request the fake API received.
type recorded struct {
	method, path, query, auth string
	body                      map[string]any
}

// fakeAPI serves canned answers per "METHOD /path" (under /api/v1) and records requests.
type fakeAPI struct {
	t       *testing.T
	mu      sync.Mutex
	got     []recorded
	answers map[string]func(w http.ResponseWriter, r *http.Request)
	url     string
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, answers: map[string]func(http.ResponseWriter, *http.Request){}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := recorded{method: r.Method, path: strings.TrimPrefix(r.URL.Path, "/api/v1"), query: r.URL.RawQuery, auth: r.Header.Get("Authorization")}
	if raw, _ := io.ReadAll(r.Body); len(raw) > 0 {
		_ = json.Unmarshal(raw, &rec.body)
	}
	f.mu.Lock()
	f.got = append(f.got, rec)
	h := f.answers[r.Method+" "+rec.path]
	f.mu.Unlock()
	if h == nil {
		writeJSON(w, 404, apitypes.Error{Code: apitypes.CodeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
		return
	}
	h(w, r)
}

func (f *fakeAPI) on(route string, status int, body any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[route] = func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, body) }
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.got...)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// echo answers a create with the request's name, in namespace ns (or the query's).
func echo(status int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name string `json:"name"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = "default"
		}
		writeJSON(w, status, map[string]any{"name": body.Name, "namespace": ns})
	}
}

func apiArgs(f *fakeAPI, args ...string) []string {
	return append([]string{"-server", f.url, "-token", "tok"}, args...)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "objects.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestSubmit_SendsJobsThenSchedulings(t *testing.T) {
	f := newFakeAPI(t)
	f.answers["POST /jobs"] = echo(201)
	f.answers["POST /schedulings"] = echo(201)
	file := writeFile(t, `# the Scheduling comes first in the file; the jobs are still sent first
apiVersion: slotplane.io/v1alpha1
kind: Scheduling
metadata:
  name: s1
spec:
  testBed: bed
  mode: QueueBased
  queue: root.a
  jobs:
  - name: j1
    replication: 2
---
# a comment-only document is skipped
---
apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata:
  name: j1
  namespace: team-a
  labels: {team: a}
spec:
  framework: spark
  application: {image: "img:1", mainApplicationFile: "local:///app.jar"}
`)
	var out bytes.Buffer
	require.NoError(t, submitCommand(context.Background(), apiArgs(f, "-f", file), nil, &out))
	reqs := f.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "POST", reqs[0].method)
	require.Equal(t, "/jobs", reqs[0].path)
	require.Equal(t, "namespace=team-a", reqs[0].query, "metadata.namespace is the request's")
	require.Equal(t, "Bearer tok", reqs[0].auth)
	require.Equal(t, map[string]any{"name": "j1", "framework": "spark", "labels": map[string]any{"team": "a"},
		"application": map[string]any{"image": "img:1", "mainApplicationFile": "local:///app.jar"}}, reqs[0].body)
	require.Equal(t, "/schedulings", reqs[1].path)
	require.Empty(t, reqs[1].query, "no namespace: the API's default")
	require.Equal(t, map[string]any{"name": "s1", "testBed": "bed", "mode": "QueueBased", "queue": "root.a",
		"jobs": []any{map[string]any{"name": "j1", "replication": float64(2)}}}, reqs[1].body)
	require.Equal(t, "batchjob/j1 created in namespace team-a\nscheduling/s1 created in namespace default\n", out.String())

	// -f - reads stdin; -namespace applies to objects that name none.
	out.Reset()
	stdin := strings.NewReader(`{"apiVersion":"slotplane.io/v1alpha1","kind":"BatchJob","metadata":{"name":"j2"},"spec":{"framework":"flink","application":{"image":"i","mainApplicationFile":"f"}}}`)
	require.NoError(t, submitCommand(context.Background(), apiArgs(f, "-namespace", "team-b", "-f", "-"), stdin, &out))
	require.Equal(t, "namespace=team-b", f.requests()[2].query)
	require.Equal(t, "batchjob/j2 created in namespace team-b\n", out.String())
}

// Anything wrong in any document is found before a single request is sent.
func TestSubmit_RefusesBadFilesBeforeSending(t *testing.T) {
	good := `apiVersion: slotplane.io/v1alpha1
kind: BatchJob
metadata: {name: ok}
spec: {framework: spark, application: {image: i, mainApplicationFile: f}}
`
	cases := map[string]struct{ doc, want string }{
		"bad YAML":          {"kind: BatchJob\n  name: [oops\n", "document 2: not valid YAML or JSON"},
		"unknown kind":      {"apiVersion: slotplane.io/v1alpha1\nkind: TestBed\nmetadata: {name: bed}\n", "document 2: kind TestBed (apiVersion slotplane.io/v1alpha1) cannot be submitted"},
		"foreign kind":      {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "kind ConfigMap (apiVersion v1) cannot be submitted"},
		"no kind":           {"metadata: {name: x}\n", "document 2: no kind"},
		"wrong apiVersion":  {"apiVersion: slotplane.io/v1\nkind: BatchJob\nmetadata: {name: x}\n", `BatchJob has apiVersion "slotplane.io/v1"`},
		"misspelt field":    {"apiVersion: slotplane.io/v1alpha1\nkind: Scheduling\nmetadata: {name: s}\nspec: {testBed: bed, mode: QueueBased, jobs: [{name: ok, replicaton: 1}]}\n", `document 2 (Scheduling): json: unknown field "replicaton"`},
		"no name":           {"apiVersion: slotplane.io/v1alpha1\nkind: BatchJob\nmetadata: {}\nspec: {framework: spark}\n", "metadata.name is required"},
		"generateName":      {"apiVersion: slotplane.io/v1alpha1\nkind: BatchJob\nmetadata: {generateName: x-}\nspec: {framework: spark}\n", "metadata.generateName is not supported"},
		"scheduling labels": {"apiVersion: slotplane.io/v1alpha1\nkind: Scheduling\nmetadata: {name: s, labels: {a: b}}\nspec: {testBed: bed, mode: QueueBased, jobs: [{name: ok, replication: 1}]}\n", "no labels or annotations for a Scheduling"},
		"not an object":     {"just a string\n", "document 2: not an object"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.answers["POST /jobs"] = echo(201)
			file := writeFile(t, good+"---\n"+tc.doc)
			var out bytes.Buffer
			err := submitCommand(context.Background(), apiArgs(f, "-f", file), nil, &out)
			require.ErrorContains(t, err, tc.want)
			require.Contains(t, err.Error(), file)
			require.Empty(t, f.requests(), "nothing is sent")
			require.Empty(t, out.String())
		})
	}

	// A namespace that contradicts -namespace, as kubectl refuses it.
	f := newFakeAPI(t)
	file := writeFile(t, strings.Replace(good, "metadata: {name: ok}", "metadata: {name: ok, namespace: a}", 1))
	err := submitCommand(context.Background(), apiArgs(f, "-namespace", "b", "-f", file), nil, io.Discard)
	require.ErrorContains(t, err, "is in namespace a, not b")
	require.Empty(t, f.requests())

	// No file, no token: said plainly.
	require.ErrorContains(t, submitCommand(context.Background(), apiArgs(f), nil, io.Discard), "-f names the file")
	require.ErrorContains(t, submitCommand(context.Background(), []string{"-server", f.url, "-token", "", "-f", file}, nil, io.Discard), "no API token")
}

// The API's refusal stops the submission at that document, and its fields are listed.
func TestSubmit_StopsAtTheFirstRefusal(t *testing.T) {
	f := newFakeAPI(t)
	calls := 0
	f.answers["POST /jobs"] = func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 2 {
			writeJSON(w, 403, apitypes.Error{Code: apitypes.CodeForbidden, Message: "jobs submitted through the API run as their submitter: dev may not submit as bob",
				Fields: []apitypes.FieldError{{Field: "user", Message: "must be empty or dev"}}})
			return
		}
		echo(201)(w, r)
	}
	var out bytes.Buffer
	err := submitCommand(context.Background(), apiArgs(f, "-f", "../../examples/batchjobs.yaml", "-f", "../../examples/scheduling-queue.yaml"), nil, &out)
	require.Error(t, err)
	require.Equal(t, "../../examples/batchjobs.yaml document 2 (BatchJob clicks): jobs submitted through the API run as their submitter: dev may not submit as bob\n"+
		"    user: must be empty or dev\n"+
		"(created before it: batchjob/wordcount; nothing after it was sent)", err.Error())
	require.Len(t, f.requests(), 2, "neither report nor the Scheduling was sent")
	require.Equal(t, "batchjob/wordcount created in namespace default\n", out.String())

	// A 422 with several fields lists each.
	f.answers["POST /schedulings"] = func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 422, apitypes.Error{Code: apitypes.CodeInvalid, Message: "the request is invalid in 2 fields; the first: jobs[0].name: batch job wordcount does not exist in namespace default",
			Fields: []apitypes.FieldError{{Field: "jobs[0].name", Message: "batch job wordcount does not exist in namespace default"}, {Field: "testBed", Message: "test bed bed does not exist in namespace default"}}})
	}
	err = submitCommand(context.Background(), apiArgs(f, "-f", "../../examples/scheduling-queue.yaml"), nil, io.Discard)
	require.ErrorContains(t, err, "document 1 (Scheduling nightly): the request is invalid in 2 fields")
	require.ErrorContains(t, err, "\n    jobs[0].name: batch job wordcount does not exist in namespace default\n    testBed: test bed bed does not exist")
	require.ErrorContains(t, err, "(nothing was created)")
}

func TestExplain_ATokenNobodyIssuedAndADeadServer(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET /jobs", 401, apitypes.Error{Code: apitypes.CodeUnauthorized, Message: "the bearer token is not known"})
	err := getCommand(context.Background(), apiArgs(f), io.Discard)
	require.ErrorContains(t, err, "want what to get", "no kind given")
	err = getCommand(context.Background(), apiArgs(f, "jobs"), io.Discard)
	require.EqualError(t, err, "the bearer token is not known\n(the API at "+f.url+" does not accept the token: check -token or SLOTPLANE_TOKEN)")

	err = getCommand(context.Background(), []string{"-server", "http://127.0.0.1:1", "-token", "t", "jobs"}, io.Discard)
	require.ErrorContains(t, err, "cannot reach the API at http://127.0.0.1:1")
	require.ErrorContains(t, err, "SLOTPLANE_SERVER")
}

// gib is n GiB of memory and m millicores, as the API carries them.
func gib(n, m int64) apitypes.Resources {
	return apitypes.Resources{MemoryBytes: n << 30, MilliCores: m}
}

func TestGet_Tables(t *testing.T) {
	f := newFakeAPI(t)
	running := apitypes.Job{Name: "wordcount", Framework: "spark", Queue: "root.analytics", User: "alice", Scheduling: "nightly",
		Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobRunning, Scheduling: "nightly", Slots: []int32{0, 1}}}
	ready := apitypes.Job{Name: "clicks", Framework: "flink"}
	f.on("GET /jobs", 200, apitypes.JobList{Items: []apitypes.Job{ready, running}, ResourceVersion: "5"})
	f.on("GET /jobs/clicks", 200, ready)
	f.on("GET /schedulings", 200, apitypes.SchedulingList{Items: []apitypes.Scheduling{
		{Name: "nightly", Mode: v1alpha1.QueueBased, TestBed: "bed", Jobs: make([]v1alpha1.SchedulingJob, 3),
			Status: v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, TotalJobs: 3, FinishedJobs: 1, RunningJobs: 1}},
		{Name: "new", Mode: v1alpha1.SlotBased, TestBed: "bed", Jobs: make([]v1alpha1.SchedulingJob, 2), Deleting: true},
	}})
	f.on("GET /testbeds/bed", 200, apitypes.TestBed{Name: "bed", Status: apitypes.TestBedStatus{
		TestBedStatus: v1alpha1.TestBedStatus{Nodes: 2, Total: 3, Free: 1, Occupied: 2},
		Slots: []v1alpha1.SlotStatus{
			{Position: 0, NodeName: "node-00", State: v1alpha1.SlotOccupied, PodName: "wordcount-exec-1"},
			{Position: 1, NodeName: "node-01", State: v1alpha1.SlotOccupied, PodName: "wordcount-exec-2"},
			{Position: 2, NodeName: "node-00", State: v1alpha1.SlotFree, PodName: "ghost-2"},
		}}})
	f.on("GET /testbeds/bed/queues", 200, apitypes.QueueTree{TestBed: "bed",
		Queues: []apitypes.Queue{
			{Path: "root", SteadyShare: gib(24, 6000), FairShare: gib(24, 6000), Usage: gib(16, 4000), RunningJobs: 1, WaitingJobs: 1},
			// A share that is not whole shows its fraction.
			{Path: "root.analytics", Leaf: true, SteadyShare: gib(24, 6000), FairShare: apitypes.Resources{MemoryBytes: 12<<30 + 1<<19, MilliCores: 2500}, Usage: gib(16, 4000), RunningJobs: 1, WaitingJobs: 1},
		},
		Waiting:     []apitypes.QueuedJob{{Job: "report", Scheduling: "nightly", Queue: "root.analytics", Slots: 4, Priority: 3, Reason: "needs 4 slots, 1 free"}},
		Running:     []apitypes.QueuedJob{{Job: "wordcount", Scheduling: "nightly", Queue: "root.analytics", Slots: 2, Granted: []int32{0, 1}, State: "Running"}},
		MoreWaiting: 1200, // the API lists the first jobs of a long queue and counts the rest
	})
	get := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, getCommand(context.Background(), apiArgs(f, args...), &out))
		return out.String()
	}

	require.Equal(t, `NAME       FRAMEWORK  STATE    QUEUE           USER   SCHEDULING  SLOTS
clicks     flink      Ready    -               -      -           -
wordcount  spark      Running  root.analytics  alice  nightly     0,1
`, get("jobs"))
	require.Equal(t, `NAME    FRAMEWORK  STATE  QUEUE  USER  SCHEDULING  SLOTS
clicks  flink      Ready  -      -     -           -
`, get("job", "clicks"))

	// The filters are the API's; flags may follow the kind.
	get("jobs", "-state", "Running", "-scheduling", "nightly", "-queue", "analytics")
	reqs := f.requests()
	require.Equal(t, "queue=analytics&scheduling=nightly&state=Running", reqs[len(reqs)-1].query)

	require.Equal(t, `NAME     MODE        STATE           JOBS  FINISHED  RUNNING  TESTBED
nightly  QueueBased  Scheduling      3     1         1        bed
new      SlotBased   - (cancelling)  2     0         0        bed
`, get("schedulings"))

	require.Equal(t, `POSITION  NODE     STATE     POD               JOB
0         node-00  occupied  wordcount-exec-1  wordcount
1         node-01  occupied  wordcount-exec-2  wordcount
2         node-00  free      ghost-2           -

3 slots on 2 nodes: 1 free, 0 reserved, 2 occupied
`, get("slots"))
	require.Equal(t, get("slots"), get("slots", "bed"), "the test bed as NAME")
	require.Equal(t, get("slots"), get("slots", "-testbed", "bed"))

	require.Equal(t, `PATH            STEADY SHARE        FAIR SHARE            USAGE               RUNNING  PENDING
root            24576 mb, 6 vcores  24576 mb, 6 vcores    16384 mb, 4 vcores  1        1
root.analytics  24576 mb, 6 vcores  12288 mb, 2.5 vcores  16384 mb, 4 vcores  1        1

WAITING JOB  SCHEDULING  QUEUE           PRIORITY  SLOTS  REASON
report       nightly     root.analytics  3         4      needs 4 slots, 1 free
and 1200 more waiting

RUNNING JOB  SCHEDULING  QUEUE           SLOTS  STATE
wordcount    nightly     root.analytics  0,1    Running
`, get("queues"))

	// -o json is the API's answer.
	var list apitypes.JobList
	require.NoError(t, json.Unmarshal([]byte(get("jobs", "-o", "json")), &list))
	require.Equal(t, "5", list.ResourceVersion)
	require.Len(t, list.Items, 2)
	var tree apitypes.QueueTree
	require.NoError(t, json.Unmarshal([]byte(get("-o", "json", "queues")), &tree))
	require.Equal(t, "report", tree.Waiting[0].Job)

	// Mistakes.
	for args, want := range map[string]string{
		"pods":                       `cannot get "pods"`,
		"jobs a b":                   "at most one name",
		"schedulings -state Running": "filter get jobs only",
		"jobs -o yaml":               "want table or json",
		"jobs nope":                  "no route GET /api/v1/jobs/nope",
	} {
		err := getCommand(context.Background(), apiArgs(f, strings.Fields(args)...), io.Discard)
		require.ErrorContains(t, err, want, args)
	}
}

// feed is a fake change feed: each connection runs the next script, which gets the
// connection and the resourceVersion asked for.
type feed struct {
	url     string
	mu      sync.Mutex
	scripts []func(conn *websocket.Conn, from string)
	froms   []string
}

func newFeed(t *testing.T, f *fakeAPI, scripts ...func(conn *websocket.Conn, from string)) *feed {
	fd := &feed{scripts: scripts}
	up := websocket.Upgrader{}
	f.answers["GET /watch"] = func(w http.ResponseWriter, r *http.Request) {
		fd.mu.Lock()
		if len(fd.scripts) == 0 {
			fd.mu.Unlock()
			writeJSON(w, 503, apitypes.Error{Code: apitypes.CodeUnavailable, Message: "no more scripts"})
			return
		}
		script := fd.scripts[0]
		fd.scripts = fd.scripts[1:]
		from := r.URL.Query().Get("resourceVersion")
		fd.froms = append(fd.froms, from)
		fd.mu.Unlock()
		if k := r.URL.Query().Get("kinds"); k != "schedulings" {
			writeJSON(w, 422, apitypes.Error{Code: apitypes.CodeInvalid, Message: "the test expects kinds=schedulings, not " + k})
			return
		}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		script(conn, from)
	}
	return fd
}

func schedEvent(typ apitypes.EventType, rv string, s apitypes.Scheduling) map[string]any {
	return map[string]any{"type": typ, "kind": apitypes.KindScheduling, "resourceVersion": rv, "object": s}
}

func sched(name string, state v1alpha1.SchedulingState, finished, running int32) apitypes.Scheduling {
	return apitypes.Scheduling{Name: name, Mode: v1alpha1.QueueBased, TestBed: "bed", Jobs: make([]v1alpha1.SchedulingJob, 2),
		Status: v1alpha1.SchedulingStatus{State: state, TotalJobs: 2, FinishedJobs: finished, RunningJobs: running}}
}

func send(conn *websocket.Conn, events ...map[string]any) {
	for _, e := range events {
		_ = conn.WriteJSON(e)
	}
}

// wait keeps a script's connection open until the client goes.
func wait(conn *websocket.Conn) {
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}

func TestWatch_FollowsUntilEveryScheduleEnds(t *testing.T) {
	f := newFakeAPI(t)
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn,
			map[string]any{"type": apitypes.Resync, "resourceVersion": "10", "items": []any{
				schedEvent(apitypes.Added, "9", sched("nightly", v1alpha1.SchedulingScheduling, 0, 2)),
				schedEvent(apitypes.Added, "8", sched("other", v1alpha1.SchedulingScheduling, 0, 1)),
			}},
			schedEvent(apitypes.Modified, "11", sched("other", v1alpha1.SchedulingScheduling, 1, 1)), // not watched
			schedEvent(apitypes.Modified, "12", sched("nightly", v1alpha1.SchedulingScheduling, 1, 1)),
			schedEvent(apitypes.Modified, "13", sched("nightly", v1alpha1.SchedulingScheduling, 1, 1)), // nothing to show changed
			schedEvent(apitypes.Modified, "14", sched("nightly", v1alpha1.SchedulingCompleted, 2, 0)),
		)
		wait(conn)
	})
	var out bytes.Buffer
	require.NoError(t, watchCommand(context.Background(), apiArgs(f, "nightly"), &out))
	require.Equal(t, `nightly [....................] 0/2 finished, 2 running, Scheduling
nightly [##########..........] 1/2 finished, 1 running, Scheduling
nightly [####################] 2/2 finished, 0 running, Completed
all 1 Schedulings ended: 1 Completed
`, out.String())
	require.NotContains(t, out.String(), "\x1b", "no escape codes off a terminal")
}

// Without names, every Scheduling; one that is deleted counts as ended, and a lost
// connection is resumed after the last event seen.
func TestWatch_AllSchedulingsAcrossAReconnect(t *testing.T) {
	defer func(b time.Duration) { watchBackoff = b }(watchBackoff)
	watchBackoff = 10 * time.Millisecond
	f := newFakeAPI(t)
	fd := newFeed(t, f,
		func(conn *websocket.Conn, from string) {
			send(conn,
				map[string]any{"type": apitypes.Resync, "resourceVersion": "", "items": []any{
					schedEvent(apitypes.Added, "5", sched("a", v1alpha1.SchedulingScheduling, 0, 1)),
					schedEvent(apitypes.Added, "6", sched("b", v1alpha1.SchedulingCompleted, 2, 0)),
				}},
				schedEvent(apitypes.Modified, "11", sched("a", v1alpha1.SchedulingScheduling, 1, 1)),
			)
			// then the connection drops
		},
		func(conn *websocket.Conn, from string) {
			send(conn,
				schedEvent(apitypes.Added, "12", sched("c", v1alpha1.SchedulingAcquiring, 0, 0)),
				schedEvent(apitypes.Modified, "13", sched("a", v1alpha1.SchedulingCompleted, 2, 0)),
				map[string]any{"type": apitypes.Deleted, "kind": apitypes.KindScheduling, "resourceVersion": "14", "object": sched("c", v1alpha1.SchedulingAcquiring, 0, 0)},
			)
			wait(conn)
		},
	)
	var out bytes.Buffer
	require.NoError(t, watchCommand(context.Background(), apiArgs(f), &out))
	require.Equal(t, []string{"", "11"}, fd.froms, "the second connection resumes after the last event")
	text := out.String()
	require.Contains(t, text, "a [##########..........] 1/2 finished, 1 running, Scheduling\n")
	require.Contains(t, text, "lost the change feed (")
	require.Contains(t, text, "reconnected to the change feed, resuming after resourceVersion 11\n")
	require.Contains(t, text, "c [....................] 0/2 finished, 0 running, Acquiring\n")
	require.Contains(t, text, "c [....................] 0/2 finished, 0 running, deleted\n")
	require.True(t, strings.HasSuffix(text, "all 3 Schedulings ended: 2 Completed, 1 deleted\n"), text)
}

func TestWatch_GivesUpAndRefusals(t *testing.T) {
	// -retry-for 0: a lost feed is an error at once.
	f := newFakeAPI(t)
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn, map[string]any{"type": apitypes.Resync, "items": []any{schedEvent(apitypes.Added, "5", sched("a", v1alpha1.SchedulingScheduling, 0, 1))}})
	})
	err := watchCommand(context.Background(), apiArgs(f, "-retry-for", "0"), io.Discard)
	require.ErrorContains(t, err, "lost the change feed")

	// A name that exists nowhere: the API says so, the command fails.
	f = newFakeAPI(t)
	f.on("GET /schedulings/typo", 404, apitypes.Error{Code: apitypes.CodeNotFound, Message: "scheduling typo does not exist in namespace default"})
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn, map[string]any{"type": apitypes.Resync, "items": []any{}})
		wait(conn)
	})
	err = watchCommand(context.Background(), apiArgs(f, "typo"), io.Discard)
	require.EqualError(t, err, "scheduling typo does not exist in namespace default")

	// A name the feed's picture does not have yet, but the API does: followed.
	f = newFakeAPI(t)
	f.on("GET /schedulings/young", 200, sched("young", v1alpha1.SchedulingAcquiring, 0, 0))
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn, map[string]any{"type": apitypes.Resync, "items": []any{}},
			schedEvent(apitypes.Added, "20", sched("young", v1alpha1.SchedulingCompleted, 2, 0)))
		wait(conn)
	})
	var out bytes.Buffer
	require.NoError(t, watchCommand(context.Background(), apiArgs(f, "young"), &out))
	require.Contains(t, out.String(), "young [####################] 2/2 finished, 0 running, Completed\n")

	// Nothing to watch: done at once.
	f = newFakeAPI(t)
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn, map[string]any{"type": apitypes.Resync, "items": []any{}})
		wait(conn)
	})
	out.Reset()
	require.NoError(t, watchCommand(context.Background(), apiArgs(f), &out))
	require.Equal(t, "no Schedulings to watch\n", out.String())

	// A refused connection is not retried.
	f = newFakeAPI(t)
	f.on("GET /watch", 401, apitypes.Error{Code: apitypes.CodeUnauthorized, Message: "the bearer token is not known"})
	err = watchCommand(context.Background(), apiArgs(f), io.Discard)
	require.ErrorContains(t, err, "the bearer token is not known")

	// Cancelled: the context's error, promptly.
	f = newFakeAPI(t)
	newFeed(t, f, func(conn *websocket.Conn, from string) {
		send(conn, map[string]any{"type": apitypes.Resync, "items": []any{schedEvent(apitypes.Added, "5", sched("a", v1alpha1.SchedulingScheduling, 0, 1))}})
		wait(conn)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, watchCommand(ctx, apiArgs(f), io.Discard), context.DeadlineExceeded)
}
