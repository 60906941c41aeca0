package experiment

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
)

const header = "job,batchjob,attempt,queue,user,arrival_s,admitted_s,running_s,ended_s,wait_s,run_s,slots,nodes,outcome,predicted_start_s,predicted_end_s\n"

func TestWriteCSV_OneLinePerRunWithEmptyFieldsForPhasesNotReached(t *testing.T) {
	r := Result{
		Runs: []Run{
			makeRun("a").Queue("root.q").User("ann").Arrive(1.25).Admit(2).End(10.0005, OutcomeCompleted).On("node-0", 0, 3).Obj(),
			makeRun("b").Arrive(3).Obj(),
			makeRun("c").Arrive(4).Admit(5).On("node-1", 4).Obj(),
		},
		Predicted: &Prediction{Jobs: map[string]Run{
			"a": {Admitted: sec(1.5), Ended: sec(9)},
			"b": {Admitted: sec(4), Ended: NotReached},
		}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, r))
	want := header +
		"a,exp-a,1,root.q,ann,1.250,2.000,2.500,10.001,0.750,8.001,0;3,node-0;node-0,Completed,1.500,9.000\n" +
		"b,exp-b,1,root.default,,3.000,,,,,,,,,4.000,\n" +
		"c,exp-c,1,root.default,,4.000,5.000,5.500,,1.000,,4,node-1,,,\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("WriteCSV (-want +got):\n%s", diff)
	}
}

func TestCSV_RoundTripKeepsEveryRun(t *testing.T) {
	runs := []Run{
		makeRun("a").Queue("root.q").User("ann").Arrive(0).Admit(1.5).End(10.125, OutcomeCompleted).On("node-0", 0, 1).Obj(),
		makeRun("a").Attempt(2).Queue("root.q").User("ann").Arrive(0).Admit(11).End(12, OutcomeFailed).On("node-1", 4).Obj(),
		makeRun("b").Arrive(2.001).Admit(3).End(4, OutcomeReleased).On("node-0", 2).Obj(),
		// A name the CSV must quote, and runs short of one phase or another.
		makeRun(`job, "quoted"`).Queue("root.a,b").User("o'brien").Arrive(3).Admit(4).On("node-1", 5, 6).Obj(),
		makeRun("never").Arrive(100).Obj(),
	}
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, Result{Runs: runs, Predicted: &Prediction{Jobs: map[string]Run{"a": {Admitted: sec(1), Ended: sec(9)}}}}))
	got, err := ReadCSV(&buf)
	require.NoError(t, err)
	if diff := cmp.Diff(runs, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ReadCSV(WriteCSV(runs)) (-want +got):\n%s", diff)
	}
}

func TestReadCSV_RejectsABadFileNamingTheLine(t *testing.T) {
	good := "a,exp-a,1,q,u,0.000,1.000,1.500,3.000,1.000,2.000,0;1,n;n,Completed,,\n"
	cases := map[string]struct {
		in      string
		wantErr string
	}{
		"empty":                        {in: "", wantErr: "empty"},
		"another header":               {in: "job,attempt\n" + good, wantErr: "line 1: header is"},
		"a column renamed":             {in: strings.Replace(header, "user", "owner", 1) + good, wantErr: "line 1: header is"},
		"a line short of a field":      {in: header + good + "b,exp-b,1,q,u,0.000\n", wantErr: "line 3"},
		"an attempt that is no number": {in: header + good + strings.Replace(good, ",1,q", ",one,q", 1), wantErr: "line 3: attempt"},
		"a time that is no number":     {in: header + strings.Replace(good, "1.500", "soon", 1), wantErr: `line 2: running_s: "soon" is no number of seconds`},
		"a negative time":              {in: header + strings.Replace(good, "3.000", "-1.000", 1), wantErr: "line 2: ended_s"},
		"no arrival":                   {in: header + strings.Replace(good, "0.000", "", 1), wantErr: "line 2: arrival_s"},
		"no job":                       {in: header + strings.TrimPrefix(good, "a"), wantErr: "line 2: job"},
		"a slot that is no position":   {in: header + strings.Replace(good, "0;1", "0;x", 1), wantErr: `line 2: slots: "x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	runs, err := ReadCSV(strings.NewReader(header))
	require.NoError(t, err, "a header alone is an experiment of no runs")
	require.Empty(t, runs)
}
