package schedkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// Options say where a scheduler works and what it may place.
type Options struct {
	// Client calls the API, in the namespace of the test bed and the jobs.
	Client *apiclient.Client
	// TestBed is the test bed the jobs run on.
	TestBed string
	// Name starts the names of the Schedulings the kit makes: <Name>-slots-<n> for
	// placements into named slots, <Name>-queue-<n> for the others. It must be a DNS label
	// prefix; two schedulers must not share it.
	Name string
	// Queue is the queue of the QueueBased Schedulings (empty: each job's own, or the
	// placement rules').
	Queue string
	// Select picks the jobs the scheduler may place (nil: every waiting job).
	Select func(apitypes.Job) bool
	// Settle is how long the kit waits after a change for more before it decides (default
	// 20ms): a burst of changes is one decision.
	Settle time.Duration
	// Log receives what the kit does (default: slog.Default()).
	Log *slog.Logger
	// Decided, when set, hears each decision as it was carried out: the placements made and
	// those the kit refused. Tests and experiments use it.
	Decided func(v *View, made []Placement, refused []error)
}

// retryFor bounds how long one decision's API calls are retried; what is not done by then
// is decided again at the next change.
const retryFor = time.Minute

// Run schedules until ctx ends: it follows the change feed of the client's namespace, and
// after each change asks s what to run and runs it. A lost feed is opened again where it
// left off. It returns nil when ctx ends, or the error that stops it (the feed refused).
func Run(ctx context.Context, s Scheduler, o Options) error {
	if o.Client == nil || o.TestBed == "" || o.Name == "" {
		return errors.New("schedkit: Client, TestBed and Name are required")
	}
	if o.Settle <= 0 {
		o.Settle = 20 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	r := &runner{o: o, s: s, w: newWorld(), closed: map[string]bool{}}
	return r.run(ctx)
}

type runner struct {
	o Options
	s Scheduler
	w *world
	// closed are the kit's Schedulings that refused an extension: they take no more.
	closed map[string]bool
	// resume is where the feed resumes after a lost connection.
	resume apiclient.Position
}

func (r *runner) run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := r.o.Client.Watch(ctx, []string{apiclient.WatchJobs, apiclient.WatchSchedulings, apiclient.WatchTestBeds, apiclient.WatchSlotSlices}, r.resume)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if s := apiclient.StatusOf(err); s >= 400 && s < 500 && s != 429 {
				return fmt.Errorf("schedkit: the change feed refused: %w", err)
			}
			r.o.Log.Warn("schedkit: the change feed is not open; trying again", "err", err, "in", backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		r.follow(ctx, w)
		_ = w.Close()
	}
	return nil
}

// follow takes the feed's events until it ends, deciding after each settled burst.
func (r *runner) follow(ctx context.Context, w *apiclient.Watcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil && ctx.Err() == nil {
					r.o.Log.Warn("schedkit: the change feed ended; opening it again", "err", err)
				}
				return
			}
			r.take(ev)
		}
		// More of the burst, until the feed is quiet for Settle.
		quiet := time.NewTimer(r.o.Settle)
	burst:
		for {
			select {
			case <-ctx.Done():
				quiet.Stop()
				return
			case ev, ok := <-w.Events():
				if !ok {
					break burst
				}
				r.take(ev)
			case <-quiet.C:
				break burst
			}
		}
		quiet.Stop()
		r.decide(ctx)
	}
}

// take applies one event to what the kit knows.
func (r *runner) take(ev apiclient.Event) {
	r.resume.Apply(ev)
	if ev.Type == apitypes.Resync {
		fresh := newWorld()
		fresh.placed, fresh.refused, fresh.seen, fresh.nextSeen = r.w.placed, r.w.refused, r.w.seen, r.w.nextSeen
		r.w = fresh
		for _, item := range ev.Items {
			r.take(item)
		}
		// A placement (or a refusal, or a place in line) whose job the picture no longer
		// has is gone.
		for name := range r.w.seen {
			if _, ok := r.w.jobs[name]; !ok {
				r.w.jobGone(name)
			}
		}
		return
	}
	var err error
	switch ev.Kind {
	case apitypes.KindBatchJob:
		var j apitypes.Job
		if j, err = ev.Job(); err == nil {
			if ev.Type == apitypes.Deleted {
				r.w.jobGone(j.Name)
			} else {
				r.w.jobChanged(j)
			}
		}
	case apitypes.KindScheduling:
		var s apitypes.Scheduling
		if s, err = ev.Scheduling(); err == nil {
			if ev.Type == apitypes.Deleted {
				delete(r.w.schedulings, s.Name)
			} else {
				r.w.schedulingChanged(s)
			}
		}
	case apitypes.KindTestBed:
		var tb apitypes.TestBed
		if tb, err = ev.TestBed(); err == nil && tb.Name == r.o.TestBed {
			if ev.Type == apitypes.Deleted {
				r.w.bed = nil
			} else {
				r.w.bed = &tb
			}
		}
	case apitypes.KindSlotSlice:
		var s apitypes.SlotSlice
		if s, err = ev.SlotSlice(); err == nil && s.TestBed == r.o.TestBed {
			if ev.Type == apitypes.Deleted {
				delete(r.w.slices, s.Index)
			} else {
				r.w.slices[s.Index] = s
			}
		}
	}
	if err != nil {
		r.o.Log.Warn("schedkit: an event the kit cannot read", "err", err)
	}
}

