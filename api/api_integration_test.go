//go:build integration

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/api"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/installation"
	"slotplane/internal/localplatform/platformtest"
	"slotplane/internal/testobjects"
)

const token = "test-token"

type client struct {
	t    *testing.T
	base string
}

// do sends a request with the token (or none, or another, per auth) and decodes the JSON
// answer into out; it returns the status. Every answer must be JSON.
func (c client) do(method, path, auth string, body any, out any) int {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(c.t, err)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	require.NoError(c.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"), "%s %s answered %s", method, path, raw)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(raw, out), "%s", raw)
	}
	return resp.StatusCode
}

func (c client) call(method, path string, body any, out any) int {
	c.t.Helper()
	return c.do(method, path, "Bearer "+token, body, out)
}

// The API on the real platform: bad input and bad tokens are clear JSON errors that create
// nothing; a Scheduling made through the API starts its workflow at once (the bridge, seeing
// the object, starts no second one), runs its job in its slots to the end, and can be
// listed, read and cancelled.
func TestAPI_SchedulingsOnThePlatform(t *testing.T) {
	t.Parallel()
	p := platformtest.Start(t, platformtest.DefaultBed)
	h, err := api.New(api.Options{Client: p.Client, Temporal: p.Temporal, Auth: api.StaticTokens{token: {Name: "alice"}, "mallory-token": {Name: "mallory"}}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := client{t: t, base: srv.URL + "/api/v1"}
	ctx := context.Background()
	require.NoError(t, p.Client.Create(ctx, testobjects.BatchJob("etl").RunFor("3s").Obj()))
	require.NoError(t, p.Client.Create(ctx, testobjects.BatchJob("report").RunFor("60s").Obj()))
	// Queues a and b; only alice administers them.
	require.NoError(t, p.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.QueuesConfigMap, Namespace: "default"},
		Data: map[string]string{v1alpha1.QueuesConfigMapKey: `<allocations>
  <queue name="root"><aclAdministerApps>alice</aclAdministerApps><queue name="a"/><queue name="b"/></queue>
</allocations>`},
	}))

	t.Run("tokens", func(t *testing.T) {
		c := client{t: t, base: c.base}
		var e apitypes.Error
		require.Equal(t, http.StatusOK, c.do("GET", "/healthz", "", nil, nil), "health needs no token")
		require.Equal(t, http.StatusUnauthorized, c.do("GET", "/schedulings", "", nil, &e))
		require.Equal(t, apitypes.Error{Code: apitypes.CodeUnauthorized, Message: "no bearer token: send the header Authorization: Bearer <token> (a browser's websocket: the subprotocol bearer.<token>)"}, e)
		require.Equal(t, http.StatusUnauthorized, c.do("GET", "/schedulings", "Bearer wrong", nil, &e))
		require.Equal(t, "the bearer token is not known", e.Message)
		require.Equal(t, http.StatusUnauthorized, c.do("GET", "/schedulings", "Basic YWxpY2U6eA==", nil, &e))
		require.Contains(t, e.Message, "not of the form Bearer <token>")
		require.Equal(t, http.StatusUnauthorized, c.do("POST", "/schedulings", "", `{"name":"x"}`, &e), "no write without a token")
		var who apitypes.User
		require.Equal(t, http.StatusOK, c.call("GET", "/whoami", nil, &who))
		require.Equal(t, "alice", who.Name)
	})

	good := func() map[string]any {
		return map[string]any{"name": "nightly", "testBed": "bed", "mode": "QueueBased", "jobs": []map[string]any{{"name": "etl", "replication": 2}}}
	}
	with := func(edit func(m map[string]any)) map[string]any {
		m := good()
		edit(m)
		return m
	}
	t.Run("bad input creates nothing", func(t *testing.T) { badInputCreatesNothing(t, p, client{t: t, base: c.base}, good, with) })

	t.Run("reads", func(t *testing.T) {
		c := client{t: t, base: c.base}
		var e apitypes.Error
		require.Equal(t, http.StatusNotFound, c.call("GET", "/schedulings/nope", nil, &e))
		require.Equal(t, "scheduling nope does not exist in namespace default", e.Message)
		require.Equal(t, http.StatusNotFound, c.call("GET", "/jobs/nope", nil, &e))
		require.Equal(t, http.StatusNotFound, c.call("GET", "/testbeds/nope", nil, &e))
		require.Equal(t, http.StatusUnprocessableEntity, c.call("GET", "/jobs?state=Sleeping", nil, &e))
		require.Equal(t, "state", e.Fields[0].Field)
		require.Equal(t, http.StatusNotFound, c.call("GET", "/nothing-here", nil, &e))
		require.Equal(t, http.StatusMethodNotAllowed, c.call("PUT", "/healthz", nil, &e))
		var tb apitypes.TestBed
		require.Equal(t, http.StatusOK, c.call("GET", "/testbeds/bed", nil, &tb))
		require.Len(t, tb.Status.Slots, 8)
		require.NotEmpty(t, tb.ResourceVersion)
		var jobs struct{ Items []apitypes.Job }
		require.Equal(t, http.StatusOK, c.call("GET", "/jobs?state=Ready", nil, &jobs))
		require.Len(t, jobs.Items, 2)
	})

	// Each step below goes on from what the one before it left: the first to fail ends the
	// test.
	step := func(name string, f func(t *testing.T, c client)) {
		if !t.Run(name, func(t *testing.T) { f(t, client{t: t, base: c.base}) }) {
			t.FailNow()
		}
	}
	var firstRun string
	step("a Scheduling made through the API runs its job to the end", func(t *testing.T, c client) { firstRun = runsAScheduling(t, p, c, good()) })
	step("a running job moves between queues", func(t *testing.T, c client) { movesARunningJob(t, c) })
	step("a cancelled Scheduling releases its job and goes", func(t *testing.T, c client) { cancelsASchedulingThatRuns(t, c) })
	step("deleting an ended Scheduling ends its workflow", func(t *testing.T, c client) { deletesAnEndedScheduling(t, p, c, firstRun) })
}

