//go:build integration

package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"slotplane/internal/localplatform/localcluster"
)

// One of two replicas holds the lease and leads; the other stands by, and takes over once
// the first gives the lease up (at once) or dies without a word (after the lease's
// duration). The two never hold it at the same moment.
func TestElector_OneLeadsTheOtherTakesOver(t *testing.T) {
	c := localcluster.New(t, localcluster.Options{})
	o := Options{Namespace: "default", Name: "test", Duration: 3 * time.Second, RenewDeadline: 2 * time.Second, Retry: 200 * time.Millisecond}
	var holding atomic.Int32
	var overlap atomic.Bool
	cuts := map[string]*cuttable{}
	start := func(id string) (*Elector, context.CancelFunc, chan error) {
		o.Identity = id
		e, err := New(c.Config, o)
		require.NoError(t, err)
		f := e.config.Lock.(*fencedLock)
		cuts[id] = &cuttable{Interface: f.Interface}
		f.Interface = cuts[id]
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context) error {
				for ctx.Err() == nil {
					if e.Held() {
						if holding.Add(1) > 1 {
							overlap.Store(true)
						}
						time.Sleep(10 * time.Millisecond)
						holding.Add(-1)
					} else {
						time.Sleep(10 * time.Millisecond)
					}
				}
				return nil
			})
		}()
		return e, cancel, done
	}
	a, stopA, doneA := start("a")
	require.Eventually(t, a.Held, 10*time.Second, 50*time.Millisecond, "a never held the lease")
	b, stopB, doneB := start("b")
	time.Sleep(2 * o.Duration) // b waits as long as a renews
	require.False(t, b.Held(), "b holds a lease a renews")

	// A clean stop gives the lease up: b takes over within a few retries.
	gone := time.Now()
	stopA()
	require.NoError(t, <-doneA)
	require.False(t, a.Held())
	require.Eventually(t, b.Held, 5*time.Second, 20*time.Millisecond, "b never took over")
	t.Logf("taken over %s after a clean stop", time.Since(gone).Round(10*time.Millisecond))

	// A replica that stops renewing without giving the lease up (killed) holds it no more
	// once its duration passes; another one takes over only then.
	lease, err := c.Client().CoordinationV1().Leases("default").Get(context.Background(), "test", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "b", *lease.Spec.HolderIdentity)
	cuts["b"].cut.Store(true)
	stalledAt := time.Now()
	_, stopC, doneC := start("c")
	c2 := func() bool {
		l, err := c.Client().CoordinationV1().Leases("default").Get(context.Background(), "test", metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == "c"
	}
	require.Eventually(t, c2, 3*o.Duration, 20*time.Millisecond, "c never took over")
	require.GreaterOrEqual(t, time.Since(stalledAt), o.Duration-o.Duration/10-o.Retry, "c took over before b's lease ran out")
	require.False(t, b.Held(), "b still holds a lease c took")
	require.ErrorIs(t, <-doneB, ErrLost)
	stopB()
	stopC()
	require.NoError(t, <-doneC)
	require.False(t, overlap.Load(), "two replicas held the lease at once")
}

// cuttable is a lock whose writes stop reaching the API server once cut, as for a replica
// cut off from it: its renewals fail.
type cuttable struct {
	resourcelock.Interface
	cut atomic.Bool
}

func (c *cuttable) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if c.cut.Load() {
		return context.DeadlineExceeded
	}
	return c.Interface.Update(ctx, r)
}
