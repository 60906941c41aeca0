package queue

import "testing"

// A move of a running job keeps its slots; a move changes the queue the next decision sees.
func TestAdmitter_MoveChecksAndMoves(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="root"><aclSubmitApps>*</aclSubmitApps><aclAdministerApps> </aclAdministerApps>
  <queue name="a"/><queue name="b"><maxRunningApps>0</maxRunningApps></queue><queue name="c"/></queue></allocations>`)
	m := Move{Scheduling: "s", Job: "j", Queue: "c", By: "u"}
	if _, err := a.Move(m); err == nil || err.(*MoveError).Kind != MoveNotReady {
		t.Fatalf("before the first decision: %v", err)
	}
	a.Request(req("j", "a", 1))
	a.Decide(t0, bed(2))
	if _, err := a.Move(Move{Scheduling: "s", Job: "j", Queue: "b", By: "u"}); err == nil || err.(*MoveError).Kind != MoveInvalid {
		t.Fatalf("into a full queue: %v", err)
	}
	if _, err := a.Move(Move{Scheduling: "s", Job: "j", Queue: "c", By: "eve"}); err == nil || err.(*MoveError).Kind != MoveForbidden {
		t.Fatalf("by a stranger: %v", err)
	}
	moved, err := a.Move(m)
	if err != nil || moved.From != "root.a" || moved.To != "root.c" || a.Running()[0].Queue != "root.c" {
		t.Fatalf("moved %+v, %v", moved, err)
	}
}
