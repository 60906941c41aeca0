package localcluster

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"slotplane/internal/localplatform/standin"
)

// stage is the part of kwok's Stage API these tests read.
type stage struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ResourceRef struct {
			APIGroup string `json:"apiGroup"`
			Kind     string `json:"kind"`
		} `json:"resourceRef"`
		Selector struct {
			MatchExpressions []struct {
				Key      string   `json:"key"`
				Operator string   `json:"operator"`
				Values   []string `json:"values"`
			} `json:"matchExpressions"`
		} `json:"selector"`
		Delay *struct {
			DurationFrom *struct {
				ExpressionFrom string `json:"expressionFrom"`
			} `json:"durationFrom"`
		} `json:"delay"`
		Next struct {
			StatusTemplate string `json:"statusTemplate"`
			Delete         bool   `json:"delete"`
			Finalizers     *struct {
				Empty bool `json:"empty"`
			} `json:"finalizers"`
		} `json:"next"`
	} `json:"spec"`
}

// selects is the selector of a stage as "key operator values" lines.
func (s stage) selects() []string {
	var out []string
	for _, e := range s.Spec.Selector.MatchExpressions {
		out = append(out, strings.TrimSpace(e.Key+" "+e.Operator+" "+strings.Join(e.Values, ",")))
	}
	return out
}

// kwokDocuments splits kwok's config file into its YAML documents.
func kwokDocuments(t *testing.T) (options map[string]any, stages map[string]stage) {
	t.Helper()
	docs := strings.Split(kwokConfig(), "\n---\n")
	if err := yaml.Unmarshal([]byte(docs[0]), &options); err != nil {
		t.Fatalf("options document: %v", err)
	}
	stages = map[string]stage{}
	for _, doc := range docs[1:] {
		var s stage
		if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
			t.Fatalf("stage document: %v\n%s", err, doc)
		}
		if s.APIVersion != "kwok.x-k8s.io/v1alpha1" || s.Kind != "Stage" || s.Spec.ResourceRef.APIGroup != "v1" || s.Spec.ResourceRef.Kind != "Pod" {
			t.Errorf("stage %q: %s %s for %s %s, want pod stages of kwok.x-k8s.io/v1alpha1",
				s.Metadata.Name, s.APIVersion, s.Kind, s.Spec.ResourceRef.APIGroup, s.Spec.ResourceRef.Kind)
		}
		stages[s.Metadata.Name] = s
	}
	return options, stages
}

func TestKwokConfig_KeepsTheOptionsAndAddsEveryPodStage(t *testing.T) {
	options, stages := kwokDocuments(t)
	if options["kind"] != "KwokConfiguration" || options["options"].(map[string]any)["cidr"] != "10.128.0.0/16" {
		t.Errorf("options document %v, want the KwokConfiguration with the /16", options)
	}
	var names []string
	for name := range stages {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"slotplane-pod-delete", "slotplane-pod-fail", "slotplane-pod-start", "slotplane-pod-succeed"}
	if !slices.Equal(names, want) {
		t.Fatalf("stages %v, want %v (kwok uses none of its own once one pod stage is given)", names, want)
	}
	del := stages["slotplane-pod-delete"]
	if !slices.Equal(del.selects(), []string{".metadata.deletionTimestamp Exists"}) || !del.Spec.Next.Delete ||
		del.Spec.Next.Finalizers == nil || !del.Spec.Next.Finalizers.Empty {
		t.Errorf("delete stage selects %v, deletes %v, finalizers %v: want every pod being deleted removed",
			del.selects(), del.Spec.Next.Delete, del.Spec.Next.Finalizers)
	}
}

// The stages that end a simulated run read the annotations standin writes, by the same keys.
func TestKwokStages_ReadAppsimsAnnotations(t *testing.T) {
	_, stages := kwokDocuments(t)
	duration := `.metadata.annotations["` + standin.SimDurationAnnotation + `"]`
	outcome := `.metadata.annotations["` + standin.SimOutcomeAnnotation + `"]`
	wantSelects := map[string]string{
		"slotplane-pod-succeed": outcome + " NotIn " + standin.SimOutcomeFailed,
		"slotplane-pod-fail":    outcome + " In " + standin.SimOutcomeFailed,
	}
	for name, outcomeRule := range wantSelects {
		s := stages[name]
		want := []string{".metadata.deletionTimestamp DoesNotExist", ".status.phase In Running", duration + " Exists", outcomeRule}
		if diff := cmpLines(want, s.selects()); diff != "" {
			t.Errorf("%s selects:\n%s", name, diff)
		}
		if s.Spec.Delay == nil || s.Spec.Delay.DurationFrom == nil || s.Spec.Delay.DurationFrom.ExpressionFrom != duration {
			t.Errorf("%s: the delay must come from %s", name, duration)
		}
	}
	// No other simulation annotation hides in the file.
	for _, key := range regexp.MustCompile(`slotplane\.io/sim-[a-z-]+`).FindAllString(kwokStages, -1) {
		if key != standin.SimDurationAnnotation && key != standin.SimOutcomeAnnotation && key != standin.WorkersRunningAnnotation {
			t.Errorf("kwok-stages.yaml names %s, which standin does not know", key)
		}
	}
}

