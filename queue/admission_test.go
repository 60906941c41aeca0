package queue

import (
	"fmt"
	"strings"
	"testing"
)

var (
	slotRes   = MBVCores(4096, 2)
	driverRes = MBVCores(2048, 1)
)

// job needs a driver plus n executor slots.
func job(id, queue, user string, order int64, n int64) App {
	d := driverRes
	for range n {
		d = d.Add(slotRes)
	}
	return App{ID: id, Queue: queue, User: user, Order: order, AM: driverRes, Demand: d}
}

func running(a App) App {
	a.Running, a.Usage = true, a.Demand
	return a
}

func next(t *testing.T, tr *Tree, c Cluster) (string, []Refusal) {
	t.Helper()
	app, refusals, ok := tr.Next(c)
	if !ok {
		return "", refusals
	}
	return app.ID, refusals
}

func reasonFor(refusals []Refusal, id string) string {
	for _, r := range refusals {
		if r.App == id {
			return r.Reason
		}
	}
	return ""
}

func TestNext_FIFOWithinALeafAndLimits(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"><schedulingPolicy>fifo</schedulingPolicy><maxRunningApps>2</maxRunningApps></queue>
  <user name="bob"><maxRunningApps>1</maxRunningApps></user>
  <queueMaxAMShareDefault>-1</queueMaxAMShareDefault>
</allocations>`)
	total := MBVCores(100000, 100)
	apps := []App{job("second", "root.a", "ann", 2, 1), job("first", "root.a", "ann", 1, 1)}
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "first" {
		t.Errorf("FIFO: got %s", got)
	}
	// Queue limit: two running already.
	apps = []App{running(job("r1", "root.a", "x", 1, 1)), running(job("r2", "root.a", "y", 2, 1)), job("w", "root.a", "ann", 3, 1)}
	got, refusals := next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "" || !strings.Contains(reasonFor(refusals, "w"), "queue root.a runs its maximum of 2") {
		t.Errorf("queue limit: got %q, refusals %v", got, refusals)
	}
	// User limit: bob runs one; his next waits, ann's later job goes first.
	apps = []App{running(job("b1", "root.a", "bob", 1, 1)), job("b2", "root.a", "bob", 2, 1), job("a1", "root.a", "ann", 3, 1)}
	got, refusals = next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "a1" || !strings.Contains(reasonFor(refusals, "b2"), "user bob runs its maximum of 1") {
		t.Errorf("user limit: got %q, refusals %v", got, refusals)
	}
}

func TestNext_MaxResourcesAndCapacity(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"><maxResources>12288 mb, 100 vcores</maxResources></queue>
  <queue name="b"/>
</allocations>`)
	total := MBVCores(20480, 100)
	// a uses 6144 (driver + 1 slot); another 6144 fits its max exactly.
	apps := []App{running(job("a1", "root.a", "u", 1, 1)), job("a2", "root.a", "u", 2, 1)}
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "a2" {
		t.Errorf("within max: %s", got)
	}
	apps = []App{running(job("a1", "root.a", "u", 1, 1)), job("a3", "root.a", "u", 2, 2)}
	got, refusals := next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "" || !strings.Contains(reasonFor(refusals, "a3"), "would exceed its maxResources") {
		t.Errorf("over max: %q %v", got, refusals)
	}
	// b's job needs more than is free.
	apps = []App{running(job("a1", "root.a", "u", 1, 2)), job("b1", "root.b", "u", 2, 3)}
	got, refusals = next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "" || !strings.Contains(reasonFor(refusals, "b1"), "not enough free resources") {
		t.Errorf("capacity: %q %v", got, refusals)
	}
}

