package jobplan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"slotplane/crds/v1alpha1"
	"slotplane/operatorapp"
)

// A run's end: a deleted application fails the job; a suspension completes it unless the
// job's suspendedOutcome says Failed; an application's own end completes or fails it with
// the operator's words.
func TestEnd(t *testing.T) {
	app := v1alpha1.ApplicationRef{Kind: "SparkApplication", Name: "wordcount-1"}
	for _, c := range []struct {
		name    string
		gone    bool
		o       operatorapp.Outcome
		state   v1alpha1.BatchJobState
		outcome v1alpha1.RunOutcome
		msg     string
	}{
		{"deleted", true, operatorapp.Outcome{}, v1alpha1.JobFailed, v1alpha1.RunFailed, "the SparkApplication wordcount-1 was deleted"},
		{"suspended, counted a success", false, operatorapp.Outcome{State: "SUSPENDED", Terminal: true, Succeeded: true, Suspended: true},
			v1alpha1.JobCompleted, v1alpha1.RunCompleted, "the application was suspended (SUSPENDED)"},
		{"suspended, counted a failure", false, operatorapp.Outcome{State: "SUSPENDED", Terminal: true, Suspended: true},
			v1alpha1.JobFailed, v1alpha1.RunFailed, "the application was suspended (SUSPENDED), and the job's suspendedOutcome is Failed"},
		{"completed", false, operatorapp.Outcome{State: "COMPLETED", Terminal: true, Succeeded: true}, v1alpha1.JobCompleted, v1alpha1.RunCompleted, "the application ended COMPLETED"},
		{"failed with the operator's words", false, operatorapp.Outcome{State: "FAILED", Terminal: true, Message: "driver exited 1"},
			v1alpha1.JobFailed, v1alpha1.RunFailed, "the application ended FAILED: driver exited 1"},
		{"failed without words", false, operatorapp.Outcome{State: "FAILED", Terminal: true}, v1alpha1.JobFailed, v1alpha1.RunFailed, "the application ended FAILED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state, outcome, msg := End(app, c.gone, c.o)
			require.Equal(t, c.state, state)
			require.Equal(t, c.outcome, outcome)
			require.Equal(t, c.msg, msg)
		})
	}
}
