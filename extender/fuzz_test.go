package extender

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// FuzzExtenderArgs feeds arbitrary bodies to /filter and /preempt. Whatever comes in, the
// handler must not panic, and must answer HTTP 200 with a JSON object: the scheduler reads
// only such answers, and an error belongs in their Error field. A filter answer without an
// error names its nodes, at most one.
func FuzzExtenderArgs(f *testing.F) {
	live := makePod("exec").Obj()
	seed := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(false, seed(filterArgs(live)))
	f.Add(true, seed(extenderv1.ExtenderPreemptionArgs{Pod: live}))
	f.Add(false, seed(filterArgs(makePod("exec").UID("other").Obj())))
	f.Add(false, seed(filterArgs(makePod("exec").SlotIDs("9,x,-1").Obj())))
	f.Add(true, seed(extenderv1.ExtenderPreemptionArgs{Pod: makePod("exec").Bed("nope").Obj()}))
	f.Add(false, seed(extenderv1.ExtenderArgs{Pod: live, Nodes: &corev1.NodeList{Items: []corev1.Node{{}}}}))
	f.Add(false, []byte(`{"Pod":null,"NodeNames":null}`))
	f.Add(true, []byte(`{"Pod":{"metadata":{"name":"exec","uid":"uid-exec","annotations":{"slotplane.io/slot-ids":"0,0,0"}}}}`))
	f.Add(false, []byte(`{"Pod": [`))
	f.Add(true, []byte(`[]`))
	f.Add(false, []byte(``))
	f.Add(false, []byte(strings.Repeat(`{"a":`, 10_000)))

	h, _, _ := newTestHandler(f, testBed(), live)
	f.Fuzz(func(t *testing.T, preempt bool, body []byte) {
		path := "/filter"
		if preempt {
			path = "/preempt"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: HTTP %d, want 200 with the error in the body", path, rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q", path, ct)
		}
		var answer struct {
			Error     string
			NodeNames *[]string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("%s: the answer is not a JSON object: %v: %q", path, err, rec.Body.String())
		}
		if !preempt && answer.Error == "" && (answer.NodeNames == nil || len(*answer.NodeNames) > 1) {
			t.Fatalf("filter answered no error and nodes %v", answer.NodeNames)
		}
	})
}
