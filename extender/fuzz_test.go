package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"slotplane/internal/testobjects"
)

// FuzzExtenderArgs feeds arbitrary bodies to /filter and /preempt. Whatever comes in, the
// handler must not panic, and must answer HTTP 200 with a JSON object: the scheduler reads
// only such answers, and an error belongs in their Error field. A filter answer without an
// error names its nodes, at most one. Nothing is written for a body that does not name the
// cluster's pod by its name and UID, as encoding/json reads the body.
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

	var writes atomic.Int32
	h, _, _ := newInterceptedHandler(f, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes.Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			writes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	}, testobjects.TestBed("bed").UID("bed-uid").Obj(), live)
	f.Fuzz(func(t *testing.T, preempt bool, body []byte) {
		path := "/filter"
		if preempt {
			path = "/preempt"
		}
		before := writes.Load()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if writes.Load() != before {
			var named refPreemptCall // the pod is read alike for both verbs
			err := json.Unmarshal(body, &named)
			if err != nil || named.Pod == nil || named.Pod.Metadata.Namespace != live.Namespace ||
				named.Pod.Metadata.Name != live.Name || named.Pod.Metadata.UID != string(live.UID) {
				t.Fatalf("%s wrote for a body that does not name pod %s/%s %s: %q", path, live.Namespace, live.Name, live.UID, body)
			}
		}
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

// FuzzBindArgs feeds arbitrary bodies to /bind: an answer is always HTTP 200 with a JSON
// object, and a binding is written only for a body that names the cluster's pod by its
// name and UID, as encoding/json reads the body, and the node of one of its slots.
func FuzzBindArgs(f *testing.F) {
	live := makePod("exec").SlotIDs("1,3").Obj()
	f.Add(marshal(f, bindArgs(live, "node-01")))
	f.Add(marshal(f, bindArgs(live, "node-00")))
	f.Add(marshal(f, bindArgs(makePod("exec").UID("other").Obj(), "node-01")))
	f.Add(`{"PodName":"exec","PodNamespace":"default","PodUID":"uid-exec","Node":"node-01","PodName":"x"}`)
	f.Add(`{"PodName":null}`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, body string) {
		var bound atomic.Int32
		h, _, _ := newInterceptedHandler(t, interceptor.Funcs{
			SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj client.Object, subResource client.Object, opts ...client.SubResourceCreateOption) error {
				err := fakeBinding(ctx, c, sub, obj, subResource, opts...)
				if err == nil {
					bound.Add(1)
				}
				return err
			},
		}, testobjects.TestBed("bed").UID("bed-uid").Obj(), live.DeepCopy())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/bind", strings.NewReader(body)))
		if bound.Load() != 0 {
			var named extenderv1.ExtenderBindingArgs
			err := json.Unmarshal([]byte(body), &named)
			if err != nil || named.PodNamespace != live.Namespace || named.PodName != live.Name || named.PodUID != live.UID || named.Node != "node-01" {
				t.Fatalf("bound for a body that does not name pod %s/%s %s and node-01: %q", live.Namespace, live.Name, live.UID, body)
			}
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("HTTP %d, want 200 with the error in the body", rec.Code)
		}
		var answer struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
			t.Fatalf("the answer is not a JSON object: %v: %q", err, rec.Body.String())
		}
	})
}
