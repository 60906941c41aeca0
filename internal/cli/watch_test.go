package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/cli/render"
)

// sched is a QueueBased Scheduling of two jobs in the given state.
func sched(name string, state v1alpha1.SchedulingState, finished, running int32) apitypes.Scheduling {
	return apitypes.Scheduling{Name: name, Mode: v1alpha1.QueueBased, TestBed: "bed", Jobs: make([]v1alpha1.SchedulingJob, 2),
		Status: v1alpha1.SchedulingStatus{State: state, TotalJobs: 2, FinishedJobs: finished, RunningJobs: running}}
}

// On a terminal the bars are redrawn in place: the cursor goes back up over them.
func TestProgressView_RedrawsOnATerminal(t *testing.T) {
	var out bytes.Buffer
	v := render.NewProgressView(&out, true)
	p := newProgress(nil)
	p.set(sched("a", v1alpha1.SchedulingScheduling, 0, 1))
	p.set(sched("bb", v1alpha1.SchedulingScheduling, 1, 1))
	v.Draw(p.bars())
	require.Equal(t, "\r\x1b[J"+
		"a   [....................] 0/2 finished, 1 running, Scheduling\n"+
		"bb  [##########..........] 1/2 finished, 1 running, Scheduling\n", out.String())
	out.Reset()
	p.set(sched("a", v1alpha1.SchedulingCompleted, 2, 0))
	v.Draw(p.bars())
	require.True(t, strings.HasPrefix(out.String(), "\x1b[2A\r\x1b[J"), "%q", out.String())
	require.Contains(t, out.String(), "a   [####################] 2/2 finished, 0 running, Completed\n")
	out.Reset()
	v.Note("lost the change feed")
	require.Equal(t, "\x1b[2A\r\x1b[Jlost the change feed\n"+
		"a   [####################] 2/2 finished, 0 running, Completed\n"+
		"bb  [##########..........] 1/2 finished, 1 running, Scheduling\n", out.String())
}
