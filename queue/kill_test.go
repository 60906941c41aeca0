package queue

import (
	"errors"
	"testing"
)

// A kill is checked like a move's asker: the job's user or an administrator of its queue
// (by name or group), never before the first decision, never for a job not in the queues.
// It changes nothing in the Admitter.
func TestAdmitter_CheckKill(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> ops</aclAdministerApps>
  <queue name="a"><aclSubmitApps>u</aclSubmitApps><aclAdministerApps>lead</aclAdministerApps></queue>
  <queue name="b"><aclSubmitApps>u</aclSubmitApps></queue></queue></allocations>`)
	kindOf := func(err error) string {
		var me *MoveError
		if errors.As(err, &me) {
			return me.Kind
		}
		return ""
	}
	if _, err := a.CheckKill(Kill{Scheduling: "s", Job: "run", By: "u"}); kindOf(err) != MoveNotReady {
		t.Fatalf("before the first decision: %v", err)
	}
	a.Request(req("run", "a", 1))
	a.Request(req("wait", "b", 2))
	a.Decide(t0, bed(2))
	for _, c := range []struct {
		name string
		kill Kill
		want Killable
		kind string
	}{
		{"the job's user", Kill{Scheduling: "s", Job: "run", By: "u"}, Killable{Key: key("run"), Queue: "root.a", Running: true, As: "the job's user"}, ""},
		{"the leaf's administrator", Kill{Scheduling: "s", Job: "run", By: "lead"}, Killable{Key: key("run"), Queue: "root.a", Running: true, As: "an administrator of root.a"}, ""},
		{"root's administrators by group", Kill{Scheduling: "s", Job: "wait", By: "olga", ByGroups: []string{"ops"}}, Killable{Key: key("wait"), Queue: "root.b", As: "an administrator of root.b"}, ""},
		{"another leaf's administrator", Kill{Scheduling: "s", Job: "wait", By: "lead"}, Killable{}, MoveForbidden},
		{"a stranger", Kill{Scheduling: "s", Job: "run", By: "eve", ByGroups: []string{"devs"}}, Killable{}, MoveForbidden},
		{"nobody", Kill{Scheduling: "s", Job: "run"}, Killable{}, MoveForbidden},
		{"another Scheduling's job", Kill{Scheduling: "t", Job: "run", By: "u"}, Killable{}, MoveNotFound},
		{"no such job", Kill{Scheduling: "s", Job: "ghost", By: "u"}, Killable{}, MoveNotFound},
	} {
		got, err := a.CheckKill(c.kill)
		if kindOf(err) != c.kind || (c.kind == "" && err != nil) {
			t.Errorf("%s: error %v, want kind %q", c.name, err, c.kind)
			continue
		}
		if got.Key != c.want.Key || got.Queue != c.want.Queue || got.Running != c.want.Running || got.As != c.want.As {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if len(a.Report(ReportOptions{}).Running) != 1 || len(a.Report(ReportOptions{}).Waiting) != 1 {
		t.Fatal("a checked kill changed the queues")
	}
	got := a.QueuesOf([]JobKey{key("run"), key("wait"), key("ghost")})
	if len(got) != 2 || got[key("run")] != "root.a" || got[key("wait")] != "root.b" {
		t.Fatalf("QueuesOf: %v", got)
	}
}

// The queues to show are those of the jobs just placed whose statuses do not show them yet:
// not a job that held its queue before its request, not one whose status shows it, unless an
// earlier placement of the job is still to be written; nothing for a job not placed.
func TestAdmitter_ToShow(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="a"/><queue name="b"/></allocations>`)
	first := []Request{req("moved", "a", 1), req("again", "a", 1), req("shown", "a", 1), req("owed", "a", 1), req("fresh", "b", 1)}
	first[2].Shown, first[3].Shown = "root.a", "root.a"
	before := map[JobKey]string{key("again"): "root.a", key("moved"): "root.b"}
	for _, r := range first {
		a.Request(r)
	}
	pending := func(k JobKey) bool { return k == key("owed") }
	got := a.ToShow(append(first, req("ghost", "a", 1)), before, pending)
	want := []Placed{{key("moved"), "root.a"}, {key("owed"), "root.a"}, {key("fresh"), "root.b"}}
	if len(got) != len(want) {
		t.Fatalf("ToShow: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ToShow[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if a.ToShow(nil, nil, pending) != nil {
		t.Error("nothing taken in, nothing to show")
	}
}
