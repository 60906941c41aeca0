// Package tracefile reads and writes a workload trace: the CSV form of a simulation's jobs
// (simulation.Job), which `slotplane simulate` replays and `slotplane experiment` runs.
//
// A trace is a CSV file with a header line and one job per line. The header names the
// columns, in any order (case does not matter):
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
//	priority   (optional) the job's priority, a whole number in [-1000000, 1000000]; a
//	           higher one goes first in its leaf queue (default 0)
//
// Lines starting with # are comments; blank lines are skipped. A bad line is an *Error
// naming the line and the column.
//
// The driver is written in the allocation file's form, so the package reads it with the
// queue policies' parser; that is why the format lives here and not in package simulation,
// which the kit carries without the queue policies.
package tracefile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/queue"
	"slotplane/simulation"
)

// Bounds of a trace's values: they keep the replay's integer arithmetic (executor-nanoseconds
// of work, and bytes of memory) far from overflowing, and are far beyond any test bed's jobs.
// A driver is at most 16 TiB (2^44 bytes) and a million vcores, so a hundred thousand of
// them still add up within an int64. The replay holds jobs made in code to the same bounds.
const (
	MaxExecutors    = 10000
	MaxRuntime      = 7 * 24 * time.Hour
	MaxSubmit       = 366 * 24 * time.Hour
	MaxDriverMB     = 1 << 24
	MaxDriverVCores = 1 << 20
)

// Error is a mistake in a trace: the line, and the column when one is to blame.
type Error struct {
	Line int
	// Column is the column's name in the header ("" when the line as a whole is wrong);
	// Field its position on the line, from 1.
	Column string
	Field  int
	Msg    string
}

func (e *Error) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("trace line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("trace line %d, column %d (%s): %s", e.Line, e.Field, e.Column, e.Msg)
}

// unit is one mb and one vcore, the allocation file's units, as the queue policies count
// them: a trace writes whole ones only.
var unit = queue.MBVCores(1, 1)

// The columns of a trace. driver may be replaced by driver_mb and driver_vcores.
var (
	traceColumns   = []string{"submit", "name", "queue", "user", "groups", "driver", "executors", "runtime"}
	driverSplitCol = []string{"driver_mb", "driver_vcores"}
	// optionalCols may be left out.
	optionalCols = []string{"priority"}
)

// Parse reads a workload trace (the format is in the package's comment). Jobs come back in
// the order of the file; every mistake is an *Error.
func Parse(r io.Reader) ([]simulation.Job, error) {
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
		return nil, &Error{Line: 1, Msg: "the trace is empty: it needs a header line (" + strings.Join(traceColumns, ",") + ")"}
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

	var jobs []simulation.Job
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
			return nil, &Error{Line: line, Msg: fmt.Sprintf("%d fields, the header has %d", len(rec), width)}
		}
		j, err := traceJob(rec, cols, func(i int) int { l, _ := cr.FieldPos(i); return l })
		if err != nil {
			return nil, err
		}
		j.Line = line
		if first, dup := names[j.Name]; dup {
			i := cols["name"]
			return nil, &Error{Line: line, Column: "name", Field: i + 1, Msg: fmt.Sprintf("job %q is already on line %d", j.Name, first)}
		}
		names[j.Name] = line
		jobs = append(jobs, j)
	}
}

// csvError turns the CSV reader's error into an Error.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &Error{Line: pe.Line, Msg: fmt.Sprintf("not valid CSV at byte %d of the line: %v", pe.Column, pe.Err)}
	}
	return err
}

