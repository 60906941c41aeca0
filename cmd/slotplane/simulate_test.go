package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/internal/cli/render"
)

// The sample traces replay cleanly against the example allocation file on the default test
// bed (the example one). The summaries are the ones the docs quote.
func TestSimulate_SampleTraces(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/burst.csv"}, &out))
	text := out.String()
	t.Log("\n" + text)
	require.Contains(t, text, "test bed:    4 nodes x 2 slots = 8 slots of 8192 mb, 2 vcores (the queues share 65536 mb, 16 vcores)")
	require.Contains(t, text, "preemption:  simulated")
	require.Contains(t, text, "summary: 54 jobs: 52 done, 2 refused, 0 unfinished; makespan 1h42m26s; slot utilization 85.7%; fairness (Jain) 0.868; 3 slots preempted; longest wait at the head of a queue 21m57s\n")
	require.NotContains(t, text, "stopped:")
	require.Regexp(t, `(?m)^root\.analytics\.daily\s+24\s+0\s+0\s`, text)
	require.Regexp(t, `(?m)^root\.analytics\.adhoc\s+12\s+0\s+0\s`, text)
	require.Regexp(t, `(?m)^root\.streaming\s+16\s+0\s+0\s`, text)
	require.Regexp(t, `(?m)^  frank-01\s+frank\s+root\.users\.frank\s+user "frank" may not submit to queue root\.users\.frank \(aclSubmitApps\)$`, text)

	out.Reset()
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/mixed-day.csv", "-jobs"}, &out))
	text = out.String()
	t.Log("\n" + text)
	require.Contains(t, text, "summary: 104 jobs: 102 done, 2 refused, 0 unfinished; makespan 21h53m47s; slot utilization 72.6%; fairness (Jain) 0.947; 10 slots preempted; longest wait at the head of a queue 53m14s\n")
	require.NotContains(t, text, "stopped:")
	require.Regexp(t, `(?m)^root\.users\.admin\s+3\s+0\s+0\s`, text, "the admins' jobs without a queue go to their own queue")
	require.Regexp(t, `(?m)^  etl-typo\s+alice\s+root\.users\.alice\s+user "alice" may not submit`, text)
	require.Regexp(t, `(?m)^  gina-query\s+gina\s+root\.analytics\.adhoc\s+user "gina" may not submit`, text)
	require.Regexp(t, `(?m)^  flink-1\s+root\.streaming\s+1h23m22s\s+1h23m22s\s`, text, "the job list")
	// The 6-slot etl-14 is not passed by later, smaller jobs of its strict queue: the first
	// job that does not fit reserves the free slots, and nothing behind it in its queue
	// starts meanwhile.
	require.Regexp(t, `(?m)^  etl-14\s+root\.analytics\.daily\s+2h58m43s\s+4h25m42s\s`, text)
}

// Every queue with jobs gets 0.7 to 1.2 of its fair share in both sample traces, over the
// time nothing but room held it back (USE/FAIR (ROOM)); with
// slotplane.preemption.below-fair-share, 0.8 to 1.2. By the Fair Scheduler's rule no victim
// goes below its share, and in the burst trace analytics.daily waits while the other queues
// hold fractions of a slot above theirs: 0.75. Over all its time, adhoc in the day trace gets
// less: its own maxAMShare of 0.3 lets it start few of its queries at once.
func TestSimulate_SampleTracesAreFair(t *testing.T) {
	below := filepath.Join(t.TempDir(), "yarn-site.xml")
	settings, err := os.ReadFile("../../examples/yarn-site.xml")
	require.NoError(t, err)
	settings = bytes.Replace(settings, []byte("<configuration>"), []byte(`<configuration>
  <property><name>slotplane.preemption.below-fair-share</name><value>true</value></property>`), 1)
	require.NoError(t, os.WriteFile(below, settings, 0o600))
	for _, c := range []struct {
		settings string
		least    float64
	}{{"../../examples/yarn-site.xml", 0.7}, {below, 0.8}} {
		for _, trace := range []string{"burst", "mixed-day"} {
			var out bytes.Buffer
			require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/" + trace + ".csv", "-settings", c.settings, "-o", "json"}, &out))
			var rep render.SimulationReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
			n := 0
			for _, q := range rep.Queues {
				if q.Done == 0 {
					continue
				}
				n++
				require.GreaterOrEqual(t, q.UseOverFairRoom, c.least, "%s %s %s", c.settings, trace, q.Queue)
				require.LessOrEqual(t, q.UseOverFairRoom, 1.2, "%s %s %s", c.settings, trace, q.Queue)
			}
			require.GreaterOrEqual(t, n, 3, trace)
		}
	}
}

// Driver first, the burst deadlocks within minutes, although the example file has StateAware
// and maxAMShare; the day deadlocks too.
func TestSimulate_DriverFirstDeadlocks(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/burst.csv", "-mode", "driver-first"}, &out))
	require.Contains(t, out.String(), "summary: 54 jobs: 1 done, 2 refused, 51 unfinished")
	require.Contains(t, out.String(), "stopped: deadlock: nothing granted or finished after 3m28s; 3 drivers hold 6 executors and wait for more, 48 jobs wait to start")
	require.Contains(t, out.String(), "preemption:  on in the settings, not simulated in driver-first mode")

	out.Reset()
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/mixed-day.csv", "-mode", "driver-first"}, &out))
	require.Contains(t, out.String(), "stopped: deadlock: nothing granted or finished after 3h45m14s; 5 drivers hold 5 executors")
	require.Regexp(t, `(?m)^unfinished:$`, out.String())
}

