//go:build !linux

package workflows

import "time"

// onThreadCPU runs f; this platform does not tell a thread's CPU time.
func onThreadCPU(f func()) (time.Duration, bool) {
	f()
	return 0, false
}