// badInputCreatesNothing posts bad requests for Schedulings, most of them good's body as
// with edits it: each is a clear JSON error, and none makes a Scheduling.
func badInputCreatesNothing(t *testing.T, p *platformtest.Platform, c client, good func() map[string]any, with func(edit func(m map[string]any)) map[string]any) {
	ctx := context.Background()
	cases := map[string]struct {
		body   any
		path   string
		status int
		code   string
		field  string
		text   string
	}{
		"malformed json":   {body: `{"name": [`, status: 400, code: apitypes.CodeBadRequest, text: "not valid JSON"},
		"empty body":       {body: ``, status: 400, code: apitypes.CodeBadRequest, text: "the body is empty"},
		"unknown field":    {body: with(func(m map[string]any) { m["replicas"] = 3 }), status: 400, code: apitypes.CodeBadRequest, text: `unknown field "replicas"`},
		"two values":       {body: `{"name":"a"} {"name":"b"}`, status: 400, code: apitypes.CodeBadRequest, text: "more than one JSON value"},
		"a 10 MiB body":    {body: `{"name":"` + strings.Repeat("x", 10<<20) + `"}`, status: 413, code: apitypes.CodeTooLarge, text: "over 1048576 bytes"},
		"invalid name":     {body: with(func(m map[string]any) { m["name"] = "Nightly_Run" }), status: 422, code: apitypes.CodeInvalid, field: "name"},
		"no jobs":          {body: with(func(m map[string]any) { m["jobs"] = []any{} }), status: 422, code: apitypes.CodeInvalid, field: "jobs"},
		"bad mode":         {body: with(func(m map[string]any) { m["mode"] = "Fastest" }), status: 422, code: apitypes.CodeInvalid, field: "mode"},
		"bad queue":        {body: with(func(m map[string]any) { m["queue"] = "root..a" }), status: 422, code: apitypes.CodeInvalid, field: "queue"},
		"zero replication": {body: with(func(m map[string]any) { m["jobs"] = []map[string]any{{"name": "etl"}} }), status: 422, code: apitypes.CodeInvalid, field: "jobs[0].replication"},
		"a job twice": {body: with(func(m map[string]any) {
			m["jobs"] = []map[string]any{{"name": "etl", "replication": 1}, {"name": "etl", "replication": 1}}
		}), status: 422, code: apitypes.CodeInvalid, field: "jobs[1].name", text: "listed already"},
		"slot-based without slots": {body: with(func(m map[string]any) { m["mode"] = "SlotBased" }), status: 422, code: apitypes.CodeInvalid, field: "jobs[0].slotIDs"},
		"queue-based with slots": {body: with(func(m map[string]any) {
			m["jobs"] = []map[string]any{{"name": "etl", "replication": 1, "slotIDs": []int{0}}}
		}), status: 422, code: apitypes.CodeInvalid, field: "jobs[0].slotIDs"},
		"a slot the bed lacks": {body: with(func(m map[string]any) {
			m["mode"] = "SlotBased"
			m["jobs"] = []map[string]any{{"name": "etl", "replication": 2, "slotIDs": []int{1, 42}}}
		}), status: 422, code: apitypes.CodeInvalid, field: "jobs[0].slotIDs[1]", text: "has no slot 42"},
		"missing test bed": {body: with(func(m map[string]any) { m["testBed"] = "nope" }), status: 422, code: apitypes.CodeInvalid, field: "testBed", text: "test bed nope does not exist"},
		"missing job": {body: with(func(m map[string]any) {
			m["jobs"] = []map[string]any{{"name": "etl", "replication": 1}, {"name": "ghost", "replication": 1}}
		}), status: 422, code: apitypes.CodeInvalid, field: "jobs[1].name", text: "batch job ghost does not exist"},
		"bad namespace": {body: good(), path: "/schedulings?namespace=Not_A_Namespace", status: 422, code: apitypes.CodeInvalid, field: "namespace"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := client{t: t, base: c.base}
			path := tc.path
			if path == "" {
				path = "/schedulings"
			}
			var e apitypes.Error
			require.Equal(t, tc.status, c.call("POST", path, tc.body, &e))
			require.Equal(t, tc.code, e.Code)
			require.NotEmpty(t, e.Message)
			if tc.field != "" {
				require.NotEmpty(t, e.Fields, e.Message)
				require.Equal(t, tc.field, e.Fields[0].Field, e.Message)
			}
			if tc.text != "" {
				require.Contains(t, e.Message, tc.text)
			}
		})
	}
	var list struct{ Items []apitypes.Scheduling }
	require.Equal(t, http.StatusOK, c.call("GET", "/schedulings", nil, &list))
	require.Empty(t, list.Items, "no bad request created a scheduling")
	var sl v1alpha1.SchedulingList
	require.NoError(t, p.Client.List(ctx, &sl))
	require.Empty(t, sl.Items)
}