// The queue furthest below its share goes first: weights 2 and 1, gold holds 2 slots and
// silver 2: silver (2/1) is further ahead than gold (2/2), so gold's job starts.
func TestNext_FairAmongQueues(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="gold"><weight>2</weight></queue>
  <queue name="silver"/>
  <queue name="bronze"><minResources>8192 mb, 0 vcores</minResources></queue>
</allocations>`)
	total := MBVCores(1<<20, 1000)
	apps := []App{
		running(job("g", "root.gold", "u", 1, 1)), running(job("s", "root.silver", "u", 2, 1)),
		job("g2", "root.gold", "u", 5, 1), job("s2", "root.silver", "u", 3, 1),
	}
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "g2" {
		t.Errorf("got %s, want gold's job (usage over weight lower)", got)
	}
	// bronze is below its minimum share: it goes before both.
	apps = append(apps, job("b", "root.bronze", "u", 9, 1))
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "b" {
		t.Errorf("got %s, want bronze's job (below its minimum)", got)
	}
}

// Under drf, a queue below its minimum in any resource goes first, as in Hadoop, even when
// its dominant share is the larger; above their minimums, the smaller dominant share over
// weight goes first.
func TestNext_DRFHonoursMinResources(t *testing.T) {
	tr := tree(t, `<allocations>
  <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>
  <queue name="cpu"><minResources>0 mb, 16 vcores</minResources></queue>
  <queue name="mem"/>
</allocations>`)
	total := MBVCores(64<<10, 32)
	apps := []App{
		running(App{ID: "c", Queue: "root.cpu", Demand: MBVCores(1024, 12)}),
		running(App{ID: "m", Queue: "root.mem", Demand: MBVCores(8<<10, 1)}),
		{ID: "c2", Queue: "root.cpu", Order: 1, Demand: MBVCores(1024, 2)},
		{ID: "m2", Queue: "root.mem", Order: 2, Demand: MBVCores(1024, 1)},
	}
	// cpu's dominant share is 12/32 against mem's 8/64, but cpu is below its 16 vcores.
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "c2" {
		t.Errorf("got %s, want cpu's job (below its minimum)", got)
	}
	apps[0] = running(App{ID: "c", Queue: "root.cpu", Demand: MBVCores(1024, 16)})
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "m2" {
		t.Errorf("got %s, want mem's job (cpu is at its minimum, with the larger dominant share)", got)
	}
}

// The seeds' failure in small: a queue with room for 3 drivers and their executors, 10
// jobs submitted at once. With AM limits off and plain FIFO, admitting a job only needs room
// for its driver first (the executors come later), so drivers fill the queue. Checking the
// whole demand (slotplane's admission), or StateAware, admits only what can run.
func TestNext_DriversCannotFillTheQueue(t *testing.T) {
	// Room for 3 jobs of driver + 2 slots: 3 x 10240 MB.
	file := `<allocations>
  <queue name="etl"><schedulingPolicy>%s</schedulingPolicy><maxResources>30720 mb, 100 vcores</maxResources></queue>
</allocations>`
	for _, policy := range []Policy{PolicyFIFO, PolicyStateAware} {
		t.Run(string(policy), func(t *testing.T) {
			tr := tree(t, fmt.Sprintf(file, policy))
			total := MBVCores(30720, 100)
			var apps []App
			for i := range 10 {
				apps = append(apps, job(fmt.Sprintf("j%d", i), "root.etl", "u", int64(i), 2))
			}
			admitted := 0
			for {
				app, _, ok := tr.Next(Cluster{Total: total, Apps: apps})
				if !ok {
					break
				}
				for i := range apps {
					if apps[i].ID == app.ID {
						apps[i] = running(apps[i])
						if policy == PolicyStateAware {
							apps[i].State = Starting // until its first executor
						}
					}
				}
				admitted++
				if policy == PolicyStateAware {
					break // the next one waits until this one leaves Starting
				}
			}
			want := 3
			if policy == PolicyStateAware {
				want = 1
			}
			if admitted != want {
				t.Errorf("admitted %d at once, want %d", admitted, want)
			}
		})
	}
}

// A leaf's drivers may take only maxAMShare of its fair share (the first one always may).
func TestNext_MaxAMShare(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"><maxAMShare>0.1</maxAMShare></queue></allocations>`)
	total := MBVCores(40960, 100)
	apps := []App{running(job("r", "root.a", "u", 1, 1)), job("w", "root.a", "u", 2, 1)}
	got, refusals := next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "" || !strings.Contains(reasonFor(refusals, "w"), "maxAMShare 0.10") {
		t.Errorf("got %q %v", got, refusals)
	}
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps[1:]}); got != "w" {
		t.Errorf("the first driver of a queue may always start: got %q", got)
	}
}

// HeldBack judges a waiting application with every other application counted: the waiting
// jobs of queue b take half of the bed's share from a, and with it half of a's driver
// allowance. Total 32768 mb: with b waiting, a's share is 16384 mb and its drivers may take
// 8192 mb, less than r's and h's 5120 mb each; alone, a's share is its demand of 20480 mb
// and 10240 mb of drivers fit.
func TestHeldBack_JudgesWithEveryApplication(t *testing.T) {
	tr := tree(t, `<allocations><queue name="a"/><queue name="b"/></allocations>`)
	total := MBVCores(32768, 16)
	bigDriver := func(a App) App {
		a.Demand = a.Demand.Sub(a.AM).Add(MBVCores(5120, 1))
		a.AM = MBVCores(5120, 1)
		return a
	}
	a := []App{running(bigDriver(job("r", "root.a", "u", 1, 1))), bigDriver(job("h", "root.a", "u", 2, 2))}
	var b []App
	for i := range 4 {
		b = append(b, job(fmt.Sprintf("w%d", i), "root.b", "v", int64(3+i), 2))
	}
	if why := tr.HeldBack(Cluster{Total: total, Apps: append(a, b...)}, "h"); !strings.Contains(why, "maxAMShare") {
		t.Errorf("with b waiting, h should be held back by maxAMShare; got %q", why)
	}
	if why := tr.HeldBack(Cluster{Total: total, Apps: a}, "h"); why != "" {
		t.Errorf("alone, only room holds h back; got %q", why)
	}
	if why := tr.HeldBack(Cluster{Total: total, Apps: append(a, b...)}, "w1"); !strings.Contains(why, "w0") {
		t.Errorf("w1 comes after w0 in its leaf; got %q", why)
	}
}

