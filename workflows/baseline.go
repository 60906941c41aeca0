package workflows

import (
	"maps"

	"go.temporal.io/sdk/workflow"
)

// BaselineChange is the version marker that a run of a BatchJob, Scheduling or Admission
// workflow records first, before any other command: such a run takes every change of
// baselined at the version given there, without a marker of its own.
//
// Each workflow.GetVersion that records a marker also upserts the TemporalChangeVersion
// search attribute, with every change the run recorded so far; the SDK offers no way out.
// On the server that is a history event and a write of the run's visibility record. A
// job's run recorded four or five such markers, and a Scheduling or Admission run all of
// its own again after each continue-as-new: a visibility write per marker, per job.
//
// Runs from before the baseline have no such marker (their replay reads DefaultVersion)
// and ask workflow.GetVersion for each change as they always did, so their histories
// replay unchanged. A change made after the baseline takes a change ID of its own and
// calls workflow.GetVersion; a change in baselined keeps its version for good (a later
// step of the same change takes a new ID, or a new baseline), since a baselined run has no
// marker that could say which version it ran with.
const BaselineChange = "baseline-1"

// baselined are the changes that BaselineChange implies, at the version it implies. The
// decision rules of Admission (AdmissionRulesChange) are not among them: their latest
// version moves with package queue.
var baselined = map[string]workflow.Version{
	LocalActivitiesChange:           1,
	ClientSignalsChange:             1,
	DirectReleaseChange:             1,
	OneStartReportChange:            1,
	KillChange:                      1,
	ClaimQueuesChange:               1,
	GrantsBeforeTheirProgressChange: 1,
	StatusDeltasChange:              1,
	BatchedMessagesChange:           1,
	StatusPaceChange:                1,
	StatusPaceBySizeChange:          1,
	BatchedRequestsChange:           1,
	NudgeBeforeGhostsChange:         1,
	GiveBackInTheRequestChange:      1,
	UpdateIntervalChange:            1,
	CommitBeforeTellingChange:       2,
	RecordQueuesChange:              1,
	RecordNewQueuesChange:           1,
}

// Baseline2Change is the second baseline: a run that records it takes every change of
// baselined2 at the version given there, with no marker of its own. Runs that recorded
// BaselineChange (or none) replay as they ran, and ask workflow.GetVersion for the changes
// made after their baseline.
const Baseline2Change = "baseline-2"

// baselined2 are the changes that Baseline2Change implies: those of baselined, and the ones
// made after it that a run of either workflow meets.
var baselined2 = withChanges(baselined, map[string]workflow.Version{
	KeptResyncTimerChange:  1,
	StatusPaceSlowerChange: 1,
	QuietSubmitChange:      1,
})

// withChanges is a baseline's changes: those of the baseline before it, and the ones made
// since.
func withChanges(before, since map[string]workflow.Version) map[string]workflow.Version {
	m := maps.Clone(since)
	maps.Copy(m, before)
	return m
}

// Baseline3Change is the third baseline: a run that records it takes every change of
// baselined3 at the version given there, with no marker of its own. Runs that recorded an
// earlier baseline (or none) replay as they ran, and ask workflow.GetVersion for the
// changes made after their baseline.
const Baseline3Change = "baseline-3"

// baselined3 are the changes that Baseline3Change implies: those of baselined2, and the
// ones made after it.
var baselined3 = withChanges(baselined2, map[string]workflow.Version{
	BatchedGrantsChange:   1,
	FirstWaitInTaskChange: 1,
	StartNudgesChange:     1,
	RestAfterEndChange:    1,
})

// baselineKey keeps in a workflow's context which baseline its run has (0: none).
type baselineKey struct{}

// withBaseline records Baseline3Change, or reads on replay the baseline the run recorded,
// and keeps the answer in the context for changeVersion. It must come first in a workflow
// function, before anything that makes a command. (A replay of a run that recorded an
// earlier baseline finds no marker of the later ones: workflow.GetVersion then answers
// DefaultVersion and records nothing.)
func withBaseline(ctx workflow.Context) workflow.Context {
	level := 0
	switch {
	case workflow.GetVersion(ctx, Baseline3Change, workflow.DefaultVersion, 1) >= 1:
		level = 3
	case workflow.GetVersion(ctx, Baseline2Change, workflow.DefaultVersion, 1) >= 1:
		level = 2
	case workflow.GetVersion(ctx, BaselineChange, workflow.DefaultVersion, 1) >= 1:
		level = 1
	}
	return workflow.WithValue(ctx, baselineKey{}, level)
}

// changeVersion is the version this run takes of a change: its baseline's, in a run whose
// baseline has the change; else what workflow.GetVersion records or replays, up to the
// latest version. A context made outside withBaseline (a run of another workflow) asks
// workflow.GetVersion.
func changeVersion(ctx workflow.Context, change string) workflow.Version {
	latest, ok := baselines[len(baselines)-1][change] // the last baseline holds every change
	if !ok {
		panic("workflows: change " + change + " is not in the baseline")
	}
	level, _ := ctx.Value(baselineKey{}).(int)
	if level > 0 {
		// Each baseline holds the changes of those before it.
		if v, ok := baselines[level-1][change]; ok {
			return v
		}
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, latest)
}

// baselines are the changes of each baseline, by its level less one.
var baselines = []map[string]workflow.Version{baselined, baselined2, baselined3}
