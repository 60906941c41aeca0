package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	temporal "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"slotplane/crds/v1alpha1"
	"slotplane/internal/kubeclient"
	"slotplane/internal/slotslices"
)

// The document names every route the server has, and no other; each of its references
// resolves and each path parameter is declared.
func TestOpenAPI_MatchesTheRoutes(t *testing.T) {
	h := newTestHandler(t)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &doc))
	documented := map[string]bool{}
	for path, ops := range doc["paths"].(map[string]any) {
		for method := range ops.(map[string]any) {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range h.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") {
			continue // the dashboard's page and files
		}
		served[r.Method+" "+regexp.MustCompile(`:([A-Za-z]+)`).ReplaceAllString(r.Path, "{$1}")] = true
	}
	require.Equal(t, keys(served), keys(documented))

	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs = append(refs, r)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	require.NotEmpty(t, refs)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, r := range refs {
		name, ok := strings.CutPrefix(r, "#/components/schemas/")
		require.True(t, ok, r)
		require.Contains(t, schemas, name)
	}
	for path, ops := range doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			declared := map[string]bool{}
			params, _ := op.(map[string]any)["parameters"].([]any)
			for _, p := range params {
				if p.(map[string]any)["in"] == "path" {
					declared[p.(map[string]any)["name"].(string)] = true
				}
			}
			for _, m := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(path, -1) {
				require.True(t, declared[m[1]], "%s %s: path parameter %s", method, path, m[1])
			}
		}
	}
}

// Real answers of the server, good and bad, match the schemas the document gives for
// their status: the document describes what the API sends, not what it was meant to.
func TestOpenAPI_AnswersMatchTheDocument(t *testing.T) {
	h := newTestHandler(t)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &doc))
	cases := []struct {
		method, path, route, auth string
		body                      string
		status                    int
	}{
		{"GET", "/api/v1/healthz", "/api/v1/healthz", "", "", 200},
		{"GET", "/api/v1/whoami", "/api/v1/whoami", "t", "", 200},
		{"GET", "/api/v1/whoami", "/api/v1/whoami", "", "", 401},
		{"GET", "/api/v1/schedulings", "/api/v1/schedulings", "t", "", 200},
		{"GET", "/api/v1/schedulings/nightly", "/api/v1/schedulings/{name}", "t", "", 200},
		{"GET", "/api/v1/schedulings/nope", "/api/v1/schedulings/{name}", "t", "", 404},
		{"GET", "/api/v1/jobs?state=Ready", "/api/v1/jobs", "t", "", 200},
		{"GET", "/api/v1/jobs?state=Asleep", "/api/v1/jobs", "t", "", 422},
		{"GET", "/api/v1/jobs/etl", "/api/v1/jobs/{name}", "t", "", 200},
		{"GET", "/api/v1/testbeds/bed", "/api/v1/testbeds/{name}", "t", "", 200},
		{"GET", "/api/v1/testbeds/bed/queues?format=xml", "/api/v1/testbeds/{name}/queues", "t", "", 422},
		{"GET", "/api/v1/testbeds/bed/queues?limit=-1", "/api/v1/testbeds/{name}/queues", "t", "", 422},
		{"GET", "/api/v1/testbeds/bed/queues?limit=lots", "/api/v1/testbeds/{name}/queues", "t", "", 422},
		{"POST", "/api/v1/jobs", "/api/v1/jobs", "t", `{"name":"new","framework":"flink","application":{"image":"i","mainApplicationFile":"local:///a.jar"}}`, 201},
		{"POST", "/api/v1/jobs", "/api/v1/jobs", "t", `{"name":"Bad"}`, 422},
		{"POST", "/api/v1/jobs", "/api/v1/jobs", "t", `{"name":`, 400},
		{"POST", "/api/v1/schedulings", "/api/v1/schedulings", "t", `{"name":"x","testBed":"bed","mode":"QueueBased","jobs":[{"name":"etl","replication":1}]}`, 503},
		{"PATCH", "/api/v1/schedulings/nightly", "/api/v1/schedulings/{name}", "t", `{"append":[{"name":"new","replication":1}]}`, 202},
		{"POST", "/api/v1/jobs/etl/move", "/api/v1/jobs/{name}/move", "t", `{"queue":"b"}`, 409},
		{"GET", "/api/v1/watch", "/api/v1/watch", "t", "", 503},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path+" "+strconv.Itoa(tc.status), func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", "Bearer "+tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			require.Equal(t, tc.status, rec.Code, "%s", body)
			op := doc["paths"].(map[string]any)[tc.route].(map[string]any)[strings.ToLower(tc.method)].(map[string]any)
			resp, ok := op["responses"].(map[string]any)[strconv.Itoa(tc.status)].(map[string]any)
			require.True(t, ok, "status %d is not documented for %s %s", tc.status, tc.method, tc.route)
			schema := resp["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
			var v any
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&v), "%s", body)
			require.Empty(t, conform(doc, schema, v, "$"), "%s", body)
		})
	}
}

