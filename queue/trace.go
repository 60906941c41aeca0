package queue

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// A workload trace is a CSV file with a header line and one job per line. The header names
// the columns, in any order (case does not matter):
//
//	submit     when the job is submitted, a Go duration from the trace's start (0s, 90s, 1h30m)
//	name       the job's name, unique in the trace
//	queue      the queue it asks for; empty lets the placement rules decide
//	user       who submits it
//	groups     the user's groups, primary first, separated by semicolons; may be empty
//	driver     the driver's (or JobManager's) size, "1024 mb, 1 vcores" (quoted: it holds
//	           a comma); or instead two columns driver_mb and driver_vcores
//	executors  how many executors (TaskManagers), one slot each
//	runtime    how long the job works once all its executors hold their slots
//
// Lines starting with # are comments; blank lines are skipped. A bad line is a *TraceError
// naming the line and the column.

// TraceJob is one job of a workload trace.
type TraceJob struct {
	// Line is the job's line in the trace file (0 for a job made in code).
	Line int
	// Submit is when the job is submitted, from the start of the trace.
	Submit time.Duration
	Name   string
	// Queue is the queue the job asks for ("": the placement rules decide).
	Queue string
	User  string
	// Groups are the user's groups, the primary one first.
	Groups []string
	// Driver is the driver's or JobManager's size: the application's AM.
	Driver Resources
	// Executors is how many executors (TaskManagers) the job runs, one slot each.
	Executors int
	// Runtime is how long the job works once all its executors hold their slots.
	Runtime time.Duration
}

// Bounds of a trace's values: they keep the replay's integer arithmetic (executor-nanoseconds
// of work, and bytes of memory) far from overflowing, and are far beyond any test bed's jobs.
// A driver is at most 16 TiB (2^44 bytes) and a million vcores, so a hundred thousand of
// them still add up within an int64.
const (
	MaxTraceExecutors = 10000
	MaxTraceRuntime   = 7 * 24 * time.Hour
	MaxTraceSubmit    = 366 * 24 * time.Hour
	maxDriverMB       = 1 << 24
	maxDriverVCores   = 1 << 20
)

// maxReplayBytes and maxReplayMilliCores bound what a replay's queues share (slots x slot
// size): 1 PiB and about a million vcores. A leaf's demand adds up its jobs' demands, each no
// more than that when the jobs fit the test bed, so thousands of them stay within an int64.
const (
	maxReplayBytes      = 1 << 50
	maxReplayMilliCores = 1 << 30
)

// TraceError is a mistake in a trace: the line, and the column when one is to blame.
type TraceError struct {
	Line int
	// Column is the column's name in the header ("" when the line as a whole is wrong);
	// Field its position on the line, from 1.
	Column string
	Field  int
	Msg    string
}

func (e *TraceError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("trace line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("trace line %d, column %d (%s): %s", e.Line, e.Field, e.Column, e.Msg)
}

// The columns of a trace. driver may be replaced by driver_mb and driver_vcores.
var (
	traceColumns   = []string{"submit", "name", "queue", "user", "groups", "driver", "executors", "runtime"}
	driverSplitCol = []string{"driver_mb", "driver_vcores"}
)

// ParseTrace reads a workload trace (the format is described above TraceJob). Jobs come back
// in the order of the file; every mistake is a *TraceError.
func ParseTrace(r io.Reader) ([]TraceJob, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a spreadsheet's byte order mark
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1 // checked here, with a better message
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &TraceError{Line: 1, Msg: "the trace is empty: it needs a header line (" + strings.Join(traceColumns, ",") + ")"}
	}
	if err != nil {
		return nil, csvError(err)
	}
	headerLine, _ := cr.FieldPos(0)
	cols, err := traceHeader(header, headerLine)
	if err != nil {
		return nil, err
	}
	width := len(header)

	var jobs []TraceJob
	names := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return jobs, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != width {
			return nil, &TraceError{Line: line, Msg: fmt.Sprintf("%d fields, the header has %d", len(rec), width)}
		}
		j, err := traceJob(rec, cols, func(i int) int { l, _ := cr.FieldPos(i); return l })
		if err != nil {
			return nil, err
		}
		j.Line = line
		if first, dup := names[j.Name]; dup {
			i := cols["name"]
			return nil, &TraceError{Line: line, Column: "name", Field: i + 1, Msg: fmt.Sprintf("job %q is already on line %d", j.Name, first)}
		}
		names[j.Name] = line
		jobs = append(jobs, j)
	}
}

// csvError turns the CSV reader's error into a TraceError.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &TraceError{Line: pe.Line, Msg: fmt.Sprintf("not valid CSV at byte %d of the line: %v", pe.Column, pe.Err)}
	}
	return err
}

