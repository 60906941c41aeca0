package queue

import (
	"fmt"
	"testing"
)

func TestPackKeys_RoundTrip(t *testing.T) {
	in := []KeyNote{
		{Key: JobKey{Scheduling: "nightly", SchedulingUID: "u-1", Job: "etl", Run: 3}},
		{Key: JobKey{Scheduling: "nightly", SchedulingUID: "u-1", Job: "report", Run: 1}, Note: "BatchJob report was deleted"},
		{Key: JobKey{Job: "ünïcode \x00 name", Run: -1}},
	}
	b, err := PackKeys(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnpackKeys(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("got %v, want %v", out, in)
	}
	if none, err := UnpackKeys(nil); err != nil || none != nil {
		t.Fatalf("nothing packed: %v, %v", none, err)
	}
}

// Damaged bytes are an error, never a panic or a wrong key list.
func TestUnpackKeys_Damaged(t *testing.T) {
	in := make([]KeyNote, 50)
	for i := range in {
		in[i] = KeyNote{Key: JobKey{Scheduling: "s", SchedulingUID: "u", Job: fmt.Sprintf("job-%d", i), Run: int32(i)}}
	}
	good, err := PackKeys(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{[]byte("not gzip"), good[:len(good)/2]} {
		if _, err := UnpackKeys(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	raw, _ := deflate([]byte{5, 1, 'a'})
	if _, err := UnpackKeys(raw); err == nil {
		t.Error("a string table cut short: no error")
	}
}

// A bed's keys at the envelope (8,000 held, 10,000 waiting), each with a note as short as a
// reason's code, pack under half of Temporal's 2 MiB payload limit as the base64 a payload
// carries them in, and ten times as many under the limit. The job names carry a random
// suffix, which no compression takes away.
func TestPackKeys_SizesFit(t *testing.T) {
	const payloadLimit = 2 << 20
	for _, c := range []struct{ slots, waiting, limit int }{{8000, 10000, payloadLimit / 2}, {80000, 100000, payloadLimit}} {
		st := envelopeState(c.slots, c.waiting)
		var keys []KeyNote
		for _, e := range append(st.Running, st.Waiting...) {
			keys = append(keys, KeyNote{Key: e.Request.JobKey, Note: "not-held"})
		}
		b, err := PackKeys(keys)
		if err != nil {
			t.Fatal(err)
		}
		n := (len(b) + 2) / 3 * 4
		t.Logf("%d keys: %d KiB as base64 (%.1f bytes a key)", len(keys), n>>10, float64(n)/float64(len(keys)))
		if n > c.limit {
			t.Errorf("%d keys: %d bytes, over %d", len(keys), n, c.limit)
		}
	}
}

func FuzzUnpackKeys(f *testing.F) {
	good, _ := PackKeys([]KeyNote{{Key: JobKey{Scheduling: "s", Job: "j", Run: 1}, Note: "n"}})
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := UnpackKeys(b)
		if err != nil {
			return
		}
		again, err := PackKeys(keys)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := UnpackKeys(again); err != nil || fmt.Sprint(back) != fmt.Sprint(keys) {
			t.Fatalf("a read list does not pack and read back the same: %v", err)
		}
	})
}
