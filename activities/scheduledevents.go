package activities

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// placedUnwatched adds to placedAt the executors of an ended run that no watch saw placed:
// they came and went while no worker was up to watch (it was restarting), so neither this
// wait nor the worker's watch knows them. The kube-scheduler's Scheduled event of each pod
// says when it was bound. A SparkApplication names its executors (executors); a
// FlinkDeployment's TaskManagers are found by their names (taskManagersUnwatched). Events of
// an earlier application of the same name (before in.Since) do not count. It reads one
// executor's events at a time, until the run has as many placements as executors, and at
// most twice that many executors' (a run that failed may name many). What cannot be read is
// left out: the run's record then lacks a time, which is no reason to fail the run.
func (a *Activities) placedUnwatched(ctx context.Context, in AppKey, executors []string, placedAt map[types.UID]time.Time) {
	for _, name := range executors[:min(len(executors), 2*in.Replicas)] {
		if len(placedAt) >= in.Replicas {
			return
		}
		bound, err := a.boundAt(ctx, in.Namespace, name, in.Since)
		if err != nil {
			slog.Warn("the scheduler's events of an executor no watch saw could not be read", "job", in.Job, "pod", name, "err", err)
			return
		}
		for uid, at := range bound {
			if _, known := placedAt[uid]; !known {
				placedAt[uid] = at
			}
		}
	}
}

// taskManagersUnwatched is placedUnwatched for a FlinkDeployment's run (cluster: the
// deployment's name; "" for any other run): its status names no TaskManager, but Flink names
// each cluster's TaskManager pods alike (flinkTaskManager), so one read of the namespace's
// Scheduled events, from the API server's watch cache, finds those of the run's pods. The
// earliest first, it adds until the run has as many placements as TaskManagers. A pod of an
// earlier deployment of the same name (an event before in.Since) does not count.
func (a *Activities) taskManagersUnwatched(ctx context.Context, in AppKey, cluster string, placedAt map[types.UID]time.Time) {
	if cluster == "" || len(placedAt) >= in.Replicas {
		return
	}
	bound, err := a.scheduledEvents(ctx, in.Namespace, fields.Set{}, in.Since, func(pod string) bool { return flinkTaskManager(cluster, pod) })
	if err != nil {
		slog.Warn("the scheduler's events of TaskManagers no watch saw could not be read", "job", in.Job, "deployment", cluster, "err", err)
		return
	}
	uids := slices.SortedFunc(maps.Keys(bound), func(x, y types.UID) int { return bound[x].Compare(bound[y]) })
	for _, uid := range uids {
		if len(placedAt) >= in.Replicas {
			return
		}
		if _, known := placedAt[uid]; !known {
			placedAt[uid] = bound[uid]
		}
	}
}

// flinkTaskManager says whether pod is the name Flink's native Kubernetes mode gives a
// TaskManager of cluster: "<cluster>-taskmanager-<attempt>-<index>", both numbers.
func flinkTaskManager(cluster, pod string) bool {
	rest, ok := strings.CutPrefix(pod, cluster+"-taskmanager-")
	if !ok {
		return false
	}
	attempt, index, ok := strings.Cut(rest, "-")
	return ok && allDigits(attempt) && allDigits(index)
}

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// placedBeforeTheWatch takes, for each pod in listed (by name) that placedAt holds, the moment
// the kube-scheduler bound it, from its Scheduled event, when that comes before the time
// placedAt has: the pods were placed before the worker's watch began (they were placed
// while the worker was away, and its new watch listed them) or before this wait's first
// look, so their first-seen time is late by as much as the worker was away. Only the times
// of a run that lacks some are worth reading (AppKey.Known), at most twice its executor
// count, in the pods' names' order; what cannot be read keeps its first-seen time.
func (a *Activities) placedBeforeTheWatch(ctx context.Context, in AppKey, listed map[types.UID]string, placedAt map[types.UID]time.Time) {
	uids := slices.SortedFunc(maps.Keys(listed), func(x, y types.UID) int { return strings.Compare(listed[x], listed[y]) })
	read := 0
	for _, uid := range uids {
		had, ok := placedAt[uid]
		if !ok {
			continue
		}
		if read++; read > 2*in.Replicas {
			return
		}
		bound, err := a.boundAt(ctx, in.Namespace, listed[uid], in.Since)
		if err != nil {
			slog.Warn("the scheduler's events of a pod placed before the watch began could not be read", "job", in.Job, "pod", listed[uid], "err", err)
			return
		}
		if t, ok := bound[uid]; ok && t.Before(had) {
			placedAt[uid] = t
		}
	}
}

// boundAt reads the kube-scheduler's Scheduled events of the pods named pod (from the API
// server's watch cache) and returns, by pod UID, when each was bound, at since or later:
// an event from before since is of an earlier pod of that name.
func (a *Activities) boundAt(ctx context.Context, namespace, pod string, since time.Time) (map[types.UID]time.Time, error) {
	return a.scheduledEvents(ctx, namespace, fields.Set{"involvedObject.name": pod}, since, nil)
}

// scheduledEvents reads the kube-scheduler's Scheduled events of pods in namespace that also
// match set (from the API server's watch cache), of the pods whose names name accepts (nil:
// all), and returns, by pod UID, when each was bound, at since or later.
func (a *Activities) scheduledEvents(ctx context.Context, namespace string, set fields.Set, since time.Time, name func(string) bool) (map[types.UID]time.Time, error) {
	var events corev1.EventList
	match := fields.Set{"involvedObject.kind": "Pod", "reason": "Scheduled"}
	maps.Copy(match, set)
	err := a.Client.List(ctx, &events, client.InNamespace(namespace), client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(match)},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		return nil, err
	}
	out := map[types.UID]time.Time{}
	for _, e := range events.Items {
		if name != nil && !name(e.InvolvedObject.Name) {
			continue
		}
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.FirstTimestamp.Time
		}
		uid := e.InvolvedObject.UID
		if uid == "" || at.IsZero() || at.Before(since) {
			continue
		}
		if was, ok := out[uid]; !ok || at.Before(was) {
			out[uid] = at
		}
	}
	return out, nil
}
