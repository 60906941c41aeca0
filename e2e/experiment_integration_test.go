//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"slotplane/apiclient"
	"slotplane/crds/v1alpha1"
	"slotplane/examples"
	"slotplane/experiment"
	"slotplane/internal/samples"
	"slotplane/internal/testbrowser"
	"slotplane/queue"
	"slotplane/schedkit"
	"slotplane/schedkit/sjf"
	"slotplane/simulation/replay"
	"slotplane/simulation/tracefile"
)

// An experiment of forty short jobs with each example scheduler, run as a user runs it
// (`slotplane experiment`) on the whole platform: every job runs once to completion; the
// CSV says what the BatchJobs' run histories say; the report's Gantt chart has one bar per
// job run in each of its slot rows, none overlapping in a slot, and it renders in Chromium;
// the schedulers' notes stay on the jobs as they wrote them. Then the guide's scheduler runs
// the same trace as an external command.
func TestE2E_ExperimentsWithTheExampleSchedulers(t *testing.T) {
	// Its checks are of records, not timings: it may share the machine. Under load a job's
	// wait may come after the run ended; the worker's watch remembers the placements it
	// then records (activities.Changes.NotePod).
	t.Parallel()
	queues, err := samples.Files.ReadFile(samples.DevQueues)
	require.NoError(t, err)
	p := startE2E(t, string(queues))
	trace, err := filepath.Abs("../examples/traces/short.csv")
	require.NoError(t, err)
	ctx := context.Background()
	exp, err := apiclient.New(p.api.Server(), experimenterToken)
	require.NoError(t, err)

	for _, scheduler := range []string{"fifo", "sjf"} {
		t.Run(scheduler, func(t *testing.T) {
			name := "exp-" + scheduler
			out := filepath.Join(t.TempDir(), name)
			var printed bytes.Buffer
			cmd := exec.Command(binary, "experiment", "-server", p.api.Server(), "-token", experimenterToken,
				"-trace", trace, "-scheduler", scheduler, "-name", name, "-out", out, "-timeout", "4m")
			cmd.Stdout, cmd.Stderr = &printed, &printed
			start := time.Now()
			require.NoError(t, cmd.Run(), printed.String())
			t.Logf("%s: %s\n%s", scheduler, time.Since(start).Round(time.Second), printed.String())

			f, err := os.Open(filepath.Join(out, "runs.csv"))
			require.NoError(t, err)
			runs, err := experiment.ReadCSV(f)
			f.Close()
			require.NoError(t, err)
			require.Len(t, runs, 40, "one run per job")

			// The CSV against the BatchJobs.
			list, err := exp.ListJobs(ctx, apiclient.JobFilter{})
			require.NoError(t, err)
			jobs := map[string]int{}
			for i, j := range list.Items {
				if j.Labels[schedkit.ExperimentLabel] == name {
					jobs[j.Name] = i
				}
			}
			require.Len(t, jobs, 40)
			var start0 time.Time
			for _, r := range runs {
				require.Equal(t, experiment.OutcomeCompleted, r.Outcome, "%s", r.Job)
				i, ok := jobs[r.BatchJob]
				require.True(t, ok, r.BatchJob)
				j := list.Items[i]
				require.Equal(t, v1alpha1.JobCompleted, j.Status.State, j.Name)
				require.Len(t, j.Status.History, 1, j.Name)
				h := j.Status.History[0]
				require.Equal(t, h.Slots, r.Slots, j.Name)
				require.Equal(t, h.Nodes, r.Nodes, j.Name)
				want, err := strconv.Atoi(j.SchedulerData[schedkit.ReplicasNote])
				require.NoError(t, err)
				require.Len(t, r.Slots, want, "%s ran in as many slots as it asked for", j.Name)
				// The CSV's times are offsets from the experiment's start, to the millisecond;
				// the record's differences are the CSV's.
				require.NotNil(t, h.AdmittedAt, "%s: its run's record has no grant time", j.Name)
				require.NotNil(t, h.RunningAt, "%s: its run's record has no running time (its pods were never all seen running)", j.Name)
				require.NotNil(t, h.EndedAt, "%s: its run's record has no end time", j.Name)
				if start0.IsZero() {
					start0 = h.AdmittedAt.Add(-r.Admitted)
				}
				for what, pair := range map[string][2]time.Duration{
					"admitted": {h.AdmittedAt.Sub(start0), r.Admitted},
					"running":  {h.RunningAt.Sub(start0), r.Running},
					"ended":    {h.EndedAt.Sub(start0), r.Ended},
				} {
					require.InDelta(t, pair[0].Seconds(), pair[1].Seconds(), 0.002, "%s %s", j.Name, what)
				}
				if scheduler == "sjf" {
					require.NotEmpty(t, j.SchedulerData[sjf.EstimateNote], "%s carries the scheduler's estimate", j.Name)
					require.NotEmpty(t, j.SchedulerData[sjf.BasisNote], j.Name)
				}
			}

			// The Gantt chart: one bar per run in each of its slots, none overlapping in a slot.
			page, err := os.ReadFile(filepath.Join(out, "report.html"))
			require.NoError(t, err)
			bars := ganttBars(t, page)
			wantBars := 0
			for _, r := range runs {
				wantBars += len(r.Slots)
				for _, s := range r.Slots {
					key := fmt.Sprintf("%s/%d/%d", r.BatchJob, r.Attempt, s)
					require.Contains(t, bars, key, "no bar for %s", key)
				}
			}
			require.Len(t, bars, wantBars)
			bySlot := map[string][]bar{}
			for _, b := range bars {
				bySlot[b.slot] = append(bySlot[b.slot], b)
			}
			for slot, bs := range bySlot {
				slices.SortFunc(bs, func(a, b bar) int {
					return strings.Compare(fmt.Sprintf("%012.3f", a.start), fmt.Sprintf("%012.3f", b.start))
				})
				for i := 1; i < len(bs); i++ {
					require.LessOrEqual(t, bs[i-1].end, bs[i].start, "slot %s: %s and %s overlap", slot, bs[i-1].job, bs[i].job)
				}
			}

			// The page in a browser: no error, every bar drawn.
			bctx, errs := testbrowser.Open(t)
			require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("file://"+filepath.Join(out, "report.html")), chromedp.WaitVisible(chromedp.CSS("#gantt"))))
			drawn, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll('#gantt rect.bar')].filter(r => r.getBoundingClientRect().width > 0).length`))
			require.NoError(t, err)
			require.Equal(t, wantBars, drawn)
			png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			shot := filepath.Join(testbrowser.ArtifactDir(t, "experiment"), "report-"+scheduler+".png")
			require.NoError(t, os.WriteFile(shot, png, 0o644))
			t.Logf("screenshot: %s", shot)
			require.Empty(t, errs())
		})
	}
	t.Run("the guide's scheduler", func(t *testing.T) { guideExperiment(t, p, trace) })
}

// guideExperiment runs the guide's own scheduler (docs/write-a-scheduler.md, step 5): built,
// and run by the experiment as an external command with the environment schedkit.Main
// reads. It places every job once; no prediction is made for it, and the report says why.
func guideExperiment(t *testing.T, p *e2ePlatform, trace string) {
	scheduler := filepath.Join(t.TempDir(), "fairuser")
	build, err := exec.Command("go", "build", "-o", scheduler, "slotplane/examples/schedulers/fairuser").CombinedOutput()
	require.NoError(t, err, "%s", build)

	out := filepath.Join(t.TempDir(), "experiment-mine")
	var printed bytes.Buffer
	cmd := exec.Command(binary, "experiment", "-server", p.api.Server(), "-token", experimenterToken,
		"-trace", trace, "-name", "mine", "-out", out, "-timeout", "4m", "--", scheduler)
	cmd.Stdout, cmd.Stderr = &printed, &printed
	require.NoError(t, cmd.Run(), printed.String())
	t.Logf("\n%s", printed.String())
	require.Contains(t, printed.String(), "no prediction: an external scheduler's policy cannot be simulated")

	f, err := os.Open(filepath.Join(out, "runs.csv"))
	require.NoError(t, err)
	runs, err := experiment.ReadCSV(f)
	f.Close()
	require.NoError(t, err)
	require.Len(t, runs, 40)
	for _, r := range runs {
		require.Equal(t, experiment.OutcomeCompleted, r.Outcome, r.Job)
		require.Equal(t, 1, r.Attempt, r.Job)
	}
	require.NoFileExists(t, filepath.Join(out, "predicted.csv"))
	require.FileExists(t, filepath.Join(out, "report.html"))
	log, err := os.ReadFile(filepath.Join(out, "scheduler.log"))
	require.NoError(t, err)
	require.NotContains(t, string(log), "level=ERROR", "the scheduler's log")
	ss, err := p.api.ListSchedulings(context.Background())
	require.NoError(t, err)
	n := 0
	for _, s := range ss.Items {
		if strings.HasPrefix(s.Name, "mine-") {
			require.True(t, strings.HasPrefix(s.Name, "mine-slots-"), "the scheduler's Schedulings: %s", s.Name)
			require.Equal(t, v1alpha1.SlotBased, s.Mode)
			n++
		}
	}
	require.NotZero(t, n, "the scheduler made its Schedulings")
}

// bar is one bar of the Gantt chart.
type bar struct {
	job, slot  string
	start, end float64
}

// ganttBars reads the report's Gantt bars, keyed job/attempt/slot.
func ganttBars(t *testing.T, page []byte) map[string]bar {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	out := map[string]bar{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "rect" {
			a := map[string]string{}
			for _, at := range n.Attr {
				a[at.Key] = at.Val
			}
			if slices.Contains(strings.Fields(a["class"]), "bar") {
				start, err1 := strconv.ParseFloat(a["data-start"], 64)
				end, err2 := strconv.ParseFloat(a["data-end"], 64)
				require.NoError(t, err1)
				require.NoError(t, err2)
				key := a["data-batchjob"] + "/" + a["data-attempt"] + "/" + a["data-slot"]
				require.NotContains(t, out, key, "two bars for %s", key)
				out[key] = bar{job: a["data-batchjob"], slot: a["data-slot"], start: start, end: end}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// The burst trace (examples/traces/burst.csv, 54 jobs of minutes on the example queues)
// scaled to seconds, with the test bed's queues deciding (QueueBased) and with the FIFO
// example (SlotBased), beside each one's prediction: `make experiment-burst` runs it (about
// twelve minutes) and keeps the results; docs/benchmarks.md gives the figures. Each job is
// run once, or refused by its queue's ACL as the replay of the queues says.
func TestE2E_BurstExperimentAgainstItsPrediction(t *testing.T) {
	if os.Getenv("SLOTPLANE_BURST_EXPERIMENT") == "" {
		t.Skip("set SLOTPLANE_BURST_EXPERIMENT=1 (make experiment-burst) to run the burst trace on the platform")
	}
	queues, err := examples.Files.ReadFile("fair-scheduler.xml")
	require.NoError(t, err)
	settings, err := examples.Files.ReadFile("yarn-site.xml")
	require.NoError(t, err)
	p := startE2EFiles(t, defaultBed, string(queues), string(settings))
	trace, err := filepath.Abs("../examples/traces/burst.csv")
	require.NoError(t, err)
	keep := testbrowser.ArtifactDir(t, "experiment-burst")
	// The jobs the queues refuse (frank's, by an ACL), as the replay of the allocation file
	// says: fifo's prediction knows nothing of queues, but the live queues refuse them all
	// the same.
	alloc, err := queue.ParseConfig(queue.ConfigFiles{Allocations: queues, HasAllocations: true, Settings: settings, HasSettings: true})
	require.NoError(t, err)
	tf, err := os.Open(trace)
	require.NoError(t, err)
	traceJobs, err := tracefile.Parse(tf)
	tf.Close()
	require.NoError(t, err)
	replayed, err := replay.Run(alloc, traceJobs, replay.Options{Slots: 8, SlotSize: queue.Resources{MemoryBytes: 8 << 30, MilliCores: 2000}})
	require.NoError(t, err)
	aclRefused := map[string]bool{}
	for _, o := range replayed.Outcomes {
		if o.Refused != "" {
			aclRefused[o.Name] = true
		}
	}
	require.Len(t, aclRefused, 2, "frank's two jobs")
	for _, scheduler := range []string{"queues", "fifo"} {
		t.Run(scheduler, func(t *testing.T) {
			out := filepath.Join(keep, scheduler)
			require.NoError(t, os.RemoveAll(out))
			var printed bytes.Buffer
			cmd := exec.Command(binary, "experiment", "-server", p.api.Server(), "-token", experimenterToken,
				"-trace", trace, "-scale", "0.05", "-scheduler", scheduler, "-name", "burst-"+scheduler, "-out", out, "-timeout", "15m")
			cmd.Stdout, cmd.Stderr = &printed, &printed
			require.NoError(t, cmd.Run(), printed.String())
			t.Logf("burst with %s:\n%s", scheduler, printed.String())
			f, err := os.Open(filepath.Join(out, "runs.csv"))
			require.NoError(t, err)
			runs, err := experiment.ReadCSV(f)
			f.Close()
			require.NoError(t, err)
			f, err = os.Open(filepath.Join(out, "predicted.csv"))
			require.NoError(t, err)
			predicted, err := experiment.ReadCSV(f)
			f.Close()
			require.NoError(t, err)
			if scheduler == "queues" {
				for _, r := range predicted {
					require.Equal(t, aclRefused[r.Job], r.Outcome == experiment.OutcomeRefused, "the prediction of %s", r.Job)
				}
			}
			jobs := map[string]int{}
			for _, r := range runs {
				jobs[r.Job]++
				if r.Outcome == experiment.OutcomeRefused {
					require.True(t, aclRefused[r.Job], "%s was refused, and the replay of the queues runs it", r.Job)
					continue
				}
				require.NotEqual(t, experiment.NotReached, r.Ended, "%s never ended", r.Job)
			}
			require.Len(t, jobs, 54)
			p.waitSlotsFree(t, time.Minute)
		})
	}
}
