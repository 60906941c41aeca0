package api

import (
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	temporalclient "go.temporal.io/sdk/client"

	"slotplane/crds/v1alpha1"
	"slotplane/workflows"
)

// maxKillReason bounds what a killer may say; it goes into the job's status message.
const maxKillReason = 1024

// killJob kills a job's run (DELETE /jobs/{name}/run), on behalf of the caller: the test
// bed's Admission checks the caller's right (the job's user, or an administrator of its
// queue) and writes the kill on the BatchJob; the job's workflow deletes the application and
// ends the job Failed with reason Killed, its slots go to the next job, and its Scheduling
// goes on. The answer comes once the kill is written (202): the end follows within moments.
func (s *server) killJob(c *gin.Context) {
	reason := c.Query("reason")
	if len(reason) > maxKillReason || !utf8.ValidString(reason) || containsControl(reason) {
		fail(c, invalid(FieldError{Field: "reason", Message: fmt.Sprintf("must be printable text of at most %d bytes", maxKillReason)}))
		return
	}
	var job v1alpha1.BatchJob
	if err := s.get(c, "batch job", &job); err != nil {
		fail(c, err)
		return
	}
	j := jobOf(&job)
	bed := job.Status.TestBed
	if j.Scheduling != "" && bed == "" {
		var sched v1alpha1.Scheduling
		if err := s.Client.Get(c.Request.Context(), keyOf(job.Namespace, j.Scheduling), &sched); err == nil {
			bed = sched.Spec.TestBed
		}
	}
	if j.Scheduling == "" || bed == "" {
		fail(c, &Error{Code: CodeConflict, Message: fmt.Sprintf("batch job %s is in no Scheduling: it has no run to kill", job.Name), Status: http.StatusConflict})
		return
	}
	if st := job.Status; st.Scheduling == j.Scheduling && st.State.Ended() {
		fail(c, &Error{Code: CodeConflict, Message: fmt.Sprintf("batch job %s ended %s already in scheduling %s", job.Name, st.State, j.Scheduling), Status: http.StatusConflict})
		return
	}
	user := userOf(c)
	handle, err := s.Temporal.UpdateWorkflow(c.Request.Context(), temporalclient.UpdateWorkflowOptions{
		WorkflowID: workflows.AdmissionWorkflowID(job.Namespace, bed), UpdateName: workflows.AdmissionKillUpdate,
		Args:         []any{workflows.AdmissionKill{Scheduling: j.Scheduling, Job: job.Name, By: user.Name, ByGroups: user.Groups, Reason: reason}},
		WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
	})
	var killed workflows.AdmissionKilled
	if err == nil {
		err = handle.Get(c.Request.Context(), &killed)
	}
	if err != nil {
		fail(c, temporalError(err, fmt.Sprintf("test bed %s has no queues yet", bed)))
		return
	}
	c.JSON(http.StatusAccepted, KillResult{Job: killed.Job, Scheduling: killed.Scheduling, Queue: killed.Queue, As: killed.As, Running: killed.Running})
}

// containsControl: s has a control character (a line break would forge a log line).
func containsControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
