// Package apiclient is a typed Go client of slotplane's REST API (/api/v1, package api):
// Schedulings, BatchJobs, test beds, queues and the websocket change feed. The CLI uses it,
// and so can end-to-end tests and load generators: every method takes a context and
// answers the api package's own types.
//
// A failed answer is a *StatusError, which holds the HTTP status and the API's error body;
// errors.As finds the *apitypes.Error inside it, and IsNotFound, IsConflict and IsInvalid test
// the usual cases.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"slotplane/apitypes"
)

// maxAnswerBytes bounds how much of an answer is read: a list of thousands of jobs fits,
// a runaway body does not exhaust memory.
const maxAnswerBytes = 256 << 20

// Client calls one API server as one user (a bearer token), in one namespace. It is safe
// for concurrent use; InNamespace gives a copy working in another namespace.
type Client struct {
	base      *url.URL // the server, without /api/v1
	token     string
	namespace string
	http      *http.Client
	dialer    websocket.Dialer
}

// Option changes how New builds a Client.
type Option func(*Client)

// WithNamespace makes every request name the namespace (?namespace=). Without it, the API
// works in its own default namespace.
func WithNamespace(namespace string) Option {
	return func(c *Client) { c.namespace = namespace }
}

// WithHTTPClient sends the REST requests through hc instead of a client of its own. The
// change feed dials its websocket itself; it takes the TLS, proxy and dial settings of hc's
// transport when that is an *http.Transport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		c.http = hc
		if t, ok := hc.Transport.(*http.Transport); ok {
			c.dialer.TLSClientConfig = t.TLSClientConfig
			c.dialer.Proxy = t.Proxy
			c.dialer.NetDialContext = t.DialContext
		}
	}
}

