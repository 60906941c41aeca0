package queue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// prio is req with a priority.
func prio(job, queue string, slots, priority int32) Request {
	r := req(job, queue, slots)
	r.Priority = priority
	return r
}

// In every leaf policy, a job of a higher priority submitted last starts first once room
// frees; among equal priorities, submission order holds.
func TestAdmitter_AHigherPriorityGoesFirstInItsLeaf(t *testing.T) {
	for _, policy := range []Policy{PolicyFIFO, PolicyFair, PolicyDRF, PolicyStateAware} {
		t.Run(string(policy), func(t *testing.T) {
			a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>`+string(policy)+`</schedulingPolicy></queue></allocations>`)
			a.Request(req("running", "q", 4))
			a.Decide(t0, bed(4))
			a.Started(key("running"))
			a.Request(req("first", "q", 4))
			a.Request(prio("second", "q", 4, 0))
			a.Request(prio("urgent", "q", 4, 10))
			a.Request(prio("low", "q", 4, -5))
			if d := a.Decide(t0, heldBed(a, 4)); len(d.Grants) != 0 {
				t.Fatalf("granted with the bed full: %v", granted(d))
			}
			var order []string
			for range 4 {
				a.Ended(a.Running()[0].Request.JobKey)
				d := a.Decide(t0.Add(time.Minute), bed(4))
				if len(d.Grants) != 1 {
					t.Fatalf("after %v: grants %v", order, granted(d))
				}
				order = append(order, d.Grants[0].Job)
				a.Started(d.Grants[0].JobKey)
			}
			if want := []string{"urgent", "first", "second", "low"}; !slices.Equal(order, want) {
				t.Errorf("started %v; want %v", order, want)
			}
		})
	}
}

// The report carries each waiting job's priority.
func TestAdmitter_TheReportCarriesPriorities(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"/></allocations>`)
	a.Request(req("running", "q", 2))
	a.Decide(t0, bed(2))
	a.Request(req("plain", "q", 2))
	a.Request(prio("urgent", "q", 2, 7))
	a.Decide(t0, heldBed(a, 2))
	r := a.Report(ReportOptions{})
	if len(r.Waiting) != 2 || r.Waiting[1].Request.Job != "urgent" || r.Waiting[1].Request.Priority != 7 {
		t.Fatalf("waiting %+v", r.Waiting)
	}
}

// Preemption takes executors from the job of the lowest priority first, the newest among
// equals, whatever their submission order.
func TestPlanPreemption_TakesFromTheLowestPriorityFirst(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"/><queue name="b"/></allocations>`)
	apps := []App{
		{ID: "b-low", Queue: "root.b", Order: 1, Priority: -1, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "b-high", Queue: "root.b", Order: 2, Priority: 5, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "b-plain", Queue: "root.b", Order: 3, Running: true, Usage: slots(4), Demand: slots(4)},
		{ID: "wants", Queue: "root.a", Order: 4, Demand: slots(6)},
	}
	starving := []Starving{{Queue: "root.a", Amount: slots(6)}}
	got := tr.PlanPreemption(Cluster{Total: slots(12), Apps: apps}, starving, slots(1), map[string]int{"b-low": 4, "b-high": 4, "b-plain": 4})
	want := []Victim{{App: "b-low", Executors: 4, For: "root.a"}, {App: "b-plain", Executors: 2, For: "root.a"}}
	if !slices.Equal(got, want) {
		t.Errorf("victims %+v; want %+v", got, want)
	}
}

// YUNIKORN-564: the jobs a StateAware leaf holds back while one starts count in the
// queue's pending demand, which people and autoscalers read, and say why they wait.
func TestAdmitter_StateAwareHeldBackJobsArePendingDemand(t *testing.T) {
	a := admitterWith(t, `<allocations><queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`)
	a.Request(req("starting", "q", 2))
	a.Decide(t0, bed(8))
	a.Request(req("next", "q", 2))
	a.Request(req("after", "q", 3))
	if d := a.Decide(t0, heldBed(a, 8)); len(d.Grants) != 0 {
		t.Fatalf("granted %v while a job is starting", granted(d))
	}
	r := a.Report(ReportOptions{})
	for _, q := range r.Queues {
		if q.Path == "root.q" && (q.WaitingJobs != 2 || q.PendingDemand != times(a.st.Slot, 5)) {
			t.Errorf("root.q: %d waiting, pending %s; want 2 and 5 slots", q.WaitingJobs, q.PendingDemand)
		}
	}
	for _, e := range r.Waiting {
		if !strings.Contains(e.Reason, "is StateAware and another application is starting") {
			t.Errorf("%s waits for %q", e.Request.Job, e.Reason)
		}
	}
}
