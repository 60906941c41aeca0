package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// manifest is one object of a submitted file, ready to send.
type manifest struct {
	source    string // where it was: FILE document N
	kind      string // BatchJob or Scheduling
	namespace string // metadata.namespace; empty: the command's
	job       *apitypes.JobRequest
	sched     *apitypes.SchedulingRequest
}

func (m manifest) name() string {
	if m.job != nil {
		return m.job.Name
	}
	return m.sched.Name
}

// Submit creates the BatchJobs and Schedulings of the files through the API: all BatchJobs
// first, in file order, then the Schedulings that run them. A file named - is read from
// stdin. Every document is read and checked before anything is sent; the first refused
// object stops the rest.
func Submit(ctx context.Context, conn Connection, files []string, stdin io.Reader, out io.Writer) error {
	all, err := readManifests(files, stdin)
	if err != nil {
		return err
	}
	for _, m := range all {
		// As kubectl: an explicit namespace that contradicts the object's is a mistake.
		if conn.Namespace != "" && m.namespace != "" && m.namespace != conn.Namespace {
			return fmt.Errorf("%s (%s %s) is in namespace %s, not %s as -namespace says; nothing was sent", m.source, m.kind, m.name(), m.namespace, conn.Namespace)
		}
	}
	c, err := conn.Client()
	if err != nil {
		return err
	}
	// Jobs first: a Scheduling refers to jobs that must exist.
	slices.SortStableFunc(all, func(a, b manifest) int {
		return boolInt(a.kind == apitypes.KindScheduling) - boolInt(b.kind == apitypes.KindScheduling)
	})
	return create(ctx, c, all, out)
}

// readManifests reads and decodes every file, and fails if they hold no object at all.
func readManifests(files []string, stdin io.Reader) ([]manifest, error) {
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
			return nil, err
		}
		ms, err := parseManifests(name, data)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no BatchJob or Scheduling in %s", strings.Join(files, ", "))
	}
	return all, nil
}

// create sends the objects in order and says each one it created. A refusal names the
// object and what was created before it, since nothing is rolled back.
func create(ctx context.Context, c *apiclient.Client, all []manifest, out io.Writer) error {
	var created []string
	for _, m := range all {
		cl := c
		if m.namespace != "" {
			cl = c.InNamespace(m.namespace)
		}
		var ns, what string
		var err error
		if m.job != nil {
			var j apitypes.Job
			j, err = cl.CreateJob(ctx, *m.job)
			ns, what = j.Namespace, "batchjob/"+m.name()
		} else {
			var s apitypes.Scheduling
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
			return &userError{msg: msg, err: err}
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
	case head.Kind != apitypes.KindBatchJob && head.Kind != apitypes.KindScheduling:
		return nil, fmt.Errorf("%s: kind %s (apiVersion %s) cannot be submitted: submit creates BatchJobs and Schedulings (%s) only", where, head.Kind, head.APIVersion, want)
	case head.APIVersion != want:
		return nil, fmt.Errorf("%s: %s has apiVersion %q; want %s", where, head.Kind, head.APIVersion, want)
	}
	if head.Kind == apitypes.KindBatchJob {
		return decodeBatchJob(where, js)
	}
	return decodeScheduling(where, js)
}

// decodeBatchJob turns a BatchJob into the API's request to create it.
func decodeBatchJob(where string, js []byte) ([]manifest, error) {
	var j v1alpha1.BatchJob
	if err := decodeStrict(where, apitypes.KindBatchJob, js, &j); err != nil {
		return nil, err
	}
	if err := checkNamed(where, apitypes.KindBatchJob, j.Name, j.GenerateName); err != nil {
		return nil, err
	}
	return []manifest{{source: where, kind: apitypes.KindBatchJob, namespace: j.Namespace, job: &apitypes.JobRequest{
		Name: j.Name, Framework: j.Spec.Framework, Application: j.Spec.Application, DriverResources: j.Spec.DriverResources,
		// A user or groups other than the caller's need the caller to be allowed to
		// impersonate them; the API says so if not.
		Queue: j.Spec.Queue, User: j.Spec.User, Groups: j.Spec.Groups, Labels: j.Labels, Annotations: j.Annotations,
		SparkApplication: j.Spec.SparkApplication, FlinkDeployment: j.Spec.FlinkDeployment,
	}}}, nil
}

// decodeScheduling turns a Scheduling into the API's request to create it. The API takes
// no labels or annotations for one, so a Scheduling with them is refused here rather than
// sent without them.
func decodeScheduling(where string, js []byte) ([]manifest, error) {
	var s v1alpha1.Scheduling
	if err := decodeStrict(where, apitypes.KindScheduling, js, &s); err != nil {
		return nil, err
	}
	if err := checkNamed(where, apitypes.KindScheduling, s.Name, s.GenerateName); err != nil {
		return nil, err
	}
	if len(s.Labels) > 0 || len(s.Annotations) > 0 {
		return nil, fmt.Errorf("%s (Scheduling %s): the API takes no labels or annotations for a Scheduling: remove them, or use kubectl", where, s.Name)
	}
	return []manifest{{source: where, kind: apitypes.KindScheduling, namespace: s.Namespace, sched: &apitypes.SchedulingRequest{
		Name: s.Name, TestBed: s.Spec.TestBed, Mode: s.Spec.Mode, Queue: s.Spec.Queue, Jobs: s.Spec.Jobs,
		TTLSecondsAfterFinished: s.Spec.TTLSecondsAfterFinished,
	}}}, nil
}

// decodeStrict decodes an object refusing unknown fields: a misspelt field is refused, not
// dropped.
func decodeStrict(where, kind string, js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s (%s): %w", where, kind, err)
	}
	return nil
}

// checkNamed insists on metadata.name: the API creates objects by name only.
func checkNamed(where, kind, name, generateName string) error {
	switch {
	case generateName != "":
		return fmt.Errorf("%s (%s): metadata.generateName is not supported: give metadata.name", where, kind)
	case name == "":
		return fmt.Errorf("%s (%s): metadata.name is required", where, kind)
	}
	return nil
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
