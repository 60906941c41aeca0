//go:build integration

package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cpuUse is a sample of the CPU time this machine has spent: all of it, and each running
// process's (by pid, with its command name). On a machine the platform saturates, a run's
// rate follows its CPU per job, and CPU per job moves far less from run to run than the
// rate does: it is the figure to compare two trees by.
type cpuUse struct {
	at       time.Time
	busy     time.Duration // the machine's, all cores: user, nice, system, irq, softirq, steal
	procs    map[int]procCPU
	children time.Duration // this process's reaped children (a killed worker's time ends here)
}

type procCPU struct {
	comm string
	// start is when the process started, in clock ticks since boot: with the pid, what tells
	// one process from a later one given the same pid. The name does not: kernel worker
	// threads rename themselves after the work they do.
	start int64
	used  time.Duration // user and system
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// machineBusy is the CPU time the machine has spent, all cores (the busy of cpuUse, read
// alone: a bench takes it around what it measures, and must not load the machine for it).
func machineBusy() (time.Duration, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat starts %q", line)
	}
	var busy time.Duration
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += time.Duration(n) * clockTick
	}
	return busy, nil
}

// sampleCPU reads /proc; a process that ends while it reads is skipped.
func sampleCPU() (cpuUse, error) {
	u := cpuUse{at: time.Now(), procs: map[int]procCPU{}}
	var err error
	if u.busy, err = machineBusy(); err != nil {
		return u, err
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, fields, ok := procStat(d)
		if !ok {
			continue
		}
		start, _ := strconv.ParseInt(fields[19], 10, 64)
		u.procs[pid] = procCPU{comm: comm, start: start, used: ticks(fields[11]) + ticks(fields[12])}
		if pid == self {
			u.children = ticks(fields[13]) + ticks(fields[14])
		}
	}
	return u, nil
}

// procStat is a process's command name and the fields of its stat after the name (the
// third field of stat is fields[0]).
func procStat(dir string) (string, []string, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return "", nil, false
	}
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", nil, false
	}
	fields := strings.Fields(string(raw[end+1:]))
	if len(fields) < 20 {
		return "", nil, false
	}
	return string(raw[open+1 : end]), fields, true
}

// cpuByComm is the CPU time spent between two samples by command name (the name at the
// second), with "(reaped)" for this process's children that ended meanwhile. A process
// that started meanwhile counts whole; one that kept its pid counts what it spent since the
// first sample, even if it renamed itself.
func cpuByComm(from, to cpuUse) map[string]time.Duration {
	byComm := map[string]time.Duration{}
	for pid, p := range to.procs {
		byComm[p.comm] += to.spentSince(from, pid)
	}
	byComm["(reaped)"] = to.children - from.children
	return byComm
}

// spentSince is the CPU time process pid of u spent since the sample from: all of it when it
// started meanwhile (a new process, or its pid given to another).
func (u cpuUse) spentSince(from cpuUse, pid int) time.Duration {
	p := u.procs[pid]
	if was, ok := from.procs[pid]; ok && was.start == p.start {
		return p.used - was.used
	}
	return p.used
}

func ticks(s string) time.Duration {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Duration(n) * clockTick
}

// logCPUPerJob prints the CPU time spent between two samples per job: the machine's, and
// by command name the processes that ran at the end (a process that started meanwhile
// counts whole), the most first; "(reaped)" is the time of this process's children that
// ended meanwhile, the killed workers.
func logCPUPerJob(t testing.TB, what string, from, to cpuUse, jobs int) {
	t.Helper()
	if jobs == 0 {
		return
	}
	per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(jobs) }
	byComm := cpuByComm(from, to)
	comms := make([]string, 0, len(byComm))
	for c, d := range byComm {
		if d >= 100*time.Millisecond {
			comms = append(comms, c)
		}
	}
	slices.SortFunc(comms, func(a, b string) int { return cmp.Compare(byComm[b], byComm[a]) })
	elapsed := to.at.Sub(from.at)
	t.Logf("CPU per job, %s: %.0f ms on the whole machine (%.2f cores busy over %s)", what, per(to.busy-from.busy),
		(to.busy-from.busy).Seconds()/elapsed.Seconds(), elapsed.Round(time.Second))
	for _, c := range comms {
		t.Logf("  %-16s %6.1f ms", c, per(byComm[c]))
	}
}

