package experiment

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// csvHeader names the CSV's columns, in order. Times are seconds from the trace's time
// zero with millisecond precision; a phase never reached is an empty field.
var csvHeader = []string{
	"job", "batchjob", "attempt", "queue", "user",
	"arrival_s", "admitted_s", "running_s", "ended_s", "wait_s", "run_s",
	"slots", "nodes", "outcome", "predicted_start_s", "predicted_end_s",
}

// WriteCSV writes one line per run of r, under a header. wait_s and run_s are derived from
// the phases, for plotting without arithmetic; predicted_* are the job's predicted start
// and end, empty without a prediction. slots and nodes are separated by semicolons.
func WriteCSV(w io.Writer, r Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for _, run := range r.Runs {
		if err := cw.Write(csvRecord(run, r.Predicted)); err != nil {
			return fmt.Errorf("write csv line for job %s attempt %d: %w", run.Job, run.Attempt, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvRecord is run's line of the CSV; the report's table of runs shows the same fields.
func csvRecord(run Run, p *Prediction) []string {
	predStart, predEnd := "", ""
	if p != nil {
		if pr, ok := p.Jobs[run.Job]; ok {
			predStart, predEnd = seconds(pr.Admitted), seconds(pr.Ended)
		}
	}
	slots := make([]string, len(run.Slots))
	for i, s := range run.Slots {
		slots[i] = strconv.Itoa(int(s))
	}
	return []string{
		run.Job, run.BatchJob, strconv.Itoa(run.Attempt), run.Queue, run.User,
		seconds(run.Arrival), seconds(run.Admitted), seconds(run.Running), seconds(run.Ended),
		seconds(run.Wait()), seconds(run.RunTime()),
		strings.Join(slots, ";"), strings.Join(run.Nodes, ";"), run.Outcome,
		predStart, predEnd,
	}
}

// seconds formats d as seconds with millisecond precision, and a phase never reached
// (negative) as nothing.
func seconds(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// ReadCSV reads back the runs WriteCSV wrote. The derived columns (wait_s, run_s) and the
// prediction's are not read: the first follow from the phases, the others belong to the
// Prediction, not to a run. Run.Expected is not in the CSV and reads as 0.
func ReadCSV(r io.Reader) ([]Run, error) {
	cr := csv.NewReader(r)
	// Field counts are checked here rather than by the csv package, so that a file of
	// another kind fails on its header, with the header it has.
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("read csv: empty, not even a header")
	}
	if err != nil {
		return nil, fmt.Errorf("read csv header: %w", err)
	}
	if !slices.Equal(header, csvHeader) {
		return nil, fmt.Errorf("read csv line 1: header is %q, want %q", strings.Join(header, ","), strings.Join(csvHeader, ","))
	}
	var runs []Run
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return runs, nil
		}
		if err != nil {
			// The csv package's errors name the line already.
			return nil, fmt.Errorf("read csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(csvHeader) {
			return nil, fmt.Errorf("read csv line %d: %d fields, want %d", line, len(rec), len(csvHeader))
		}
		run, err := parseRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("read csv line %d: %w", line, err)
		}
		runs = append(runs, run)
	}
}

// parseRecord reads one run from its fields, in csvHeader's order.
func parseRecord(rec []string) (Run, error) {
	run := Run{Job: rec[0], BatchJob: rec[1], Queue: rec[3], User: rec[4], Outcome: rec[13]}
	if run.Job == "" {
		return Run{}, errors.New("job: empty")
	}
	var err error
	if run.Attempt, err = strconv.Atoi(rec[2]); err != nil {
		return Run{}, fmt.Errorf("attempt: %w", err)
	}
	phases := []*time.Duration{&run.Arrival, &run.Admitted, &run.Running, &run.Ended}
	for i, d := range phases {
		if *d, err = parseSeconds(rec[5+i]); err != nil {
			return Run{}, fmt.Errorf("%s: %w", csvHeader[5+i], err)
		}
	}
	if run.Arrival < 0 {
		return Run{}, errors.New("arrival_s: empty, but every run arrived")
	}
	if rec[11] != "" {
		for s := range strings.SplitSeq(rec[11], ";") {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil || n < 0 {
				return Run{}, fmt.Errorf("slots: %q is no slot position", s)
			}
			run.Slots = append(run.Slots, int32(n))
		}
	}
	if rec[12] != "" {
		run.Nodes = strings.Split(rec[12], ";")
	}
	return run, nil
}

// parseSeconds reads a time written by seconds: an empty field is NotReached.
func parseSeconds(s string) (time.Duration, error) {
	if s == "" {
		return NotReached, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is no number of seconds", s)
	case f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > math.MaxInt64/float64(time.Second):
		// A phase never reached is an empty field, never a negative time.
		return 0, fmt.Errorf("%q is out of range (an unreached phase is an empty field)", s)
	}
	// Rounded to the millisecond the file keeps, so a written time reads back exactly.
	return time.Duration(math.Round(f*1000)) * time.Millisecond, nil
}
