package tracefile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/queue"
	"slotplane/simulation"
)

// parseTrace reads a trace written in a test.
func parseTrace(t testing.TB, text string) []simulation.Job {
	t.Helper()
	jobs, err := Parse(strings.NewReader(text))
	require.NoError(t, err)
	return jobs
}

func TestParseTrace_BothDriverFormsCommentsAndGroups(t *testing.T) {
	jobs := parseTrace(t, "\uFEFF# a comment line\n"+
		"submit,name,queue,user,groups,driver,executors,runtime\n"+
		"0s,etl-1,analytics.daily,alice,analysts;staff,\"1024 mb, 1 vcores\",4,10m\n"+
		"\n"+
		"90s, etl-2 ,,bob,,\"2 vcores, 2048 mb\",1,1h30m\n")
	require.Equal(t, []simulation.Job{
		{Line: 3, Submit: 0, Name: "etl-1", Queue: "analytics.daily", User: "alice", Groups: []string{"analysts", "staff"},
			Driver: driver(1024, 1), Executors: 4, Runtime: 10 * time.Minute},
		{Line: 5, Submit: 90 * time.Second, Name: "etl-2", User: "bob", Driver: driver(2048, 2), Executors: 1, Runtime: 90 * time.Minute},
	}, jobs)

	// The driver as two numeric columns, the columns in another order, names in any case.
	jobs = parseTrace(t, "Name,Submit,User,Queue,Groups,Driver_MB,Driver_VCores,Executors,Runtime\nj,1m,u,q,g,512,1,2,30s\n")
	require.Equal(t, driver(512, 1), jobs[0].Driver)
	require.Equal(t, time.Minute, jobs[0].Submit)
	require.Equal(t, []string{"g"}, jobs[0].Groups)

	var out bytes.Buffer
	require.NoError(t, Write(&out, jobs))
	require.Equal(t, "submit,name,queue,user,groups,driver,executors,runtime\n1m0s,j,q,u,g,\"512 mb, 1 vcores\",2,30s\n", out.String())

	// The format has whole mb and vcores only: a driver of 250m is not written as 1 vcore.
	jobs[0].Driver = apitypes.Resources{MemoryBytes: 512 << 20, MilliCores: 250}
	err := Write(&out, jobs)
	require.ErrorContains(t, err, "job j: a trace holds whole mb and vcores, the driver is 512 mb, 0.25 vcores")
}

