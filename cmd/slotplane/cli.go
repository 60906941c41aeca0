package main

// The commands that talk to the REST API as a user does: submit, get and watch. Each is a
// function of its arguments and its output, so that tests call it as main does.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"slotplane/api"
	"slotplane/apiclient"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
)

// apiFlags are the flags of every command that calls the API.
type apiFlags struct {
	server, token, namespace *string
}

func addAPIFlags(fs *flag.FlagSet) *apiFlags {
	return &apiFlags{
		server: fs.String("server", envOr("SLOTPLANE_SERVER", "http://127.0.0.1:8088"), "the REST API's address (env SLOTPLANE_SERVER)"),
		token:  fs.String("token", envOr("SLOTPLANE_TOKEN", ""), "bearer token for the API; slotplane dev prints one (env SLOTPLANE_TOKEN)"),
		namespace: fs.String("namespace", envOr("SLOTPLANE_NAMESPACE", ""),
			"namespace to work in (env SLOTPLANE_NAMESPACE; default: the API's own default namespace)"),
	}
}

// client makes the API client the flags describe.
func (f *apiFlags) client() (*apiclient.Client, error) {
	if *f.token == "" {
		return nil, errors.New("no API token: pass -token or set SLOTPLANE_TOKEN (`slotplane dev` prints its token, and keeps it in its state directory's api-token file)")
	}
	return apiclient.New(*f.server, *f.token, apiclient.WithNamespace(*f.namespace))
}

// cliError is an error rewritten for a person; the original stays reachable.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// explain rewrites an error of the API client for a person: the API's message, each
// field at fault on a line of its own, and a hint for the usual mistakes (a wrong token,
// a server that is not running). Other errors pass unchanged.
func explain(err error, server string) error {
	var se *apiclient.StatusError
	var op *net.OpError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		var b strings.Builder
		b.WriteString(se.API.Message)
		for _, f := range se.API.Fields {
			if line := f.Field + ": " + f.Message; line != se.API.Message {
				b.WriteString("\n    " + line)
			}
		}
		if se.Status == 401 {
			b.WriteString("\n(the API at " + server + " does not accept the token: check -token or SLOTPLANE_TOKEN)")
		}
		return &cliError{msg: b.String(), err: err}
	case errors.As(err, &op) && op.Op == "dial":
		return &cliError{msg: fmt.Sprintf("cannot reach the API at %s: %v (is it running? -server or SLOTPLANE_SERVER names it)", server, op.Err), err: err}
	}
	return err
}

// parseInterleaved parses flags that may come before, between or after the positional
// arguments (get jobs -o json), and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// --- submit ---

func runSubmit(ctx context.Context, args []string) error {
	return submitCommand(ctx, args, os.Stdin, os.Stdout)
}

// fileList is a repeatable -f.
type fileList []string

func (l *fileList) String() string     { return strings.Join(*l, ",") }
func (l *fileList) Set(v string) error { *l = append(*l, v); return nil }

// manifest is one object of a submitted file, ready to send.
type manifest struct {
	source    string // where it was: FILE document N
	kind      string // BatchJob or Scheduling
	namespace string // metadata.namespace; empty: the command's
	job       *api.JobRequest
	sched     *api.SchedulingRequest
}

func (m manifest) name() string {
	if m.job != nil {
		return m.job.Name
	}
	return m.sched.Name
}

