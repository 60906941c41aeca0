package queue

import (
	"math"
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
