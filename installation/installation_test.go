package installation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	require.Equal(t, []string{"slotplane", "slotplane-admission"}, Default.Queues())
	require.Equal(t, "scheduling/ns/nightly", Default.SchedulingID("ns", "nightly"))
	eu := Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	require.Equal(t, []string{"eu", "eu-admission"}, eu.Queues())
	require.Equal(t, "eu-1/testbed/ns/bed", eu.TestBedID("ns", "bed"))
	require.Equal(t, "eu-1/admission/ns/bed", eu.AdmissionID("ns", "bed"))
	require.Equal(t, "eu-1/batchjob/ns/a", eu.BatchJobID("ns", "a"))
	require.NoError(t, eu.Check())
	require.NoError(t, Default.Check())
	for in, msg := range map[Names]string{
		{TaskQueue: "eu'; DROP"}:             `holds "'"`,
		{IDPrefix: "a b/"}:                   `holds " "`,
		{TaskQueue: "/_sys/x"}:               "starts with /",
		{IDPrefix: strings.Repeat("x", 101)}: "at most 100",
	} {
		require.ErrorContains(t, in.Check(), msg, "%+v", in)
	}
}

// A run's installation comes from its queue, with the Admission suffix off, and from the id
// its front door gave it.
func TestOfRun(t *testing.T) {
	eu := Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	for _, c := range []struct {
		queue, id, own string
		admission      bool
		want           Names
	}{
		{eu.AdmissionQueue(), eu.AdmissionID("ns", "bed"), Default.AdmissionID("ns", "bed"), true, eu},
		{eu.Queue(), eu.BatchJobID("ns", "a"), Default.BatchJobID("ns", "a"), false, eu},
		{Default.Queue(), Default.TestBedID("ns", "bed"), Default.TestBedID("ns", "bed"), false, Names{TaskQueue: DefaultTaskQueue}},
		{Default.AdmissionQueue(), Default.AdmissionID("ns", "bed"), Default.AdmissionID("ns", "bed"), true, Names{TaskQueue: DefaultTaskQueue}},
		{"unit-test", "some-id", Default.BatchJobID("ns", "a"), false, Names{TaskQueue: "unit-test"}},
	} {
		require.Equal(t, c.want, OfRun(c.queue, c.id, c.own, c.admission), c.id)
	}
}

// The bridge's query names the installation's queue (the Admission queue for Admission),
// and its prefix when it has one.
func TestRunningQuery(t *testing.T) {
	require.Equal(t, "WorkflowType = 'TestBedWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = 'slotplane'", RunningQuery(Default, "TestBedWorkflow"))
	eu := Names{TaskQueue: "eu", IDPrefix: "eu-1/"}
	require.Equal(t, "WorkflowType = 'AdmissionWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = 'eu-admission' AND WorkflowId STARTS_WITH 'eu-1/'",
		RunningQuery(eu, "AdmissionWorkflow"))
}