// runsAScheduling creates the Scheduling good, named nightly: its workflow runs as soon as
// the API answers, its job runs to the end, and the bridge starts no second run. It returns
// the workflow's run.
func runsAScheduling(t *testing.T, p *platformtest.Platform, c client, good map[string]any) (firstRun string) {
	ctx := context.Background()
	// A good one: created, its workflow running at once, its job run to the end.
	var created apitypes.Scheduling
	require.Equal(t, http.StatusCreated, c.call("POST", "/schedulings", good, &created))
	require.Equal(t, "nightly", created.Name)
	require.Equal(t, "default", created.Namespace)
	require.NotEmpty(t, created.ResourceVersion)
	desc, err := p.Temporal.DescribeWorkflowExecution(ctx, installation.Default.SchedulingID("default", "nightly"), "")
	require.NoError(t, err, "the workflow runs as soon as the API answers")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	firstRun = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	var e apitypes.Error
	require.Equal(t, http.StatusConflict, c.call("POST", "/schedulings", good, &e), "a second create of the same name")
	require.Equal(t, apitypes.CodeConflict, e.Code)

	var got apitypes.Scheduling
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, c.call("GET", "/schedulings/nightly", nil, &got))
		return got.Status.State == v1alpha1.SchedulingCompleted
	}, 90*time.Second, 250*time.Millisecond, "the scheduling never completed")
	var jobs struct{ Items []apitypes.Job }
	require.Equal(t, http.StatusOK, c.call("GET", "/jobs?scheduling=nightly&state=Completed", nil, &jobs))
	require.Len(t, jobs.Items, 1)
	require.Equal(t, "etl", jobs.Items[0].Name)
	require.Len(t, jobs.Items[0].Status.Slots, 2)
	// One run only: the bridge found the API's workflow and started none. An ended
	// Scheduling's workflow holds its jobs until the Scheduling is deleted.
	desc, err = p.Temporal.DescribeWorkflowExecution(ctx, installation.Default.SchedulingID("default", "nightly"), "")
	require.NoError(t, err)
	require.Equal(t, firstRun, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "the latest run is the API's")
	return firstRun
}

