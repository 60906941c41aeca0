package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"slotplane/apitypes"
	"slotplane/internal/health"
)

// operation documents one route of the API for its OpenAPI document. The document is built
// from this table and the Go types the handlers decode and answer with, so a field added to
// a type appears in the document by itself; the test checks the table against the routes
// the server really has.
type operation struct {
	method, path string // the path as Gin has it (:name)
	summary      string
	public       bool // no token needed
	query        []param
	body         any // the request body's type, if any
	status       int // the success status
	answer       any // the success body's type
	// otherAnswer is another success body's type, which a query parameter asks for.
	otherAnswer any
	// accepted: the answer may also be 202 with the same body, when the change is recorded
	// but its workflow did not answer.
	accepted bool
	errors   []int
	// permission is the verb and resource an Authorizer is asked about.
	permission string
}

type param struct{ name, description string }

var namespaceParam = param{"namespace", "the namespace to work in (default: the server's)"}

var pageParams = []param{
	{"limit", fmt.Sprintf("most items in the answer (1 to %d, default %d); a longer list is cut into pages", maxPageSize, defaultPageSize)},
	{"continue", "the continue token of the previous page"},
}

func operations() []operation {
	std := []int{401, 403, 503}
	with := func(codes ...int) []int { return append(slices.Clone(std), codes...) }
	return []operation{
		{method: "GET", path: "/healthz", summary: "Liveness; no token needed", public: true, status: 200, answer: map[string]string{}},
		{method: "GET", path: "/readyz", summary: "Readiness: Temporal and the Kubernetes API server answer (503 with the failing ones when not); no token needed",
			public: true, status: 200, answer: health.Report{}, errors: []int{503}},
		{method: "GET", path: "/openapi.json", summary: "This document", public: true, status: 200, answer: map[string]any{}},
		{method: "GET", path: "/whoami", summary: "The user and groups the token stands for", status: 200, answer: apitypes.User{}, errors: []int{401, 503}},
		{method: "POST", path: "/schedulings", summary: "Create a Scheduling and start its workflow", query: []param{namespaceParam},
			body: apitypes.SchedulingRequest{}, status: 201, answer: apitypes.Scheduling{}, errors: with(400, 409, 413, 422), permission: "create schedulings"},
		{method: "GET", path: "/schedulings", summary: "List Schedulings, by name, a page at a time", query: append([]param{namespaceParam}, pageParams...),
			status: 200, answer: apitypes.SchedulingList{}, errors: with(422), permission: "list schedulings"},
		{method: "GET", path: "/schedulings/:name", summary: "Get a Scheduling", query: []param{namespaceParam},
			status: 200, answer: apitypes.Scheduling{}, errors: with(404, 422), permission: "get schedulings"},
		{method: "PATCH", path: "/schedulings/:name", summary: "Append jobs to a running Scheduling", query: []param{namespaceParam},
			body: apitypes.SchedulingPatch{}, status: 200, answer: apitypes.Scheduling{}, accepted: true, errors: with(400, 404, 409, 413, 422), permission: "update schedulings"},
		{method: "DELETE", path: "/schedulings/:name", summary: "Cancel a Scheduling: its jobs are released and the object goes",
			query: []param{namespaceParam, {"resourceVersion", "delete only this version"}}, status: 202, answer: apitypes.Scheduling{}, errors: with(404, 409, 422), permission: "delete schedulings"},
		{method: "POST", path: "/jobs", summary: "Create a BatchJob that runs as the caller", query: []param{namespaceParam},
			body: apitypes.JobRequest{}, status: 201, answer: apitypes.Job{}, errors: with(400, 409, 413, 422), permission: "create batchjobs"},
		{method: "GET", path: "/jobs", summary: "List BatchJobs, by name, a page at a time",
			query:  append([]param{namespaceParam, {"state", "only jobs in this state"}, {"queue", "only jobs of this queue"}, {"scheduling", "only jobs this Scheduling holds"}}, pageParams...),
			status: 200, answer: apitypes.JobList{}, errors: with(422), permission: "list batchjobs"},
		{method: "GET", path: "/jobs/:name", summary: "Get a BatchJob", query: []param{namespaceParam},
			status: 200, answer: apitypes.Job{}, errors: with(404, 422), permission: "get batchjobs"},
		{method: "POST", path: "/jobs/:name/move", summary: "Move a queued or running job to another queue, as the caller", query: []param{namespaceParam},
			body: apitypes.MoveRequest{}, status: 200, answer: apitypes.MoveResult{}, errors: with(400, 404, 409, 413, 422), permission: "update batchjobs"},
		{method: "DELETE", path: "/jobs/:name/run", summary: "Kill a job's run, as the caller (its user, or an administrator of its queue): the job ends Failed, reason Killed",
			query: []param{namespaceParam, {"reason", "why, for the job's status message"}}, status: 202, answer: apitypes.KillResult{}, errors: with(403, 404, 409, 422), permission: "update batchjobs"},
		{method: "PATCH", path: "/jobs/:name/scheduler-data", summary: "Set or remove notes of external schedulers on a BatchJob (a merge patch: null removes)", query: []param{namespaceParam},
			body: apitypes.SchedulerDataPatch{}, status: 200, answer: apitypes.Job{}, errors: with(400, 404, 409, 413, 422), permission: "update batchjobs"},
		{method: "GET", path: "/testbeds", summary: "List test beds, with their counts and conditions but not their slots, by name", query: append([]param{namespaceParam}, pageParams...),
			status: 200, answer: apitypes.TestBedList{}, errors: with(422), permission: "list testbeds"},
		{method: "GET", path: "/testbeds/:name", summary: "Get a test bed and its slots", query: []param{namespaceParam},
			status: 200, answer: apitypes.TestBed{}, errors: with(404, 422), permission: "get testbeds"},
		{method: "GET", path: "/testbeds/:name/queues", summary: "A test bed's queues, parents included: shares, usage, jobs, pending demand, why each waiting job waits, and warnings about the allocation file; or, with ?format=yarn, YARN's scheduler answer",
			query: []param{namespaceParam, {"format", "yarn: the queues as the YARN ResourceManager answers GET /ws/v1/cluster/scheduler for the Fair Scheduler (memory in MB, cpu in vCores)"},
				{"limit", "how many waiting and how many running jobs to list, the first in submission order: 0 to 10000, 0 for none (default 500)"}},
			status: 200, answer: apitypes.QueueTree{}, otherAnswer: apitypes.YARNScheduler{}, errors: with(404, 422), permission: "get testbeds"},
		{method: "GET", path: "/watch", summary: "The change feed: a websocket of Event messages, the first a RESYNC",
			query:  []param{namespaceParam, {"kinds", "comma-separated: schedulings, jobs, testbeds (default all)"}, {"resourceVersion", "resume after this event"}, {"feed", "the feed of the last RESYNC: only its API replica resumes"}},
			status: 101, answer: apitypes.Event{}, errors: with(400, 422, 429), permission: "watch (each kind asked for)"},
	}
}

