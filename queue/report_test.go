package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The report is the ResourceManager's scheduler view: every queue, parents included, with its
// use, running (active) and waiting (pending) jobs, limits and both fair shares. A parent's
// use, jobs and pending demand are its subtree's: root.analytics runs the jobs of daily and
// adhoc, and root runs them all.
func TestReport_ParentsSumTheirSubtrees(t *testing.T) {
	a := admitterWith(t, `<allocations>
  <queue name="root">
    <aclSubmitApps> </aclSubmitApps>
    <aclAdministerApps> </aclAdministerApps>
    <queue name="analytics">
      <minResources>2048 mb, 2 vcores</minResources>
      <maxResources>6144 mb, 6 vcores</maxResources>
      <aclSubmitApps>*</aclSubmitApps>
      <queue name="daily"/>
      <queue name="adhoc"><schedulingPolicy>fifo</schedulingPolicy></queue>
    </queue>
    <queue name="etl"><aclSubmitApps>*</aclSubmitApps></queue>
  </queue>
</allocations>`)
	for _, r := range []Request{req("a", "analytics.daily", 2), req("b", "analytics.adhoc", 3), req("c", "analytics.adhoc", 4), req("d", "etl", 1)} {
		if g := a.Request(r); g != nil {
			t.Fatalf("request %s: %+v", r.Job, g)
		}
	}
	a.Decide(time.Unix(0, 0), bed(8))
	mustCheck(t, a, heldBed(a, 8))

	type row struct {
		Path             string
		Leaf             bool
		Running, Waiting int
		// In slots of 1024 mb and 1 vcore.
		Usage, Pending int64
		Min, Max       Resources
		Policy         Policy
	}
	slots := func(r Resources) int64 { return r.MemoryBytes / (1024 * mib) }
	report := a.Report(ReportOptions{})
	var got []row
	steady := map[string]Resources{}
	for _, q := range report.Queues {
		got = append(got, row{q.Path, q.Leaf, q.RunningJobs, q.WaitingJobs, slots(q.Usage), slots(q.PendingDemand), q.MinResources, q.MaxResources, q.Policy})
		steady[q.Path] = q.SteadyShare
	}
	total, limit := MBVCores(8192, 8), MBVCores(6144, 6)
	want := []row{
		{"root", false, 3, 1, 6, 4, Resources{}, total, PolicyFair},
		{"root.analytics", false, 2, 1, 5, 4, MBVCores(2048, 2), limit, PolicyFair},
		{"root.analytics.daily", true, 1, 0, 2, 0, Resources{}, total, PolicyFair},
		{"root.analytics.adhoc", true, 1, 1, 3, 4, Resources{}, total, PolicyFIFO},
		{"root.etl", true, 1, 0, 1, 0, Resources{}, total, PolicyFair},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queues (-want +got)\n%s", diff)
	}
	// Root's steady share is the whole bed; its two children split it evenly.
	if diff := cmp.Diff(map[string]Resources{"root": total, "root.analytics": MBVCores(4096, 4), "root.analytics.daily": MBVCores(2048, 2),
		"root.analytics.adhoc": MBVCores(2048, 2), "root.etl": MBVCores(4096, 4)}, steady); diff != "" {
		t.Errorf("steady shares (-want +got)\n%s", diff)
	}
	if len(report.Warnings) != 0 {
		t.Errorf("root's ACLs are both closed, yet: %q", report.Warnings)
	}
}

// The report carries the warnings of the file in force, and only of that one: a newer file
// that was refused does not replace them.
func TestReport_WarnsOfTheFileInForce(t *testing.T) {
	open := `<allocations><queue name="secure"><aclSubmitApps>bob</aclSubmitApps></queue></allocations>`
	a := admitterWith(t, open)
	first := a.Report(ReportOptions{}).Warnings
	want := a.Config().Allocations.Warnings()
	if len(want) != 1 || !cmp.Equal(want, first) {
		t.Fatalf("warnings %q, want the file's %q", first, want)
	}
	a.Configure(a.Config().Apply(*ReadConfig(a.Config(), true, []byte("<allocations><queue"), "v2")))
	r := a.Report(ReportOptions{})
	if r.ConfigError == "" || !cmp.Equal(first, r.Warnings) {
		t.Errorf("after a refused file: error %q, warnings %q; want the first file's warnings %q", r.ConfigError, r.Warnings, first)
	}
	closed := `<allocations><queue name="root"><aclSubmitApps>ops</aclSubmitApps><aclAdministerApps>ops</aclAdministerApps></queue></allocations>`
	a.Configure(a.Config().Apply(*ReadConfig(a.Config(), true, []byte(closed), "v3")))
	if w := a.Report(ReportOptions{}).Warnings; len(w) != 0 {
		t.Errorf("root's ACLs are both set, yet: %q", w)
	}
}

// A report lists as many jobs as asked for, the first in submission order, and counts the
// rest; the queues' counts include every job.
func TestAdmitter_ReportListsWhatIsAskedFor(t *testing.T) {
	a := envelopeAdmitter(t, 1200)
	a.Decide(t0, bed(700))
	for _, c := range []struct {
		opts              ReportOptions
		waiting, running  int
		moreWait, moreRun int
	}{
		{ReportOptions{}, 500, 500, 0, 200},
		{ReportOptions{Jobs: 10}, 10, 10, 490, 690},
		{ReportOptions{Jobs: -1}, 0, 0, 500, 700},
		{ReportOptions{Jobs: 5000}, 500, 700, 0, 0},
	} {
		r := a.Report(c.opts)
		if len(r.Waiting) != c.waiting || len(r.Running) != c.running || r.MoreWaiting != c.moreWait || r.MoreRunning != c.moreRun {
			t.Errorf("%+v: %d waiting (%d more), %d running (%d more)", c.opts, len(r.Waiting), r.MoreWaiting, len(r.Running), r.MoreRunning)
		}
		if len(r.Waiting) > 0 && r.Waiting[0].Order != a.Waiting()[0].Order {
			t.Errorf("%+v: the list does not start with the first job", c.opts)
		}
		if r.Queues[0].Path != "root" || r.Queues[0].WaitingJobs != 500 || r.Queues[0].RunningJobs != 700 {
			t.Errorf("%+v: root counts %d waiting, %d running", c.opts, r.Queues[0].WaitingJobs, r.Queues[0].RunningJobs)
		}
	}
}
