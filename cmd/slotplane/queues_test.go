package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueues_ShowsTheTreeAndAPlacement(t *testing.T) {
	var out bytes.Buffer
	err := queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml", "-settings", "../../examples/yarn-site.xml", "-capacity", "98304 mb, 48 vcores", "-user", "alice", "-groups", "analysts", "-queue", "analytics.daily"}, &out)
	require.NoError(t, err)
	text := out.String()
	require.Regexp(t, `(?m)^  analytics\s+parent\s+2\s+fair\s+16384 mb, 8 vcores.*49152 mb, 24 vcores$`, text)
	require.Regexp(t, `(?m)^    daily\s+leaf\s+1\s+stateaware.*\s10\s+0\.5\s+24576 mb, 12 vcores$`, text)
	require.Contains(t, text, "\npreemption: on\n")
	require.Contains(t, text, "root.analytics.daily takes slots back when below its minimum share for 1m0s, or below 50% of its fair share for 5m0s")
	require.Contains(t, text, "placement: root.analytics.daily, by rule specified")
	require.Contains(t, text, "submit ACL: alice may submit to root.analytics.daily")

	out.Reset()
	require.NoError(t, queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml", "-user", "carol"}, &out))
	require.Contains(t, out.String(), "placement: root.users.carol, by rule nestedUserQueue (created by the rule; not in the file)")
	require.Contains(t, out.String(), "carol may NOT submit")
}

// A Hadoop 3 style file loads; the settings that mean nothing for slots are listed, each
// with its line and why.
func TestQueues_Hadoop3FileListsWhatItIgnores(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, queuesCommand([]string{"-f", "../../examples/fair-scheduler-hadoop3.xml", "-capacity", "memory-mb=98304, vcores=48"}, &out))
	text := out.String()
	require.Regexp(t, `(?m)^  analytics\s+parent\s+2\s+fair\s+16384 mb, 8 vcores\s+73728 mb, 36 vcores`, text, "75% of the bed")
	require.Contains(t, text, "ignored: 4 settings the Fair Scheduler takes that mean nothing for slots")
	require.Contains(t, text, "line 25, <maxResources> of root.streaming: yarn.io/gpu: slots count memory and cpu only")
	require.Contains(t, text, "line 21, <maxContainerAllocation> of root.analytics.adhoc: a test bed's slots are all one size")
}

// The -deadlock table prints each variant's replay as `slotplane simulate` sums it up, and
// the deadlock's reason under the row that stopped. The figures are worked out in
// replay.TestDriverDeadlock_OnlyPlainFIFODriverFirstDeadlocks.
func TestQueues_DeadlockTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, queuesCommand([]string{"-deadlock"}, &out))
	text := out.String()
	t.Log("\n" + text)
	require.Regexp(t, `(?m)^fifo, no AM limit\s+driver-first\s+10 jobs: 0 done, 0 refused, 10 unfinished; makespan 0s; slot utilization 0\.0%;`, text)
	require.Regexp(t, `(?m)^\s+stopped: deadlock: nothing granted or finished after 0s; 6 drivers hold 0 executors and wait for more, 4 jobs wait to start$`, text)
	require.Regexp(t, `(?m)^stateaware\s+driver-first\s+10 jobs: 10 done, 0 refused, 0 unfinished; makespan 4m40s; slot utilization 35\.7%;`, text)
	require.Regexp(t, `(?m)^fifo, maxAMShare 0\.5\s+driver-first\s+10 jobs: 10 done, 0 refused, 0 unfinished; makespan 4m40s;`, text)
	require.Regexp(t, `(?m)^fifo, gang \(slotplane\)\s+gang\s+10 jobs: 10 done, 0 refused, 0 unfinished; makespan 2m20s; slot utilization 83\.3%;`, text)
	require.Equal(t, 1, strings.Count(text, "stopped:"), "only plain FIFO driver-first stops")
}

func TestQueues_BadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.xml")
	require.NoError(t, os.WriteFile(bad, []byte("<allocations>\n<queue name=\"a\">\n<weight>heavy</weight>\n</queue>\n</allocations>\n"), 0o644))
	cases := map[string]struct {
		args []string
		want string
	}{
		"no file":      {nil, "-f names the allocation file"},
		"missing file": {[]string{"-f", "/nonexistent.xml"}, "no such file"},
		"misspelt":     {[]string{"-f", bad}, "allocation file line 3, <weight>: \"heavy\" is not a non-negative number"},
		"bad capacity": {[]string{"-f", "../../examples/fair-scheduler.xml", "-capacity", "lots"}, "-capacity: resources must look like"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := queuesCommand(tc.args, &bytes.Buffer{})
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tc.want), "%v", err)
		})
	}
}

