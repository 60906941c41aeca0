package jobplan

import (
	"fmt"

	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// End is what a run's end means for its job: the job's state, the run's outcome and the
// message that says why. app is the run's application; gone says it was deleted before it
// ended, else o is how it ended.
func End(app v1alpha1.ApplicationRef, gone bool, o operatorapp.Outcome) (v1alpha1.BatchJobState, v1alpha1.RunOutcome, string) {
	switch {
	case gone:
		return v1alpha1.JobFailed, v1alpha1.RunFailed, fmt.Sprintf("the %s %s was deleted", app.Kind, app.Name)
	case o.Suspended && o.Succeeded:
		return v1alpha1.JobCompleted, v1alpha1.RunCompleted, fmt.Sprintf("the application was suspended (%s)", o.State)
	case o.Suspended:
		return v1alpha1.JobFailed, v1alpha1.RunFailed, fmt.Sprintf("the application was suspended (%s), and the job's suspendedOutcome is Failed", o.State)
	case o.Succeeded:
		return v1alpha1.JobCompleted, v1alpha1.RunCompleted, fmt.Sprintf("the application ended %s", o.State)
	}
	msg := fmt.Sprintf("the application ended %s", o.State)
	if o.Message != "" {
		msg += ": " + o.Message
	}
	return v1alpha1.JobFailed, v1alpha1.RunFailed, msg
}