// traceHeader maps each column name to its field index and checks that every column is
// known, none is given twice, and none is missing.
func traceHeader(header []string, line int) (map[string]int, error) {
	cols := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(traceColumns, name) && !slices.Contains(driverSplitCol, name) {
			return nil, &TraceError{Line: line, Column: h, Field: i + 1, Msg: fmt.Sprintf("unknown column (known: %s, or driver_mb and driver_vcores for driver)", strings.Join(traceColumns, ", "))}
		}
		if _, dup := cols[name]; dup {
			return nil, &TraceError{Line: line, Column: name, Field: i + 1, Msg: "the column is given twice"}
		}
		cols[name] = i
	}
	_, whole := cols["driver"]
	_, mb := cols["driver_mb"]
	_, vc := cols["driver_vcores"]
	switch {
	case whole && (mb || vc):
		return nil, &TraceError{Line: line, Msg: "give the driver either as driver or as driver_mb and driver_vcores, not both"}
	case !whole && mb != vc:
		return nil, &TraceError{Line: line, Msg: "driver_mb and driver_vcores go together"}
	}
	for _, c := range traceColumns {
		if _, ok := cols[c]; !ok && !(c == "driver" && mb) {
			return nil, &TraceError{Line: line, Msg: fmt.Sprintf("the header lacks the column %s (it needs %s)", c, strings.Join(traceColumns, ","))}
		}
	}
	return cols, nil
}

// traceJob reads the fields of one line. lineOf gives the line a field starts on (a quoted
// field may span lines).
func traceJob(rec []string, cols map[string]int, lineOf func(int) int) (TraceJob, error) {
	l := traceLine{rec: rec, cols: cols, lineOf: lineOf}
	var j TraceJob
	var err error
	if j.Submit, err = l.duration("submit", 0, MaxTraceSubmit); err != nil {
		return j, err
	}
	if j.Name, err = l.text("name", true); err != nil {
		return j, err
	}
	if j.Queue, err = l.text("queue", false); err != nil {
		return j, err
	}
	if j.User, err = l.text("user", true); err != nil {
		return j, err
	}
	if j.Groups, err = l.groups(); err != nil {
		return j, err
	}
	if j.Driver, err = l.driver(); err != nil {
		return j, err
	}
	n, err := l.count("executors", 1, MaxTraceExecutors)
	if err != nil {
		return j, err
	}
	j.Executors = int(n)
	if j.Runtime, err = l.duration("runtime", time.Nanosecond, MaxTraceRuntime); err != nil {
		return j, err
	}
	return j, nil
}

// traceLine is one line of a trace, its fields read by column name.
type traceLine struct {
	rec  []string
	cols map[string]int
	// lineOf gives the line field i starts on.
	lineOf func(i int) int
}

// field returns a column's trimmed value and a maker of errors that blame the column.
func (l traceLine) field(name string) (string, func(format string, args ...any) error) {
	i := l.cols[name]
	v := strings.TrimSpace(l.rec[i])
	return v, func(format string, args ...any) error {
		return &TraceError{Line: l.lineOf(i), Column: name, Field: i + 1, Msg: fmt.Sprintf(format, args...)}
	}
}

// duration reads a column holding a Go duration in [min, max].
func (l traceLine) duration(name string, min, max time.Duration) (time.Duration, error) {
	v, bad := l.field(name)
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, bad("%q is not a Go duration (like 0s, 90s, 1h30m)", v)
	case d < min || d > max:
		return 0, bad("%s is outside [%s, %s]", d, min, max)
	}
	return d, nil
}

// text reads a column of text without control characters, which may be empty unless
// required.
func (l traceLine) text(name string, required bool) (string, error) {
	v, bad := l.field(name)
	if required && v == "" {
		return "", bad("empty")
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return "", bad("%q holds a control character", v)
	}
	return v, nil
}

// count reads a column holding a whole number in [min, max].
func (l traceLine) count(name string, min, max int64) (int64, error) {
	v, bad := l.field(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return 0, bad("%q is not a whole number in [%d, %d]", v, min, max)
	}
	return n, nil
}

