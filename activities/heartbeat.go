package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// HeartbeatEvery is how often a waiting activity says it is alive, whatever it waits for.
// Each heartbeat is a write of the workflow's state in the Temporal server, and every running
// job waits in one: at 200 running jobs, heartbeats once a second would be 200 writes a
// second, more than the embedded server's store keeps up with, and workflow tasks would
// take over 5 s. The workflows give the waits a heartbeat timeout of three of these
// (WaitHeartbeatTimeout); a worker that restarts on its host takes up its predecessor's
// waits at once (worker.RetryOrphans), so the timeout only bounds the loss of a worker's
// host.
const HeartbeatEvery = 10 * time.Second

// FinishedHeartbeatEvery is how often WaitFinished, the wait of a running job for its end,
// says it is alive. Every running job waits in one for as long as it runs, so its
// heartbeats grow with the running jobs: at 8,000 running, one every HeartbeatEvery would
// be 800 writes a second in the Temporal store, one every minute is 133. Its heartbeat
// timeout (workflows.FinishedHeartbeatTimeout, three of these) bounds only how late the end
// of a job whose wait was on a lost host is seen: its executors' slots are freed by the
// slot reconcile all the same, and the next job's wait is not held up.
const FinishedHeartbeatEvery = time.Minute

// heartbeatEvery and finishedHeartbeatEvery are HeartbeatEvery and FinishedHeartbeatEvery;
// a unit test shortens them.
var (
	heartbeatEvery         = HeartbeatEvery
	finishedHeartbeatEvery = FinishedHeartbeatEvery
)

// heartbeat sends a waiting activity's heartbeats, one every every from the wait's start:
// none at the start, so a wait that ends sooner (most placements) sends none.
type heartbeat struct {
	last  time.Time
	every time.Duration
}

// recordHeartbeat sends a heartbeat (the SDK then holds it back up to its throttle; a test
// counts what the waits send).
var recordHeartbeat = activity.RecordHeartbeat

// due sends one, with details, if every passed since the last (or the start).
func (h *heartbeat) due(ctx context.Context, details any) {
	if now := time.Now(); now.Sub(h.last) >= h.every {
		recordHeartbeat(ctx, details)
		h.last = now
	}
}

// next is how long until the next heartbeat is due.
func (h *heartbeat) next() time.Duration {
	return max(h.every-time.Since(h.last), time.Millisecond)
}

// pause waits until wake, d or the end of ctx, heartbeating (with details) meanwhile.
func pause(ctx context.Context, wake <-chan struct{}, d time.Duration, beat *heartbeat, details any) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		tick := time.NewTimer(beat.next())
		select {
		case <-ctx.Done():
			tick.Stop()
			return
		case <-wake:
			tick.Stop()
			return
		case <-timer.C:
			tick.Stop()
			return
		case <-tick.C:
			beat.due(ctx, details)
		}
	}
}
