package activities

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

// A slot list goes through JSON as runs and comes back the same, in its order, for lists
// of every shape; a plain list of numbers reads too.
func TestSlotList_RoundTripsAsRuns(t *testing.T) {
	whole := make(SlotList, 8000)
	for i := range whole {
		whole[i] = int32(i)
	}
	b, err := json.Marshal(whole)
	if err != nil || string(b) != `"0-7999"` {
		t.Fatalf("8,000 positions are %s (%v), want \"0-7999\"", b, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lists := []SlotList{nil, {}, {5}, {0, 1, 2, 7, 9, 10}, {3, 2, 1}, {-4, -3, 0}, whole}
	for range 200 {
		var l SlotList
		for range rng.IntN(40) {
			l = append(l, int32(rng.IntN(60)))
		}
		if rng.IntN(2) == 0 {
			slices.Sort(l)
		}
		lists = append(lists, l)
	}
	for _, l := range lists {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var back SlotList
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%v as %s: %v", l, b, err)
		}
		if !slices.Equal(l, back) || (l == nil) != (back == nil) {
			t.Fatalf("%v went through %s and came back %v", l, b, back)
		}
	}
	var plain SlotList
	if err := json.Unmarshal([]byte(`[4,5]`), &plain); err != nil || !slices.Equal(plain, SlotList{4, 5}) {
		t.Fatalf("a plain list reads as %v, %v", plain, err)
	}
	for _, bad := range []string{`"1-x"`, `"9-3"`, `"a"`, `7`, `"0-99999999"`} {
		var l SlotList
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Fatalf("%s read as %v", bad, l)
		}
	}
}