// submitCommand creates the BatchJobs and Schedulings of the files through the API: all
// BatchJobs first, in file order, then the Schedulings that run them. Every document is
// read and checked before anything is sent; the first refused object stops the rest.
func submitCommand(ctx context.Context, args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	af := addAPIFlags(fs)
	var files fileList
	fs.Var(&files, "f", "file of BatchJobs and Schedulings as kubectl takes them (YAML with several documents, or JSON); - reads stdin; may be repeated")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane submit -f FILE [-f FILE...] [flags]\n\nCreates the BatchJobs, then the Schedulings, of the files through the REST API.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: name files with -f", fs.Arg(0))
	}
	if len(files) == 0 {
		return errors.New("-f names the file to submit (- for stdin)")
	}
	var all []manifest
	for _, f := range files {
		var data []byte
		var err error
		name := f
		if f == "-" {
			name = "stdin"
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return err
		}
		ms, err := parseManifests(name, data)
		if err != nil {
			return err
		}
		all = append(all, ms...)
	}
	if len(all) == 0 {
		return fmt.Errorf("no BatchJob or Scheduling in %s", strings.Join(files, ", "))
	}
	for _, m := range all {
		// As kubectl: an explicit namespace that contradicts the object's is a mistake.
		if *af.namespace != "" && m.namespace != "" && m.namespace != *af.namespace {
			return fmt.Errorf("%s (%s %s) is in namespace %s, not %s as -namespace says; nothing was sent", m.source, m.kind, m.name(), m.namespace, *af.namespace)
		}
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	// Jobs first: a Scheduling refers to jobs that must exist.
	slices.SortStableFunc(all, func(a, b manifest) int {
		return boolInt(a.kind == api.KindScheduling) - boolInt(b.kind == api.KindScheduling)
	})
	var created []string
	for _, m := range all {
		cl := c
		if m.namespace != "" {
			cl = c.InNamespace(m.namespace)
		}
		var ns, what string
		var err error
		if m.job != nil {
			var j api.Job
			j, err = cl.CreateJob(ctx, *m.job)
			ns, what = j.Namespace, "batchjob/"+m.name()
		} else {
			var s api.Scheduling
			s, err = cl.CreateScheduling(ctx, *m.sched)
			ns, what = s.Namespace, "scheduling/"+m.name()
		}
		if err != nil {
			msg := fmt.Sprintf("%s (%s %s): %v", m.source, m.kind, m.name(), explain(err, c.Server()))
			if len(created) > 0 {
				msg += fmt.Sprintf("\n(created before it: %s; nothing after it was sent)", strings.Join(created, ", "))
			} else {
				msg += "\n(nothing was created)"
			}
			return &cliError{msg: msg, err: err}
		}
		created = append(created, what)
		fmt.Fprintf(out, "%s created in namespace %s\n", what, ns)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseManifests reads the objects of one file: YAML documents separated by ---, or
// JSON (one object, an array of them, or a v1 List). Comment-only documents are skipped;
// documents are counted from 1, as a person reads the file.
func parseManifests(source string, data []byte) ([]manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err == nil && (len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null") {
			continue // nothing but comments or blank lines
		}
		n++
		where := fmt.Sprintf("%s document %d", source, n)
		if err != nil {
			return nil, fmt.Errorf("%s: not valid YAML or JSON: %w", where, err)
		}
		ms, err := decodeObjects(where, js)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
}

// decodeObjects turns one document's JSON into the requests it stands for.
func decodeObjects(where string, js []byte) ([]manifest, error) {
	js = bytes.TrimSpace(js)
	if len(js) > 0 && js[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(js, &items); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return decodeItems(where, items)
	}
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%s: not an object with apiVersion and kind: %w", where, err)
	}
	want := v1alpha1.GroupVersion.String()
	switch {
	case head.Kind == "":
		return nil, fmt.Errorf("%s: no kind: each object needs apiVersion: %s and kind: BatchJob or Scheduling", where, want)
	case head.Kind == "List" && head.APIVersion == "v1":
		return decodeItems(where, head.Items)
	case head.Kind != api.KindBatchJob && head.Kind != api.KindScheduling:
		return nil, fmt.Errorf("%s: kind %s (apiVersion %s) cannot be submitted: submit creates BatchJobs and Schedulings (%s) only", where, head.Kind, head.APIVersion, want)
	case head.APIVersion != want:
		return nil, fmt.Errorf("%s: %s has apiVersion %q; want %s", where, head.Kind, head.APIVersion, want)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields() // a misspelt field is refused, not dropped
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("%s (%s): %w", where, head.Kind, err)
		}
		return nil
	}
	named := func(kind string, meta struct{ name, generateName string }) error {
		switch {
		case meta.generateName != "":
			return fmt.Errorf("%s (%s): metadata.generateName is not supported: give metadata.name", where, kind)
		case meta.name == "":
			return fmt.Errorf("%s (%s): metadata.name is required", where, kind)
		}
		return nil
	}
	if head.Kind == api.KindBatchJob {
		var j v1alpha1.BatchJob
		if err := strict(&j); err != nil {
			return nil, err
		}
		if err := named(head.Kind, struct{ name, generateName string }{j.Name, j.GenerateName}); err != nil {
			return nil, err
		}
		return []manifest{{source: where, kind: head.Kind, namespace: j.Namespace, job: &api.JobRequest{
			Name: j.Name, Framework: j.Spec.Framework, Application: j.Spec.Application, DriverResources: j.Spec.DriverResources,
			// A user or groups other than the caller's need the caller to be allowed to
			// impersonate them; the API says so if not.
			Queue: j.Spec.Queue, User: j.Spec.User, Groups: j.Spec.Groups, Labels: j.Labels, Annotations: j.Annotations,
			SparkApplication: j.Spec.SparkApplication, FlinkDeployment: j.Spec.FlinkDeployment,
		}}}, nil
	}
	var s v1alpha1.Scheduling
	if err := strict(&s); err != nil {
		return nil, err
	}
	if err := named(head.Kind, struct{ name, generateName string }{s.Name, s.GenerateName}); err != nil {
		return nil, err
	}
	if len(s.Labels) > 0 || len(s.Annotations) > 0 {
		return nil, fmt.Errorf("%s (Scheduling %s): the API takes no labels or annotations for a Scheduling: remove them, or use kubectl", where, s.Name)
	}
	return []manifest{{source: where, kind: head.Kind, namespace: s.Namespace, sched: &api.SchedulingRequest{
		Name: s.Name, TestBed: s.Spec.TestBed, Mode: s.Spec.Mode, Queue: s.Spec.Queue, Jobs: s.Spec.Jobs,
	}}}, nil
}