// schemas turns Go types into JSON schemas under components/schemas, by their JSON
// encoding: json tags name the properties, omitempty makes them optional, and the few types
// with their own encoding (quantities, times, raw objects) get the schema of what they
// encode to.
type schemas struct {
	defs  map[string]any
	names map[string]reflect.Type
}

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	metaTimeType = reflect.TypeFor[metav1.Time]()
	durationType = reflect.TypeFor[metav1.Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	rawType      = reflect.TypeFor[runtime.RawExtension]()
	anyType      = reflect.TypeFor[any]()
)

func (s *schemas) of(t reflect.Type) map[string]any {
	switch t {
	case quantityType:
		return map[string]any{"type": "string", "description": "a Kubernetes quantity such as 500m or 2Gi"}
	case metaTimeType, timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case durationType:
		return map[string]any{"type": "string", "description": "a Go duration such as 1m30s"}
	case rawType, anyType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": s.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.of(t.Elem())}
	case reflect.Struct:
		name := t.Name()
		if other, ok := s.names[name]; ok && other != t {
			name = strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + name // two types of one name
		}
		s.names[name] = t
		if _, done := s.defs[name]; !done {
			s.defs[name] = nil // a placeholder against recursion
			s.defs[name] = s.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (s *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				walk(ft)
				continue
			}
			if name == "" {
				name = f.Name
			}
			schema := s.of(f.Type)
			optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			switch k := f.Type.Kind(); {
			case !optional && (k == reflect.Slice || k == reflect.Map || k == reflect.Pointer):
				// Always present, but a nil one encodes as null.
				schema = map[string]any{"anyOf": []any{schema, map[string]any{"type": "null"}}}
				required = append(required, name)
			case !optional:
				required = append(required, name)
			}
			props[name] = schema
		}
	}
	walk(t)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		slices.Sort(required)
		out["required"] = required
	}
	return out
}

