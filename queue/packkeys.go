package queue

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
)

// KeyNote is a job key with a note on it (why it is let go of; empty on a question).
type KeyNote struct {
	Key  JobKey
	Note string
}

// PackKeys writes job keys with their notes compactly: every distinct string (Scheduling,
// uid, job, note) once, the keys as columns of indexes into them and their runs, all
// gzipped. A test
// bed's keys (every job it holds or keeps waiting) pass between the Admission workflow and
// its activities this way: as JSON, 18,000 keys are 2 MB, Temporal's payload limit.
func PackKeys(in []KeyNote) ([]byte, error) {
	strs := &interner{at: map[string]int32{}}
	strs.index("")
	idx := make([]int32, 0, 4*len(in))
	for _, k := range in {
		idx = append(idx, strs.index(k.Key.Scheduling), strs.index(k.Key.SchedulingUID), strs.index(k.Key.Job), strs.index(k.Note))
	}
	raw := binary.AppendUvarint(nil, uint64(len(strs.all)))
	for _, s := range strs.all {
		raw = binary.AppendUvarint(raw, uint64(len(s)))
		raw = append(raw, s...)
	}
	// By column (Scheduling, uid, job, note, run), each value as the difference from the one
	// before it: a job's string follows the one before in the table, so its column is ones.
	raw = binary.AppendUvarint(raw, uint64(len(in)))
	for col := range 4 {
		prev := int32(0)
		for i := range in {
			v := idx[4*i+col]
			raw = binary.AppendVarint(raw, int64(v-prev))
			prev = v
		}
	}
	for _, k := range in {
		raw = binary.AppendVarint(raw, int64(k.Key.Run))
	}
	return deflate(raw)
}

// UnpackKeys reads what PackKeys wrote.
func UnpackKeys(b []byte) ([]KeyNote, error) {
	if len(b) == 0 {
		return nil, nil
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("packed job keys: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(z, maxUnpacked))
	if err != nil {
		return nil, fmt.Errorf("packed job keys: %w", err)
	}
	r := &columnReader{b: raw}
	n := r.uvarint()
	if r.err == nil && n > len(raw) {
		return nil, fmt.Errorf("packed job keys: %d strings in %d bytes", n, len(raw))
	}
	strs := make([]string, 0, n)
	for range n {
		strs = append(strs, string(r.bytes(r.uvarint())))
	}
	keys := r.uvarint()
	if r.err == nil && keys > len(raw) {
		return nil, fmt.Errorf("packed job keys: %d keys in %d bytes", keys, len(raw))
	}
	cols := [4][]string{}
	for col := range cols {
		cols[col] = make([]string, 0, keys)
		prev := int64(0)
		for range keys {
			i := prev + r.varint()
			prev = i
			if r.err == nil && (i < 0 || i >= int64(len(strs))) {
				r.err = fmt.Errorf("string %d of %d", i, len(strs))
			}
			if r.err != nil {
				return nil, fmt.Errorf("packed job keys: %w", r.err)
			}
			cols[col] = append(cols[col], strs[i])
		}
	}
	out := make([]KeyNote, 0, keys)
	for i := range keys {
		k := KeyNote{Key: JobKey{Scheduling: cols[0][i], SchedulingUID: cols[1][i], Job: cols[2][i]}, Note: cols[3][i]}
		run := r.varint()
		if r.err == nil && run != int64(int32(run)) {
			r.err = fmt.Errorf("run %d is out of range", run)
		}
		k.Key.Run = int32(run)
		out = append(out, k)
	}
	if r.err != nil {
		return nil, fmt.Errorf("packed job keys: %w", r.err)
	}
	if r.off != len(raw) {
		return nil, fmt.Errorf("packed job keys: %d bytes left over", len(raw)-r.off)
	}
	return out, nil
}
