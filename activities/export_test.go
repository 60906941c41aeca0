package activities

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangesCopying is a hub whose copies of kinds are what r answers, synced from the start:
// a copy that lags as far behind the API server as a test makes it.
func ChangesCopying(r client.Reader, kinds ...schema.GroupVersionKind) *Changes {
	c := NewChanges()
	c.copies, c.synced = r, map[schema.GroupVersionKind]func() bool{}
	for _, k := range kinds {
		c.synced[k] = func() bool { return true }
	}
	return c
}

// JobPodNames names the pods of a job as a wait on its application sees them, and says whether
// they came by the copy's index.
func JobPodNames(ctx context.Context, a *Activities, namespace, job string) (names []string, indexed bool, err error) {
	pods, err := a.jobPods(ctx, namespace, job)
	if err != nil {
		return nil, false, err
	}
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names, a.Changes != nil && a.Changes.podsIndexed, nil
}

// ListedPods are the run's slot pods the hub's watch listed as placed when it began
// (placements.listedSince), by UID.
func ListedPods(c *Changes, namespace, job, scheduling string, since time.Time) map[types.UID]string {
	return c.listedSince(namespace, job, scheduling, since)
}

// Copies says whether the hub keeps a copy of kind.
func Copies(c *Changes, kind schema.GroupVersionKind) bool {
	_, ok := c.synced[kind]
	return ok
}
