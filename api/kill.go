package api

import (
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"slotplane/apitypes"
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
		fail(c, invalid(apitypes.FieldError{Field: "reason", Message: fmt.Sprintf("must be printable text of at most %d bytes", maxKillReason)}))
		return
	}
	job, sched, bed, ok := s.heldJob(c, "so it has no run to kill")
	if !ok {
		return
	}
	if st := job.Status; st.Scheduling == sched && st.State.Ended() {
		fail(c, &apitypes.Error{Code: apitypes.CodeConflict, Message: fmt.Sprintf("batch job %s ended %s already in scheduling %s", job.Name, st.State, sched), Status: http.StatusConflict})
		return
	}
	user := userOf(c)
	var killed workflows.AdmissionKilled
	kill := workflows.AdmissionKill{Scheduling: sched, Job: job.Name, By: user.Name, ByGroups: user.Groups, Reason: reason}
	if err := s.updateAdmission(c, job.Namespace, bed, workflows.AdmissionKillUpdate, kill, &killed); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, apitypes.KillResult{Job: killed.Job, Scheduling: killed.Scheduling, Queue: killed.Queue, As: killed.As, Running: killed.Running})
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
