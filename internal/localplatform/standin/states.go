package standin

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The stand-in walks the operators' own states: Spark's SUBMITTED, RUNNING, then SUCCEEDING
// or FAILING before COMPLETED or FAILED, SUBMISSION_FAILED before FAILED, SUSPENDING before
// SUSPENDED; Flink's job RECONCILING, RUNNING, then FINISHED or FAILED, with the lifecycle
// DEPLOYED, STABLE, FAILED or SUSPENDED. These annotations of an application ask for the
// rest, so that tests can see what slotplane makes of each.
const (
	// SimDetourAnnotation lists states the application shows, one after another, for
	// DetourStep each, once its workers all run; then it runs on as before. Spark takes
	// applicationState values ("UNKNOWN,PENDING_RERUN,INVALIDATING"); Flink takes
	// "job=STATE" and "lifecycle=STATE" ("job=RESTARTING,lifecycle=UPGRADING"). The
	// application's run time (SimDurationAnnotation) counts from the same moment, so make it
	// longer than the detour.
	SimDetourAnnotation = "slotplane.io/sim-detour"
	// SimOutcomeSuspended, as SimOutcomeAnnotation, makes the application end as though it
	// were suspended when its run time is up (Spark SUSPENDED; Flink job SUSPENDED, lifecycle
	// SUSPENDED), as setting spec.suspend or spec.job.state suspended does at any time.
	SimOutcomeSuspended = "Suspended"
)

// DetourStep is how long each state of a detour shows.
const DetourStep = time.Second

// detour is the state a detour shows now, and when the next one is due; "" once it is
// over (or there is none). It counts from the leader's WorkersRunningAnnotation.
func detour(annotations map[string]string, leader *corev1.Pod, now time.Time) (state string, next time.Duration) {
	list := annotations[SimDetourAnnotation]
	since, ok := workersRunningSince(leader)
	if list == "" || !ok {
		return "", 0
	}
	var states []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			states = append(states, s)
		}
	}
	elapsed := now.Sub(since)
	if elapsed < 0 {
		elapsed = 0
	}
	i := int(elapsed / DetourStep)
	if i >= len(states) {
		return "", 0
	}
	return states[i], DetourStep*time.Duration(i+1) - elapsed
}

func workersRunningSince(leader *corev1.Pod) (time.Time, bool) {
	if leader == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, leader.Annotations[WorkersRunningAnnotation])
	return t, err == nil
}

// suspendedByOutcome says whether the application asked to end as suspended.
func suspendedByOutcome(annotations map[string]string) bool {
	return annotations[SimOutcomeAnnotation] == SimOutcomeSuspended
}
