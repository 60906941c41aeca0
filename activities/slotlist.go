package activities

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SlotList is a list of slot positions that goes into a workflow's history as runs: a bed's
// 8,000 positions are "0-7999", not 8,000 numbers. Admission reads the slots at each
// decision, so the form sets how large its history grows and what a replay decodes.
type SlotList []int32

// MarshalJSON writes the list as a string of runs in its order, "0-3,7,9-10"; nil as null.
func (l SlotList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	var sb strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(int(l[i])))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(int(l[j])))
		}
		i = j + 1
	}
	return json.Marshal(sb.String())
}

// UnmarshalJSON reads what MarshalJSON writes, or a plain list of numbers.
func (l *SlotList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var plain []int32
		if err := json.Unmarshal(b, &plain); err != nil {
			return err
		}
		*l = plain
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	out := SlotList{}
	for rest := s; rest != ""; {
		run := rest
		if i := strings.IndexByte(rest, ','); i >= 0 {
			run, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if run == "" {
			continue
		}
		// A run's first number may be negative: the dash that joins it to the last is the
		// first one after its first character.
		from, to, isRun := run, "", false
		if i := strings.IndexByte(run[1:], '-'); i >= 0 {
			from, to, isRun = run[:i+1], run[i+2:], true
		}
		lo, err := strconv.ParseInt(from, 10, 32)
		if err != nil {
			return fmt.Errorf("slot list %q: %w", s, err)
		}
		hi := lo
		if isRun {
			if hi, err = strconv.ParseInt(to, 10, 32); err != nil {
				return fmt.Errorf("slot list %q: %w", s, err)
			}
		}
		if hi < lo || hi-lo > 1<<20 {
			return fmt.Errorf("slot list %q: the run %s is not one", s, run)
		}
		out = slices.Grow(out, int(hi-lo+1))
		for p := lo; p <= hi; p++ {
			out = append(out, int32(p))
		}
	}
	*l = out
	return nil
}
