package schedkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"slotplane/apiclient"
	"slotplane/apitypes"
)

// ExperimentLabel marks the BatchJobs of one experiment (`slotplane experiment`): its
// value is the experiment's name. A scheduler the experiment runs places only those.
const ExperimentLabel = "slotplane-experiment"

// The environment an external scheduler is started with, by `slotplane experiment` or by
// hand.
const (
	EnvServer     = "SLOTPLANE_SERVER"     // the API, http://host:port
	EnvToken      = "SLOTPLANE_TOKEN"      // its bearer token
	EnvNamespace  = "SLOTPLANE_NAMESPACE"  // the namespace of the jobs and the test bed (empty: the API's default)
	EnvTestBed    = "SLOTPLANE_TESTBED"    // the test bed (default "bed")
	EnvExperiment = "SLOTPLANE_EXPERIMENT" // the experiment: only its jobs are placed, and its name starts the Schedulings'
	EnvName       = "SLOTPLANE_SCHEDULER"  // without an experiment, what starts the Schedulings' names (default "scheduler")
)

// FromEnv makes Options from the environment above: a client of the API, the test bed, the
// Schedulings' names, and, in an experiment, the selection of its jobs.
func FromEnv() (Options, error) {
	server, token := os.Getenv(EnvServer), os.Getenv(EnvToken)
	if server == "" || token == "" {
		return Options{}, fmt.Errorf("schedkit: %s and %s must name the API and its token", EnvServer, EnvToken)
	}
	c, err := apiclient.New(server, token, apiclient.WithNamespace(os.Getenv(EnvNamespace)))
	if err != nil {
		return Options{}, err
	}
	o := Options{Client: c, TestBed: os.Getenv(EnvTestBed), Name: os.Getenv(EnvName)}
	if o.TestBed == "" {
		o.TestBed = "bed"
	}
	if exp := os.Getenv(EnvExperiment); exp != "" {
		o.Name = exp
		o.Select = func(j apitypes.Job) bool { return j.Labels[ExperimentLabel] == exp }
	}
	if o.Name == "" {
		o.Name = "scheduler"
	}
	return o, nil
}

// Main runs s with the Options of the environment until the process is interrupted or
// terminated, and exits: the whole main function of an external scheduler.
func Main(s Scheduler) {
	o, err := FromEnv()
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = Run(ctx, s, o)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		slog.Error("the scheduler stopped", "err", err)
		os.Exit(1)
	}
}