func TestSimulate_JSONAndDeterminism(t *testing.T) {
	args := []string{"-trace", "../../examples/traces/burst.csv", "-allocations", "../../examples/fair-scheduler.xml", "-settings", "../../examples/yarn-site.xml", "-o", "json"}
	var first, second bytes.Buffer
	require.NoError(t, simulateCommand(args, &first))
	require.NoError(t, simulateCommand(args, &second))
	require.Equal(t, first.String(), second.String(), "the same input gives the same output")

	var rep render.SimulationReport
	require.NoError(t, json.Unmarshal(first.Bytes(), &rep))
	require.Equal(t, 54, rep.Jobs)
	require.Equal(t, 52, rep.Done)
	require.Equal(t, 8, rep.Slots)
	require.Equal(t, "gang", rep.Mode)
	require.Len(t, rep.JobOutcomes, 54)
	require.Len(t, rep.Queues, 4)
	require.InDelta(t, 6146, rep.MakespanSeconds, 0.5)
	require.InDelta(t, 1317, rep.MaxHeadWaitSeconds, 0.5)
	require.True(t, strings.HasPrefix(rep.Summary, "54 jobs: 52 done"))
	require.Equal(t, "simulated", rep.Preemption, "the example's settings turn preemption on")
	for _, j := range rep.JobOutcomes {
		if j.Refused == "" {
			require.NotNil(t, j.WaitSeconds, j.Name)
			require.NotNil(t, j.FinishSeconds, j.Name)
		}
	}
}

// A bad trace, allocation file or flag is a clear error (main turns it into exit status 1).
func TestSimulate_BadInput(t *testing.T) {
	dir := t.TempDir()
	badTrace := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(badTrace, []byte("submit,name,queue,user,groups,driver,executors,runtime\n"+
		"0s,a,q,u,,\"1024 mb, 1 vcores\",2,1m\n0s,b,q,u,,\"1024 mb, 1 vcores\",many,1m\n"), 0o644))
	badFile := filepath.Join(dir, "bad.xml")
	require.NoError(t, os.WriteFile(badFile, []byte("<allocations>\n<queue name=\"a\">\n<weight>heavy</weight>\n</queue>\n</allocations>\n"), 0o644))
	badSettings := filepath.Join(dir, "site.xml")
	require.NoError(t, os.WriteFile(badSettings, []byte("<configuration>\n<property><name>yarn.scheduler.fair.preemption</name><value>yes</value></property>\n</configuration>\n"), 0o644))
	good := "../../examples/traces/burst.csv"
	cases := map[string]struct {
		args []string
		want string
	}{
		"no trace":         {nil, "-trace names the workload trace"},
		"missing trace":    {[]string{"-trace", "/nonexistent.csv"}, "no such file"},
		"bad trace":        {[]string{"-trace", badTrace}, `bad.csv: trace line 3, column 7 (executors): "many" is not a whole number`},
		"missing file":     {[]string{"-trace", good, "-allocations", "/nonexistent.xml"}, "no such file"},
		"bad file":         {[]string{"-trace", good, "-allocations", badFile}, "bad.xml: allocation file line 3, <weight>: \"heavy\" is not a non-negative number"},
		"bad settings":     {[]string{"-trace", good, "-settings", badSettings}, "site.xml: yarn-site.xml line 2, property yarn.scheduler.fair.preemption: \"yes\" is neither true nor false"},
		"missing settings": {[]string{"-trace", good, "-settings", "/nonexistent-site.xml"}, "no such file"},
		"bad mode":         {[]string{"-trace", good, "-mode", "eager"}, `replay mode "eager" is neither gang nor driver-first`},
		"bad slot size":    {[]string{"-trace", good, "-slot-size", "lots"}, "-slot-size: resources must look like"},
		"no nodes":         {[]string{"-trace", good, "-nodes", "0"}, "-nodes and -slots-per-node must be positive"},
		"bad output":       {[]string{"-trace", good, "-o", "yaml"}, "-o must be text or json"},
		"stray argument":   {[]string{"-trace", good, "extra"}, "unexpected arguments"},
		"empty slot size":  {[]string{"-trace", good, "-slot-size", "0 mb, 2 vcores"}, "a slot needs memory and vcores"},
		"unknown flag":     {[]string{"-trace", good, "-colour"}, "flag provided but not defined"},
		"negative startup": {[]string{"-trace", good, "-startup", "-1s"}, "must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := simulateCommand(tc.args, &bytes.Buffer{})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// A built-in scheduler is simulated by its own decisions, as an experiment predicts it; the
// queues' flags that mean nothing to it are refused.
func TestSimulate_ABuiltInScheduler(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/short.csv", "-scheduler", "fifo", "-startup", "250ms", "-jobs"}, &out))
	text := out.String()
	t.Log("\n" + text)
	require.Contains(t, text, "scheduler:   fifo (scheduler fifo in schedkit.Simulate)")
	require.Regexp(t, `summary: 40 jobs: 40 done, 0 unfinished; makespan [0-9.]+s;`, text)
	require.Regexp(t, `(?m)^dan-00\s+0s\s+0s\s+4.25s\s+\[0 1\]$`, text, "the first job, in the lowest slots at once, for its 4 s and the start-up")

	out.Reset()
	require.NoError(t, simulateCommand([]string{"-trace", "../../examples/traces/short.csv", "-scheduler", "sjf", "-o", "json"}, &out))
	var rep struct {
		Summary struct{ Jobs, Completed int }
		Runs    []json.RawMessage
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.Equal(t, 40, rep.Summary.Completed)
	require.Len(t, rep.Runs, 40)

	for _, args := range [][]string{
		{"-scheduler", "lottery"}, {"-scheduler", "queues"}, {"-scheduler", "fifo", "-mode", "driver-first"},
	} {
		err := simulateCommand(append([]string{"-trace", "../../examples/traces/short.csv"}, args...), &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}
