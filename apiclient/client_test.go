package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// seen is a request as the fake server received it.
type seen struct {
	method, path, auth, contentType string
	query                           url.Values
	body                            string
}

// fakeAPI answers every request with status and body (JSON unless contentType says
// otherwise) and records what it received.
type fakeAPI struct {
	mu          sync.Mutex
	got         []seen
	status      int
	body        string
	contentType string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, seen{method: r.Method, path: r.URL.EscapedPath(), auth: r.Header.Get("Authorization"),
		contentType: r.Header.Get("Content-Type"), query: r.URL.Query(), body: string(raw)})
	status, body, ct := f.status, f.body, f.contentType
	f.mu.Unlock()
	if ct == "" {
		ct = "application/json; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (f *fakeAPI) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.got, "no request reached the server")
	return f.got[len(f.got)-1]
}

func newFake(t *testing.T, status int, body string, opts ...Option) (*fakeAPI, *Client) {
	t.Helper()
	f := &fakeAPI{status: status, body: body}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "tok-1", opts...)
	require.NoError(t, err)
	return f, c
}

func TestNew_ChecksTheServerAddress(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:8088", "ftp://host", "http://", "://x"} {
		_, err := New(bad, "t")
		require.Error(t, err, bad)
	}
	c, err := New("http://127.0.0.1:8088/api/v1/", "t")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8088", c.Server(), "a trailing /api/v1 is the same server")
	require.Equal(t, "http://127.0.0.1:8088/api/v1/jobs", c.endpoint("/jobs", nil).String())
}

func TestClient_SendsTheTokenNamespaceAndQuery(t *testing.T) {
	ctx := context.Background()
	f, c := newFake(t, 200, `{"items":[{"name":"a","framework":"spark"}],"resourceVersion":"42"}`, WithNamespace("team-a"))

	list, err := c.ListJobs(ctx, JobFilter{State: "Running", Queue: "root.a b", Scheduling: "nightly"})
	require.NoError(t, err)
	require.Equal(t, "42", list.ResourceVersion)
	require.Equal(t, v1alpha1.FrameworkSpark, list.Items[0].Framework)
	got := f.last(t)
	require.Equal(t, "GET", got.method)
	require.Equal(t, "/api/v1/jobs", got.path)
	require.Equal(t, "Bearer tok-1", got.auth)
	require.Equal(t, url.Values{"state": {"Running"}, "queue": {"root.a b"}, "scheduling": {"nightly"}, "namespace": {"team-a"}}, got.query)

	// No filter: no empty parameters; another namespace through a copy.
	_, err = c.InNamespace("").ListJobs(ctx, JobFilter{})
	require.NoError(t, err)
	require.Empty(t, f.last(t).query)
	require.Equal(t, "team-a", c.Namespace(), "InNamespace changes a copy only")

	// Names are escaped into the path; a delete's resourceVersion is a parameter.
	f.body = `{"name":"x y","deleting":true}`
	s, err := c.DeleteScheduling(ctx, "x y", "7")
	require.NoError(t, err)
	require.True(t, s.Deleting)
	got = f.last(t)
	require.Equal(t, "DELETE", got.method)
	require.Equal(t, "/api/v1/schedulings/x%20y", got.path)
	require.Equal(t, url.Values{"resourceVersion": {"7"}, "namespace": {"team-a"}}, got.query)

	// Bodies are JSON, as the API's types encode.
	f.body = `{"job":"etl","from":"root.a","to":"root.b"}`
	m, err := c.MoveJob(ctx, "etl", "b")
	require.NoError(t, err)
	require.Equal(t, apitypes.MoveResult{Job: "etl", From: "root.a", To: "root.b"}, m)
	got = f.last(t)
	require.Equal(t, "/api/v1/jobs/etl/move", got.path)
	require.Equal(t, "application/json", got.contentType)
	require.JSONEq(t, `{"queue":"b"}`, got.body)

	f.body = `{"name":"nightly"}`
	_, err = c.ExtendScheduling(ctx, "nightly", apitypes.SchedulingPatch{ResourceVersion: "9", Append: []v1alpha1.SchedulingJob{{Name: "etl", Replication: 2}}})
	require.NoError(t, err)
	got = f.last(t)
	require.Equal(t, "PATCH", got.method)
	require.JSONEq(t, `{"resourceVersion":"9","append":[{"name":"etl","replication":2}]}`, got.body)

	f.body = `{"testBed":"bed","queues":[{"path":"root","runningJobs":1}],"waiting":[],"running":[]}`
	q, err := c.Queues(ctx, "bed")
	require.NoError(t, err)
	require.Equal(t, "/api/v1/testbeds/bed/queues", f.last(t).path)
	require.Equal(t, 1, q.Queues[0].RunningJobs)

	// A scheduler data patch sets with a value and removes with null.
	f.body = `{"name":"etl","schedulerData":{"estimate":"30s"}}`
	est := "30s"
	j, err := c.PatchSchedulerData(ctx, "etl", apitypes.SchedulerDataPatch{"estimate": &est, "old": nil})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"estimate": "30s"}, j.SchedulerData)
	got = f.last(t)
	require.Equal(t, "PATCH", got.method)
	require.Equal(t, "/api/v1/jobs/etl/scheduler-data", got.path)
	require.JSONEq(t, `{"estimate":"30s","old":null}`, got.body)
}

