package queue

import (
	"slices"
	"strings"
	"testing"
)

// The protocol is idempotent: a repeated request of a waiting job changes nothing, one of a
// granted job gets the same grant again, a release of an unknown key is a no-op, and the
// key's run tells two runs of one job apart.
func TestAdmitter_ProtocolIsIdempotent(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	if g := a.Request(req("j", "q", 2)); g != nil {
		t.Fatalf("a fresh request is answered at once: %+v", g)
	}
	if g := a.Request(req("j", "q", 2)); g != nil || len(a.Waiting()) != 1 {
		t.Fatalf("a repeated request of a waiting job: %+v, %d waiting", g, len(a.Waiting()))
	}
	d := a.Decide(t0, bed(4))
	if got := granted(d); !slices.Equal(got, []string{"j:[0 1]"}) {
		t.Fatalf("grants %v", got)
	}
	g := a.Request(req("j", "q", 2))
	if g == nil || !slices.Equal(g.Slots, []int32{0, 1}) || g.Refused != "" {
		t.Fatalf("a repeated request of a granted job gets its grant again: %+v", g)
	}
	if a.Release(key("other")) {
		t.Fatal("a release of an unknown key was known")
	}
	run2 := req("j", "q", 1)
	run2.Run = 2
	if a.Release(run2.JobKey) {
		t.Fatal("run 2 released run 1")
	}
	if !a.Release(key("j")) || len(a.Running()) != 0 {
		t.Fatal("the release of run 1 did not free it")
	}
	if a.Release(key("j")) {
		t.Fatal("a second release was known")
	}
}

// Grants are numbered, a repeat carries its grant's number, and a job released and asked for
// again gets a higher one, also across a continue-as-new: a Scheduling tells a late copy of a
// grant it gave back from the new grant by it.
func TestAdmitter_GrantsAreNumbered(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("j", "q", 2))
	a.Request(req("k", "q", 1))
	d := a.Decide(t0, bed(4))
	if len(d.Grants) != 2 || d.Grants[0].Seq != 1 || d.Grants[1].Seq != 2 {
		t.Fatalf("grants %+v", d.Grants)
	}
	if g := a.Request(req("j", "q", 2)); g == nil || g.Seq != 1 {
		t.Fatalf("a repeat of j's grant: %+v", g)
	}
	a = restored(t, a)
	a.Release(key("j"))
	a.Request(req("j", "q", 2))
	d = a.Decide(t0, heldBed(a, 4))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 3 {
		t.Fatalf("j asked for again: %+v", d.Grants)
	}
	if g := a.Request(req("x", "", 0)); g == nil || g.Refused == "" || g.Seq != 0 {
		t.Fatalf("a refusal is not numbered: %+v", g)
	}
}

