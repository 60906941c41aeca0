package extender

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// The reference reading of a call: encoding/json into the fields the reader keeps.
type refPod struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		UID       string `json:"uid"`
	} `json:"metadata"`
}

type refFilterCall struct {
	Pod       *refPod
	NodeNames *[]string
	Nodes     *struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
}

type refPreemptCall struct {
	Pod *refPod
}

func refCallPod(p *refPod) *callPod {
	if p == nil {
		return nil
	}
	return &callPod{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, UID: types.UID(p.Metadata.UID)}
}

// refFilter is what encoding/json reads of a /filter body, as a filterCall.
func refFilter(body string) (filterCall, error) {
	var ref refFilterCall
	if err := json.Unmarshal([]byte(body), &ref); err != nil {
		return filterCall{}, err
	}
	c := filterCall{Pod: refCallPod(ref.Pod)}
	if ref.NodeNames != nil {
		c.NodeNames = append([]string{}, *ref.NodeNames...)
	}
	if ref.Nodes != nil {
		c.Nodes = []string{}
		for _, n := range ref.Nodes.Items {
			c.Nodes = append(c.Nodes, n.Metadata.Name)
		}
	}
	return c, nil
}

func refPreempt(body string) (preemptCall, error) {
	var ref refPreemptCall
	if err := json.Unmarshal([]byte(body), &ref); err != nil {
		return preemptCall{}, err
	}
	return preemptCall{Pod: refCallPod(ref.Pod)}, nil
}