// The queues route answers in two shapes, slotplane's and, with ?format=yarn, YARN's
// ResourceManager's: the document declares the parameter, and its schema takes both real
// answers and nothing else.
func TestOpenAPI_QueuesAnswerInEitherForm(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &doc))
	op := doc["paths"].(map[string]any)["/api/v1/testbeds/{name}/queues"].(map[string]any)["get"].(map[string]any)
	var names []string
	for _, p := range op["parameters"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "format")
	require.Contains(t, names, "limit")
	schema := op["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"]
	asJSON := func(v any) any {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var out any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&out))
		return out
	}
	report := yarnReport()
	report.Warnings = []string{"root is open"}
	require.Empty(t, conform(doc, schema, asJSON(queueTreeOf("bed", report)), "$"))
	require.Empty(t, conform(doc, schema, asJSON(yarnSchedulerOf(report)), "$"))
	require.NotEmpty(t, conform(doc, schema, map[string]any{"scheduler": map[string]any{}}, "$"), "a YARN answer without its schedulerInfo")
}

// The validator itself must catch what it is there to catch.
func TestOpenAPI_ConformCatchesMismatches(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(OpenAPIDocument(), &doc))
	ref := map[string]any{"$ref": "#/components/schemas/FieldError"}
	require.Empty(t, conform(doc, ref, map[string]any{"field": "a", "message": "b"}, "$"))
	require.NotEmpty(t, conform(doc, ref, map[string]any{"field": "a"}, "$"), "a required property is missing")
	require.NotEmpty(t, conform(doc, ref, map[string]any{"field": "a", "message": "b", "extra": 1}, "$"), "an undocumented property")
	require.NotEmpty(t, conform(doc, ref, map[string]any{"field": 1, "message": "b"}, "$"), "a wrong type")
}

// conform lists how v differs from schema: the subset of JSON Schema the document uses.
func conform(doc map[string]any, schema any, v any, at string) []string {
	s, _ := schema.(map[string]any)
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		return conform(doc, doc["components"].(map[string]any)["schemas"].(map[string]any)[name], v, at)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if len(conform(doc, a, v, at)) == 0 {
				return nil
			}
		}
		return []string{at + ": matches none of anyOf"}
	}
	typ, _ := s["type"].(string)
	var out []string
	switch typ {
	case "":
		return nil // any value
	case "null":
		if v != nil {
			return []string{at + ": want null"}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return []string{fmt.Sprintf("%s: want a string, got %T", at, v)}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{fmt.Sprintf("%s: want a boolean, got %T", at, v)}
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return []string{fmt.Sprintf("%s: want a number, got %T", at, v)}
		}
		if _, err := n.Int64(); typ == "integer" && err != nil {
			return []string{at + ": want an integer, got " + n.String()}
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an array, got %T", at, v)}
		}
		for i, x := range items {
			out = append(out, conform(doc, s["items"], x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", at, v)}
		}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				out = append(out, at+": missing "+r.(string))
			}
		}
		for k, x := range obj {
			if p, ok := props[k]; ok {
				out = append(out, conform(doc, p, x, at+"."+k)...)
			} else if extra, ok := s["additionalProperties"]; ok && extra != false {
				out = append(out, conform(doc, extra, x, at+"."+k)...)
			} else if ok && extra == false {
				out = append(out, at+": undocumented property "+k)
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// newTestHandler is the API over a fake cluster holding a test bed with two slots, a job
// and a Scheduling, and a Temporal client that never connects (routes that need Temporal
// answer 503 or 202).
func newTestHandler(t testing.TB) *gin.Engine {
	t.Helper()
	now := metav1.Now()
	bed := &v1alpha1.TestBed{ObjectMeta: metav1.ObjectMeta{Name: "bed", Namespace: "default", UID: "uid-bed"},
		Spec: v1alpha1.TestBedSpec{NodeLabel: "slotplane.io/node", SlotsPerNode: 2, ResourcesPerSlot: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		Status: v1alpha1.TestBedStatus{Total: 2, Free: 1, Occupied: 1,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllGhosts", LastTransitionTime: now}}}}
	objs := []client.Object{
		bed,
		&v1alpha1.BatchJob{ObjectMeta: metav1.ObjectMeta{Name: "etl", Namespace: "default"},
			Spec: v1alpha1.BatchJobSpec{Framework: v1alpha1.FrameworkSpark, Application: v1alpha1.Application{Image: "i", MainApplicationFile: "local:///a.jar"},
				DriverResources: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
			Status: v1alpha1.BatchJobStatus{State: v1alpha1.JobReady, QueuedAt: &now}},
		&v1alpha1.Scheduling{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
			Spec:   v1alpha1.SchedulingSpec{TestBed: "bed", Mode: v1alpha1.QueueBased, Jobs: []v1alpha1.SchedulingJob{{Name: "etl", Replication: 1}}},
			Status: v1alpha1.SchedulingStatus{State: v1alpha1.SchedulingScheduling}},
	}
	for _, s := range slotslices.Build(bed, []v1alpha1.SlotStatus{{Position: 0}, {Position: 1}}) {
		objs = append(objs, &s)
	}
	b := fake.NewClientBuilder().WithScheme(kubeclient.Scheme())
	for _, o := range objs {
		b = b.WithObjects(o)
	}
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	h, err := New(Options{Client: b.Build(), Temporal: tc, Auth: StaticTokens{"t": {Name: "alice", Groups: []string{"analysts"}}}})
	require.NoError(t, err)
	return h.(*gin.Engine)
}

var _ http.Handler = (*gin.Engine)(nil)