// movesARunningJob runs job report in the Scheduling long, in queue a, and moves it to
// queue b; bad moves are refused.
func movesARunningJob(t *testing.T, c client) {
	// A running one, which the next step cancels.
	long := map[string]any{"name": "long", "testBed": "bed", "mode": "QueueBased", "queue": "a", "jobs": []map[string]any{{"name": "report", "replication": 2}}}
	var created apitypes.Scheduling
	var report apitypes.Job
	require.Equal(t, http.StatusCreated, c.call("POST", "/schedulings", long, &created))
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, c.call("GET", "/jobs/report", nil, &report))
		return report.Status.State == v1alpha1.JobRunning
	}, 60*time.Second, 250*time.Millisecond)

	// The queues, and moving the running job from a to b.
	running := func(path string) int {
		var tree apitypes.QueueTree
		require.Equal(t, http.StatusOK, c.call("GET", "/testbeds/bed/queues", nil, &tree))
		for _, q := range tree.Queues {
			if q.Path == path {
				return q.RunningJobs
			}
		}
		return -1
	}
	require.Eventually(t, func() bool { return running("root.a") == 1 }, 30*time.Second, 250*time.Millisecond)
	var e apitypes.Error
	require.Equal(t, http.StatusNotFound, c.call("GET", "/testbeds/nope/queues", nil, &e))
	require.Equal(t, http.StatusUnprocessableEntity, c.call("POST", "/jobs/report/move", `{"queue":""}`, &e))
	require.Equal(t, "queue", e.Fields[0].Field)
	require.Equal(t, http.StatusNotFound, c.call("POST", "/jobs/nope/move", `{"queue":"b"}`, &e))
	require.Equal(t, http.StatusUnprocessableEntity, c.call("POST", "/jobs/report/move", `{"queue":"nope"}`, &e))
	require.Contains(t, e.Message, "queue nope does not exist")
	require.Equal(t, http.StatusForbidden, c.do("POST", "/jobs/report/move", "Bearer mallory-token", `{"queue":"b"}`, &e))
	require.Equal(t, apitypes.CodeForbidden, e.Code)
	require.Contains(t, e.Message, `user "mallory" may not move job report`)
	require.Equal(t, http.StatusConflict, c.call("POST", "/jobs/etl/move", `{"queue":"b"}`, &e), "etl ended: it is in no queue")
	var moved apitypes.MoveResult
	require.Equal(t, http.StatusOK, c.call("POST", "/jobs/report/move", `{"queue":"b"}`, &moved))
	require.Equal(t, apitypes.MoveResult{Job: "report", From: "root.a", To: "root.b"}, moved)
	require.Eventually(t, func() bool { return running("root.b") == 1 && running("root.a") == 0 }, 30*time.Second, 250*time.Millisecond)
}

// cancelsASchedulingThatRuns deletes the running Scheduling long: the workflow releases its
// job and the object goes.
func cancelsASchedulingThatRuns(t *testing.T, c client) {
	// Cancel a running one: 202, then the workflow releases the job and the object goes.
	var e apitypes.Error
	var deleted apitypes.Scheduling
	require.Equal(t, http.StatusConflict, c.call("DELETE", "/schedulings/long?resourceVersion=1", nil, &e), "a stale resourceVersion deletes nothing")
	require.Equal(t, http.StatusAccepted, c.call("DELETE", "/schedulings/long", nil, &deleted))
	require.True(t, deleted.Deleting)
	require.Eventually(t, func() bool {
		return c.call("GET", "/schedulings/long", nil, &e) == http.StatusNotFound
	}, 60*time.Second, 250*time.Millisecond, "the cancelled scheduling never went away")
	var job apitypes.Job
	require.Equal(t, http.StatusOK, c.call("GET", "/jobs/report", nil, &job))
	require.Empty(t, job.Scheduling, "the job was released")
}

// deletesAnEndedScheduling deletes the Scheduling nightly, which has ended: its workflow's
// run firstRun ends, and the object goes.
func deletesAnEndedScheduling(t *testing.T, p *platformtest.Platform, c client, firstRun string) {
	ctx := context.Background()
	// Deleting the ended one ends its workflow too.
	var deleted apitypes.Scheduling
	require.Equal(t, http.StatusAccepted, c.call("DELETE", "/schedulings/nightly", nil, &deleted))
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = p.Temporal.GetWorkflow(waitCtx, installation.Default.SchedulingID("default", "nightly"), firstRun).Get(waitCtx, nil)
	require.NoError(t, waitCtx.Err(), "the workflow did not end after the deletion")
	require.Eventually(t, func() bool {
		var e apitypes.Error
		return c.call("GET", "/schedulings/nightly", nil, &e) == http.StatusNotFound
	}, 30*time.Second, 250*time.Millisecond)
}