// decide asks the scheduler and carries out what it answers.
func (r *runner) decide(ctx context.Context) {
	if r.w.bed == nil {
		return // no test bed (yet): nothing can be placed
	}
	v := r.w.view(time.Now(), r.o.Select)
	if len(v.Waiting) == 0 {
		return
	}
	ok, dropped := check(v, r.s.Decide(v))
	for _, err := range dropped {
		r.o.Log.Warn("schedkit: the scheduler's placement is refused", "err", err)
	}
	made, refused := r.apply(ctx, ok)
	refused = append(dropped, refused...)
	if r.o.Decided != nil {
		r.o.Decided(v, made, refused)
	}
}

// apply carries out checked placements: their notes first, then the jobs, appended to the
// kit's current Scheduling of their mode (made when there is none that takes more). It
// answers what was done and what the API refused.
func (r *runner) apply(ctx context.Context, ps []Placement) (made []Placement, refused []error) {
	ctx, cancel := context.WithTimeout(ctx, retryFor)
	defer cancel()
	var ready []Placement
	for _, p := range ps {
		if len(p.Notes) > 0 {
			err := retrying(ctx, func() error {
				_, err := r.o.Client.PatchSchedulerData(ctx, p.Job, apitypes.SchedulerDataPatch(p.Notes))
				return err
			})
			if err != nil {
				refused = append(refused, r.refuse(p.Job, fmt.Errorf("write the notes of job %s: %w", p.Job, err)))
				continue
			}
		}
		ready = append(ready, p)
	}
	var slotted, queued []Placement
	for _, p := range ready {
		if len(p.Slots) > 0 {
			slotted = append(slotted, p)
		} else {
			queued = append(queued, p)
		}
	}
	for _, group := range []struct {
		mode v1alpha1.SchedulingMode
		ps   []Placement
	}{{v1alpha1.SlotBased, slotted}, {v1alpha1.QueueBased, queued}} {
		if len(group.ps) == 0 {
			continue
		}
		ok, bad := r.submit(ctx, group.mode, group.ps)
		made, refused = append(made, ok...), append(refused, bad...)
	}
	return made, refused
}

// submit appends placements of one mode to the kit's Scheduling of that mode, making a new
// one when there is none or the current one takes no more. When the API refuses the lot, the
// placements are tried one by one, and those refused alone are dropped until their job
// changes.
func (r *runner) submit(ctx context.Context, mode v1alpha1.SchedulingMode, ps []Placement) (made []Placement, refused []error) {
	entries := func(ps []Placement) []v1alpha1.SchedulingJob {
		out := make([]v1alpha1.SchedulingJob, len(ps))
		for i, p := range ps {
			out[i] = v1alpha1.SchedulingJob{Name: p.Job, Replication: p.Replicas, SlotIDs: p.Slots}
		}
		return out
	}
	in, err := r.appendJobs(ctx, mode, entries(ps))
	if err == nil {
		r.placed(ps, in)
		return ps, nil
	}
	if len(ps) == 1 || !refusedByTheAPI(err) {
		for _, p := range ps {
			refused = append(refused, r.refuse(p.Job, err))
		}
		return nil, refused
	}
	for _, p := range ps {
		in, err := r.appendJobs(ctx, mode, entries([]Placement{p}))
		if err != nil {
			refused = append(refused, r.refuse(p.Job, err))
			continue
		}
		r.placed([]Placement{p}, in)
		made = append(made, p)
	}
	return made, refused
}

// refusedByTheAPI: the API looked at the request and said no (not a lost connection or
// an unavailable server, which retrying has already waited out).
func refusedByTheAPI(err error) bool {
	s := apiclient.StatusOf(err)
	return s >= 400 && s < 500 && s != 429
}