// New returns a client of the API served at server (such as http://127.0.0.1:8088; a
// trailing /api/v1 is accepted too) that sends token as its bearer token.
func New(server, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(server))
	if err != nil {
		return nil, fmt.Errorf("apiclient: server %q: %w", server, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("apiclient: server %q: want http://host:port or https://host:port", server)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		base:   u,
		token:  token,
		http:   &http.Client{},
		dialer: websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 30 * time.Second},
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Server is the API's base address, as given to New without /api/v1.
func (c *Client) Server() string { return c.base.String() }

// Namespace is the namespace the client names in its requests; empty means the API's
// default.
func (c *Client) Namespace() string { return c.namespace }

// InNamespace returns a copy of the client that works in namespace (empty: the API's
// default). The copy shares the HTTP client.
func (c *Client) InNamespace(namespace string) *Client {
	cp := *c
	cp.namespace = namespace
	return &cp
}

// WhoAmI answers the user and groups the token stands for.
func (c *Client) WhoAmI(ctx context.Context) (apitypes.User, error) {
	var u apitypes.User
	return u, c.do(ctx, http.MethodGet, "/whoami", nil, nil, &u)
}

// CreateScheduling creates a Scheduling and starts its workflow.
func (c *Client) CreateScheduling(ctx context.Context, r apitypes.SchedulingRequest) (apitypes.Scheduling, error) {
	var s apitypes.Scheduling
	return s, c.do(ctx, http.MethodPost, "/schedulings", nil, r, &s)
}

// ListSchedulings lists the namespace's Schedulings, sorted by name.
// It reads every page; ListSchedulingsPage reads one.
func (c *Client) ListSchedulings(ctx context.Context) (apitypes.SchedulingList, error) {
	var all apitypes.SchedulingList
	err := everyPage(func(p Page) (string, error) {
		l, err := c.ListSchedulingsPage(ctx, p)
		if err != nil {
			return "", err
		}
		all.Items, all.ResourceVersion = append(all.Items, l.Items...), l.ResourceVersion
		return l.Continue, nil
	})
	return all, err
}

// everyPage reads a list page by page: read takes in the page asked for and says the next
// page's token, "" after the last.
func everyPage(read func(p Page) (next string, err error)) error {
	p := Page{}
	for {
		next, err := read(p)
		if err != nil || next == "" {
			return err
		}
		p.Continue = next
	}
}

// Page asks for one page of a list: at most Limit items (0: the server's default), after
// the page whose Continue token is given ("" for the first).
type Page struct {
	Limit    int
	Continue string
}

func (p Page) query(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Continue != "" {
		q.Set("continue", p.Continue)
	}
	return q
}

// ListSchedulingsPage reads one page of the namespace's Schedulings, sorted by name; its
// Continue names the next page, if any.
func (c *Client) ListSchedulingsPage(ctx context.Context, p Page) (apitypes.SchedulingList, error) {
	var l apitypes.SchedulingList
	return l, c.do(ctx, http.MethodGet, "/schedulings", p.query(nil), nil, &l)
}

// ListTestBeds lists the namespace's test beds, sorted by name, without their slots. It
// reads every page; ListTestBedsPage reads one.
func (c *Client) ListTestBeds(ctx context.Context) (apitypes.TestBedList, error) {
	var all apitypes.TestBedList
	err := everyPage(func(p Page) (string, error) {
		l, err := c.ListTestBedsPage(ctx, p)
		if err != nil {
			return "", err
		}
		all.Items, all.ResourceVersion = append(all.Items, l.Items...), l.ResourceVersion
		return l.Continue, nil
	})
	return all, err
}

// ListTestBedsPage reads one page of the namespace's test beds, sorted by name.
func (c *Client) ListTestBedsPage(ctx context.Context, p Page) (apitypes.TestBedList, error) {
	var l apitypes.TestBedList
	return l, c.do(ctx, http.MethodGet, "/testbeds", p.query(nil), nil, &l)
}

// GetScheduling reads one Scheduling.
func (c *Client) GetScheduling(ctx context.Context, name string) (apitypes.Scheduling, error) {
	var s apitypes.Scheduling
	return s, c.do(ctx, http.MethodGet, "/schedulings/"+url.PathEscape(name), nil, nil, &s)
}

// ExtendScheduling appends jobs to a running Scheduling (p.ResourceVersion, if set, makes
// the change apply only to that version: 409 otherwise). The API answers 202 instead of
// 200 when the object took the jobs but the workflow did not confirm them yet (the bridge
// passes them on); both are a success here.
func (c *Client) ExtendScheduling(ctx context.Context, name string, p apitypes.SchedulingPatch) (apitypes.Scheduling, error) {
	var s apitypes.Scheduling
	return s, c.do(ctx, http.MethodPatch, "/schedulings/"+url.PathEscape(name), nil, p, &s)
}

// DeleteScheduling cancels a Scheduling; its workflow releases the jobs and then lets the
// object go, after the answer. A non-empty resourceVersion deletes only that version.
func (c *Client) DeleteScheduling(ctx context.Context, name, resourceVersion string) (apitypes.Scheduling, error) {
	var q url.Values
	if resourceVersion != "" {
		q = url.Values{"resourceVersion": {resourceVersion}}
	}
	var s apitypes.Scheduling
	return s, c.do(ctx, http.MethodDelete, "/schedulings/"+url.PathEscape(name), q, nil, &s)
}

// CreateJob creates a BatchJob that runs as the caller.
func (c *Client) CreateJob(ctx context.Context, r apitypes.JobRequest) (apitypes.Job, error) {
	var j apitypes.Job
	return j, c.do(ctx, http.MethodPost, "/jobs", nil, r, &j)
}

// JobFilter narrows ListJobs; empty fields do not filter, and all set must match.
type JobFilter struct {
	// State is a BatchJob state (Ready, InQueue, Submitted, Running, Completed, Failed).
	State string
	// Queue is a queue path; "root." is optional.
	Queue string
	// Scheduling is the Scheduling that holds the job now.
	Scheduling string
}

// ListJobs lists the namespace's BatchJobs that match f, sorted by name.
// It reads every page; ListJobsPage reads one.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) (apitypes.JobList, error) {
	var all apitypes.JobList
	err := everyPage(func(p Page) (string, error) {
		l, err := c.ListJobsPage(ctx, f, p)
		if err != nil {
			return "", err
		}
		all.Items, all.ResourceVersion = append(all.Items, l.Items...), l.ResourceVersion
		return l.Continue, nil
	})
	return all, err
}