var ginParam = regexp.MustCompile(`:([A-Za-z]+)`)

// OpenAPIDocument is the API's OpenAPI 3.1 document, as JSON.
func OpenAPIDocument() []byte {
	openAPIOnce.Do(func() { openAPIJSON = buildOpenAPI() })
	return openAPIJSON
}

var (
	openAPIOnce sync.Once
	openAPIJSON []byte
)

func buildOpenAPI() []byte {
	s := &schemas{defs: map[string]any{}, names: map[string]reflect.Type{}}
	errorRef := s.of(reflect.TypeFor[apitypes.Error]())
	paths := map[string]map[string]any{}
	for _, op := range operations() {
		path := "/api/v1" + ginParam.ReplaceAllString(op.path, "{$1}")
		o := map[string]any{"summary": op.summary, "operationId": strings.ToLower(op.method) + strings.ReplaceAll(ginParam.ReplaceAllString(op.path, "By_$1"), "/", "_")}
		var params []any
		for _, m := range ginParam.FindAllStringSubmatch(op.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range op.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.description, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if op.body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s.of(reflect.TypeOf(op.body))}}}
		}
		responses := map[string]any{}
		ok := map[string]any{"description": http.StatusText(op.status)}
		if op.status == http.StatusSwitchingProtocols {
			ok["description"] = "the websocket is open; each text message is one Event as JSON"
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": s.of(reflect.TypeOf(op.answer))}}
		} else if op.answer != nil {
			schema := s.of(reflect.TypeOf(op.answer))
			if op.otherAnswer != nil {
				schema = map[string]any{"anyOf": []any{schema, s.of(reflect.TypeOf(op.otherAnswer))}}
			}
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
		}
		responses[strconv.Itoa(op.status)] = ok
		if op.accepted {
			responses["202"] = map[string]any{"description": "recorded; the workflow takes it when Temporal answers",
				"content": map[string]any{"application/json": map[string]any{"schema": s.of(reflect.TypeOf(op.answer))}}}
		}
		for _, code := range op.errors {
			responses[strconv.Itoa(code)] = map[string]any{"description": http.StatusText(code), "content": map[string]any{"application/json": map[string]any{"schema": errorRef}}}
		}
		o["responses"] = responses
		if op.public {
			o["security"] = []any{}
		} else if op.permission != "" {
			o["description"] = "With -auth=kubernetes the caller needs: " + op.permission + " (group slotplane.io)."
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(op.method)] = o
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "slotplane", "version": "v1",
			"description": "Schedulings, BatchJobs, test beds and queues of slotplane, and a websocket change feed. Every route but health and this document needs a bearer token."},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"schemas":         s.defs,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("openapi: " + err.Error()) // maps of plain values always encode
	}
	return b
}

func serveOpenAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", OpenAPIDocument())
}