// Every bad line names its line and, when one is to blame, its column.
func TestParseTrace_BadLinesNameLineAndColumn(t *testing.T) {
	const header = "submit,name,queue,user,groups,driver,executors,runtime\n"
	const good = "0s,a,q,u,,\"1 mb, 1 vcores\",1,1s\n"
	cases := map[string]struct{ text, want string }{
		"empty":            {"", "trace line 1: the trace is empty"},
		"unknown column":   {"submit,name,queue,user,groups,driver,executors,runtime,colour\n", "trace line 1, column 9 (colour): unknown column"},
		"twice":            {"submit,name,queue,user,groups,driver,executors,runtime,name\n", "trace line 1, column 9 (name): the column is given twice"},
		"missing column":   {"submit,name,queue,user,driver,executors,runtime\n", "trace line 1: the header lacks the column groups"},
		"both drivers":     {"submit,name,queue,user,groups,driver,driver_mb,driver_vcores,executors,runtime\n", "either as driver or as driver_mb"},
		"half a driver":    {"submit,name,queue,user,groups,driver_mb,executors,runtime\n", "driver_mb and driver_vcores go together"},
		"field count":      {header + good + "0s,b,q,u\n", "trace line 3: 4 fields, the header has 8"},
		"bad submit":       {header + good + "soon,b,q,u,,\"1 mb, 1 vcores\",1,1s\n", `trace line 3, column 1 (submit): "soon" is not a Go duration`},
		"negative submit":  {header + "-1s,b,q,u,,\"1 mb, 1 vcores\",1,1s\n", "trace line 2, column 1 (submit): -1s is outside"},
		"no name":          {header + "0s, ,q,u,,\"1 mb, 1 vcores\",1,1s\n", "trace line 2, column 2 (name): empty"},
		"duplicate name":   {header + good + "\n# c\n5s,a,q,u,,\"1 mb, 1 vcores\",1,1s\n", `trace line 5, column 2 (name): job "a" is already on line 2`},
		"no user":          {header + "0s,b,q,,,\"1 mb, 1 vcores\",1,1s\n", "trace line 2, column 4 (user): empty"},
		"bad driver":       {header + "0s,b,q,u,,1 GB,1,1s\n", "trace line 2, column 6 (driver): resources must look like"},
		"bad driver_mb":    {"submit,name,queue,user,groups,driver_mb,driver_vcores,executors,runtime\n0s,b,q,u,,lots,1,1,1s\n", "trace line 2, column 6 (driver_mb)"},
		"huge driver":      {header + "0s,b,q,u,,\"16777217 mb, 1 vcores\",1,1s\n", "trace line 2, column 6 (driver): 16777217 mb, 1 vcores is larger than any node"},
		"huge driver_mb":   {"submit,name,queue,user,groups,driver_mb,driver_vcores,executors,runtime\n0s,b,q,u,,16777217,1,1,1s\n", "is not a whole number in [0, 16777216]"},
		"zero executors":   {header + "0s,b,q,u,,\"1 mb, 1 vcores\",0,1s\n", `trace line 2, column 7 (executors): "0" is not a whole number in [1, 10000]`},
		"zero runtime":     {header + "0s,b,q,u,,\"1 mb, 1 vcores\",1,0s\n", "trace line 2, column 8 (runtime): 0s is outside"},
		"control":          {header + "0s,b\x01,q,u,,\"1 mb, 1 vcores\",1,1s\n", "trace line 2, column 2 (name)"},
		"bad quoting":      {header + "0s,b\"c,q,u,,x,1,1s\n", "trace line 2: not valid CSV"},
		"multi-line field": {header + "0s,\"b\nc\",q,u,,x,1,1s\n", "trace line 2, column 2 (name)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.text))
			var te *Error
			require.True(t, errors.As(err, &te), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func FuzzParseTrace(f *testing.F) {
	f.Add("submit,name,queue,user,groups,driver,executors,runtime\n0s,a,q,u,g1;g2,\"1024 mb, 1 vcores\",2,1m\n")
	f.Add("submit,name,queue,user,groups,driver_mb,driver_vcores,executors,runtime\n#x\n1h,b,,u,,512,1,1,1s\n")
	f.Add("submit,name\n\"unterminated\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		jobs, err := Parse(strings.NewReader(text))
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Line < 1 {
				t.Fatalf("error %v is not an *Error with a line", err)
			}
			return
		}
		names := map[string]bool{}
		for _, j := range jobs {
			if j.Name == "" || j.User == "" || names[j.Name] || j.Executors < 1 || j.Runtime <= 0 || j.Submit < 0 || j.Line < 2 {
				t.Fatalf("parsed a job that breaks the format's rules: %+v", j)
			}
			names[j.Name] = true
		}
		// What parses survives being written and read again.
		var out bytes.Buffer
		if err := Write(&out, jobs); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(&out)
		if err != nil {
			t.Fatalf("the written trace does not parse: %v\n%s", err, out.String())
		}
		if len(again) != len(jobs) {
			t.Fatalf("%d jobs, %d after writing", len(jobs), len(again))
		}
		for i := range jobs {
			a, b := jobs[i], again[i]
			a.Line, b.Line = 0, 0
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("job %d changed: %+v, then %+v", i, a, b)
			}
		}
	})
}

// driver is a driver of mb and vcores, as a trace writes it.
func driver(mb, vcores int64) apitypes.Resources {
	return apitypes.Resources(queue.MBVCores(mb, vcores))
}

// The optional priority column is read, bounded, and written back only when a job has one.
func TestParseTrace_Priority(t *testing.T) {
	jobs, err := Parse(strings.NewReader("submit,name,queue,user,groups,driver,executors,runtime,priority\n0s,a,q,u,,\"1024 mb, 1 vcores\",1,1m,-7\n0s,b,q,u,,\"1024 mb, 1 vcores\",1,1m,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Priority != -7 || jobs[1].Priority != 0 {
		t.Fatalf("priorities %d %d", jobs[0].Priority, jobs[1].Priority)
	}
	var out strings.Builder
	if err := Write(&out, jobs); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "submit,name,queue,user,groups,driver,executors,runtime,priority\n") || !strings.Contains(out.String(), ",-7\n") {
		t.Errorf("written:\n%s", out.String())
	}
	jobs[0].Priority = 0
	out.Reset()
	if err := Write(&out, jobs); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "priority") {
		t.Errorf("a trace without priorities got the column:\n%s", out.String())
	}
	_, err = Parse(strings.NewReader("submit,name,queue,user,groups,driver,executors,runtime,priority\n0s,a,q,u,,\"1024 mb, 1 vcores\",1,1m,2000000\n"))
	var e *Error
	if !errors.As(err, &e) || e.Column != "priority" || e.Line != 2 {
		t.Errorf("an out-of-bounds priority: %v", err)
	}
}