// refuse remembers a job the API would not run (a refusal that names the job: forbidden,
// missing, invalid), so that it waits until it changes or RefusedFor passes, and answers
// why. A conflict is not the job's: it is offered again at the next change.
func (r *runner) refuse(job string, err error) error {
	switch apiclient.StatusOf(err) {
	case 403, 404, 422:
		r.w.refused[job] = refusal{version: r.w.jobs[job].ResourceVersion, until: time.Now().Add(RefusedFor)}
	}
	r.o.Log.Warn("schedkit: a placement was not made", "job", job, "err", err)
	return fmt.Errorf("job %s: %w", job, err)
}

func (r *runner) placed(ps []Placement, in string) {
	for _, p := range ps {
		r.w.placed[p.Job] = &placement{slots: slices.Clone(p.Slots), scheduling: in}
	}
}

// appendJobs extends the current Scheduling of the mode with jobs, or makes a new one when
// there is none, the current one has ended, or it cannot take so many more; it answers
// which.
func (r *runner) appendJobs(ctx context.Context, mode v1alpha1.SchedulingMode, jobs []v1alpha1.SchedulingJob) (string, error) {
	for attempt := 0; attempt < 3; attempt++ {
		cur, next := r.current(mode, jobs)
		if cur == "" {
			err := retrying(ctx, func() error {
				s, err := r.o.Client.CreateScheduling(ctx, apitypes.SchedulingRequest{Name: next, TestBed: r.o.TestBed, Mode: mode, Queue: r.o.Queue, Jobs: jobs})
				if err == nil {
					r.w.schedulings[s.Name] = s
				}
				return err
			})
			if apiclient.IsConflict(err) {
				// The name is taken (an earlier run of the kit, not in the feed yet): the
				// next one, once the kit knows of this one.
				s, gerr := r.o.Client.GetScheduling(ctx, next)
				if gerr != nil {
					return "", err
				}
				r.w.schedulings[next], r.closed[next] = s, true
				continue
			}
			return next, err
		}
		err := retrying(ctx, func() error {
			s, err := r.o.Client.ExtendScheduling(ctx, cur, apitypes.SchedulingPatch{Append: jobs})
			if err == nil {
				r.w.schedulings[s.Name] = s
			}
			return err
		})
		if !apiclient.IsConflict(err) && !apiclient.IsNotFound(err) {
			return cur, err
		}
		// Ended or deleted since the feed said otherwise, or ending: a Scheduling whose
		// last job ended refuses an extension while it completes, before its status says
		// so. The kit's jobs are held by none of its Schedulings (the view leaves those out),
		// so the next Scheduling takes them.
		if apiclient.IsNotFound(err) {
			delete(r.w.schedulings, cur)
		} else {
			r.closed[cur] = true
		}
	}
	return "", fmt.Errorf("no Scheduling of %s takes the jobs", r.o.Name)
}

// current is the kit's Scheduling of the mode that takes jobs now, or "" and the name of the
// next one to make.
func (r *runner) current(mode v1alpha1.SchedulingMode, adding []v1alpha1.SchedulingJob) (cur, next string) {
	prefix := r.o.Name + "-" + map[v1alpha1.SchedulingMode]string{v1alpha1.SlotBased: "slots", v1alpha1.QueueBased: "queue"}[mode] + "-"
	last, best := 0, ""
	for name, s := range r.w.schedulings {
		n, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
		if !strings.HasPrefix(name, prefix) || err != nil {
			continue
		}
		if n > last {
			last, best = n, ""
			if !finished(s) && !s.Deleting && !r.closed[name] && s.Mode == mode && fits(s, adding) {
				best = name
			}
		}
	}
	return best, fmt.Sprintf("%s%d", prefix, last+1)
}

func finished(s apitypes.Scheduling) bool {
	switch s.Status.State {
	case v1alpha1.SchedulingCompleted, v1alpha1.SchedulingFailed, v1alpha1.SchedulingCancelled:
		return true
	}
	return false
}

// fits says whether a Scheduling takes the jobs within its bounds.
func fits(s apitypes.Scheduling, adding []v1alpha1.SchedulingJob) bool {
	if len(s.Jobs)+len(adding) > v1alpha1.MaxSchedulingJobs {
		return false
	}
	slots := 0
	for _, j := range append(slices.Clone(s.Jobs), adding...) {
		slots += int(j.Replication)
	}
	return slots <= v1alpha1.MaxSchedulingSlots
}

// retrying calls f until it succeeds, the API refuses (a 4xx other than 429), or ctx ends.
func retrying(ctx context.Context, f func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || refusedByTheAPI(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		sleep(ctx, wait)
		wait = min(2*wait, 5*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
