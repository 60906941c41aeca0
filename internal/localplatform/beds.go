package localplatform

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"slotplane/crds/v1alpha1"
)

// BedView is a test bed as a person starting the platform checks it: its slots, its ghosts,
// and its Ready condition.
type BedView struct {
	Total, Free int32
	// Ghosts are the bed's ghost pods, RunningGhosts those running and not being deleted.
	Ghosts, RunningGhosts int
	Ready                 bool
}

// Settled: every slot is free and held by a running ghost, and the bed says Ready.
func (b BedView) Settled() bool {
	return b.Ready && b.Total > 0 && b.Free == b.Total && b.RunningGhosts == int(b.Total) && b.Ghosts == int(b.Total)
}

// ReadBed reads a test bed and its ghosts.
func ReadBed(ctx context.Context, cl client.Reader, key client.ObjectKey) (BedView, error) {
	var tb v1alpha1.TestBed
	if err := cl.Get(ctx, key, &tb); err != nil {
		return BedView{}, err
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{v1alpha1.GhostLabel: "true", v1alpha1.TestBedLabel: key.Name}); err != nil {
		return BedView{}, err
	}
	v := BedView{Total: tb.Status.Total, Free: tb.Status.Free, Ghosts: len(pods.Items), Ready: Ready(&tb)}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			v.RunningGhosts++
		}
	}
	return v, nil
}

// Ready: the test bed's Ready condition is True (its ghosts hold every free slot).
func Ready(tb *v1alpha1.TestBed) bool {
	for _, c := range tb.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// WaitBedsReady waits, up to timeout, until every test bed of the cluster says Ready. It
// reports whether they did.
func WaitBedsReady(ctx context.Context, cl client.Reader, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var beds v1alpha1.TestBedList
		if err := cl.List(ctx, &beds); err == nil && allReady(beds.Items) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func allReady(beds []v1alpha1.TestBed) bool {
	for i := range beds {
		if !Ready(&beds[i]) {
			return false
		}
	}
	return true
}