// groups reads the groups column: names separated by semicolons, the empty ones dropped.
func (l traceLine) groups() ([]string, error) {
	v, err := l.text("groups", false)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, g := range strings.Split(v, ";") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// driver reads the driver's size, from the driver column or from driver_mb and
// driver_vcores.
func (l traceLine) driver() (Resources, error) {
	if _, whole := l.cols["driver"]; whole {
		v, bad := l.field("driver")
		d, err := ParseResources(v)
		if err != nil {
			return d, bad("%v", err)
		}
		if !d.Fits(MBVCores(maxDriverMB, maxDriverVCores)) {
			return d, bad("%s is larger than any node", d)
		}
		return d, nil
	}
	mb, err := l.count("driver_mb", 0, maxDriverMB)
	if err != nil {
		return Resources{}, err
	}
	vcores, err := l.count("driver_vcores", 0, maxDriverVCores)
	if err != nil {
		return Resources{}, err
	}
	return MBVCores(mb, vcores), nil
}

// WriteTrace writes jobs as a trace that ParseTrace reads back: the columns in the order of
// the format's description, the driver as one quoted column. A driver that is not a whole
// number of mb and vcores is an error, as the format has no fractions.
func WriteTrace(w io.Writer, jobs []TraceJob) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(traceColumns); err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Driver.MemoryBytes%mib != 0 || j.Driver.MilliCores%milliPerVCore != 0 {
			return fmt.Errorf("job %s: a trace holds whole mb and vcores, the driver is %s", j.Name, j.Driver)
		}
		rec := []string{j.Submit.String(), j.Name, j.Queue, j.User, strings.Join(j.Groups, ";"), j.Driver.String(), strconv.Itoa(j.Executors), j.Runtime.String()}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReplayMode is how a replay grants a job its resources.
type ReplayMode string

// The replay modes.
const (
	// ReplayGang is slotplane's Admission: a job starts when all its slots are granted at
	// once; its driver runs outside the slots and counts only against maxAMShare.
	ReplayGang ReplayMode = "gang"
	// ReplayDriverFirst is YARN's and YuniKorn's allocation: the driver first, from the same
	// pool as the executors, then the executors one at a time once the driver has started
	// up. It can deadlock (DriverDeadlockJobs shows how).
	ReplayDriverFirst ReplayMode = "driver-first"
)

// DefaultVacate is how long slots taken back by preemption take to be free again (the pods'
// deletion and the bridge's nudge).
const DefaultVacate = 10 * time.Second

// DefaultResync is the Admission workflow's resync: it decides again at least this often.
const DefaultResync = 15 * time.Second

// ReplayOptions describe the test bed and the clock of a replay.
type ReplayOptions struct {
	// Slots is how many slots the test bed has (nodes x slots per node); SlotSize what each
	// holds. The queues share Slots x SlotSize, as in the Admission workflow.
	Slots    int
	SlotSize Resources
	// Mode is ReplayGang (the default) or ReplayDriverFirst.
	Mode ReplayMode
	// StartUp is how long a driver starts up before its executors work: in gang mode the
	// job is Starting (for StateAware) that long after its grant, and its runtime begins
	// after it; in driver-first mode the driver asks for executors only after it.
	StartUp time.Duration
	// StateAware tunes the StateAware leaves (the live Admission uses the zero value).
	StateAware StateAwareOptions
	// NoPreemption leaves preemption out even when the allocation file turns it on.
	NoPreemption bool
	// Vacate is how long preempted slots take to be free (DefaultVacate when zero).
	Vacate time.Duration
	// Resync is how often the Admission workflow decides without being nudged
	// (DefaultResync when zero). Only a preempted job asking for its slots back waits for it:
	// everything else that changes is an event of its own.
	Resync time.Duration
	// Limit stops the replay at this virtual time (zero: no limit). A replay also stops after
	// a bound on the number of events, so a preemption tug of war cannot run forever.
	Limit time.Duration
}

// ReplayResult is what a replay measured.
type ReplayResult struct {
	Mode     ReplayMode
	Slots    int
	SlotSize Resources
	// Total is what the queues shared (Slots x SlotSize).
	Total   Resources
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

// replayJob is where one job stands in a replay.
type replayJob struct {
	TraceJob
	order int64
	queue string
	out   *JobOutcome
	// active: submitted, not refused, not finished; granted: it has its slots (gang) or
	// its driver (driver-first), since grantAt.
	active, granted bool
	grantAt         time.Duration
	held            int
	// allHeld: it held all its executors once (then allHeldAt); working: its runtime runs.
	allHeld, working bool
	allHeldAt        time.Duration
	// remaining is the work left in executor-nanoseconds; progressAt when it was counted.
	remaining  int64
	progressAt time.Duration
	// why a waiting job waits: the queues' last reason.
	why string
	// slots are the slots its executors hold (gang); startedSent: the Admitter heard that
	// it left Starting.
	slots       []int32
	startedSent bool
	// headSince is since when it is the first waiting job of its leaf (-1: not yet).
	headSince time.Duration
}

// need is the job's executors as int64.
func (j *replayJob) need() int64 { return int64(j.Executors) }

// workFrom is when the job's runtime starts: it holds all its executors and its driver has
// started up.
func (j *replayJob) workFrom(startUp time.Duration) time.Duration {
	return max(j.allHeldAt, j.grantAt+startUp)
}

// advance counts the work done since progressAt, at the executors it holds now.
func (j *replayJob) advance(now time.Duration) {
	if j.working && j.held > 0 && now > j.progressAt {
		dt := int64(now - j.progressAt)
		if dt >= ceilDiv(j.remaining, int64(j.held)) {
			j.remaining = 0
		} else {
			j.remaining -= dt * int64(j.held)
		}
	}
	j.progressAt = now
}

// finishAt is when the job finishes at its current pace; ok false when it does not progress.
func (j *replayJob) finishAt() (time.Duration, bool) {
	if !j.working || j.held == 0 {
		return 0, false
	}
	return j.progressAt + time.Duration(ceilDiv(j.remaining, int64(j.held))), true
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// vacating is a slot taken back by preemption whose pod is still there, free again at at.
type vacating struct {
	slot int32
	at   time.Duration
}

// replay is one replay's state.
type replay struct {
	a      *Allocations
	t      *Tree
	opts   ReplayOptions
	total  Resources
	epoch  time.Time
	jobs   []*replayJob // in submission order
	byName map[string]*replayJob
	active []*replayJob // submitted, not refused, not done: waiting and running
	held   int          // slots held by executors
	// adm decides in gang mode: the Admission workflow's own core. owner is the job
	// holding each slot ("" when none); vacating are slots taken back whose pods are
	// still there.
	adm      *Admitter
	owner    []string
	vacating []vacating
	// lastChange is when something was last granted, finished or taken back.
	lastChange time.Duration
	preempt    bool
	apps       []App
	// Per leaf: how many active jobs, and what their drivers hold (driver-first).
	leafJobs   map[string]int
	leafDriver map[string]Resources
	// shareApps is the picture the fair shares are computed on, reused between intervals.
	shareApps []App
	// What the time averages add up.
	slotNanos   map[string]float64 // per leaf: slot-nanoseconds held
	ratioNanos  map[string]float64 // per leaf: (usage/fair share) x nanoseconds while active
	activeNanos map[string]float64 // per leaf: nanoseconds with jobs
	// The same two while nothing but room could hold the leaf back (USE/FAIR (ROOM)).
	roomRatioNanos, roomActiveNanos map[string]float64
	heldNanos                       float64
	jainNanos                       float64
	jainTime                        float64
	queueHeld                       map[string]int
	preemptedBy                     map[string]int // per victim queue: slots taken
	preemptedFor                    map[string]int // per starving queue: slots taken for it
	res                             ReplayResult
}

// Replay runs a trace through the queues of an allocation file in virtual time. In gang
// mode (the default) the decisions are the Admission workflow's own: the same Admitter takes
// each submission (placement rules, submit ACLs: a refusal is final), decides whenever
// something changes, grants a job all its slots at once, reserves for the heads of strict
// queues, backfills and preempts as the file says; a job's expected duration is its start-up
// plus its runtime. Usage counts slots; the driver counts against maxAMShare only. Slots taken
// back by preemption are free after opts.Vacate; the job works on at the pace of the
// executors it keeps and gets the lost ones back as the Admitter gives them. In driver-first
// mode (YARN's and YuniKorn's allocation, for comparison) Tree.Next allocates the driver
// first and then the executors one at a time.
//
// The clock jumps from event to event (a submission, a start-up ending, a finish, slots
// vacated, a starvation timeout, the workflow's resync while a preempted job could ask
// again), so the replay is exact and deterministic: the same input gives the same result.
// The allocation file is not changed (the replay builds its own tree). The jobs must keep
// the trace format's rules (ParseTrace's jobs do).
func Replay(a *Allocations, trace []TraceJob, opts ReplayOptions) (ReplayResult, error) {
	if err := checkReplayTrace(trace); err != nil {
		return ReplayResult{}, err
	}
	opts, err := replayOptions(opts)
	if err != nil {
		return ReplayResult{}, err
	}
	r := newReplay(a, opts)
	r.load(trace)
	r.run()
	r.summarize()
	return r.res, nil
}

// checkReplayTrace checks that the jobs keep the trace format's rules: unique names, and
// executors, times and drivers within the format's bounds.
func checkReplayTrace(trace []TraceJob) error {
	names := make(map[string]bool, len(trace))
	for i, j := range trace {
		switch {
		case j.Name == "" || names[j.Name]:
			return fmt.Errorf("job %d: the name %q is empty or not unique", i+1, j.Name)
		case j.Executors < 1 || j.Executors > MaxTraceExecutors:
			return fmt.Errorf("job %s: %d executors is outside [1, %d]", j.Name, j.Executors, MaxTraceExecutors)
		case j.Runtime <= 0 || j.Runtime > MaxTraceRuntime || j.Submit < 0 || j.Submit > MaxTraceSubmit:
			return fmt.Errorf("job %s: its submit time or runtime is out of bounds", j.Name)
		case j.Driver.MemoryBytes < 0 || j.Driver.MilliCores < 0 || !j.Driver.Fits(MBVCores(maxDriverMB, maxDriverVCores)):
			return fmt.Errorf("job %s: driver %s is out of bounds", j.Name, j.Driver)
		}
		names[j.Name] = true
	}
	return nil
}

// replayOptions checks a replay's options and fills in the defaults of those left zero.
func replayOptions(opts ReplayOptions) (ReplayOptions, error) {
	if opts.Mode == "" {
		opts.Mode = ReplayGang
	}
	switch {
	case opts.Mode != ReplayGang && opts.Mode != ReplayDriverFirst:
		return opts, fmt.Errorf("replay mode %q is neither %s nor %s", opts.Mode, ReplayGang, ReplayDriverFirst)
	case opts.Slots <= 0:
		return opts, fmt.Errorf("the test bed needs at least one slot, got %d", opts.Slots)
	case opts.SlotSize.MemoryBytes <= 0 || opts.SlotSize.MilliCores <= 0:
		return opts, fmt.Errorf("a slot needs memory and vcores, got %s", opts.SlotSize)
	case opts.SlotSize.MemoryBytes > maxReplayBytes/int64(opts.Slots) || opts.SlotSize.MilliCores > maxReplayMilliCores/int64(opts.Slots):
		return opts, fmt.Errorf("%d slots of %s is more than the replay counts", opts.Slots, opts.SlotSize)
	case opts.StartUp < 0 || opts.Vacate < 0 || opts.Resync < 0 || opts.Limit < 0:
		return opts, errors.New("start-up, vacate, resync and limit must not be negative")
	}
	if opts.Vacate == 0 {
		opts.Vacate = DefaultVacate
	}
	if opts.Resync == 0 {
		opts.Resync = DefaultResync
	}
	return opts, nil
}

// newReplay makes a replay of the allocation file with checked options and no jobs yet:
// its own tree, whether it preempts, and its Admitter.
func newReplay(a *Allocations, opts ReplayOptions) *replay {
	r := &replay{
		a: a, t: NewTree(a), opts: opts,
		total:     times(opts.SlotSize, int64(opts.Slots)),
		epoch:     time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		owner:     make([]string, opts.Slots),
		slotNanos: map[string]float64{}, ratioNanos: map[string]float64{}, activeNanos: map[string]float64{},
		roomRatioNanos: map[string]float64{}, roomActiveNanos: map[string]float64{},
		queueHeld: map[string]int{}, preemptedBy: map[string]int{}, preemptedFor: map[string]int{},
		byName:   map[string]*replayJob{},
		leafJobs: map[string]int{}, leafDriver: map[string]Resources{},
	}
	r.res = ReplayResult{Mode: opts.Mode, Slots: opts.Slots, SlotSize: opts.SlotSize, Total: r.total, StartUp: opts.StartUp}
	switch {
	case !a.Preemption.Enabled:
		r.res.Preemption = "off in the settings (" + PropPreemption + ")"
	case opts.NoPreemption:
		r.res.Preemption = "on in the settings, left out of this replay"
	case opts.Mode == ReplayDriverFirst:
		r.res.Preemption = "on in the settings, not simulated in driver-first mode"
	default:
		r.preempt = true
		r.res.Preemption = "simulated"
	}
	// The Admitter's copy of the configuration: preemption as this replay does it, and the
	// StateAware options of the settings and of the replay.
	cp := *a
	cp.Preemption.Enabled = r.preempt
	cp.StateAware.SkipStartingWithoutExecutors = cp.StateAware.SkipStartingWithoutExecutors || opts.StateAware.SkipStartingWithoutExecutors
	cp.StateAware.SlotBackedDoNotHold = cp.StateAware.SlotBackedDoNotHold || opts.StateAware.SlotBackedDoNotHold
	r.adm = NewAdmitter(AdmitterState{Config: Config{Allocations: &cp}})
	return r
}

// load gives the replay the trace's jobs, each with its outcome in the trace's order, and
// numbers them in submission order.
func (r *replay) load(trace []TraceJob) {
	r.res.Jobs = len(trace)
	r.res.Outcomes = make([]JobOutcome, len(trace))
	r.jobs = make([]*replayJob, len(trace))
	for i, tj := range trace {
		r.res.Outcomes[i] = JobOutcome{Name: tj.Name, User: tj.User, Queue: tj.Queue, Submit: tj.Submit}
		r.jobs[i] = &replayJob{TraceJob: tj, out: &r.res.Outcomes[i], remaining: int64(tj.Runtime) * int64(tj.Executors), headSince: -1}
		r.byName[tj.Name] = r.jobs[i]
	}
	// Submission order: by time, then by the trace's order, as requests reach Admission.
	slices.SortStableFunc(r.jobs, func(x, y *replayJob) int { return cmp.Compare(x.Submit, y.Submit) })
	for i, j := range r.jobs {
		j.order = int64(i + 1)
	}
}

// maxEventsPerJob bounds the events of a replay (with a floor), so a tug of war between
// preemption and a job asking its slots back cannot run forever.
const maxEventsPerJob = 200

func (r *replay) run() {
	now := time.Duration(0)
	next := 0 // the next job to submit
	events := 0
	for {
		events++
		r.finish(now)
		// Slots taken back are free once their pods are gone.
		r.vacating = slices.DeleteFunc(r.vacating, func(v vacating) bool { return v.at <= now })
		for next < len(r.jobs) && r.jobs[next].Submit <= now {
			r.submit(r.jobs[next])
			next++
		}
		r.startWork(now)
		if r.opts.Mode == ReplayGang {
			r.decideGang(now)
		} else {
			r.decide(now)
		}
		r.heads(now)
		at, ok := r.nextEvent(now, next)
		if !ok {
			// Nothing more will happen. With every job done the run ends at the makespan (a
			// refused job submitted later adds nothing); otherwise it is stuck now.
			r.res.End = r.res.Makespan
			if len(r.active) > 0 {
				r.res.Stopped, r.res.End = r.stuck(), now
			}
			return
		}
		if r.opts.Limit > 0 && at > r.opts.Limit {
			r.res.Stopped = fmt.Sprintf("stopped at the limit of %s", r.opts.Limit)
			r.account(now, r.opts.Limit)
			r.res.End = r.opts.Limit
			return
		}
		if events > maxEventsPerJob*len(r.jobs)+10000 {
			r.res.Stopped = fmt.Sprintf("stopped after %d events at %s (preemption taking slots back and forth?)", events, now)
			r.res.End = now
			return
		}
		r.account(now, at)
		now = at
	}
}

// finish ends the jobs whose work is done by now and frees their slots.
func (r *replay) finish(now time.Duration) {
	r.active = slices.DeleteFunc(r.active, func(j *replayJob) bool {
		if at, ok := j.finishAt(); !ok || at > now {
			return false
		}
		j.advance(now)
		j.active = false
		j.out.Finished, j.out.Finish = true, now
		r.res.Done++
		r.res.Makespan = max(r.res.Makespan, now)
		r.lastChange = now
		if r.opts.Mode == ReplayGang {
			r.adm.Release(r.key(j))
			for _, p := range j.slots {
				r.owner[p] = ""
			}
			j.slots = nil
		}
		r.release(j, j.held)
		r.leave(j)
		return true
	})
}

// key is a job's key in the Admitter.
func (r *replay) key(j *replayJob) JobKey { return JobKey{Scheduling: "trace", Job: j.Name, Run: 1} }

// release takes n executors' slots from a job's counts.
func (r *replay) release(j *replayJob, n int) {
	j.held -= n
	r.held -= n
	r.queueHeld[j.queue] -= n
}

// submit places a new job, as the Admission workflow's request does: placement rules, the
// submit ACL, then the queue is made if a rule created it.
func (r *replay) submit(j *replayJob) {
	p, err := r.a.PlaceJob(j.Queue, j.User, j.Groups)
	switch {
	case err != nil:
		j.out.Refused = err.Error()
		if j.Queue != "" {
			j.out.Queue = FullPath(j.Queue)
		} else {
			j.out.Queue = "-"
		}
	case !r.a.Allowed(Submit, p.Queue, j.User, j.Groups):
		j.out.Queue = p.Queue
		j.out.Refused = fmt.Sprintf("user %q may not submit to queue %s (aclSubmitApps)", j.User, p.Queue)
	default:
		j.out.Queue = p.Queue
		if _, err := r.t.Ensure(p.Queue); err != nil {
			j.out.Refused = err.Error()
		}
	}
	if j.out.Refused != "" {
		r.res.Refused++
		return
	}
	if r.opts.Mode == ReplayGang {
		req := Request{JobKey: r.key(j), Queue: j.Queue, User: j.User, Groups: j.Groups, Slots: int32(j.Executors), Driver: j.Driver,
			Expected: r.opts.StartUp + j.Runtime}
		if g := r.adm.Request(req); g != nil {
			j.out.Refused = g.Refused // cannot happen: the same placement and ACL as above
			r.res.Refused++
			return
		}
	}
	j.queue = p.Queue
	j.active = true
	r.active = append(r.active, j)
	r.leafJobs[j.queue]++
}

// demandOf is what a job demands all along: its slots, and in driver-first mode its driver.
func (r *replay) demandOf(j *replayJob) Resources {
	d := times(r.opts.SlotSize, j.need())
	if r.opts.Mode == ReplayDriverFirst {
		d = d.Add(j.Driver)
	}
	return d
}

// leave takes a finished job out of its leaf's sums.
func (r *replay) leave(j *replayJob) {
	if r.leafJobs[j.queue]--; r.leafJobs[j.queue] == 0 {
		delete(r.leafJobs, j.queue)
	}
	if r.opts.Mode == ReplayDriverFirst && j.granted {
		r.leafDriver[j.queue] = r.leafDriver[j.queue].Sub(j.Driver)
	}
}

// startWork starts the runtime of the jobs that hold all their executors and whose driver has
// started up.
func (r *replay) startWork(now time.Duration) {
	for _, j := range r.active {
		if j.allHeld && !j.working && now >= j.workFrom(r.opts.StartUp) {
			j.working, j.progressAt = true, now
		}
	}
}

// view builds the picture Tree.Next decides on in driver-first mode: a waiting job asks for
// its driver, a granted one for one executor at a time once its driver has started up.
func (r *replay) view(now time.Duration) Cluster {
	c := Cluster{Total: r.total, Now: r.epoch.Add(now), StateAware: r.opts.StateAware}
	apps := r.apps[:0]
	slot := r.opts.SlotSize
	for _, j := range r.active {
		a := App{ID: j.Name, Queue: j.queue, User: j.User, Order: j.order, AM: j.Driver, Demand: j.Driver.Add(times(slot, j.need()))}
		if j.granted {
			a.Running = true
			a.Usage = j.Driver.Add(times(slot, int64(j.held)))
			a.State, a.StartingSince = Starting, r.epoch.Add(j.grantAt)
			if j.held > 0 {
				a.State = Running
			}
			a.Pending = int64(j.held) < j.need() && now >= j.grantAt+r.opts.StartUp
			a.Ask = slot
		} else {
			a.Ask = j.Driver
		}
		apps = append(apps, a)
	}
	r.apps = apps
	c.Apps = apps
	return c
}

// decide allocates, in driver-first mode, what the queues let through now, one Tree.Next at
// a time: a driver, or one executor.
func (r *replay) decide(now time.Duration) {
	for {
		c := r.view(now)
		if !slices.ContainsFunc(c.Apps, App.asking) {
			return
		}
		app, refusals, ok := r.t.Next(c)
		for _, f := range refusals {
			if j := r.byName[f.App]; j != nil {
				j.why = f.Reason
			}
		}
		if !ok {
			return
		}
		j := r.byName[app.ID]
		j.advance(now)
		r.lastChange = now
		if !j.granted {
			j.granted, j.grantAt = true, now
			r.leafDriver[j.queue] = r.leafDriver[j.queue].Add(j.Driver)
		} else {
			r.take(j, 1)
		}
		j.why = ""
		r.heldAll(j, now)
	}
}

// heldAll notes when a job first holds all its executors, and starts its work when its
// driver has started up too.
func (r *replay) heldAll(j *replayJob, now time.Duration) {
	if !j.allHeld && j.held == j.Executors {
		j.allHeld, j.allHeldAt = true, now
		j.out.Started, j.out.Start = true, now
	}
	if j.allHeld && !j.working && now >= j.workFrom(r.opts.StartUp) {
		j.working, j.progressAt = true, now
	}
}

// decideGang runs the Admitter on the slots as they are and carries out its decision: grants,
// slots given back, slots taken back. A job that left Starting (its start-up ended, or
// StateAware's fallback) is told first, as its job's workflow would.
func (r *replay) decideGang(now time.Duration) {
	for _, j := range r.active {
		if j.granted && !j.startedSent && now >= j.grantAt+min(r.opts.StartUp, StartingTimeout) {
			r.adm.Started(r.key(j))
			j.startedSent = true
		}
	}
	d := r.adm.Decide(r.epoch.Add(now), r.bed())
	for _, g := range d.Grants {
		j := r.byName[g.Job]
		j.advance(now)
		j.granted, j.grantAt = true, now
		r.give(j, g.Slots)
		r.lastChange = now
		r.heldAll(j, now)
	}
	for _, as := range d.Assignments {
		j := r.byName[as.Job]
		j.advance(now)
		r.lastChange = now
		if len(as.Revoke) == 0 {
			r.give(j, slices.DeleteFunc(slices.Clone(as.Keep), func(p int32) bool { return slices.Contains(j.slots, p) }))
			continue
		}
		j.slots = slices.DeleteFunc(j.slots, func(p int32) bool { return slices.Contains(as.Revoke, p) })
		for _, p := range as.Revoke {
			r.owner[p] = ""
			r.vacating = append(r.vacating, vacating{slot: p, at: now + r.opts.Vacate})
		}
		n := len(as.Revoke)
		r.release(j, n)
		j.out.Preempted += n
		r.res.PreemptedSlots += n
		r.preemptedBy[j.queue] += n
		r.preemptedFor[as.For] += n
	}
	for _, e := range r.adm.Waiting() {
		if j := r.byName[e.Request.Job]; j != nil {
			j.why = e.Reason
		}
	}
}

// bed is the test bed as the Admitter sees it now (gang).
func (r *replay) bed() Bed {
	bed := Bed{Exists: true, SlotSize: r.opts.SlotSize}
	for p := range int32(r.opts.Slots) {
		bed.Positions = append(bed.Positions, p)
		if r.owner[p] == "" && !slices.ContainsFunc(r.vacating, func(v vacating) bool { return v.slot == p }) {
			bed.Free = append(bed.Free, p)
		}
	}
	return bed
}

// wantsRoom lists the leaves with a waiting job that only room holds back now (Tree.WantsRoom).
func (r *replay) wantsRoom(now time.Duration) map[string]bool {
	if r.opts.Mode == ReplayGang {
		return r.adm.WantsRoom(r.epoch.Add(now), r.bed())
	}
	return r.t.WantsRoom(r.view(now))
}

// give hands a job slots (gang): its grant, or slots given back after preemption.
func (r *replay) give(j *replayJob, slots []int32) {
	for _, p := range slots {
		r.owner[p] = j.Name
	}
	j.slots = append(j.slots, slots...)
	r.take(j, len(slots))
}

// take gives a job n more executors.
func (r *replay) take(j *replayJob, n int) {
	j.held += n
	r.held += n
	r.queueHeld[j.queue] += n
}

// heads notes since when each leaf's first waiting job (by submission) has been first.
func (r *replay) heads(now time.Duration) {
	first := map[string]*replayJob{}
	for _, j := range r.active { // in submission order
		if !j.granted && first[j.queue] == nil {
			first[j.queue] = j
			if j.headSince < 0 {
				j.headSince = now
			}
		}
	}
}

// nextEvent is the earliest time after now at which something changes.
func (r *replay) nextEvent(now time.Duration, next int) (time.Duration, bool) {
	at, any := time.Duration(0), false
	consider := func(t time.Duration) {
		if t > now && (!any || t < at) {
			at, any = t, true
		}
	}
	if next < len(r.jobs) {
		consider(r.jobs[next].Submit)
	}
	for _, v := range r.vacating {
		consider(v.at)
	}
	free := 0
	for _, o := range r.owner {
		if o == "" {
			free++
		}
	}
	for _, j := range r.active {
		if !j.granted {
			continue
		}
		if r.opts.Mode == ReplayGang && int64(j.held) < j.need() && len(r.vacating) == 0 && free > 0 {
			// A preempted job may ask for a free slot again; nothing nudges the workflow
			// for that, so it happens at the next resync.
			consider(now + r.opts.Resync)
		}
		if f, ok := j.finishAt(); ok {
			consider(f)
		}
		if j.allHeld && !j.working {
			consider(j.workFrom(r.opts.StartUp))
		}
		// A start-up ending changes what StateAware lets through, and in driver-first mode
		// when the driver asks for executors.
		consider(j.grantAt + r.opts.StartUp)
		if r.t.Policy(r.t.Queue(j.queue)) == PolicyStateAware {
			consider(j.grantAt + StartingTimeout)
		}
	}
	if r.preempt {
		starve := r.adm.Starvation()
		for path, since := range starve.MinShareSince {
			if q := r.t.Queue(path); q != nil {
				if d, ok, _, _, _ := r.t.Timeouts(q); ok {
					consider(since.Add(d).Sub(r.epoch))
				}
			}
		}
		for path, since := range starve.FairShareSince {
			if q := r.t.Queue(path); q != nil {
				if _, _, d, ok, _ := r.t.Timeouts(q); ok {
					consider(since.Add(d).Sub(r.epoch))
				}
			}
		}
	}
	return at, any
}

// stuck describes a replay that cannot go on: since when nothing moved, and what the
// unfinished jobs hold.
func (r *replay) stuck() string {
	drivers, executors, waiting := 0, 0, 0
	for _, j := range r.active {
		if j.granted {
			drivers++
			executors += j.held
		} else {
			waiting++
		}
	}
	if r.opts.Mode == ReplayDriverFirst && drivers > 0 {
		return fmt.Sprintf("deadlock: nothing granted or finished after %s; %d drivers hold %d executors and wait for more, %d jobs wait to start", r.lastChange, drivers, executors, waiting)
	}
	return fmt.Sprintf("nothing granted or finished after %s; %d jobs wait for good (see their reasons)", r.lastChange, waiting+drivers)
}

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
		apps = append(apps, App{ID: j.Name, Queue: j.queue, User: j.User, Order: j.order, Running: j.granted, Demand: r.demandOf(j)})
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
		if q := r.t.Queue(path); q.Leaf() && q != r.t.root {
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
func (r *replay) inSlots(x Resources) float64 {
	s := r.opts.SlotSize
	return min(float64(x.MemoryBytes)/float64(s.MemoryBytes), float64(x.MilliCores)/float64(s.MilliCores))
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i, 1)-1]
}
