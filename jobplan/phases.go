package jobplan

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slotplane/crds/v1alpha1"
)

// maxPlacedTimes is the schema's bound on status.phases.executorsPlacedAt.
const maxPlacedTimes = 4096

// NotePlaced takes into a run's phases what a wait saw: when the driver was first seen
// running, and when each executor was first seen placed (placedAt, in order; the wait
// reports all it knows of, those ph holds already among them). The first time of each
// stays, and executors placed since the last wait are added, up to the schema's bound. The
// run is running from the moment its last executor (of replicas) was seen placed.
func NotePlaced(ph *v1alpha1.RunPhases, driverRunningAt time.Time, placedAt []time.Time, replicas int) {
	if ph.DriverRunningAt == nil && !driverRunningAt.IsZero() {
		ph.DriverRunningAt = &metav1.MicroTime{Time: driverRunningAt.UTC()}
	}
	for _, t := range placedAt[min(len(ph.ExecutorsPlacedAt), len(placedAt)):] {
		if len(ph.ExecutorsPlacedAt) < maxPlacedTimes {
			ph.ExecutorsPlacedAt = append(ph.ExecutorsPlacedAt, metav1.MicroTime{Time: t.UTC()})
		}
	}
	if ph.RunningAt == nil && replicas > 0 && len(ph.ExecutorsPlacedAt) >= replicas {
		at := ph.ExecutorsPlacedAt[replicas-1]
		ph.RunningAt = &at
	}
}
