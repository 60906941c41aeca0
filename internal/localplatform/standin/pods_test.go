package standin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestParseMemory(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		in   string
		bare int64
		want int64
	}{
		{"512m", mib, 512 << 20}, {"2g", mib, 2 << 30}, {"2G", mib, 2 << 30}, {"1024", mib, 1024 << 20},
		{"2048mb", 1, 2048 << 20}, {"2 gb", 1, 2 << 30}, {"1024", 1, 1024}, {"4096k", 1, 4096 << 10},
		{"1t", 1, 1 << 40}, {"100b", mib, 100}, {"0", mib, 0},
	}
	for _, c := range cases {
		got, err := parseMemory(c.in, c.bare)
		if err != nil || got != c.want {
			t.Errorf("parseMemory(%q, %d) = %d, %v; want %d", c.in, c.bare, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1g", "1.5g", "2Gi", "99999999999t"} {
		if got, err := parseMemory(bad, mib); err == nil {
			t.Errorf("parseMemory(%q) = %d, want an error", bad, got)
		}
	}
}

func TestLabelValue_MakesAnyNameALabelValue(t *testing.T) {
	cases := map[string]string{
		"wc":                           "wc",
		"Word_Count":                   "Word_Count",
		"word count (nightly)":         "word-count-nightly",
		strings.Repeat("a", 70):        strings.Repeat("a", 63),
		strings.Repeat("a", 62) + "-b": strings.Repeat("a", 62),
	}
	for in, want := range cases {
		got := labelValue(in)
		if got != want || len(validation.IsValidLabelValue(got)) != 0 {
			t.Errorf("labelValue(%q) = %q, want %q (valid)", in, got, want)
		}
	}
}

func TestWithSim_CopiesTheApplicationsAnnotationsAndChecksThem(t *testing.T) {
	got, err := withSim(map[string]string{"team": "a", SimDurationAnnotation: "1h"},
		map[string]string{SimDurationAnnotation: "1m30s", SimOutcomeAnnotation: SimOutcomeSucceeded, "other": "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team": "a", SimDurationAnnotation: "1m30s", SimOutcomeAnnotation: SimOutcomeSucceeded}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := withoutSim(want); len(got) != 1 || got["team"] != "a" {
		t.Errorf("withoutSim kept %v", got)
	}
}

func TestConcatEnv_LaterWinsInPlace(t *testing.T) {
	got := concatEnv(
		[]corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "1"}},
		[]corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "C", Value: "2"}},
	)
	want := []corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "B", Value: "1"}, {Name: "C", Value: "2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	conf := envFromConf(map[string]string{"spark.executorEnv.Z": "z", "spark.executorEnv.A": "a", "spark.other": "x"}, "spark.executorEnv.")
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "a"}, {Name: "Z", Value: "z"}}, conf); diff != "" {
		t.Errorf("envFromConf (-want +got):\n%s", diff)
	}
}