func TestClient_FailedAnswersAreStatusErrors(t *testing.T) {
	ctx := context.Background()
	f, c := newFake(t, 422, `{"code":"invalid","message":"jobs[0].replication: must be at least 1, not 0","fields":[{"field":"jobs[0].replication","message":"must be at least 1, not 0"}]}`)

	_, err := c.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: "n"})
	require.Error(t, err)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 422, se.Status)
	require.Equal(t, "POST", se.Method)
	require.Equal(t, "/api/v1/schedulings", se.Path)
	var ae *apitypes.Error
	require.ErrorAs(t, err, &ae, "the API's own error is reachable")
	require.Equal(t, apitypes.CodeInvalid, ae.Code)
	require.Equal(t, []apitypes.FieldError{{Field: "jobs[0].replication", Message: "must be at least 1, not 0"}}, ae.Fields)
	require.True(t, IsInvalid(err))
	require.False(t, IsNotFound(err))
	require.Equal(t, "jobs[0].replication: must be at least 1, not 0 (422 invalid)", err.Error())

	f.status, f.body = 404, `{"code":"not_found","message":"scheduling nope does not exist in namespace default"}`
	_, err = c.GetScheduling(ctx, "nope")
	require.True(t, IsNotFound(err))
	f.status, f.body = 409, `{"code":"conflict","message":"exists"}`
	_, err = c.CreateJob(ctx, apitypes.JobRequest{Name: "a"})
	require.True(t, IsConflict(err))
	f.status, f.body = 401, `{"code":"unauthorized","message":"the bearer token is not known"}`
	_, err = c.WhoAmI(ctx)
	require.True(t, IsUnauthorized(err))
	require.Equal(t, 401, StatusOf(err))

	// Not the API's JSON (a proxy's page): the status and the start of the body.
	f.status, f.body, f.contentType = 502, "<html>bad gateway</html>", "text/html"
	_, err = c.GetTestBed(ctx, "bed")
	require.ErrorAs(t, err, &se)
	require.Equal(t, 502, se.Status)
	require.Empty(t, se.API.Code)
	require.Contains(t, se.API.Message, "502 Bad Gateway: <html>bad gateway</html>")
	require.Contains(t, err.Error(), "(502 bad gateway)")

	// A 200 that is not JSON is an error, not a zero value.
	f.status = 200
	_, err = c.GetJob(ctx, "a")
	require.ErrorContains(t, err, "not JSON")
	require.Zero(t, StatusOf(err))

	// No server at all: a plain error, no status.
	dead, err := New("http://127.0.0.1:1", "t")
	require.NoError(t, err)
	_, err = dead.WhoAmI(ctx)
	require.Error(t, err)
	require.Zero(t, StatusOf(err))
	require.False(t, errors.As(err, &ae))
}

func TestClient_DecodesTheAPITypes(t *testing.T) {
	s := apitypes.Scheduling{Name: "nightly", Namespace: "default", ResourceVersion: "5", TestBed: "bed", Mode: v1alpha1.QueueBased,
		Jobs:   []v1alpha1.SchedulingJob{{Name: "a", Replication: 1}},
		Status: v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling, TotalJobs: 1, RunningJobs: 1}}
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	_, c := newFake(t, 201, string(raw))
	got, err := c.CreateScheduling(context.Background(), apitypes.SchedulingRequest{Name: "nightly"})
	require.NoError(t, err)
	require.Equal(t, s, got)
}
