package replay

import (
	"fmt"
	"slices"
	"time"

	"slotplane/queue"
)

// Result is what a replay measured.
type Result struct {
	Mode     Mode
	Slots    int
	SlotSize queue.Resources
	// Total is what the queues shared (Slots x SlotSize).
	Total   queue.Resources
	StartUp time.Duration
	// Preemption says whether preemption was simulated, or why not.
	Preemption string
	// Jobs counts the trace's jobs: Done finished, Refused were refused at submission
	// (placement or ACL), Unfinished started or waited but did not finish.
	Jobs, Done, Refused, Unfinished int
	// Makespan is when the last job finished; End when the replay ended (the makespan,
	// unless jobs were left unfinished). Averages are taken over [0, End].
	Makespan, End time.Duration
	// Stopped says why jobs were left unfinished: a deadlock (nothing can happen any more),
	// the Limit, or the event bound. Empty when every job that was admitted finished.
	Stopped string
	// SlotUtilization is the slot-seconds executors held over the slot-seconds there were
	// in [0, End]. Drivers do not count (in gang mode they run outside the slots).
	SlotUtilization float64
	// Fairness is Jain's index over the leaf queues that have jobs, of each one's usage over
	// its instantaneous fair share, averaged over the time any queue had jobs. 1 is fair.
	Fairness float64
	// PreemptedSlots counts the slots preemption took back.
	PreemptedSlots int
	// MaxHeadWait is the longest a job waited at the head of its leaf (JobOutcome.HeadWait).
	MaxHeadWait time.Duration
	// Queues are the outcomes per queue: every leaf of the tree (with the queues placement
	// rules created), then the queues of refused jobs; placement refusals without a queue
	// go under "-".
	Queues []QueueOutcome
	// Outcomes are the jobs, in the trace's order.
	Outcomes []JobOutcome
}

// QueueOutcome is one queue's part of a replay.
type QueueOutcome struct {
	Queue string
	// Done, Refused and Unfinished count its jobs; the waits (submission to start) are over
	// the jobs that started.
	Done, Refused, Unfinished  int
	MeanWait, P50Wait, P95Wait time.Duration
	MaxWait                    time.Duration
	// PreemptedSlots counts the slots preemption took back for the queue, LostToOther
	// those it took from the queue's jobs.
	PreemptedSlots, LostToOther int
	// AvgSlots is how many slots its executors held on average over [0, End]; SlotShare
	// that as a fraction of the test bed's slots; SteadyShare its steady fair share as a
	// fraction of the slots.
	AvgSlots, SlotShare, SteadyShare float64
	// UseOverFair is its usage over its instantaneous fair share, averaged over the time it
	// had jobs (0 when it never had any). UseOverFairRoom is the same average, leaving out
	// the time the queue was below its share while its own settings (maxAMShare,
	// maxRunningApps, maxResources, StateAware) held back every job it had waiting: the
	// share the admission core could have given it and did, or did not.
	UseOverFair, UseOverFairRoom float64
}

// JobOutcome is what became of one job.
type JobOutcome struct {
	Name, User string
	// Queue is where placement put the job; for a placement refusal, the queue it asked for.
	Queue  string
	Submit time.Duration
	// Started: it held all its executors once, at Start (gang: its grant); Finished at Finish.
	Started, Finished bool
	Start, Finish     time.Duration
	// Refused is why it was refused at submission; Waiting why an unfinished job waited
	// last (the queues' reason).
	Refused, Waiting string
	// Preempted counts the slots taken back from it.
	Preempted int
	// HeadWait is how long it waited as the first waiting job of its leaf (until it started,
	// or the replay ended): what strict order bounds.
	HeadWait time.Duration
}

// Wait is how long the job waited from its submission to its start.
func (o JobOutcome) Wait() time.Duration { return o.Start - o.Submit }

// account adds the interval [from, to) at the current state to the time averages: the
// slots held, and each leaf's usage over its instantaneous fair share (from the leaves'
// running sums, so a long backlog does not make every interval cost a pass over it).
func (r *replay) account(from, to time.Duration) {
	if to <= from {
		return
	}
	dt := float64(to - from)
	r.heldNanos += float64(r.held) * dt
	for q, n := range r.queueHeld {
		r.slotNanos[q] += float64(n) * dt
	}
	if len(r.leafJobs) == 0 {
		return
	}
	leaves := make([]string, 0, len(r.leafJobs))
	for q := range r.leafJobs {
		leaves = append(leaves, q)
	}
	slices.Sort(leaves) // a fixed order: float sums come out the same every time
	// The shares are the queues' own: only runnable jobs demand (Tree.Demand).
	apps := r.shareApps[:0]
	waiting := map[string]int{}
	for _, j := range r.active {
		apps = append(apps, queue.App{ID: j.Name, Queue: j.queue, User: j.User, Order: j.order, Running: j.granted, Demand: r.demandOf(j)})
		if !j.granted {
			waiting[j.queue]++
		}
	}
	r.shareApps = apps
	shares := r.t.InstantaneousFairShares(r.total, apps)
	var sum, sumSq float64
	n := 0
	var wants map[string]bool
	for _, leaf := range leaves {
		share := shares[leaf]
		if share.MemoryBytes <= 0 {
			continue
		}
		usage := times(r.opts.SlotSize, int64(r.queueHeld[leaf])).Add(r.leafDriver[leaf])
		x := float64(usage.MemoryBytes) / float64(share.MemoryBytes)
		r.ratioNanos[leaf] += x * dt
		r.activeNanos[leaf] += dt
		// Below its share with jobs waiting, a leaf counts towards USE/FAIR (ROOM) only
		// when one of them wants room, not when its own settings hold them all back.
		if x < 1 && waiting[leaf] > 0 && wants == nil {
			wants = r.wantsRoom(from)
		}
		if x >= 1 || waiting[leaf] == 0 || wants[leaf] {
			r.roomRatioNanos[leaf] += x * dt
			r.roomActiveNanos[leaf] += dt
		}
		sum += x
		sumSq += x * x
		n++
	}
	if n > 0 && sumSq > 0 {
		r.jainNanos += sum * sum / (float64(n) * sumSq) * dt
		r.jainTime += dt
	}
}