// benchQueues is the benchmarks' allocation file: 20 parents of 10 leaves (root.dI.qJ), each
// leaf running at most 50 applications.
func benchQueues() string {
	var sb strings.Builder
	sb.WriteString("<allocations>")
	for i := range 20 {
		fmt.Fprintf(&sb, `<queue name="d%d"><weight>%d</weight>`, i, 1+i%3)
		for j := range 10 {
			fmt.Fprintf(&sb, `<queue name="q%d"><maxRunningApps>50</maxRunningApps></queue>`, j)
		}
		sb.WriteString("</queue>")
	}
	sb.WriteString("</allocations>")
	return sb.String()
}

func BenchmarkNext_10000Waiting200Queues(b *testing.B) {
	a, err := ParseAllocations([]byte(benchQueues()))
	if err != nil {
		b.Fatal(err)
	}
	tr := NewTree(a)
	var apps []App
	for i := range 10000 {
		q := fmt.Sprintf("root.d%d.q%d", i%20, (i/20)%10)
		app := job(fmt.Sprintf("a%d", i), q, fmt.Sprintf("u%d", i%50), int64(i), 1+int64(i%3))
		if i%10 == 0 {
			app = running(app)
		}
		apps = append(apps, app)
	}
	c := Cluster{Total: MBVCores(1<<30, 1<<20), Apps: apps}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := tr.Next(c); !ok {
			b.Fatal("nothing admitted")
		}
	}
}

func TestCanMove(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="a"/>
  <queue name="b"><maxRunningApps>1</maxRunningApps></queue>
  <queue name="c"><maxResources>8192 mb, 100 vcores</maxResources></queue>
  <queue name="p"><queue name="x"/></queue>
</allocations>`)
	total := MBVCores(1<<20, 1000)
	moving := running(job("m", "root.a", "u", 1, 2)) // 10240 MB
	apps := []App{moving, running(job("other", "root.b", "u", 2, 1))}
	c := Cluster{Total: total, Apps: apps}
	cases := map[string]struct {
		app    App
		target string
		want   string
	}{
		"to a busy queue at its app limit": {moving, "b", "runs its maximum of 1"},
		"over the target's maxResources":   {moving, "c", "would exceed its maxResources"},
		"to a parent":                      {moving, "p", "parent queue"},
		"to nowhere":                       {moving, "nope", "does not exist"},
		"a waiting job moves freely":       {job("w", "root.a", "u", 3, 9), "c", ""},
		"within limits":                    {moving, "p.x", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tr.CanMove(c, tc.app, tc.target)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// Driver first: a running application asking for one more executor competes with waiting
// ones. The application limits hold back only applications not yet running; maxResources
// and the free capacity hold back both; fair serves the application with the least first.
func TestNext_RunningApplicationsAskForMore(t *testing.T) {
	tr := tree(t, `<allocations>
  <queue name="f"><schedulingPolicy>fair</schedulingPolicy><maxRunningApps>2</maxRunningApps><maxResources>20480 mb, 100 vcores</maxResources></queue>
  <queue name="o"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queueMaxAMShareDefault>-1</queueMaxAMShareDefault>
</allocations>`)
	total := MBVCores(100000, 100)
	asking := func(a App, held int64) App {
		a.Running, a.Pending, a.Ask = true, true, slotRes
		a.Usage = driverRes.Add(times(slotRes, held))
		return a
	}
	// Two run (the queue's maximum) and ask for more; the bigger one came first, but fair
	// serves the smaller; the waiting third is held by maxRunningApps.
	apps := []App{asking(job("big", "root.f", "x", 1, 3), 2), asking(job("small", "root.f", "y", 2, 3), 0), job("third", "root.f", "z", 3, 1)}
	got, refusals := next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "small" || !strings.Contains(reasonFor(refusals, "third"), "runs its maximum of 2") {
		t.Errorf("fair among running: got %q, refusals %v", got, refusals)
	}
	// maxResources (20480 mb) holds a running application's ask as well: each holds 2048 +
	// 2*4096 = 10240, so one more 4096 executor would pass it.
	apps = []App{asking(job("big", "root.f", "x", 1, 3), 2), asking(job("small", "root.f", "y", 2, 3), 2)}
	got, refusals = next(t, tr, Cluster{Total: total, Apps: apps})
	if got != "" || !strings.Contains(reasonFor(refusals, "small"), "maxResources") {
		t.Errorf("maxResources: got %q, refusals %v", got, refusals)
	}
	// The ask, not the whole demand, must fit the free capacity.
	apps = []App{asking(job("one", "root.o", "x", 1, 5), 0)}
	small := driverRes.Add(slotRes)
	if got, refusals := next(t, tr, Cluster{Total: small, Apps: apps}); got != "one" {
		t.Errorf("ask fits: got %q, refusals %v", got, refusals)
	}
	// A running application that asks for nothing is not offered anything.
	apps = []App{running(job("done-asking", "root.o", "x", 1, 1))}
	if got, _ := next(t, tr, Cluster{Total: total, Apps: apps}); got != "" {
		t.Errorf("not asking: got %q", got)
	}
}