func decodeItems(where string, items []json.RawMessage) ([]manifest, error) {
	var out []manifest
	for i, item := range items {
		ms, err := decodeObjects(fmt.Sprintf("%s item %d", where, i+1), item)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// --- get ---

func runGet(ctx context.Context, args []string) error {
	return getCommand(ctx, args, os.Stdout)
}

// getCommand prints jobs, Schedulings, a test bed's slots or its queues as a table, or
// as the API's JSON with -o json.
func getCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	af := addAPIFlags(fs)
	output := fs.String("o", "table", "output: table, or json (the API's answer)")
	testBed := fs.String("testbed", envOr("SLOTPLANE_TESTBED", "bed"), "the test bed of get slots and get queues (or give it as NAME)")
	state := fs.String("state", "", "get jobs: only jobs in this state (Ready, InQueue, Submitted, Running, Completed, Failed)")
	queue := fs.String("queue", "", "get jobs: only jobs of this queue")
	sched := fs.String("scheduling", "", "get jobs: only jobs this Scheduling holds")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane get jobs|schedulings|slots|queues [NAME] [flags]\n\n"+
			"NAME is a job or Scheduling; for slots and queues, the test bed.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return errors.New("want what to get, and at most one name: slotplane get jobs|schedulings|slots|queues [NAME] [flags]")
	}
	if *output != "table" && *output != "json" {
		return fmt.Errorf("-o %s: want table or json", *output)
	}
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	kind := strings.ToLower(pos[0])
	isJobs := slices.Contains([]string{"jobs", "job", "batchjobs", "batchjob", "bj"}, kind)
	if !isJobs && (*state != "" || *queue != "" || *sched != "") {
		return errors.New("-state, -queue and -scheduling filter get jobs only")
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	bed := *testBed
	if name != "" {
		bed = name
	}
	var show func() (any, func(io.Writer) error, error)
	switch {
	case isJobs:
		show = func() (any, func(io.Writer) error, error) {
			return getJobs(ctx, c, name, apiclient.JobFilter{State: *state, Queue: *queue, Scheduling: *sched})
		}
	case slices.Contains([]string{"schedulings", "scheduling", "sched"}, kind):
		show = func() (any, func(io.Writer) error, error) { return getSchedulings(ctx, c, name) }
	case slices.Contains([]string{"slots", "slot"}, kind):
		show = func() (any, func(io.Writer) error, error) { return getSlots(ctx, c, bed) }
	case slices.Contains([]string{"queues", "queue"}, kind):
		show = func() (any, func(io.Writer) error, error) { return getQueues(ctx, c, bed) }
	default:
		return fmt.Errorf("cannot get %q: want jobs, schedulings, slots or queues", pos[0])
	}
	answer, table, err := show()
	if err != nil {
		return explain(err, c.Server())
	}
	if *output == "json" {
		raw, err := json.MarshalIndent(answer, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", raw)
		return err
	}
	return table(out)
}

// table writes aligned columns; the header is the first row.
func table(out io.Writer, rows [][]string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// or is s, or - when it is empty: a table's empty cell.
func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func slotList(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return or(strings.Join(parts, ","))
}

func getJobs(ctx context.Context, c *apiclient.Client, name string, f apiclient.JobFilter) (any, func(io.Writer) error, error) {
	var jobs []api.Job
	var answer any
	if name != "" {
		j, err := c.GetJob(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		jobs, answer = []api.Job{j}, j
	} else {
		l, err := c.ListJobs(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		jobs, answer = l.Items, l
	}
	return answer, func(out io.Writer) error {
		if len(jobs) == 0 {
			_, err := fmt.Fprintln(out, "no jobs")
			return err
		}
		rows := [][]string{{"NAME", "FRAMEWORK", "STATE", "QUEUE", "USER", "SCHEDULING", "SLOTS"}}
		for _, j := range jobs {
			state := j.Status.State
			if state == "" {
				state = v1alpha1.JobReady // as the API reads a job no Scheduling touched
			}
			rows = append(rows, []string{j.Name, string(j.Framework), string(state), or(j.Queue), or(j.User), or(j.Scheduling), slotList(j.Status.Slots)})
		}
		return table(out, rows)
	}, nil
}

func getSchedulings(ctx context.Context, c *apiclient.Client, name string) (any, func(io.Writer) error, error) {
	var scheds []api.Scheduling
	var answer any
	if name != "" {
		s, err := c.GetScheduling(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		scheds, answer = []api.Scheduling{s}, s
	} else {
		l, err := c.ListSchedulings(ctx)
		if err != nil {
			return nil, nil, err
		}
		scheds, answer = l.Items, l
	}
	return answer, func(out io.Writer) error {
		if len(scheds) == 0 {
			_, err := fmt.Fprintln(out, "no schedulings")
			return err
		}
		rows := [][]string{{"NAME", "MODE", "STATE", "JOBS", "FINISHED", "RUNNING", "TESTBED"}}
		for _, s := range scheds {
			state := or(string(s.Status.State))
			if s.Deleting && !ended(s.Status.State) {
				state += " (cancelling)"
			}
			rows = append(rows, []string{s.Name, string(s.Mode), state, strconv.Itoa(totalJobs(s)),
				strconv.Itoa(int(s.Status.FinishedJobs)), strconv.Itoa(int(s.Status.RunningJobs)), s.TestBed})
		}
		return table(out, rows)
	}, nil
}

// totalJobs is a Scheduling's job count: its status's, or its spec's before the workflow
// wrote one.
func totalJobs(s api.Scheduling) int {
	if s.Status.TotalJobs > 0 {
		return int(s.Status.TotalJobs)
	}
	return len(s.Jobs)
}

// ended is whether a Scheduling in this state is done for good.
func ended(st v1alpha1.SchedulingState) bool {
	return st == v1alpha1.SchedulingCompleted || st == v1alpha1.SchedulingFailed || st == v1alpha1.SchedulingCancelled
}

// getSlots shows a test bed's slots, each with the job whose pod holds it. The API names
// a slot's pod, not its job: the job is the one running in the bed that was given the
// slot.
func getSlots(ctx context.Context, c *apiclient.Client, bed string) (any, func(io.Writer) error, error) {
	tb, err := c.GetTestBed(ctx, bed)
	if err != nil {
		return nil, nil, err
	}
	holder, err := slotHolders(ctx, c, bed)
	if err != nil {
		return nil, nil, err
	}
	return tb, func(out io.Writer) error {
		rows := [][]string{{"POSITION", "NODE", "STATE", "POD", "JOB"}}
		for _, s := range tb.Status.Slots {
			job := ""
			if s.State != v1alpha1.SlotFree {
				job = holder[s.Position]
			}
			rows = append(rows, []string{strconv.Itoa(int(s.Position)), s.NodeName, string(s.State), or(s.PodName), or(job)})
		}
		if err := table(out, rows); err != nil {
			return err
		}
		st := tb.Status
		_, err := fmt.Fprintf(out, "\n%d slots on %d nodes: %d free, %d reserved, %d occupied\n", st.Total, st.Nodes, st.Free, st.Reserved, st.Occupied)
		return err
	}, nil
}

// slotHolders maps slot positions of the bed to the jobs that were given them and have not
// ended. A user who may not list jobs or Schedulings gets the slots without jobs.
func slotHolders(ctx context.Context, c *apiclient.Client, bed string) (map[int32]string, error) {
	holder := map[int32]string{}
	jobs, err := c.ListJobs(ctx, apiclient.JobFilter{})
	if apiclient.IsForbidden(err) {
		return holder, nil
	} else if err != nil {
		return nil, err
	}
	bedOf := map[string]string{} // Scheduling -> its test bed, for jobs whose status names none
	if scheds, err := c.ListSchedulings(ctx); err == nil {
		for _, s := range scheds.Items {
			bedOf[s.Name] = s.TestBed
		}
	} else if !apiclient.IsForbidden(err) {
		return nil, err
	}
	for _, j := range jobs.Items {
		if j.Status.State != v1alpha1.JobSubmitted && j.Status.State != v1alpha1.JobRunning {
			continue
		}
		b := j.Status.TestBed
		if b == "" {
			b = bedOf[cmp.Or(j.Status.Scheduling, j.Scheduling)]
		}
		if b != bed {
			continue
		}
		for _, id := range j.Status.Slots {
			holder[id] = j.Name
		}
	}
	return holder, nil
}

// resources is an amount in the allocation file's form ("512 mb, 0.25 vcores").
// resources is the allocation file's form, with fractions where the amount is not whole:
// "512 mb, 0.25 vcores".
func resources(r api.Resources) string {
	return queue.Resources{MemoryBytes: r.MemoryBytes, MilliCores: r.MilliCores}.String()
}

// getQueues shows a test bed's queues, then the jobs waiting (with why) and running.
// The API reports no queue weights; the steady fair share is what they come to.
func getQueues(ctx context.Context, c *apiclient.Client, bed string) (any, func(io.Writer) error, error) {
	t, err := c.Queues(ctx, bed)
	if err != nil {
		return nil, nil, err
	}
	return t, func(out io.Writer) error {
		if t.ConfigError != "" {
			fmt.Fprintf(out, "the newest allocation file was refused, the last good one is in force: %s\n\n", t.ConfigError)
		}
		rows := [][]string{{"PATH", "STEADY SHARE", "FAIR SHARE", "USAGE", "RUNNING", "PENDING"}}
		for _, q := range t.Queues {
			rows = append(rows, []string{q.Path, resources(q.SteadyShare), resources(q.FairShare), resources(q.Usage), strconv.Itoa(q.RunningJobs), strconv.Itoa(q.WaitingJobs)})
		}
		if err := table(out, rows); err != nil {
			return err
		}
		if len(t.Waiting) > 0 {
			rows = [][]string{{"WAITING JOB", "SCHEDULING", "QUEUE", "SLOTS", "REASON"}}
			for _, j := range t.Waiting {
				rows = append(rows, []string{j.Job, j.Scheduling, j.Queue, strconv.Itoa(int(j.Slots)), or(j.Reason)})
			}
			fmt.Fprintln(out)
			if err := table(out, rows); err != nil {
				return err
			}
		}
		if len(t.Running) > 0 {
			rows = [][]string{{"RUNNING JOB", "SCHEDULING", "QUEUE", "SLOTS", "STATE"}}
			for _, j := range t.Running {
				rows = append(rows, []string{j.Job, j.Scheduling, j.Queue, slotList(j.Granted), or(j.State)})
			}
			fmt.Fprintln(out)
			return table(out, rows)
		}
		return nil
	}, nil
}

// --- watch ---

func runWatch(ctx context.Context, args []string) error {
	err := watchCommand(ctx, args, os.Stdout)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // Ctrl-C: the user stopped watching
	}
	return err
}

// watchBackoff is the first wait before reconnecting to the change feed; it doubles up to
// maxWatchBackoff.
var watchBackoff, maxWatchBackoff = time.Second, 10 * time.Second

// watchCommand follows Schedulings on the change feed and draws one progress bar for each
// until all have ended. A lost connection is opened again, resuming after the last event
// seen, for up to -retry-for; a refused one (token, namespace) is not retried.
func watchCommand(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	af := addAPIFlags(fs)
	retryFor := fs.Duration("retry-for", time.Minute, "how long to keep reconnecting after the feed is lost (0: give up at once)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: slotplane watch [SCHEDULING...] [flags]\n\n"+
			"Follows Schedulings (default: all of the namespace) until every one has ended.")
		fs.PrintDefaults()
	}
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	p := newProgress(names)
	v := &progressView{out: out, ansi: isTerminal(out), last: map[string]string{}}
	var lastRV string
	var lostAt time.Time
	var lostErr error
	wait := watchBackoff
	for {
		w, err := c.Watch(ctx, []string{apiclient.WatchSchedulings}, lastRV)
		if err != nil {
			switch st := apiclient.StatusOf(err); {
			case ctx.Err() != nil:
				return ctx.Err()
			case lostAt.IsZero(), st != 0 && st != 503 && st != 502 && st != 504:
				// The first connection, or a refusal that a retry would not change.
				return explain(err, c.Server())
			case time.Since(lostAt) > *retryFor:
				return fmt.Errorf("lost the change feed (%v), and could not reconnect within %s: %w", lostErr, *retryFor, explain(err, c.Server()))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, maxWatchBackoff)
			continue
		}
		if !lostAt.IsZero() {
			v.note(fmt.Sprintf("reconnected to the change feed, resuming after resourceVersion %s", or(lastRV)))
			lostAt, wait = time.Time{}, watchBackoff
		}
		done, err := follow(ctx, c, w, p, v, &lastRV)
		_ = w.Close()
		if err != nil {
			return err
		}
		if done {
			v.final(p.summary())
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lostErr = w.Err()
		if *retryFor <= 0 {
			return fmt.Errorf("lost the change feed: %v", lostErr)
		}
		lostAt = time.Now()
		v.note(fmt.Sprintf("lost the change feed (%v); reconnecting for up to %s", lostErr, *retryFor))
	}
}

// follow applies the feed's events to the progress and draws it, until every watched
// Scheduling has ended (true) or the feed ends (false).
func follow(ctx context.Context, c *apiclient.Client, w *apiclient.Watcher, p *progress, v *progressView, lastRV *string) (bool, error) {
	for ev := range w.Events() {
		if ev.ResourceVersion != "" {
			*lastRV = ev.ResourceVersion
		}
		switch ev.Type {
		case api.Resync:
			var items []api.Scheduling
			for _, it := range ev.Items {
				if s, err := it.Scheduling(); err == nil {
					items = append(items, s)
				}
			}
			p.resync(items)
			if !p.checked {
				// Named Schedulings the feed does not have yet may be younger than its
				// picture (created a moment ago); the API says whether they exist at all.
				for _, name := range p.missing() {
					s, err := c.GetScheduling(ctx, name)
					if err != nil {
						return false, explain(err, c.Server())
					}
					p.set(s)
				}
				p.checked = true
				if len(p.tracked) == 0 {
					return true, nil // nothing to wait for
				}
			}
		case api.Added, api.Modified:
			if s, err := ev.Scheduling(); err == nil {
				p.set(s)
			}
		case api.Deleted:
			p.deleted(ev.Name())
		}
		if p.checked {
			v.draw(p.lines())
			if p.allEnded() {
				return true, nil
			}
		}
	}
	return false, nil
}

// progress is what is known of the watched Schedulings.
type progress struct {
	all     bool            // no names given: every Scheduling of the namespace
	tracked map[string]bool // the Schedulings followed
	latest  map[string]api.Scheduling
	gone    map[string]bool // deleted while watched: ended
	checked bool            // the named ones were found
}

func newProgress(names []string) *progress {
	p := &progress{all: len(names) == 0, tracked: map[string]bool{}, latest: map[string]api.Scheduling{}, gone: map[string]bool{}}
	for _, n := range names {
		p.tracked[n] = true
	}
	return p
}

func (p *progress) set(s api.Scheduling) {
	if p.all {
		p.tracked[s.Name] = true
	}
	if p.tracked[s.Name] {
		p.latest[s.Name] = s
		delete(p.gone, s.Name)
	}
}

func (p *progress) deleted(name string) {
	if p.tracked[name] {
		p.gone[name] = true
	}
}

// resync replaces the picture: a followed Scheduling that is not in it was deleted
// meanwhile.
func (p *progress) resync(items []api.Scheduling) {
	in := map[string]bool{}
	for _, s := range items {
		in[s.Name] = true
		p.set(s)
	}
	for name := range p.tracked {
		if _, seen := p.latest[name]; seen && !in[name] {
			p.gone[name] = true
		}
	}
}

// missing are the followed Schedulings not seen yet.
func (p *progress) missing() []string {
	var out []string
	for name := range p.tracked {
		if _, ok := p.latest[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (p *progress) allEnded() bool {
	for name := range p.tracked {
		if !p.gone[name] && !ended(p.latest[name].Status.State) {
			return false
		}
	}
	return len(p.tracked) > 0
}

// progressLine is one Scheduling's bar: key is its text without padding, to tell changes.
type progressLine struct{ name, padded, key string }

const barWidth = 20

func (p *progress) lines() []progressLine {
	names := slices.Sorted(maps.Keys(p.tracked))
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	out := make([]progressLine, 0, len(names))
	for _, n := range names {
		s := p.latest[n]
		total, finished := totalJobs(s), int(s.Status.FinishedJobs)
		filled := 0
		if total > 0 {
			filled = min(barWidth, finished*barWidth/total)
		}
		state := string(s.Status.State)
		switch {
		case p.gone[n]:
			state = "deleted"
		case state == "":
			state = "new" // its workflow has not written a state yet
		}
		if s.Deleting && !p.gone[n] && !ended(s.Status.State) {
			state += " (cancelling)"
		}
		if s.Status.State == v1alpha1.SchedulingFailed && s.Status.Message != "" {
			state += ": " + s.Status.Message
		}
		rest := fmt.Sprintf("[%s%s] %d/%d finished, %d running, %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
			finished, total, s.Status.RunningJobs, state)
		out = append(out, progressLine{name: n, padded: fmt.Sprintf("%-*s  %s", width, n, rest), key: n + " " + rest})
	}
	return out
}

// summary is the closing line: how the Schedulings ended.
func (p *progress) summary() string {
	counts := map[string]int{}
	for name := range p.tracked {
		st := string(p.latest[name].Status.State)
		if p.gone[name] {
			st = "deleted"
		}
		counts[st]++
	}
	var parts []string
	for _, st := range []string{"Completed", "Failed", "Cancelled", "deleted"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(p.tracked) == 0 {
		return "no Schedulings to watch"
	}
	return fmt.Sprintf("all %d Schedulings ended: %s", len(p.tracked), strings.Join(parts, ", "))
}

// progressView draws the bars: on a terminal it redraws them in place; elsewhere (a file,
// a pipe, a test) it prints a line per change, without escape codes.
type progressView struct {
	out   io.Writer
	ansi  bool
	drawn []progressLine    // on a terminal: what is on the screen, under the cursor's line
	last  map[string]string // elsewhere: each Scheduling's last printed line
}

func (v *progressView) draw(lines []progressLine) {
	if !v.ansi {
		for _, l := range lines {
			if v.last[l.name] != l.key {
				v.last[l.name] = l.key
				fmt.Fprintln(v.out, l.key)
			}
		}
		return
	}
	var b strings.Builder
	v.erase(&b)
	for _, l := range lines {
		b.WriteString(l.padded + "\n")
	}
	v.drawn = lines
	_, _ = io.WriteString(v.out, b.String())
}

// erase moves the cursor back over the bars drawn last and clears them.
func (v *progressView) erase(b *strings.Builder) {
	if len(v.drawn) > 0 {
		fmt.Fprintf(b, "\x1b[%dA", len(v.drawn))
	}
	b.WriteString("\r\x1b[J")
}

// note prints a message above the bars.
func (v *progressView) note(msg string) {
	if !v.ansi {
		fmt.Fprintln(v.out, msg)
		return
	}
	var b strings.Builder
	v.erase(&b)
	b.WriteString(msg + "\n")
	for _, l := range v.drawn {
		b.WriteString(l.padded + "\n")
	}
	_, _ = io.WriteString(v.out, b.String())
}

// final prints the closing line under the bars, which stay.
func (v *progressView) final(msg string) {
	fmt.Fprintln(v.out, msg)
}

// isTerminal is whether w is a terminal that understands cursor movement.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