// summarize fills the result's totals and per-queue outcomes.
func (r *replay) summarize() {
	res := &r.res
	for _, j := range r.jobs {
		r.summarizeJob(j)
	}
	if res.End > 0 {
		res.SlotUtilization = r.heldNanos / (float64(r.opts.Slots) * float64(res.End))
	}
	if r.jainTime > 0 {
		res.Fairness = r.jainNanos / r.jainTime
	}
	rows, order := r.queueRows()
	waits := tallyOutcomes(rows, res.Outcomes)
	for _, path := range order {
		q := rows[path]
		r.queueAverages(q, waits[path])
		res.Queues = append(res.Queues, *q)
	}
}

// summarizeJob fills a job's head wait and, when it did not finish, why it waits; it adds
// to the result's longest head wait and count of unfinished jobs.
func (r *replay) summarizeJob(j *replayJob) {
	res := &r.res
	switch {
	case j.headSince < 0:
	case j.out.Started:
		j.out.HeadWait = j.out.Start - j.headSince
	case j.active:
		j.out.HeadWait = res.End - j.headSince
	}
	res.MaxHeadWait = max(res.MaxHeadWait, j.out.HeadWait)
	if !j.active {
		return
	}
	res.Unfinished++
	switch {
	case j.granted && int64(j.held) < j.need():
		j.out.Waiting = fmt.Sprintf("holds %d of its %d executors", j.held, j.Executors)
	case j.granted:
		j.out.Waiting = "runs"
	case j.why != "":
		j.out.Waiting = j.why
	default:
		j.out.Waiting = "waits (no queue decision named it)"
	}
}

// queueRows makes the result's empty per-queue rows and their order: every leaf of the tree
// with its steady share, then the other queues the jobs name, sorted.
func (r *replay) queueRows() (map[string]*QueueOutcome, []string) {
	steady := r.t.SteadyFairShares(r.total)
	rows := map[string]*QueueOutcome{}
	var order []string
	row := func(path string) *QueueOutcome {
		if q := rows[path]; q != nil {
			return q
		}
		rows[path] = &QueueOutcome{Queue: path}
		order = append(order, path)
		return rows[path]
	}
	for _, path := range r.t.Paths() {
		if q := r.t.Queue(path); q.Leaf() && q != r.t.Queue("root") {
			o := row(path)
			o.SteadyShare = r.inSlots(steady[path]) / float64(r.opts.Slots)
		}
	}
	var extra []string
	for _, o := range r.res.Outcomes {
		if rows[o.Queue] == nil {
			extra = append(extra, o.Queue)
		}
	}
	slices.Sort(extra)
	for _, path := range slices.Compact(extra) {
		row(path)
	}
	return rows, order
}

// tallyOutcomes counts each queue's refused, done and unfinished jobs into its row and
// returns the waits of the jobs that started, per queue.
func tallyOutcomes(rows map[string]*QueueOutcome, outcomes []JobOutcome) map[string][]time.Duration {
	waits := map[string][]time.Duration{}
	for _, o := range outcomes {
		q := rows[o.Queue]
		switch {
		case o.Refused != "":
			q.Refused++
		case o.Finished:
			q.Done++
		default:
			q.Unfinished++
		}
		if o.Started {
			waits[o.Queue] = append(waits[o.Queue], o.Wait())
		}
	}
	return waits
}

// queueAverages fills a queue's row with its wait statistics (from w, its jobs' waits, which
// it sorts), its time averages and its preempted slots.
func (r *replay) queueAverages(q *QueueOutcome, w []time.Duration) {
	path, end := q.Queue, r.res.End
	if len(w) > 0 {
		slices.Sort(w)
		var sum time.Duration
		for _, d := range w {
			sum += d
		}
		q.MeanWait = sum / time.Duration(len(w))
		q.P50Wait, q.P95Wait, q.MaxWait = percentile(w, 50), percentile(w, 95), w[len(w)-1]
	}
	if end > 0 {
		q.AvgSlots = r.slotNanos[path] / float64(end)
		q.SlotShare = q.AvgSlots / float64(r.opts.Slots)
	}
	if t := r.activeNanos[path]; t > 0 {
		q.UseOverFair = r.ratioNanos[path] / t
	}
	if t := r.roomActiveNanos[path]; t > 0 {
		q.UseOverFairRoom = r.roomRatioNanos[path] / t
	}
	q.PreemptedSlots, q.LostToOther = r.preemptedFor[path], r.preemptedBy[path]
}

// inSlots is how many slots fit in r (both resources counting).
func (r *replay) inSlots(x queue.Resources) float64 {
	s := r.opts.SlotSize
	return min(float64(x.MemoryBytes)/float64(s.MemoryBytes), float64(x.MilliCores)/float64(s.MilliCores))
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i, 1)-1]
}
