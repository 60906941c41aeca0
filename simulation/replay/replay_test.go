package replay

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"slotplane/apitypes"
	"slotplane/queue"
	"slotplane/simulation"
	"slotplane/simulation/tracefile"
)

// parseConfig parses an allocation file and its settings ("": the defaults).
func parseConfig(t testing.TB, file, settings string) *queue.Allocations {
	t.Helper()
	a, err := queue.ParseConfig(queue.ConfigFiles{Allocations: []byte(file), HasAllocations: true, Settings: []byte(settings), HasSettings: settings != ""})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// preemptionOn is the settings (a yarn-site.xml) that turn preemption on.
var preemptionOn = "<configuration>\n<property><name>" + queue.PropPreemption + "</name><value>true</value></property>\n</configuration>\n"

// driver is a driver of mb and vcores, as a trace writes it.
func driver(mb, vcores int64) apitypes.Resources {
	return apitypes.Resources(queue.MBVCores(mb, vcores))
}

// parseTrace reads a trace written in a test.
func parseTrace(t testing.TB, text string) []simulation.Job {
	t.Helper()
	jobs, err := tracefile.Parse(strings.NewReader(text))
	require.NoError(t, err)
	return jobs
}

// replayFile replays a trace against an allocation file, the settings at their defaults.
func replayFile(t testing.TB, file, trace string, opts Options) Result {
	t.Helper()
	return replayWith(t, file, "", trace, opts)
}

// replayWith replays a trace against an allocation file and settings ("": the defaults).
func replayWith(t testing.TB, file, settings, trace string, opts Options) Result {
	t.Helper()
	a := parseConfig(t, file, settings)
	res, err := Run(a, parseTrace(t, trace), opts)
	require.NoError(t, err)
	return res
}

// outcome finds a job's outcome by name.
func outcome(t testing.TB, r Result, name string) JobOutcome {
	t.Helper()
	for _, o := range r.Outcomes {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no job %s", name)
	return JobOutcome{}
}

// queueOutcome finds a queue's row by path.
func queueOutcome(t testing.TB, r Result, path string) QueueOutcome {
	t.Helper()
	for _, q := range r.Queues {
		if q.Queue == path {
			return q
		}
	}
	t.Fatalf("no queue row %s in %+v", path, r.Queues)
	return QueueOutcome{}
}

// slot8 is the example test bed's slot: 8 GiB and 2 vcores.
var slot8 = queue.MBVCores(8192, 2)

// fifoFile is one FIFO queue without an AM limit.
const fifoFile = `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queueMaxAMShareDefault>-1</queueMaxAMShareDefault></allocations>`

// One slot, three one-slot jobs of a minute submitted at once: they run one after the other
// in the trace's order (not by name), so they wait 0, 1 and 2 minutes.
func TestReplay_FIFOOrder(t *testing.T) {
	r := replayFile(t, fifoFile, `submit,name,queue,user,groups,driver,executors,runtime
0s,c,q,u,,"1024 mb, 1 vcores",1,1m
0s,a,q,u,,"1024 mb, 1 vcores",1,1m
0s,b,q,u,,"1024 mb, 1 vcores",1,1m
`, Options{Slots: 1, SlotSize: slot8})
	require.Empty(t, r.Stopped)
	require.Equal(t, 3, r.Done)
	require.Equal(t, 0*time.Minute, outcome(t, r, "c").Start)
	require.Equal(t, 1*time.Minute, outcome(t, r, "a").Start)
	require.Equal(t, 2*time.Minute, outcome(t, r, "b").Start)
	require.Equal(t, 3*time.Minute, r.Makespan)
	require.InDelta(t, 1.0, r.SlotUtilization, 1e-9)
	q := queueOutcome(t, r, "root.q")
	require.Equal(t, 3, q.Done)
	require.Equal(t, time.Minute, q.MeanWait)
	require.Equal(t, time.Minute, q.P50Wait)
	require.Equal(t, 2*time.Minute, q.P95Wait)
	require.Equal(t, 2*time.Minute, q.MaxWait)
	require.InDelta(t, 1.0, q.SteadyShare, 1e-9)
	require.InDelta(t, 1.0, r.Fairness, 1e-9, "one queue is always fair to itself")

	// A refusal after the last job ends changes nothing; a limit stops the replay.
	trace := `submit,name,queue,user,groups,driver,executors,runtime
0s,c,q,u,,"1024 mb, 1 vcores",1,1m
0s,a,q,u,,"1024 mb, 1 vcores",1,1m
1h,late,nope,u,,"1024 mb, 1 vcores",1,1m
`
	strict := `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue>
  <queuePlacementPolicy><rule name="specified" create="false"/><rule name="reject"/></queuePlacementPolicy></allocations>`
	r = replayFile(t, strict, trace, Options{Slots: 1, SlotSize: slot8})
	require.Equal(t, 1, r.Refused)
	require.Equal(t, 2*time.Minute, r.End)
	require.InDelta(t, 1.0, r.SlotUtilization, 1e-9)
	r = replayFile(t, fifoFile, trace, Options{Slots: 1, SlotSize: slot8, Limit: 90 * time.Second})
	require.Equal(t, "stopped at the limit of 1m30s", r.Stopped)
	require.Equal(t, 1, r.Done)
	require.Equal(t, 1, r.Unfinished)
	require.Equal(t, "runs", outcome(t, r, "a").Waiting)
}

// As in the Admission workflow, a FIFO leaf is strict: a small job submitted later does not
// pass a big one that does not fit yet. With backfill it does when it ends before the big
// one can start; with strictOrder false it is first that fits.
func TestReplay_GangKeepsTheStrictOrder(t *testing.T) {
	trace := `submit,name,queue,user,groups,driver,executors,runtime
0s,big-1,q,u,,"1024 mb, 1 vcores",3,1m
1s,big-2,q,u,,"1024 mb, 1 vcores",2,1m
2s,small,q,u,,"1024 mb, 1 vcores",1,30s
`
	for _, tc := range []struct {
		name, knobs string
		small       time.Duration
		headWait    time.Duration
	}{
		{"strict", "", time.Minute, 59 * time.Second},
		{"backfill", "<backfill>true</backfill>", 2 * time.Second, 59 * time.Second},
		{"not strict", "<strictOrder>false</strictOrder>", 2 * time.Second, 59 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy>` + tc.knobs + `</queue></allocations>`
			r := replayFile(t, file, trace, Options{Slots: 4, SlotSize: slot8})
			require.Equal(t, tc.small, outcome(t, r, "small").Start)
			require.Equal(t, time.Minute, outcome(t, r, "big-2").Start, "big-2 starts when big-1 ends, whatever passed it")
			require.Equal(t, tc.headWait, r.MaxHeadWait)
		})
	}
}

// Two queues of weight 2 and 1 on 12 slots, many one-slot jobs each: 8 and 4 run at a
// time, in two rounds, and each queue gets exactly its share.
func TestReplay_WeightSplit(t *testing.T) {
	var trace strings.Builder
	trace.WriteString("submit,name,queue,user,groups,driver_mb,driver_vcores,executors,runtime\n")
	for i := range 16 {
		fmt.Fprintf(&trace, "0s,gold-%02d,gold,u%d,,1024,1,1,1m\n", i, i)
	}
	for i := range 8 {
		fmt.Fprintf(&trace, "0s,silver-%02d,silver,v%d,,1024,1,1,1m\n", i, i)
	}
	r := replayFile(t, `<allocations>
  <queue name="gold"><weight>2</weight></queue>
  <queue name="silver"><weight>1</weight></queue>
  <queueMaxAMShareDefault>-1</queueMaxAMShareDefault>
</allocations>`, trace.String(), Options{Slots: 12, SlotSize: slot8})
	require.Equal(t, 24, r.Done)
	require.Equal(t, 2*time.Minute, r.Makespan)
	gold, silver := queueOutcome(t, r, "root.gold"), queueOutcome(t, r, "root.silver")
	for _, q := range []QueueOutcome{gold, silver} {
		require.Equal(t, 30*time.Second, q.MeanWait, q.Queue) // half at once, half after a minute
		require.Equal(t, time.Minute, q.MaxWait, q.Queue)
		require.InDelta(t, 1.0, q.UseOverFair, 1e-9, q.Queue)
	}
	require.InDelta(t, 8.0, gold.AvgSlots, 1e-9)
	require.InDelta(t, 4.0, silver.AvgSlots, 1e-9)
	require.InDelta(t, 2.0/3, gold.SteadyShare, 1e-9)
	require.InDelta(t, 1.0/3, silver.SteadyShare, 1e-9)
	require.InDelta(t, 1.0, r.Fairness, 1e-9)
	require.InDelta(t, 1.0, r.SlotUtilization, 1e-9)
}

// maxRunningApps 2 on a bed with room for all four: two run, then the other two.
func TestReplay_MaxRunningApps(t *testing.T) {
	r := replayFile(t, `<allocations><queue name="q"><maxRunningApps>2</maxRunningApps></queue></allocations>`,
		`submit,name,queue,user,groups,driver,executors,runtime
0s,a,q,u,,"1024 mb, 1 vcores",1,1m
0s,b,q,u,,"1024 mb, 1 vcores",1,1m
0s,c,q,u,,"1024 mb, 1 vcores",1,1m
0s,d,q,u,,"1024 mb, 1 vcores",1,1m
`, Options{Slots: 10, SlotSize: slot8})
	for name, start := range map[string]time.Duration{"a": 0, "b": 0, "c": time.Minute, "d": time.Minute} {
		require.Equal(t, start, outcome(t, r, name).Start, name)
	}
	require.Equal(t, 2*time.Minute, r.Makespan)
	require.InDelta(t, 0.2, r.SlotUtilization, 1e-9, "2 of 10 slots all along")
}

// The submit ACL refuses alice; bob and a member of the team's group run.
func TestReplay_ACLRefusal(t *testing.T) {
	r := replayFile(t, `<allocations>
  <queue name="root"><aclSubmitApps> </aclSubmitApps><aclAdministerApps> </aclAdministerApps>
    <queue name="team"><aclSubmitApps>bob team</aclSubmitApps></queue>
  </queue>
</allocations>`, `submit,name,queue,user,groups,driver,executors,runtime
0s,by-bob,team,bob,,"1024 mb, 1 vcores",1,1m
0s,by-alice,team,alice,others,"1024 mb, 1 vcores",1,1m
0s,by-carol,team,carol,others;team,"1024 mb, 1 vcores",1,1m
`, Options{Slots: 4, SlotSize: slot8})
	require.Equal(t, 2, r.Done)
	require.Equal(t, 1, r.Refused)
	require.Equal(t, `user "alice" may not submit to queue root.team (aclSubmitApps)`, outcome(t, r, "by-alice").Refused)
	q := queueOutcome(t, r, "root.team")
	require.Equal(t, 2, q.Done)
	require.Equal(t, 1, q.Refused)
}

// Under specified with create="false" a job asking for a queue the file does not configure
// passes on to the next rule, here reject.
func TestReplay_UnknownQueueUnderCreateFalse(t *testing.T) {
	r := replayFile(t, `<allocations>
  <queue name="team"/>
  <queuePlacementPolicy><rule name="specified" create="false"/><rule name="reject"/></queuePlacementPolicy>
</allocations>`, `submit,name,queue,user,groups,driver,executors,runtime
0s,known,team,u,,"1024 mb, 1 vcores",1,1m
0s,unknown,nope,u,,"1024 mb, 1 vcores",1,1m
0s,none,,u,,"1024 mb, 1 vcores",1,1m
`, Options{Slots: 4, SlotSize: slot8})
	require.Equal(t, 1, r.Done)
	require.Equal(t, "the queue placement policy rejected the application: the reject rule", outcome(t, r, "unknown").Refused)
	require.Equal(t, 1, queueOutcome(t, r, "root.nope").Refused)
	require.Equal(t, 1, queueOutcome(t, r, "-").Refused, "no queue asked for, none given")
	require.Equal(t, 1, queueOutcome(t, r, "root.team").Done)
}

// The seeds' driver deadlock as a trace: 10 jobs of a 2-vcore, 8 GB driver and two 4 GB
// executors, on 12 slots of 4 GB and 1 vcore. Driver-first, the drivers take everything and
// no executor starts. Gang grants keep drivers out of the slots, as the Admission workflow
// does, so 6 jobs run at a time: two rounds of 10 s start-up and a minute of work.
func TestReplay_DriverDeadlockBothModes(t *testing.T) {
	var trace strings.Builder
	trace.WriteString("submit,name,queue,user,groups,driver,executors,runtime\n")
	for i := range 10 {
		fmt.Fprintf(&trace, "0s,spark-%02d,spark,etl,,\"8192 mb, 2 vcores\",2,1m\n", i)
	}
	file := `<allocations><queue name="spark"><schedulingPolicy>fifo</schedulingPolicy><maxAMShare>-1.0</maxAMShare></queue></allocations>`
	opts := Options{Slots: 12, SlotSize: queue.MBVCores(4096, 1), StartUp: 10 * time.Second}

	opts.Mode = DriverFirst
	r := replayFile(t, file, trace.String(), opts)
	require.Zero(t, r.Done)
	require.Equal(t, 10, r.Unfinished)
	require.Equal(t, "deadlock: nothing granted or finished after 0s; 6 drivers hold 0 executors and wait for more, 4 jobs wait to start", r.Stopped)
	require.Zero(t, r.SlotUtilization)

	opts.Mode = Gang
	r = replayFile(t, file, trace.String(), opts)
	require.Empty(t, r.Stopped)
	require.Equal(t, 10, r.Done)
	require.Equal(t, 2*70*time.Second, r.Makespan)
	require.Equal(t, 70*time.Second, outcome(t, r, "spark-09").Start)
}

// Under plain StateAware a queue lets one job start at a time: each holds the queue for its
// driver's 10 s start-up. By default (slotplane.stateaware.skip-starting-without-executors)
// a driver that runs without executors holds nothing, as on the platform, and the three
// start together.
func TestReplay_StateAwareDripFeed(t *testing.T) {
	const trace = `submit,name,queue,user,groups,driver,executors,runtime
0s,a,q,u,,"1024 mb, 1 vcores",1,1m
0s,b,q,u,,"1024 mb, 1 vcores",1,1m
0s,c,q,u,,"1024 mb, 1 vcores",1,1m
`
	const file = `<allocations><queue name="q"><schedulingPolicy>stateaware</schedulingPolicy></queue></allocations>`
	plain := `<configuration><property><name>` + queue.PropSkipStartingWithoutExecutors + `</name><value>false</value></property></configuration>`
	r := replayWith(t, file, plain, trace, Options{Slots: 10, SlotSize: slot8, StartUp: 10 * time.Second})
	require.Equal(t, time.Duration(0), outcome(t, r, "a").Start)
	require.Equal(t, 10*time.Second, outcome(t, r, "b").Start)
	require.Equal(t, 20*time.Second, outcome(t, r, "c").Start)
	require.Equal(t, 90*time.Second, r.Makespan)

	r = replayWith(t, file, "", trace, Options{Slots: 10, SlotSize: slot8, StartUp: 10 * time.Second})
	for _, name := range []string{"a", "b", "c"} {
		require.Equal(t, time.Duration(0), outcome(t, r, name).Start, name)
	}
	require.Equal(t, 70*time.Second, r.Makespan)
}

// A queue starved of half its fair share for 20 s takes two of the four slots back from a
// job that holds them all. The slots are free 10 s later; the victim works on at half
// pace, asks for them again when the other job ends, and finishes its 400 executor-seconds
// at 120 s: 120 done by 30 s, 80 more by 70 s, 200 in the last 50 s.
func TestReplay_Preemption(t *testing.T) {
	file := `<allocations>
  <queue name="a"/><queue name="b"/>
  <defaultFairSharePreemptionTimeout>20</defaultFairSharePreemptionTimeout>
  <queueMaxAMShareDefault>-1</queueMaxAMShareDefault>
</allocations>`
	trace := `submit,name,queue,user,groups,driver,executors,runtime
0s,hog,a,u,,"1024 mb, 1 vcores",4,100s
10s,late,b,v,,"1024 mb, 1 vcores",2,30s
`
	r := replayWith(t, file, preemptionOn, trace, Options{Slots: 4, SlotSize: slot8})
	require.Equal(t, "simulated", r.Preemption)
	require.Equal(t, 2, r.PreemptedSlots)
	require.Equal(t, 2, outcome(t, r, "hog").Preempted)
	require.Equal(t, 40*time.Second, outcome(t, r, "late").Start)
	require.Equal(t, 70*time.Second, outcome(t, r, "late").Finish)
	require.Equal(t, 120*time.Second, outcome(t, r, "hog").Finish)
	require.Equal(t, 120*time.Second, r.Makespan)
	require.InDelta(t, 460.0/480, r.SlotUtilization, 1e-9)
	require.Equal(t, 2, queueOutcome(t, r, "root.b").PreemptedSlots)
	require.Equal(t, 2, queueOutcome(t, r, "root.a").LostToOther)

	// Without preemption the late job waits for the hog.
	r = replayWith(t, file, preemptionOn, trace, Options{Slots: 4, SlotSize: slot8, NoPreemption: true})
	require.Zero(t, r.PreemptedSlots)
	require.Equal(t, 100*time.Second, outcome(t, r, "late").Start)
	require.Contains(t, r.Preemption, "left out")

	// Without the settings' switch there is none to simulate.
	r = replayFile(t, file, trace, Options{Slots: 4, SlotSize: slot8})
	require.Equal(t, "off in the settings ("+queue.PropPreemption+")", r.Preemption)
	require.Zero(t, r.PreemptedSlots)
}

func TestReplay_BadOptions(t *testing.T) {
	a, err := queue.ParseAllocations([]byte(fifoFile))
	require.NoError(t, err)
	for _, opts := range []Options{
		{Slots: 0, SlotSize: slot8},
		{Slots: 1},
		{Slots: 1, SlotSize: slot8, Mode: "eager"},
		{Slots: 1, SlotSize: slot8, StartUp: -time.Second},
	} {
		_, err := Run(a, nil, opts)
		require.Error(t, err, "%+v", opts)
	}
	// Jobs made in code must keep the trace's rules.
	ok := simulation.Job{Name: "a", Queue: "q", User: "u", Executors: 1, Runtime: time.Minute}
	for _, jobs := range [][]simulation.Job{
		{ok, ok},
		{{Name: "b", Queue: "q", User: "u", Executors: 0, Runtime: time.Minute}},
		{{Name: "c", Queue: "q", User: "u", Executors: 1}},
	} {
		_, err := Run(a, jobs, Options{Slots: 1, SlotSize: slot8})
		require.Error(t, err, "%+v", jobs)
	}
}

// randomTrace makes a deterministic trace of n jobs over four queues and six users.
func randomTrace(n int, seed uint64) []simulation.Job {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	queues := []string{"etl", "adhoc", "ml", ""}
	users := []string{"ann", "bo", "cy", "di", "ed", "flo"}
	jobs := make([]simulation.Job, n)
	at := time.Duration(0)
	for i := range jobs {
		at += time.Duration(rng.IntN(60)) * time.Second
		jobs[i] = simulation.Job{
			Submit: at, Name: fmt.Sprintf("job-%05d", i), Queue: queues[rng.IntN(len(queues))], User: users[rng.IntN(len(users))],
			Driver: driver(1024*int64(1+rng.IntN(4)), int64(1+rng.IntN(2))), Executors: 1 + rng.IntN(6),
			Runtime: time.Duration(1+rng.IntN(20)) * time.Minute,
		}
	}
	return jobs
}

// randomFile has four queues with the limits and policies a replay exercises; with
// preemptionOn, preemption too.
const randomFile = `<allocations>
  <queue name="etl"><weight>2</weight><schedulingPolicy>stateaware</schedulingPolicy><maxRunningApps>8</maxRunningApps></queue>
  <queue name="adhoc"><schedulingPolicy>fifo</schedulingPolicy><maxAMShare>0.3</maxAMShare></queue>
  <queue name="ml"><schedulingPolicy>drf</schedulingPolicy><minResources>32768 mb, 8 vcores</minResources></queue>
  <userMaxAppsDefault>6</userMaxAppsDefault>
  <defaultMinSharePreemptionTimeout>60</defaultMinSharePreemptionTimeout>
  <defaultFairSharePreemptionTimeout>300</defaultFairSharePreemptionTimeout>
</allocations>`

// The same trace and file give the same result, to the last wait; the trace survives being
// written and read again.
func TestReplay_Deterministic(t *testing.T) {
	jobs := randomTrace(300, 7)
	var text bytes.Buffer
	require.NoError(t, tracefile.Write(&text, jobs))
	opts := Options{Slots: 24, SlotSize: slot8, StartUp: 10 * time.Second}
	first := replayWith(t, randomFile, preemptionOn, text.String(), opts)
	require.Equal(t, 300, first.Jobs)
	require.Positive(t, first.Done)
	require.Positive(t, first.Makespan)
	for range 3 {
		require.Equal(t, first, replayWith(t, randomFile, preemptionOn, text.String(), opts))
	}
	opts.Mode = DriverFirst
	df := replayWith(t, randomFile, preemptionOn, text.String(), opts)
	require.Equal(t, df, replayWith(t, randomFile, preemptionOn, text.String(), opts))
	t.Logf("gang: %d done, makespan %s, utilization %.3f, fairness %.3f, %d slots preempted",
		first.Done, first.Makespan, first.SlotUtilization, first.Fairness, first.PreemptedSlots)
	t.Logf("driver-first: %d done, makespan %s, utilization %.3f, %s", df.Done, df.Makespan, df.SlotUtilization, df.Stopped)
}

// 10,000 jobs (about 80 hours of submissions, some 80% of the bed's capacity) on 96 slots,
// replayed in gang mode with preemption.
func BenchmarkReplayTrace_10000Jobs(b *testing.B) {
	a := parseConfig(b, randomFile, preemptionOn)
	jobs := randomTrace(10000, 11)
	var err error
	opts := Options{Slots: 96, SlotSize: slot8, StartUp: 10 * time.Second}
	var r Result
	for b.Loop() {
		if r, err = Run(a, jobs, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Done), "jobs-done")
	b.ReportMetric(r.Makespan.Hours(), "makespan-h")
}

// A placement rule that makes a queue per user, under running-application limits, makes
// queues while the Admitter keeps the picture of its last decision: the example Hadoop 3
// file on the mixed day replays to its end. Two jobs are refused at submission, and admin's
// three compactions wait for good: each user's queue may take a tenth of the bed
// (maxChildResources), less than one of them needs.
func TestRun_PlacementMakesQueuesUnderAppLimits(t *testing.T) {
	file, err := os.ReadFile("../../examples/fair-scheduler-hadoop3.xml")
	require.NoError(t, err)
	trace, err := os.ReadFile("../../examples/traces/mixed-day.csv")
	require.NoError(t, err)
	res := replayFile(t, string(file), string(trace), Options{Slots: 8, SlotSize: queue.MBVCores(8192, 2)})
	require.Equal(t, []int{104, 99, 2, 3}, []int{res.Jobs, res.Done, res.Refused, res.Unfinished})
}

// A trace's priority column orders a leaf's waiting jobs: the urgent job, submitted last,
// starts first when the running one ends; the two of one priority keep their order.
func TestReplay_PriorityGoesFirst(t *testing.T) {
	trace := `submit,name,queue,user,groups,driver,executors,runtime,priority
0s,running,q,u,,"1024 mb, 1 vcores",4,1m,0
1s,early,q,u,,"1024 mb, 1 vcores",4,1m,0
2s,later,q,u,,"1024 mb, 1 vcores",4,1m,0
3s,urgent,q,u,,"1024 mb, 1 vcores",4,1m,10
`
	r := replayFile(t, `<allocations><queue name="q"><schedulingPolicy>fifo</schedulingPolicy></queue></allocations>`, trace, Options{Slots: 4, SlotSize: slot8})
	require.Equal(t, time.Minute, outcome(t, r, "urgent").Start)
	require.Equal(t, 2*time.Minute, outcome(t, r, "early").Start)
	require.Equal(t, 3*time.Minute, outcome(t, r, "later").Start)
}
