//go:build integration

package e2e

import (
	"crypto/sha256"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"slotplane/internal/threadcpu"
)

// The machine's speed moves from hour to hour (its host's other load on the shared
// cores): the same work takes more CPU time in a slow hour, and every process's CPU per job
// rises with it. A probe that runs long after the one it is compared to must tell that from
// a cost of its own. workCost measures it: the CPU time, on one thread, of a fixed piece of
// work (hashing 20 MiB). Two work costs give the ratio of the machine's speeds; hashing
// costs the same CPU time with every core busy (the test below), so it can be taken in the
// window it speaks for. Reading memory far apart would measure the caches as well, but that
// figure moves with where the pages land and with what else runs, by as much as the speed
// it is meant to measure.

var hashed = make([]byte, 1<<20)

// workCost is the thread CPU time of the fixed work; ok is false where the clock cannot be
// read.
func workCost() (time.Duration, bool) {
	return threadcpu.Of(func() {
		for range 20 {
			sha256.Sum256(hashed)
		}
	})
}

// medianWorkCost is the median of n workCosts (0 where the clock cannot be read).
func medianWorkCost(n int) time.Duration {
	var costs []time.Duration
	for range n {
		if c, ok := workCost(); ok {
			costs = append(costs, c)
		}
	}
	return median(costs)
}

func median(costs []time.Duration) time.Duration {
	if len(costs) == 0 {
		return 0
	}
	slices.Sort(costs)
	return costs[len(costs)/2]
}

// gaugeSpeed takes a workCost every interval until the returned function is called, which
// returns their median (0 where the clock cannot be read).
func gaugeSpeed(interval time.Duration) (stop func() time.Duration) {
	quit, done := make(chan struct{}), make(chan time.Duration)
	go func() {
		var costs []time.Duration
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if c, ok := workCost(); ok {
				costs = append(costs, c)
			}
			select {
			case <-quit:
				done <- median(costs)
				return
			case <-tick.C:
			}
		}
	}()
	return func() time.Duration {
		close(quit)
		return <-done
	}
}

// workCost measures work, not waiting: its cost on an idle machine and on one whose every
// core another goroutine keeps busy stays within a factor of two, where the wall time of
// the same work would double.
func TestWorkCost_MeasuresTheWorkNotTheWait(t *testing.T) {
	idle := medianWorkCost(9)
	if idle == 0 {
		t.Skip("no thread CPU clock here")
	}
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					sha256.Sum256(hashed[:4096])
				}
			}
		})
	}
	loaded := medianWorkCost(9)
	close(stop)
	busy.Wait()
	t.Logf("work cost: %s idle, %s with every core busy", idle, loaded)
	if loaded > 2*idle || loaded < idle/2 {
		t.Fatalf("work cost %s with every core busy against %s idle: it measures waiting", loaded, idle)
	}
}