// A file that sets only its children's ACLs restricts nobody: root's are "*" unless set.
// `slotplane queues` says so in a warnings block naming what to set; the example file, which
// sets both of root's ACLs, draws no warning.
func TestQueues_WarnsWhenRootLeavesEveryQueueOpen(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open.xml")
	require.NoError(t, os.WriteFile(open, []byte(`<allocations>
  <queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue>
</allocations>
`), 0o644))
	var out bytes.Buffer
	require.NoError(t, queuesCommand([]string{"-f", open}, &out))
	text := out.String()
	require.Regexp(t, `(?m)^warnings:\n  every user may submit to and administer every queue: root's aclSubmitApps is not set`, text)
	require.Contains(t, text, "To restrict access, set both on root")
	require.Contains(t, text, "The ACLs set on root.secure restrict nobody while root's stay open.")

	out.Reset()
	require.NoError(t, queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml"}, &out))
	require.NotContains(t, out.String(), "warnings:")
}

// -settings reads the allocation file's yarn-site.xml: every setting in force is printed as
// its property, the placement settings marked unused under the file's own policy; the Fair
// Scheduler's properties that mean nothing for slots are listed as ignored, and the rest of
// YARN's are counted. Without -settings the defaults are in force; a bad settings file is
// an error naming the file, line and property.
func TestQueues_PrintsTheSettingsInForce(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site.xml")
	require.NoError(t, os.WriteFile(site, []byte(`<configuration>
  <property><name>yarn.resourcemanager.hostname</name><value>rm</value></property>
  <property><name>yarn.scheduler.fair.preemption</name><value>true</value></property>
  <property><name>yarn.scheduler.fair.update-interval-ms</name><value>1000</value></property>
  <property><name>yarn.scheduler.fair.assignmultiple</name><value>true</value></property>
</configuration>
`), 0o644))
	var out bytes.Buffer
	require.NoError(t, queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml", "-settings", site}, &out))
	text := out.String()
	require.Contains(t, text, "\nsettings ("+site+"):\n")
	require.Regexp(t, `(?m)^  yarn\.scheduler\.fair\.preemption\s+true$`, text)
	require.Regexp(t, `(?m)^  yarn\.scheduler\.fair\.update-interval-ms\s+1000$`, text)
	require.Regexp(t, `(?m)^  yarn\.scheduler\.fair\.user-as-default-queue\s+true\s+\(unused: the allocation file has a queuePlacementPolicy\)$`, text)
	require.Regexp(t, `(?m)^  slotplane\.preemption\.slot-based\s+false$`, text)
	require.Contains(t, text, "  and 1 properties of other parts of YARN, left alone\n")
	require.Contains(t, text, "\npreemption: on\n")
	require.Contains(t, text, "  yarn-site.xml line 5, yarn.scheduler.fair.assignmultiple: slotplane grants a job all its slots in one decision")

	out.Reset()
	require.NoError(t, queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml"}, &out))
	require.Contains(t, out.String(), "\nsettings (the defaults; -settings reads a yarn-site.xml):\n")
	require.Contains(t, out.String(), "\npreemption: off\n")

	bad := filepath.Join(dir, "bad-site.xml")
	require.NoError(t, os.WriteFile(bad, []byte("<configuration>\n<property><name>yarn.scheduler.fair.preemptoin</name><value>true</value></property>\n</configuration>\n"), 0o644))
	err := queuesCommand([]string{"-f", "../../examples/fair-scheduler.xml", "-settings", bad}, &bytes.Buffer{})
	require.ErrorContains(t, err, bad+": yarn-site.xml line 2, property yarn.scheduler.fair.preemptoin: unknown property")

	// The example's old switch in the allocation file says where it went.
	old := filepath.Join(dir, "old.xml")
	require.NoError(t, os.WriteFile(old, []byte("<allocations>\n<preemption>true</preemption>\n</allocations>\n"), 0o644))
	err = queuesCommand([]string{"-f", old}, &bytes.Buffer{})
	require.ErrorContains(t, err, "allocation file line 2, <preemption>: this setting moved out of the allocation file: set the property yarn.scheduler.fair.preemption in yarn-site.xml")
}
