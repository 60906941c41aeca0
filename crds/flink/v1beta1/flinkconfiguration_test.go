package v1beta1_test

import (
	"encoding/json"
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	flinkv1beta1 "slotplane/crds/flink/v1beta1"
)

func TestFlinkConfiguration_ReadsWhatTheOperatorTakes(t *testing.T) {
	for name, c := range map[string]struct {
		json string
		want flinkv1beta1.FlinkConfiguration
	}{
		"flat strings": {
			`{"taskmanager.numberOfTaskSlots": "2", "state.backend.type": "hashmap"}`,
			flinkv1beta1.FlinkConfiguration{"taskmanager.numberOfTaskSlots": "2", "state.backend.type": "hashmap"},
		},
		"nested keys and plain values": {
			`{"taskmanager": {"numberOfTaskSlots": 2, "memory": {"process.size": "2g"}}, "pipeline.object-reuse": true, "cpu": 0.5}`,
			flinkv1beta1.FlinkConfiguration{
				"taskmanager.numberOfTaskSlots": "2", "taskmanager.memory.process.size": "2g",
				"pipeline.object-reuse": "true", "cpu": "0.5",
			},
		},
		"lists join with semicolons": {
			`{"pipeline.jars": ["file:///a.jar", "file:///b.jar"], "odd": [1, {"k": "v"}]}`,
			flinkv1beta1.FlinkConfiguration{"pipeline.jars": "file:///a.jar;file:///b.jar", "odd": `1;{"k":"v"}`},
		},
		"nulls are dropped": {
			`{"a": null, "b": {"c": null}, "d": "e"}`,
			flinkv1beta1.FlinkConfiguration{"d": "e"},
		},
		"the spelled-out key wins": {
			`{"a.b": "flat", "a": {"b": "nested"}}`,
			flinkv1beta1.FlinkConfiguration{"a.b": "flat"},
		},
		"empty": {`{}`, flinkv1beta1.FlinkConfiguration{}},
		"null":  {`null`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var got flinkv1beta1.FlinkConfiguration
			if err := json.Unmarshal([]byte(c.json), &got); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, c.want) || (got == nil) != (c.want == nil) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestFlinkConfiguration_RefusesWhatIsNotAnObject(t *testing.T) {
	for _, data := range []string{`"a=b"`, `["a"]`, `3`} {
		var c flinkv1beta1.FlinkConfiguration
		if err := json.Unmarshal([]byte(data), &c); err == nil {
			t.Errorf("%s: read as %v, want an error", data, c)
		}
	}
}

// Clients that go through unstructured objects (server-side apply, dynamic clients) must
// read a nested configuration too.
func TestFlinkConfiguration_ReadsFromUnstructured(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
		"spec": map[string]any{"flinkConfiguration": map[string]any{
			"taskmanager": map[string]any{"numberOfTaskSlots": int64(2)},
		}},
	}
	var dep flinkv1beta1.FlinkDeployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.FlinkConfiguration["taskmanager.numberOfTaskSlots"]; got != "2" {
		t.Errorf("taskmanager.numberOfTaskSlots = %q, want 2 (configuration %v)", got, dep.Spec.FlinkConfiguration)
	}
}