// ListJobsPage reads one page of the BatchJobs that match f, sorted by name; its Continue
// names the next page, if any.
func (c *Client) ListJobsPage(ctx context.Context, f JobFilter, p Page) (apitypes.JobList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": f.State, "queue": f.Queue, "scheduling": f.Scheduling} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var l apitypes.JobList
	return l, c.do(ctx, http.MethodGet, "/jobs", p.query(q), nil, &l)
}

// GetJob reads one BatchJob.
func (c *Client) GetJob(ctx context.Context, name string) (apitypes.Job, error) {
	var j apitypes.Job
	return j, c.do(ctx, http.MethodGet, "/jobs/"+url.PathEscape(name), nil, nil, &j)
}

// GetTestBed reads a test bed with its slots.
func (c *Client) GetTestBed(ctx context.Context, name string) (apitypes.TestBed, error) {
	var tb apitypes.TestBed
	return tb, c.do(ctx, http.MethodGet, "/testbeds/"+url.PathEscape(name), nil, nil, &tb)
}

// Queues answers a test bed's queues as its Admission workflow sees them: shares, usage,
// and the waiting and running jobs. A test bed no Scheduling has used yet has no queues
// (404).
func (c *Client) Queues(ctx context.Context, testBed string) (apitypes.QueueTree, error) {
	var t apitypes.QueueTree
	return t, c.do(ctx, http.MethodGet, "/testbeds/"+url.PathEscape(testBed)+"/queues", nil, nil, &t)
}

// MoveJob moves a queued or running job to another queue.
func (c *Client) MoveJob(ctx context.Context, job, queue string) (apitypes.MoveResult, error) {
	var m apitypes.MoveResult
	return m, c.do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(job)+"/move", nil, apitypes.MoveRequest{Queue: queue}, &m)
}

// KillJob kills a job's run, giving reason (may be empty) for its status message.
func (c *Client) KillJob(ctx context.Context, job, reason string) (apitypes.KillResult, error) {
	var k apitypes.KillResult
	var q url.Values
	if reason != "" {
		q = url.Values{"reason": {reason}}
	}
	return k, c.do(ctx, http.MethodDelete, "/jobs/"+url.PathEscape(job)+"/run", q, nil, &k)
}

// PatchSchedulerData sets (a value) or removes (nil) notes of the job's scheduler data and
// answers the job as it is then. Names left out of the patch stay.
func (c *Client) PatchSchedulerData(ctx context.Context, job string, patch apitypes.SchedulerDataPatch) (apitypes.Job, error) {
	var j apitypes.Job
	return j, c.do(ctx, http.MethodPatch, "/jobs/"+url.PathEscape(job)+"/scheduler-data", nil, patch, &j)
}

// endpoint is the address of an API path (under /api/v1, its names already escaped) with
// the query and the namespace.
func (c *Client) endpoint(path string, q url.Values) *url.URL {
	u := *c.base
	u.RawPath = u.EscapedPath() + "/api/v1" + path
	if p, err := url.PathUnescape(u.RawPath); err == nil {
		u.Path = p
	}
	if c.namespace != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("namespace", c.namespace)
	}
	u.RawQuery = q.Encode()
	return &u
}

// do sends one request with the token and a JSON body (if any), and decodes a 2xx answer
// into out; any other answer is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	u := c.endpoint(path, q)
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode the body: %w", method, u.Path, err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, u.Redacted(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(method, u.Path, resp, raw)
	}
	if out == nil {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%s %s answered %d with %q, not JSON: %s", method, u.Path, resp.StatusCode, resp.Header.Get("Content-Type"), snippet(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, u.Path, err)
	}
	return nil
}

// snippet is the start of a body, for messages.
func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
