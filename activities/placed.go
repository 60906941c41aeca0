package activities

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"slotplane/crds/v1alpha1"
	"slotplane/slots"
)

// placedRetention is how long the hub remembers a run's placements after it last saw one of
// its slot pods change: far longer than a wait ever starts after its application, short
// enough that a busy namespace's runs cost little memory.
const placedRetention = 10 * time.Minute

// placements remembers, per run, when the hub first saw each of its slot pods bound to a node
// in a slot the extender proved. A wait that begins late (its worker was slow to take it up)
// may find a short run ended and its executors gone already; without this it would never
// learn that they were placed, and the run's record would have no running time. It also
// gives every wait the time a placement was first seen, which under load comes before the
// wait's own look.
type placements struct {
	mu    sync.Mutex
	runs  map[placedRun]*placedPods
	swept time.Time
}

// placedRun names a run by the labels its slot pods carry: one run of a job per Scheduling.
// A driver or JobManager carries no Scheduling label: its entry is the job's (driver, no
// Scheduling), and holds when each of the job's pods that take no slot was first seen
// running, since a short run's driver has finished by the time a late wait looks.
type placedRun struct {
	namespace, job, scheduling string
	driver                     bool
}

type placedPods struct {
	first map[types.UID]time.Time
	// listed are the pods (by name) first seen in the watch's initial list: placed before
	// the watch began, at a moment their first-seen time does not tell (a worker that
	// starts again after a kill lists the pods placed while it was away).
	listed map[types.UID]string
	last   time.Time
}

// note records pod as placed at at, if it is a slot pod bound in its proven slot, or as
// running, if it is a driver or JobManager that runs, and was not seen so before; listed
// says it was seen in the watch's initial list.
func (p *placements) note(pod *corev1.Pod, at time.Time, listed bool) {
	l := pod.Labels
	run := placedRun{namespace: pod.Namespace, job: l[v1alpha1.BatchJobLabel], scheduling: l[v1alpha1.ActiveSchedulingLabel]}
	if run.job == "" || l[v1alpha1.GhostLabel] == "true" || pod.Spec.NodeName == "" {
		return
	}
	if _, slotPod := l[v1alpha1.TestBedLabel]; !slotPod {
		if pod.Status.Phase != corev1.PodRunning {
			return
		}
		run.scheduling, run.driver = "", true
	} else if _, proven := slots.ProvenSlot(pod); run.scheduling == "" || !proven {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runs == nil {
		p.runs = map[placedRun]*placedPods{}
	}
	r := p.runs[run]
	if r == nil {
		r = &placedPods{first: map[types.UID]time.Time{}}
		p.runs[run] = r
	}
	if _, ok := r.first[pod.UID]; !ok {
		r.first[pod.UID] = at
		if listed {
			if r.listed == nil {
				r.listed = map[types.UID]string{}
			}
			r.listed[pod.UID] = pod.Name
		}
	}
	r.last = at
	if at.Sub(p.swept) > time.Minute {
		p.swept = at
		for k, r := range p.runs {
			if at.Sub(r.last) > placedRetention {
				delete(p.runs, k)
			}
		}
	}
}

// driverSince is the earliest time a driver or JobManager of the job was first seen running
// at or after since (zero: none).
func (p *placements) driverSince(namespace, job string, since time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	if r := p.runs[placedRun{namespace: namespace, job: job, driver: true}]; r != nil {
		for _, t := range r.first {
			if !t.Before(since) && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
	}
	return first
}

// since returns the first-seen placement times of the run's slot pods placed at or after
// since (a pod of an earlier run of the same name was placed before its application was
// made).
func (p *placements) since(namespace, job, scheduling string, since time.Time) map[types.UID]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.runs[placedRun{namespace: namespace, job: job, scheduling: scheduling}]
	if r == nil {
		return nil
	}
	out := map[types.UID]time.Time{}
	for uid, t := range r.first {
		if !t.Before(since) {
			out[uid] = t
		}
	}
	return out
}

// listedSince returns, by pod name, the run's slot pods that the watch first saw in its
// initial list, among those since returns: pods whose placement time since only bounds.
func (p *placements) listedSince(namespace, job, scheduling string, since time.Time) map[types.UID]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.runs[placedRun{namespace: namespace, job: job, scheduling: scheduling}]
	if r == nil {
		return nil
	}
	var out map[types.UID]string
	for uid, name := range r.listed {
		if !r.first[uid].Before(since) {
			if out == nil {
				out = map[types.UID]string{}
			}
			out[uid] = name
		}
	}
	return out
}

// NotePod tells the hub what a watch saw of a pod at at: a slot pod bound in its proven slot
// is remembered as placed, a driver or JobManager that runs as running (see placements).
// WatchChanges calls it for every pod it sees added or changed; a test may feed a hub of its
// own.
func (c *Changes) NotePod(pod *corev1.Pod, at time.Time) {
	if c != nil {
		c.placed.note(pod, at, false)
	}
}

// NoteListedPod is NotePod for a pod of the watch's initial list, which the watch did not
// see placed: it was placed before the watch began (a wait may ask the scheduler's events
// when).
func (c *Changes) NoteListedPod(pod *corev1.Pod, at time.Time) {
	if c != nil {
		c.placed.note(pod, at, true)
	}
}

// driverSince is placements.driverSince of the hub, zero without one.
func (c *Changes) driverSince(namespace, job string, since time.Time) time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.placed.driverSince(namespace, job, since)
}

// placedSince is placements.since of the hub, nil without one.
func (c *Changes) placedSince(namespace, job, scheduling string, since time.Time) map[types.UID]time.Time {
	if c == nil {
		return nil
	}
	return c.placed.since(namespace, job, scheduling, since)
}

// listedSince is placements.listedSince of the hub, nil without one.
func (c *Changes) listedSince(namespace, job, scheduling string, since time.Time) map[types.UID]string {
	if c == nil {
		return nil
	}
	return c.placed.listedSince(namespace, job, scheduling, since)
}
