package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"slotplane/activities"
	"slotplane/crds/v1alpha1"
	"slotplane/jobplan"
)

// kills says whether this run carries out the kill obs names (v1alpha1.KillAnnotation,
// written by Admission's kill update): one of the holder's run.
func (j *jobRunner) kills(obs activities.JobObservation) bool {
	return killsHolders(obs, obs.Holder)
}

// kill ends the holder's run of the job as the kill asks: the application (if any) is
// deleted, the job ends Failed with reason Killed, the run is recorded, and the Scheduling
// hears it like any failure, so it goes on with its other jobs. A run that held slots tells
// Admission of its end with the report, as finish does: the slots go to the next job at once.
// A job that was still waiting has no run: its Scheduling withdraws it from Admission. A run
// that ended on its own before the kill came stays as it ended.
func (j *jobRunner) kill(ctx workflow.Context, obs activities.JobObservation) error {
	k, holder := *obs.Kill, obs.Holder
	var req *v1alpha1.CreationRequest
	if r := obs.Request; r != nil && r.Scheduling == holder {
		req = r
	}
	run := int32(0)
	if req != nil {
		run = req.Run
	}
	if st := j.status; st.Scheduling == holder && st.Run == run && st.State.Ended() {
		j.waitChange(ctx) // killed already, or ended before the kill came
		return nil
	}
	if req != nil {
		if err := j.beginRun(ctx, holder, *req); err != nil {
			return err
		}
	} else {
		j.status.Scheduling, j.status.Run = holder, 0
	}
	if app := j.status.Application; app != nil {
		if err := j.deleteApp(ctx, *app); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("killed by %s (%s)", k.By, k.As)
	if k.Reason != "" {
		msg += ": " + k.Reason
	}
	j.status.FinishedAt = now(ctx)
	j.status.Reason = v1alpha1.ReasonKilled
	r := &runReport{j: j, holder: holder, progress: JobProgress{Job: j.key.Name, Run: run}}
	if req != nil {
		if ph := j.phases(); ph.EndedAt == nil {
			ph.EndedAt = nowMicro(ctx)
		}
		jobplan.RecordRun(&j.status, v1alpha1.RunFailed, msg, jobplan.Where{})
		j.countEnd(ctx, v1alpha1.RunFailed)
		if req.SchedulingUID != "" {
			r.also = append(r.also, j.toAdmission(*req, AdmissionEndedUpdate))
		}
	}
	return r.report(ctx, v1alpha1.JobFailed, v1alpha1.ClipMessage(msg))
}

// killsHolders: obs carries a kill of holder's run.
func killsHolders(obs activities.JobObservation, holder string) bool {
	return obs.Kill != nil && holder != "" && obs.Kill.Scheduling == holder
}
