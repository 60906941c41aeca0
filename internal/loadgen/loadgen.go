// Package loadgen drives the REST API with a mix of reads and writes for a fixed time and
// measures each kind of request: how many, how many failed, and the latency percentiles.
// `slotplane load` runs it against a live API; the API's tests run it against the real
// platform.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// Options say what to load and how hard.
type Options struct {
	// Server is the API's base address (http://host:port), Token its bearer token.
	Server, Token string
	// Namespace is passed as ?namespace= when set.
	Namespace string
	// TestBed is the test bed the reads ask about (default "bed").
	TestBed string
	// Duration bounds the run (default 30s); Workers send requests in parallel, each as
	// soon as its last one is answered (default 8).
	Duration time.Duration
	Workers  int
	// WriteShare is the fraction of requests that create a BatchJob (zero: 0.2; negative:
	// reads only).
	WriteShare float64
	// Prefix starts the names of the jobs the run creates (default "load-<unix time>-").
	Prefix string
	// Client sends the requests (default: a client with a 10s timeout and enough idle
	// connections for the workers).
	Client *http.Client
}

// Kind is one kind of request of the mix.
type Kind string

// The mix: mostly reads of what the dashboard and external schedulers read, and creations
// of BatchJobs.
const (
	ListJobs        Kind = "GET /jobs?state=Ready"
	GetJob          Kind = "GET /jobs/{name}"
	GetTestBed      Kind = "GET /testbeds/{name}"
	ListSchedulings Kind = "GET /schedulings"
	CreateJob       Kind = "POST /jobs"
)

var reads = []Kind{ListJobs, GetJob, GetTestBed, ListSchedulings}

// Stats are one kind's figures.
type Stats struct {
	Kind          Kind
	Count, Errors int
	P50, P90, P99 time.Duration
	Max           time.Duration
	// FirstError is the first failure's description, if any.
	FirstError string
}

// Report is a run's outcome.
type Report struct {
	Duration time.Duration
	Workers  int
	Kinds    []Stats
	All      Stats
	// Created are the names of the jobs the run made (for cleaning up).
	Created []string
}

// Errors is how many requests failed, of every kind.
func (r Report) Errors() int { return r.All.Errors }

// Table writes the report as an aligned table.
func (r Report) Table(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "request\trequests\terrors\tp50\tp90\tp99\tmax\t\n")
	row := func(s Stats) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", s.Kind, s.Count, s.Errors, ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max))
	}
	for _, s := range r.Kinds {
		row(s)
	}
	row(r.All)
	_ = tw.Flush()
	fmt.Fprintf(w, "%d requests in %s with %d workers: %.0f requests/s\n", r.All.Count, r.Duration.Round(time.Millisecond), r.Workers, float64(r.All.Count)/r.Duration.Seconds())
	for _, s := range r.Kinds {
		if s.FirstError != "" {
			fmt.Fprintf(w, "first error of %s: %s\n", s.Kind, s.FirstError)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

type sample struct {
	kind Kind
	took time.Duration
	err  error
}

// Run loads the API until Duration has passed or ctx ends. Requests still in flight at
// the end are waited for and counted.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Server == "" {
		return Report{}, fmt.Errorf("loadgen: no server")
	}
	if o.TestBed == "" {
		o.TestBed = "bed"
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.WriteShare == 0 {
		o.WriteShare = 0.2
	}
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("load-%d-", time.Now().Unix())
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.Workers * 2}}
	}
	g := &generator{o: o}
	// A job to read, made before the clock starts.
	if err := g.create(ctx, o.Prefix+"seed"); err != nil {
		return Report{}, fmt.Errorf("loadgen: create the job the reads ask for: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	samples := make([][]sample, o.Workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				kind := reads[rng.IntN(len(reads))]
				if rng.Float64() < o.WriteShare {
					kind = CreateJob
				}
				t0 := time.Now()
				err := g.do(context.WithoutCancel(ctx), kind)
				samples[w] = append(samples[w], sample{kind, time.Since(t0), err})
			}
		}()
	}
	wg.Wait()
	r := Report{Duration: time.Since(start), Workers: o.Workers, Created: g.created()}
	byKind := map[Kind][]sample{}
	var all []sample
	for _, ws := range samples {
		for _, s := range ws {
			byKind[s.kind] = append(byKind[s.kind], s)
			all = append(all, s)
		}
	}
	for _, k := range append(slices.Clone(reads), CreateJob) {
		r.Kinds = append(r.Kinds, stats(k, byKind[k]))
	}
	r.All = stats("all", all)
	return r, nil
}

func stats(k Kind, ss []sample) Stats {
	st := Stats{Kind: k, Count: len(ss)}
	took := make([]time.Duration, 0, len(ss))
	for _, s := range ss {
		took = append(took, s.took)
		if s.err != nil {
			if st.Errors == 0 {
				st.FirstError = s.err.Error()
			}
			st.Errors++
		}
	}
	if len(took) == 0 {
		return st
	}
	slices.Sort(took)
	at := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	st.P50, st.P90, st.P99, st.Max = at(0.50), at(0.90), at(0.99), took[len(took)-1]
	return st
}

type generator struct {
	o    Options
	n    atomic.Int64
	mu   sync.Mutex
	made []string
}

func (g *generator) created() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.made)
}

func (g *generator) do(ctx context.Context, k Kind) error {
	switch k {
	case ListJobs:
		return g.send(ctx, "GET", "/jobs", url.Values{"state": {"Ready"}}, nil, http.StatusOK)
	case GetJob:
		return g.send(ctx, "GET", "/jobs/"+g.o.Prefix+"seed", nil, nil, http.StatusOK)
	case GetTestBed:
		return g.send(ctx, "GET", "/testbeds/"+g.o.TestBed, nil, nil, http.StatusOK)
	case ListSchedulings:
		return g.send(ctx, "GET", "/schedulings", nil, nil, http.StatusOK)
	case CreateJob:
		return g.create(ctx, fmt.Sprintf("%s%d", g.o.Prefix, g.n.Add(1)))
	}
	return fmt.Errorf("unknown request kind %q", k)
}

func (g *generator) create(ctx context.Context, name string) error {
	body := map[string]any{
		"name": name, "framework": "spark",
		"application":     map[string]any{"image": "registry.example/load:1", "mainClass": "org.example.Load", "mainApplicationFile": "local:///opt/load.jar"},
		"driverResources": map[string]any{"cpu": "250m", "memory": "512Mi"},
	}
	if err := g.send(ctx, "POST", "/jobs", nil, body, http.StatusCreated); err != nil {
		return err
	}
	g.mu.Lock()
	g.made = append(g.made, name)
	g.mu.Unlock()
	return nil
}

// send makes one request and checks its status; the body is read to the end so the
// connection is reused.
func (g *generator) send(ctx context.Context, method, path string, q url.Values, body any, want int) error {
	if g.o.Namespace != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("namespace", g.o.Namespace)
	}
	u := strings.TrimSuffix(g.o.Server, "/") + "/api/v1" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.o.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	return nil
}