// refBind is what encoding/json reads of a /bind body, as a bindCall.
func refBind(body string) (bindCall, error) {
	var ref extenderv1.ExtenderBindingArgs
	if err := json.Unmarshal([]byte(body), &ref); err != nil {
		return bindCall{}, err
	}
	return bindCall{Pod: callPod{Namespace: ref.PodNamespace, Name: ref.PodName, UID: ref.PodUID}, Node: ref.Node}, nil
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// The reader takes what kube-scheduler sends for what encoding/json reads of it: the pod's
// identity and the candidates, as NodeNames or as Nodes.
func TestReadFilterCall_ReadsWhatTheSchedulerSends(t *testing.T) {
	pod := makePod("exec").Obj()
	pod.Spec.Containers = []corev1.Container{{Name: "c", Args: []string{`say "hi"\n`, "é"}}}
	node := func(name string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"a": "b"}}}
	}
	names := []string{"node-00", "node-01"}
	cases := map[string]struct {
		body string
		want filterCall
	}{
		"node names": {
			marshal(t, extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}),
			filterCall{Pod: &callPod{Namespace: "default", Name: "exec", UID: "uid-exec"}, NodeNames: names},
		},
		"whole nodes": {
			marshal(t, extenderv1.ExtenderArgs{Pod: pod, Nodes: &corev1.NodeList{Items: []corev1.Node{node("node-00"), node("node-01")}}}),
			filterCall{Pod: &callPod{Namespace: "default", Name: "exec", UID: "uid-exec"}, Nodes: names},
		},
		"no candidates": {
			marshal(t, extenderv1.ExtenderArgs{Pod: pod}),
			filterCall{Pod: &callPod{Namespace: "default", Name: "exec", UID: "uid-exec"}},
		},
		"no pod": {`{"NodeNames":[]}`, filterCall{NodeNames: []string{}}},
		"null":   {` null `, filterCall{}},
		"keys as encoding/json matches them, escapes decoded": {
			`{"pod":{"METADATA":{"Name":"a\u0062c","nameSpace":"n\/s","UID":"\u00e9"}},"nodenames":["x\"y",null,"ok"]}`,
			filterCall{Pod: &callPod{Namespace: "n/s", Name: "abc", UID: "é"}, NodeNames: []string{`x"y`, "", "ok"}},
		},
		"other fields of any shape": {
			`{"Other":[1,-2.5e+3,{"a":[true,false,null,{}]},[]],"Pod":{"spec":{"x":[[[]]]},"metadata":{"labels":{"k":"v"},"uid":"u","name":"p"}},"NodeNames":["n"]}`,
			filterCall{Pod: &callPod{Name: "p", UID: "u"}, NodeNames: []string{"n"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readFilterCall(tc.body, nil)
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readFilterCall (-want +got):\n%s", diff)
			}
			ref, err := refFilter(tc.body)
			require.NoError(t, err)
			if diff := cmp.Diff(ref, got); diff != "" {
				t.Errorf("readFilterCall against encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

// What is not JSON, not of the shape of a call, or what a scheduler never sends, is refused.
func TestReadFilterCall_RefusesWhatIsNotACall(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"empty":                    {``, "no JSON in the body"},
		"cut short":                {`{"Pod": {"metadata": {"name": "ex`, "unexpected end of JSON input"},
		"cut short elsewhere":      {`{"x": [1, {"y": `, "unexpected end of JSON input"},
		"pod an array":             {`{"Pod": [`, "the pod is not a JSON object"},
		"not an object":            {`[]`, "the body is not a JSON object"},
		"pod of the wrong kind":    {`{"Pod":"exec"}`, "the pod is not a JSON object"},
		"uid of the wrong kind":    {`{"Pod":{"metadata":{"uid":5}}}`, "metadata.uid is not a string"},
		"names of the wrong kind":  {`{"NodeNames":{"a":"b"}}`, "the node names are not a JSON array"},
		"a name of the wrong kind": {`{"NodeNames":["a",1]}`, "a node name is not a string"},
		"pod twice":                {`{"Pod":{},"pod":{"metadata":{"name":"other"}}}`, `field "pod" given twice`},
		"uid twice":                {`{"Pod":{"metadata":{"uid":"a","uid":"b"}}}`, `field "uid" given twice`},
		"trailing data":            {`{"Pod":null} {}`, "data after the JSON object"},
		"trailing comma":           {`{"Pod":null,}`, "want an object key"},
		"bad number":               {`{"x":01}`, "want ',' or '}'"},
		"bad literal":              {`{"x":nul}`, "invalid character 'n' looking for a value"},
		"control character":        {"{\"x\":\"a\tb\"}", "control character"},
		"bad escape":               {`{"x":"\q"}`, "invalid escape"},
		"too deep":                 {`{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, "exceeded max depth"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readFilterCall(tc.body, nil)
			require.Error(t, err)
			require.ErrorContains(t, err, "malformed request")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzCallReader holds the reader to encoding/json: whatever the body, a call it reads is
// read alike by encoding/json into the same fields. It may refuse more (a key given twice,
// data after the object), never less, and never reads another pod or other nodes.
func FuzzCallReader(f *testing.F) {
	pod := makePod("exec").Obj()
	names := []string{"node-00", "node-01"}
	f.Add(marshal(f, extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names}))
	f.Add(marshal(f, extenderv1.ExtenderArgs{Pod: pod, Nodes: &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}}}))
	f.Add(marshal(f, extenderv1.ExtenderPreemptionArgs{Pod: pod, NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"n": {Pods: []*extenderv1.MetaPod{{UID: "g"}}}}}))
	f.Add(`{"pod":{"METADATA":{"Name":"a\u0062c","nameSpace":"n\/s","UID":"\u00e9\ud83d\ude00"}},"nodenames":["x\"y",null,"\xff"]}`)
	f.Add(`{"Nodes":{"items":[null,{"metadata":null},{"metadata":{"name":"a"}}]},"Pod":{"metadata":{"uid":null}}}`)
	f.Add(`{"x":[1,-0.5e-7,true,false,null,{"a":{}},[]],"Pod":null}`)
	f.Add(`{"Pod": [`)
	f.Add(strings.Repeat(`{"a":`, 100))
	f.Add(marshal(f, extenderv1.ExtenderBindingArgs{PodName: "exec", PodNamespace: "default", PodUID: pod.UID, Node: "node-00"}))
	f.Add(`{"podname":"e\u0078ec","PODNAMESPACE":"default","PodUID":"u","Node":"n","Node2":[1]}`)
	f.Fuzz(func(t *testing.T, body string) {
		readAsJSON(t, body, func(b string) (filterCall, error) { return readFilterCall(b, nil) }, refFilter)
		// A lent slice (the pool's) that held another call's names reads the same.
		lent := append(make([]string, 0, 4), "stale-0", "stale-1", "stale-2")
		readAsJSON(t, body, func(b string) (filterCall, error) { return readFilterCall(b, lent) }, refFilter)
		readAsJSON(t, body, readBindCall, refBind)
		readAsJSON(t, body, readPreemptCall, refPreempt)
	})
}

// readAsJSON fails t when read takes body that ref (encoding/json) refuses, or reads it
// otherwise than ref does. A body read refuses is not looked at.
func readAsJSON[C any](t *testing.T, body string, read, ref func(string) (C, error)) {
	t.Helper()
	got, err := read(body)
	if err != nil {
		return
	}
	want, refErr := ref(body)
	if refErr != nil {
		t.Fatalf("read %q as %+v, which encoding/json refuses: %v", body, got, refErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("read %q unlike encoding/json (-want +got):\n%s", body, diff)
	}
}
