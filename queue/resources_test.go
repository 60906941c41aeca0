package queue

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResources_StringShowsExactAmounts(t *testing.T) {
	cases := map[string]struct {
		in   Resources
		want string
	}{
		"whole amounts":          {MBVCores(1024, 1), "1024 mb, 1 vcores"},
		"nothing":                {Resources{}, "0 mb, 0 vcores"},
		"a quarter vcore":        {Resources{MemoryBytes: 512 * mib, MilliCores: 250}, "512 mb, 0.25 vcores"},
		"one millicore":          {Resources{MilliCores: 1}, "0 mb, 0.001 vcores"},
		"1500m":                  {Resources{MilliCores: 1500}, "0 mb, 1.5 vcores"},
		"half a MiB":             {Resources{MemoryBytes: mib / 2, MilliCores: 1000}, "0.5 mb, 1 vcores"},
		"one byte":               {Resources{MemoryBytes: 1}, "0.00000095367431640625 mb, 0 vcores"},
		"a GiB and a byte":       {Resources{MemoryBytes: 1<<30 + 1}, "1024.00000095367431640625 mb, 0 vcores"},
		"negative, as free room": {Resources{MemoryBytes: -3 * mib / 2, MilliCores: -250}, "-1.5 mb, -0.25 vcores"},
		"the int64 extremes":     {Resources{MemoryBytes: math.MinInt64, MilliCores: math.MaxInt64}, "-8796093022208 mb, 9223372036854775.807 vcores"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.String()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// Whole amounts read back from their own rendering; the file's units are MiB and vcores.
func TestResources_WholeAmountsSurviveTheFileForm(t *testing.T) {
	r := MBVCores(3, 2)
	if r != (Resources{MemoryBytes: 3 << 20, MilliCores: 2000}) {
		t.Fatalf("MBVCores(3, 2) = %+v", r)
	}
	again, err := ParseResources(r.String())
	if err != nil || again != r {
		t.Fatalf("ParseResources(%q) = %v, %v", r.String(), again, err)
	}
}

// Hadoop 3 writes resources as name=value pairs; both forms read the same amounts.
func TestParseResources_Hadoop3Form(t *testing.T) {
	good := map[string]Resources{
		"memory-mb=4096, vcores=1":    MBVCores(4096, 1),
		"vcores=2,memory-mb=1024":     MBVCores(1024, 2),
		" memory-mb = 512 , vcores=0": MBVCores(512, 0),
		"memory-mb=2048":              MBVCores(2048, 0), // a resource left out is none
		"vcores=3":                    MBVCores(0, 3),
	}
	for in, want := range good {
		got, err := ParseResources(in)
		if err != nil || got != want {
			t.Errorf("ParseResources(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"memory-mb=4096, vcores=1, yarn.io/gpu=2": "yarn.io/gpu counts no resource",
		"memory-mb=50%, vcores=50%":               "a percentage is a limit",
		"50%":                                     "a percentage is a limit",
		"50% memory, 50% cpu":                     "a percentage is a limit",
		"memory-mb=-1, vcores=1":                  "not a whole, non-negative amount",
		"memory-mb=1.5":                           "not a whole, non-negative amount",
		"memory-mb=1, memory-mb=2":                "given twice",
		"memory-mb=, vcores=1":                    "not name=value",
		"memory-mb=1; vcores=1":                   "not a whole",
		"memory-mb=1, vcores=1 mb":                "not a whole",
		"memory-mb=8589934593":                    "more than the queues count",
		// Hadoop refuses a type the cluster does not declare; these misspell memory or cpu.
		"memory=4096, vcores=1": "did you mean memory-mb?",
		"memory-mb=4096, cpu=2": "did you mean vcores?",
		"Mem=1024":              "did you mean memory-mb?",
		"memory-mb=1, vcore=1":  "did you mean vcores?",
		"memory-mb=1, cores=1":  "did you mean vcores?",
	} {
		_, err := ParseResources(in)
		if !errors.Is(err, ErrBadResources) || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseResources(%q) = %v; want ErrBadResources saying %q", in, err, why)
		}
	}
}

// maxResources also takes shares of the test bed, in three spellings, and a Hadoop 3 limit
// that leaves a resource out does not limit it.
func TestParseResourceLimit(t *testing.T) {
	total := MBVCores(10000, 40)
	for in, want := range map[string]Resources{
		"50%":                           MBVCores(5000, 20),
		"50.0%":                         MBVCores(5000, 20),
		"25% memory, 50% cpu":           MBVCores(2500, 20),
		"50% cpu, 25% memory":           MBVCores(2500, 20),
		"memory-mb=25%, vcores=50%":     MBVCores(2500, 20),
		"memory-mb=10%":                 MBVCores(1000, 40), // cpu left out: 100%
		"memory-mb=4096, vcores=8":      MBVCores(4096, 8),
		"4096 mb, 8 vcores":             MBVCores(4096, 8),
		"memory-mb=4096, yarn.io/gpu=1": MBVCores(4096, 40), // no cpu limit: the test bed
	} {
		l, err := ParseResourceLimit(in)
		if err != nil {
			t.Errorf("ParseResourceLimit(%q): %v", in, err)
			continue
		}
		got := l.Amount.Min(total)
		if l.Percent != nil {
			got = l.Percent.Of(total)
		}
		if got != want {
			t.Errorf("ParseResourceLimit(%q) of %v = %v, want %v", in, total, got, want)
		}
	}
	if l, _ := ParseResourceLimit("memory-mb=4096, yarn.io/gpu=1"); len(l.Others) != 1 || l.Others[0] != "yarn.io/gpu" {
		t.Errorf("the other resource type is not reported: %+v", l)
	}
	for _, in := range []string{"101%", "-5%", "NaN%", "50% memory", "50% memory, 2 vcores", "memory-mb=50%, vcores=2", "x%", "50 memory, 50% cpu", "memory-mb=50%, memory-mb=50%"} {
		if _, err := ParseResourceLimit(in); !errors.Is(err, ErrBadResources) {
			t.Errorf("ParseResourceLimit(%q): %v, want ErrBadResources", in, err)
		}
	}
}

func FuzzParseResourceLimit(f *testing.F) {
	for _, s := range []string{"50%", "25% memory, 50% cpu", "memory-mb=25%, vcores=50%", "memory-mb=4096, vcores=8, yarn.io/gpu=1", "=,=", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseResourceLimit(s)
		if err != nil {
			if !errors.Is(err, ErrBadResources) {
				t.Fatalf("error %v is not ErrBadResources", err)
			}
			return
		}
		if l.Amount.MemoryBytes < 0 || l.Amount.MilliCores < 0 {
			t.Fatalf("%q parsed to negative %v", s, l.Amount)
		}
		if p := l.Percent; p != nil && (p.Memory < 0 || p.Memory > 100 || p.CPU < 0 || p.CPU > 100) {
			t.Fatalf("%q parsed to %v", s, *p)
		}
		// What ParseResources takes in Hadoop 2's form, the limit reads the same (in Hadoop
		// 3's, a resource left out is none for an amount and no limit for a limit).
		if r, err := ParseResources(s); err == nil && !strings.Contains(s, "=") && (l.Percent != nil || l.Amount != r) {
			t.Fatalf("%q: amount %v, limit %+v", s, r, l)
		}
	})
}
