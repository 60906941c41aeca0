//go:build linux

package threadcpu

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Of runs f on one OS thread and returns the CPU time the thread spent in it: the
// work f did, without the time the process waited for a core. ok is false where the clock
// cannot be read.
func Of(f func()) (took time.Duration, ok bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var from, to unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &from) != nil {
		f()
		return 0, false
	}
	f()
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &to) != nil {
		return 0, false
	}
	return time.Duration(to.Nano() - from.Nano()), true
}
