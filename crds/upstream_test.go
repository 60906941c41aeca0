package crds_test

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"slotplane/crds"
	"slotplane/crds/schemapaths"
)

// The CRDs slotplane generates for the operators' resources must have the shape of the
// operators' released ones, field for field: a field missing here is one a user's manifest
// cannot use on the local platform, and a field here that upstream lacks is one slotplane
// could write and a real operator would refuse. The tables in testdata were read from the
// released CRDs (their headers say which); when the pinned releases change, regenerate them
// with hack/crdpaths and update the Go types until this passes.
func TestOperatorCRDsMatchTheReleasedOnes(t *testing.T) {
	for _, c := range []struct {
		table, crd, version string
	}{
		{"testdata/sparkapplication-v1beta2-spark-operator-v2.5.2", "sparkapplications.sparkoperator.k8s.io", "v1beta2"},
		{"testdata/flinkdeployment-v1beta1-flink-operator-1.15.0", "flinkdeployments.flink.apache.org", "v1beta1"},
	} {
		t.Run(c.crd, func(t *testing.T) {
			want := readTable(t, c.table+".paths")
			excused := readExceptions(t, c.table+".exceptions")
			ours, err := schemapaths.FromCRD(operatorCRD(t, c.crd), c.version)
			if err != nil {
				t.Fatal(err)
			}
			used := make([]bool, len(excused))
			report := func(what, diff string) {
				for i, e := range excused {
					if e.matches(diff) {
						used[i] = true
						return
					}
				}
				t.Errorf("%s: %s", what, diff)
			}
			for _, d := range schemapaths.Missing(want, ours) {
				report("upstream has, slotplane lacks", d)
			}
			for _, d := range extra(want, ours) {
				report("slotplane has, upstream lacks", d)
			}
			for i, e := range excused {
				if !used[i] {
					t.Errorf("%s.exceptions: %q excuses no difference any more; remove it", c.table, e.pattern)
				}
			}
		})
	}
}

// exception excuses the differences whose path matches pattern ("*" stands for any run of
// characters), for the reason given beside it in the file.
type exception struct {
	pattern string
	re      *regexp.Regexp
}

func (e exception) matches(diff string) bool {
	for _, word := range strings.FieldsFunc(diff, func(r rune) bool { return r == ' ' || r == '\t' || r == ':' }) {
		if strings.HasPrefix(word, ".") && e.re.MatchString(word) {
			return true
		}
	}
	return false
}

// readExceptions reads "pattern<TAB>reason" lines; every pattern needs its reason. A missing
// file excuses nothing.
func readExceptions(t *testing.T, path string) []exception {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []exception
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pattern, reason, ok := strings.Cut(line, "\t")
		if !ok || strings.TrimSpace(reason) == "" {
			t.Fatalf("%s:%d: want a path pattern, a tab and the reason", path, n+1)
		}
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$")
		out = append(out, exception{pattern: pattern, re: re})
	}
	return out
}

// extra lists the paths of ours that the table does not have and that are not below a field
// the table keeps open. Type and enum differences are reported by Missing already.
func extra(want, ours []schemapaths.Field) []string {
	var out []string
	for _, d := range schemapaths.Missing(ours, want) {
		if line, ok := strings.CutPrefix(d, "missing "); ok {
			out = append(out, line)
		}
	}
	return out
}

func readTable(t *testing.T, path string) []schemapaths.Field {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []schemapaths.Field
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f, err := schemapaths.Parse(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, f)
	}
	if len(out) < 100 {
		t.Fatalf("%s has %d fields; the table is cut short", path, len(out))
	}
	return out
}

func operatorCRD(t *testing.T, name string) []byte {
	t.Helper()
	for _, data := range crds.Operators() {
		if bytes.Contains(data, []byte("\n  name: "+name+"\n")) {
			return data
		}
	}
	t.Fatalf("no embedded CRD is named %s", name)
	return nil
}
