// Package lease runs one replica of a component as the active one, the others standing by,
// through a coordination.k8s.io Lease. It adds a fence to client-go's leader election: the
// active replica knows, by its own clock, until when the lease is surely its own (Held), and
// a standby takes the lease over only after that moment, so two replicas never decide at
// once, even when the active one is partitioned or paused rather than dead.
package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Options name the Lease and pace the election. Zero durations take the defaults.
type Options struct {
	Namespace, Name string
	// Identity names this replica in the Lease (default: the host name and process id).
	Identity string
	// Duration is how long a lease lasts without a renewal (default 8 s): a standby takes over
	// this long after the active replica's last renewal. RenewDeadline is how long the active
	// replica tries to renew before it gives up (default 5 s), and Retry the pause between
	// tries (default 1 s).
	Duration, RenewDeadline, Retry time.Duration
}

// ErrLost is Run's error when the lease was lost while held: the caller should exit, as
// every component does that loses its lease, and start again as a standby.
var ErrLost = errors.New("the lease was lost")

// Elector campaigns for one Lease.
type Elector struct {
	config leaderelection.LeaderElectionConfig
	// until is when the lease stops being surely this replica's (nil: not held).
	until atomic.Pointer[time.Time]
}

// New makes an elector of the Lease o names, through cfg's API server.
func New(cfg *rest.Config, o Options) (*Elector, error) {
	if o.Namespace == "" || o.Name == "" {
		return nil, errors.New("lease: a namespace and a name are needed")
	}
	if o.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("lease identity: %w", err)
		}
		o.Identity = host + "_" + strconv.Itoa(os.Getpid())
	}
	if o.Duration == 0 {
		o.Duration = 8 * time.Second
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = 5 * time.Second
	}
	if o.Retry == 0 {
		o.Retry = time.Second
	}
	if o.Duration%time.Second != 0 || o.RenewDeadline >= o.Duration {
		return nil, fmt.Errorf("lease: a duration of whole seconds (%s) longer than the renew deadline (%s)", o.Duration, o.RenewDeadline)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("lease client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, o.Name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: o.Identity})
	if err != nil {
		return nil, fmt.Errorf("lease lock: %w", err)
	}
	e := &Elector{}
	e.config = leaderelection.LeaderElectionConfig{
		Lock: &fencedLock{Interface: lock, until: &e.until, margin: o.Duration / 10}, Name: o.Name,
		LeaseDuration: o.Duration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.Retry, ReleaseOnCancel: true,
	}
	return e, nil
}

// Identity is this replica's name in the Lease.
func (e *Elector) Identity() string { return e.config.Lock.Identity() }

// Held says whether the lease is this replica's now, by its own clock: from a successful
// renewal until that renewal's expiry, less a tenth for clocks that run at different rates.
// What only the active replica may do is done only while Held.
func (e *Elector) Held() bool {
	u := e.until.Load()
	return u != nil && time.Now().Before(*u)
}

// Run campaigns until ctx ends, and runs lead once the lease is held. lead's context ends
// when the lease is lost, or when ctx ends; Run then waits for lead to return before it
// gives the lease up, so a standby never takes over while lead still works. Run returns nil
// when ctx ended, lead's error if it failed, and ErrLost when the lease was lost.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	campaign, endCampaign := context.WithCancel(context.WithoutCancel(ctx))
	defer endCampaign()
	var leadErr error
	started := make(chan struct{})
	led := make(chan struct{})
	config := e.config
	config.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(held context.Context) {
			close(started)
			defer close(led)
			// lead stops on the first of: the lease lost (held ends), ctx ended.
			leadCtx, stop := context.WithCancel(held)
			defer stop()
			go func() {
				select {
				case <-ctx.Done():
				case <-leadCtx.Done():
				}
				stop()
			}()
			leadErr = lead(leadCtx)
			// Whatever ended lead ends the campaign: a replica leads once, and one that
			// lost the lease starts again as a standby.
			endCampaign()
		},
		OnStoppedLeading: func() { e.until.Store(nil) },
	}
	le, err := leaderelection.NewLeaderElector(config)
	if err != nil {
		return fmt.Errorf("lease %s: %w", config.Name, err)
	}
	go func() {
		// ctx's end reaches the campaign only through lead while the lease is held, so that
		// lead has stopped before the lease is given up.
		select {
		case <-ctx.Done():
			select {
			case <-started:
			default:
				endCampaign()
			}
		case <-campaign.Done():
		}
	}()
	le.Run(campaign)
	select {
	case <-started:
		<-led
	default:
		return nil
	}
	switch {
	case leadErr != nil:
		return leadErr
	case ctx.Err() != nil:
		return nil
	}
	return ErrLost
}

// fencedLock records, at each renewal of the lease by this replica, until when it holds it:
// the renewal's start plus the lease's duration, less margin. A standby counts the duration
// from when it saw the renewal, which is later, so it takes over only after the active
// replica stopped holding. Giving the lease up ends the hold before the write.
type fencedLock struct {
	resourcelock.Interface
	until  *atomic.Pointer[time.Time]
	margin time.Duration
}

func (l *fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Create)
}

func (l *fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Update)
}

func (l *fencedLock) write(ctx context.Context, r resourcelock.LeaderElectionRecord, w func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if r.HolderIdentity != l.Identity() {
		l.until.Store(nil)
		return w(ctx, r)
	}
	start := time.Now()
	if err := w(ctx, r); err != nil {
		return err
	}
	until := start.Add(time.Duration(r.LeaseDurationSeconds)*time.Second - l.margin)
	l.until.Store(&until)
	return nil
}