// traceHeader maps each column name to its field index and checks that every column is
// known, none is given twice, and none is missing.
func traceHeader(header []string, line int) (map[string]int, error) {
	cols := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(traceColumns, name) && !slices.Contains(driverSplitCol, name) && !slices.Contains(optionalCols, name) {
			return nil, &Error{Line: line, Column: h, Field: i + 1, Msg: fmt.Sprintf("unknown column (known: %s, or driver_mb and driver_vcores for driver; optional: %s)", strings.Join(traceColumns, ", "), strings.Join(optionalCols, ", "))}
		}
		if _, dup := cols[name]; dup {
			return nil, &Error{Line: line, Column: name, Field: i + 1, Msg: "the column is given twice"}
		}
		cols[name] = i
	}
	_, whole := cols["driver"]
	_, mb := cols["driver_mb"]
	_, vc := cols["driver_vcores"]
	switch {
	case whole && (mb || vc):
		return nil, &Error{Line: line, Msg: "give the driver either as driver or as driver_mb and driver_vcores, not both"}
	case !whole && mb != vc:
		return nil, &Error{Line: line, Msg: "driver_mb and driver_vcores go together"}
	}
	for _, c := range traceColumns {
		if _, ok := cols[c]; !ok && !(c == "driver" && mb) {
			return nil, &Error{Line: line, Msg: fmt.Sprintf("the header lacks the column %s (it needs %s)", c, strings.Join(traceColumns, ","))}
		}
	}
	return cols, nil
}

// traceJob reads the fields of one line. lineOf gives the line a field starts on (a quoted
// field may span lines).
func traceJob(rec []string, cols map[string]int, lineOf func(int) int) (simulation.Job, error) {
	l := traceLine{rec: rec, cols: cols, lineOf: lineOf}
	var j simulation.Job
	var err error
	if j.Submit, err = l.duration("submit", 0, MaxSubmit); err != nil {
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
	n, err := l.count("executors", 1, MaxExecutors)
	if err != nil {
		return j, err
	}
	j.Executors = int(n)
	if j.Runtime, err = l.duration("runtime", time.Nanosecond, MaxRuntime); err != nil {
		return j, err
	}
	if _, ok := cols["priority"]; ok {
		p, err := l.count("priority", -v1alpha1.MaxPriority, v1alpha1.MaxPriority)
		if err != nil {
			return j, err
		}
		j.Priority = int32(p)
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
		return &Error{Line: l.lineOf(i), Column: name, Field: i + 1, Msg: fmt.Sprintf(format, args...)}
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
func (l traceLine) driver() (apitypes.Resources, error) {
	if _, whole := l.cols["driver"]; whole {
		v, bad := l.field("driver")
		d, err := queue.ParseResources(v)
		if err != nil {
			return apitypes.Resources(d), bad("%v", err)
		}
		if !d.Fits(queue.MBVCores(MaxDriverMB, MaxDriverVCores)) {
			return apitypes.Resources(d), bad("%s is larger than any node", d)
		}
		return apitypes.Resources(d), nil
	}
	mb, err := l.count("driver_mb", 0, MaxDriverMB)
	if err != nil {
		return apitypes.Resources{}, err
	}
	vcores, err := l.count("driver_vcores", 0, MaxDriverVCores)
	if err != nil {
		return apitypes.Resources{}, err
	}
	return apitypes.Resources(queue.MBVCores(mb, vcores)), nil
}

// DriverFits reports whether a driver is within the format's bounds: not negative, at most
// MaxDriverMB and MaxDriverVCores.
func DriverFits(d apitypes.Resources) bool {
	r := queue.Resources(d)
	return r.MemoryBytes >= 0 && r.MilliCores >= 0 && r.Fits(queue.MBVCores(MaxDriverMB, MaxDriverVCores))
}

// Write writes jobs as a trace that Parse reads back: the columns in the order of the
// format's description, the driver as one quoted column, and priority only when a job has
// one. A driver that is not a whole number of mb and vcores is an error, as the format has
// no fractions.
func Write(w io.Writer, jobs []simulation.Job) error {
	cw := csv.NewWriter(w)
	prioritized := slices.ContainsFunc(jobs, func(j simulation.Job) bool { return j.Priority != 0 })
	header := traceColumns
	if prioritized {
		header = append(slices.Clone(traceColumns), "priority")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, j := range jobs {
		d := queue.Resources(j.Driver)
		if d.MemoryBytes%unit.MemoryBytes != 0 || d.MilliCores%unit.MilliCores != 0 {
			return fmt.Errorf("job %s: a trace holds whole mb and vcores, the driver is %s", j.Name, d)
		}
		rec := []string{j.Submit.String(), j.Name, j.Queue, j.User, strings.Join(j.Groups, ";"), d.String(), strconv.Itoa(j.Executors), j.Runtime.String()}
		if prioritized {
			rec = append(rec, strconv.Itoa(int(j.Priority)))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