// Each status template, rendered as kwok renders it, is a pod status of the right shape.
func TestKwokStages_StatusTemplatesMakePodStatuses(t *testing.T) {
	_, stages := kwokDocuments(t)
	started := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec: corev1.PodSpec{
			NodeName:       "node-00",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "a", Image: "spark"}, {Name: "b", Image: "sidecar"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started},
	}
	cases := map[string]struct {
		phase   corev1.PodPhase
		exit    *int32 // nil: running
		ready   corev1.ConditionStatus
		podIP   bool
		startAt *metav1.Time
	}{
		"slotplane-pod-start":   {phase: corev1.PodRunning, ready: corev1.ConditionTrue, podIP: true},
		"slotplane-pod-succeed": {phase: corev1.PodSucceeded, exit: new(int32), ready: corev1.ConditionFalse, startAt: &started},
		"slotplane-pod-fail":    {phase: corev1.PodFailed, exit: new(int32(1)), ready: corev1.ConditionFalse, startAt: &started},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			st := renderStatus(t, stages[name].Spec.Next.StatusTemplate, pod)
			if st.Phase != c.phase {
				t.Errorf("phase %s, want %s", st.Phase, c.phase)
			}
			if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].Name != "a" || st.ContainerStatuses[1].Name != "b" {
				t.Fatalf("container statuses %+v, want one per container", st.ContainerStatuses)
			}
			for _, cs := range st.ContainerStatuses {
				switch {
				case c.exit == nil && cs.State.Running == nil:
					t.Errorf("container %s not running: %+v", cs.Name, cs.State)
				case c.exit != nil && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode != *c.exit):
					t.Errorf("container %s: %+v, want terminated with exit code %d", cs.Name, cs.State, *c.exit)
				case c.exit != nil && !cs.State.Terminated.StartedAt.Equal(c.startAt):
					t.Errorf("container %s started %v, want the pod's start %v", cs.Name, cs.State.Terminated.StartedAt, c.startAt)
				}
			}
			for _, cond := range st.Conditions {
				if cond.Type == corev1.PodReady && cond.Status != c.ready {
					t.Errorf("Ready %s, want %s", cond.Status, c.ready)
				}
			}
			if c.podIP && (st.PodIP == "" || st.HostIP == "" || st.StartTime == nil || len(st.InitContainerStatuses) != 1) {
				t.Errorf("started pod without addresses, start time or init container status: %+v", st)
			}
		})
	}
}

// renderStatus executes a status template the way kwok does: over the pod as JSON data, with
// stand-ins for kwok's template functions.
func renderStatus(t *testing.T, tpl string, pod *corev1.Pod) corev1.PodStatus {
	t.Helper()
	funcs := template.FuncMap{
		"Now": func() string { return time.Now().UTC().Format(time.RFC3339Nano) },
		"Quote": func(v any) string {
			data, err := json.Marshal(v)
			if err != nil || len(data) == 0 || data[0] != '"' {
				return `"` + string(data) + `"`
			}
			return string(data)
		},
		"NodeIPWith": func(string) string { return "10.0.0.1" },
		"PodIPWith":  func(string, bool, string, string, string) string { return "10.128.0.7" },
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	parsed, err := template.New("status").Funcs(funcs).Parse(tpl)
	if err != nil {
		t.Fatalf("parse status template: %v", err)
	}
	var out bytes.Buffer
	if err := parsed.Execute(&out, data); err != nil {
		t.Fatalf("render status template: %v", err)
	}
	var st corev1.PodStatus
	if err := yaml.UnmarshalStrict(out.Bytes(), &st); err != nil {
		t.Fatalf("rendered status is no pod status: %v\n%s", err, out.String())
	}
	return st
}

func cmpLines(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	return "want:\n  " + strings.Join(want, "\n  ") + "\ngot:\n  " + strings.Join(got, "\n  ")
}