// A grant restored from the cluster holds its slots as a grant the Admitter made would: a
// waiting job gets only the other slots, a repeat of the job's request gets the restored
// grant back, a second restore of the key changes nothing, and the grant's queue is the one
// recorded (placed again when it names a parent queue). A release frees the slots.
func TestAdmitter_RestoredGrantHoldsItsSlots(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/><queue name="p"><queue name="c"/></queue></allocations>`)
	if !a.Restore(req("old", "q", 2), "root.q", []int32{1, 2}, t0, true) {
		t.Fatal("the restore was not taken")
	}
	if a.Restore(req("old", "q", 2), "root.q", []int32{3}, t0, true) {
		t.Fatal("a second restore of a held key was taken")
	}
	if !a.Restore(req("parent", "q", 1), "root.p", []int32{0}, t0, false) {
		t.Fatal("a restore naming a parent queue was not taken")
	}
	a.Request(req("new", "q", 2))
	d := a.Decide(t0, bed(5)) // the bed's status may not show the restored slots taken yet
	if got := granted(d); !slices.Equal(got, []string{"new:[3 4]"}) {
		t.Fatalf("grants %v", got)
	}
	g := a.Request(req("old", "q", 2))
	if g == nil || !slices.Equal(g.Slots, []int32{1, 2}) || g.Seq == 0 {
		t.Fatalf("a repeat of the restored job's request: %+v", g)
	}
	queues := map[string]string{}
	states := map[string]AppState{}
	for _, e := range a.Running() {
		queues[e.Request.Job], states[e.Request.Job] = e.Queue, e.State
	}
	if queues["old"] != "root.q" || queues["parent"] != "root.q" {
		t.Fatalf("queues %v", queues)
	}
	if states["old"] != Running || states["parent"] != Starting {
		t.Fatalf("states %v", states)
	}
	a = restored(t, a)
	if !a.Release(key("old")) {
		t.Fatal("the restored grant was not known after a continue-as-new")
	}
	a.Request(req("next", "q", 2))
	if got := granted(a.Decide(t0, heldBed(a, 5))); !slices.Equal(got, []string{"next:[1 2]"}) {
		t.Fatalf("after the release: %v", got)
	}
}

// A request that gives back the grant the job holds releases it and queues the job again
// (it is granted anew, with a new number); one that names a grant the job no longer holds
// is a repeat, answered with the grant it holds.
func TestAdmitter_ARequestGivesBackItsGrant(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("j", "q", 2))
	a.Request(req("k", "q", 2))
	d := a.Decide(t0, bed(2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 1 {
		t.Fatalf("grants %+v", d.Grants)
	}
	again := req("j", "q", 2)
	again.GaveBack = 1
	if g := a.Request(again); g != nil {
		t.Fatalf("the give-back was answered with %+v", g)
	}
	if n := len(a.Report(ReportOptions{}).Running); n != 0 {
		t.Fatalf("j still holds its slots: %d running", n)
	}
	d = a.Decide(t0, heldBed(a, 2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "k" {
		t.Fatalf("k, ahead of j now, gets the slots: %+v", d.Grants)
	}
	a.Release(key("k"))
	a = restored(t, a)
	d = a.Decide(t0, heldBed(a, 2))
	if len(d.Grants) != 1 || d.Grants[0].Job != "j" || d.Grants[0].Seq != 3 {
		t.Fatalf("j's new grant: %+v", d.Grants)
	}
	if g := a.Request(again); g == nil || g.Seq != 3 {
		t.Fatalf("a late copy of the give-back is a repeat: %+v", g)
	}
	if n := len(a.Report(ReportOptions{}).Running); n != 1 {
		t.Fatalf("the late copy released j: %d running", n)
	}
}

// Refusals are final and come at once: placement, ACL, nonsense.
func TestAdmitter_RefusesWhatCanNeverBeAdmitted(t *testing.T) {
	a := admitterWith(t, `<allocations>
  <queue name="root"><aclSubmitApps>alice</aclSubmitApps><aclAdministerApps> </aclAdministerApps><queue name="q"/></queue>
  <queuePlacementPolicy><rule name="specified" create="false"/><rule name="reject"/></queuePlacementPolicy>
</allocations>`)
	r := req("x", "q", 1)
	r.User = "mallory"
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "may not submit") {
		t.Fatalf("ACL: %+v", g)
	}
	r = req("y", "nowhere", 1)
	r.User = "alice"
	if g := a.Request(r); g == nil || g.Refused == "" {
		t.Fatalf("placement: %+v", g)
	}
	r = req("z", "q", 0)
	r.User = "alice"
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "0 slots") {
		t.Fatalf("zero slots: %+v", g)
	}
	if len(a.Waiting()) != 0 {
		t.Fatal("a refused request waits")
	}
}

// A driver larger than anything the queues count is refused, not wrapped around.
func TestAdmitter_RefusesAnOutsizedDriver(t *testing.T) {
	a := NewAdmitter(AdmitterState{})
	r := req("x", "q", 1)
	r.Driver = Resources{MemoryBytes: 1 << 62}
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "more than the queues count") {
		t.Fatalf("outsized driver: %+v", g)
	}
	r.Driver = Resources{MilliCores: -1}
	if g := a.Request(r); g == nil || !strings.Contains(g.Refused, "negative") {
		t.Fatalf("negative driver: %+v", g)
	}
}