func TestCPUByComm_FollowsAProcessThatRenamedItself(t *testing.T) {
	from := cpuUse{procs: map[int]procCPU{
		7:  {comm: "kworker/0:1-events", start: 12, used: 40 * time.Second},
		9:  {comm: "etcd", start: 500, used: 3 * time.Second},
		11: {comm: "old", start: 600, used: 5 * time.Second},
	}, children: time.Second}
	to := cpuUse{procs: map[int]procCPU{
		7:  {comm: "kworker/0:1-mm_percpu_wq", start: 12, used: 40*time.Second + 30*time.Millisecond},
		9:  {comm: "etcd", start: 500, used: 4 * time.Second},
		11: {comm: "new", start: 900, used: 200 * time.Millisecond}, // the pid went to another process
	}, children: 3 * time.Second}
	got := cpuByComm(from, to)
	require.Equal(t, map[string]time.Duration{
		"kworker/0:1-mm_percpu_wq": 30 * time.Millisecond,
		"etcd":                     time.Second,
		"new":                      200 * time.Millisecond,
		"(reaped)":                 2 * time.Second,
	}, got)

	here, err := sampleCPU()
	require.NoError(t, err)
	self := here.procs[os.Getpid()]
	require.Positive(t, self.start, "this process's start time is read from its stat")
}

// schedTimes are a process's threads' time on a core and time runnable but waiting for
// one (the kernel's schedstat, in ns), summed over the threads it has at the reading: a
// thread that ended meanwhile takes its times with it.
type schedTimes struct {
	onCPU, waited time.Duration
}

// readSchedTimes sums /proc/<pid>/task/*/schedstat.
func readSchedTimes(pid int) (schedTimes, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return schedTimes{}, fmt.Errorf("no threads of process %d: %v", pid, err)
	}
	var s schedTimes
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(raw))
		if len(fields) < 2 {
			return s, fmt.Errorf("%s: %q", f, raw)
		}
		on, err1 := strconv.ParseInt(fields[0], 10, 64)
		waited, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return s, fmt.Errorf("%s: %q", f, raw)
		}
		s.onCPU += time.Duration(on)
		s.waited += time.Duration(waited)
	}
	return s, nil
}

// cpuPressure is the time some task of the machine was runnable and waited for a core,
// since boot (/proc/pressure/cpu, "some"): over a window, against the window, the share of
// the time the cores were short.
func cpuPressure() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/pressure/cpu has no total of \"some\": %q", raw)
}

// niceness is process pid's nice value (the 19th field of its stat).
func niceness(t *testing.T, pid int) int {
	_, fields, ok := procStat(fmt.Sprintf("/proc/%d", pid))
	require.True(t, ok, "the stat of process %d", pid)
	n, err := strconv.Atoi(fields[16])
	require.NoError(t, err, "the nice value of process %d", pid)
	return n
}

func TestReadSchedTimes_CountsThisProcessOnACore(t *testing.T) {
	used := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, err := readSchedTimes(os.Getpid())
	require.NoError(t, err)
	from := used()
	for used()-from < 100*time.Millisecond {
	}
	spent := used() - from
	after, err := readSchedTimes(os.Getpid())
	require.NoError(t, err)
	require.InDelta(t, spent.Seconds(), (after.onCPU - before.onCPU).Seconds(), spent.Seconds()/2,
		"the threads' time on a core follows the process's CPU time")
	require.GreaterOrEqual(t, after.waited, before.waited)

	require.Equal(t, 0, niceness(t, os.Getpid()))
	nice := exec.Command("nice", "-n", "5", "sleep", "10")
	require.NoError(t, nice.Start())
	t.Cleanup(func() { _ = nice.Process.Kill(); _ = nice.Wait() })
	require.Eventually(t, func() bool { return niceness(t, nice.Process.Pid) == 5 }, 5*time.Second, 10*time.Millisecond,
		"a process started by nice -n 5 runs at 5")

	_, err = readSchedTimes(1 << 30)
	require.Error(t, err, "no such process")
	if _, err := os.Stat("/proc/pressure/cpu"); err == nil {
		_, err := cpuPressure()
		require.NoError(t, err)
	}
}
