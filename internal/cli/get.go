package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"slotplane/apiclient"
	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
	"slotplane/internal/cli/render"
)

// Query is what Get shows: a kind, perhaps one object of it, and for jobs a filter.
type Query struct {
	// What is the kind to show, as the user wrote it: jobs, schedulings, beds, slots or queues,
	// in any case, singular or plural, or a short form (bj, sched).
	What string
	// Name is one job or Scheduling to show; for slots and queues, the test bed, which
	// then wins over TestBed.
	Name string
	// TestBed is the test bed of slots and queues.
	TestBed string
	// Jobs narrows a list of jobs; set for another kind, it is a mistake.
	Jobs apiclient.JobFilter
}

// The words get takes for each kind.
var (
	jobWords        = []string{"jobs", "job", "batchjobs", "batchjob", "bj"}
	schedulingWords = []string{"schedulings", "scheduling", "sched"}
	slotWords       = []string{"slots", "slot"}
	bedWords        = []string{"beds", "bed", "testbeds", "testbed", "tb"}
	queueWords      = []string{"queues", "queue"}
)

// fetchFunc fetches what get shows: the API's answer, for -o json, and how to print it as a
// table.
type fetchFunc func() (answer any, table func(io.Writer) error, err error)

// Get prints jobs, Schedulings, a test bed's slots or its queues as a table, or as the
// API's JSON answer with asJSON.
func Get(ctx context.Context, conn Connection, q Query, asJSON bool, out io.Writer) error {
	kind := strings.ToLower(q.What)
	isJobs := slices.Contains(jobWords, kind)
	if !isJobs && q.Jobs != (apiclient.JobFilter{}) {
		return errors.New("-state, -queue and -scheduling filter get jobs only")
	}
	c, err := conn.Client()
	if err != nil {
		return err
	}
	fetch, err := q.fetch(ctx, c, kind)
	if err != nil {
		return err
	}
	answer, table, err := fetch()
	if err != nil {
		return explain(err, c.Server())
	}
	if asJSON {
		raw, err := json.MarshalIndent(answer, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", raw)
		return err
	}
	return table(out)
}

// fetch picks what to ask the API for the kind (lowered already); an unknown kind is the
// user's mistake.
func (q Query) fetch(ctx context.Context, c *apiclient.Client, kind string) (fetchFunc, error) {
	bed := cmp.Or(q.Name, q.TestBed)
	switch {
	case slices.Contains(jobWords, kind):
		return func() (any, func(io.Writer) error, error) { return getJobs(ctx, c, q.Name, q.Jobs) }, nil
	case slices.Contains(schedulingWords, kind):
		return func() (any, func(io.Writer) error, error) { return getSchedulings(ctx, c, q.Name) }, nil
	case slices.Contains(bedWords, kind):
		return func() (any, func(io.Writer) error, error) { return getBeds(ctx, c, q.Name) }, nil
	case slices.Contains(slotWords, kind):
		return func() (any, func(io.Writer) error, error) { return getSlots(ctx, c, bed) }, nil
	case slices.Contains(queueWords, kind):
		return func() (any, func(io.Writer) error, error) { return getQueues(ctx, c, bed) }, nil
	}
	return nil, fmt.Errorf("cannot get %q: want jobs, schedulings, beds, slots or queues", q.What)
}

// getJobs fetches one job, or the jobs the filter lets through.
func getJobs(ctx context.Context, c *apiclient.Client, name string, f apiclient.JobFilter) (any, func(io.Writer) error, error) {
	if name != "" {
		j, err := c.GetJob(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		return j, func(out io.Writer) error { return render.Jobs(out, []apitypes.Job{j}) }, nil
	}
	l, err := c.ListJobs(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	return l, func(out io.Writer) error { return render.Jobs(out, l.Items) }, nil
}

// getSchedulings fetches one Scheduling, or all of the namespace.
func getSchedulings(ctx context.Context, c *apiclient.Client, name string) (any, func(io.Writer) error, error) {
	if name != "" {
		s, err := c.GetScheduling(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		return s, func(out io.Writer) error { return render.Schedulings(out, []apitypes.Scheduling{s}) }, nil
	}
	l, err := c.ListSchedulings(ctx)
	if err != nil {
		return nil, nil, err
	}
	return l, func(out io.Writer) error { return render.Schedulings(out, l.Items) }, nil
}

// getBeds fetches one test bed (its counts, not its slots: get slots shows them), or all of
// the namespace's.
func getBeds(ctx context.Context, c *apiclient.Client, name string) (any, func(io.Writer) error, error) {
	if name != "" {
		tb, err := c.GetTestBed(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		tb.Status.Slots = nil
		return tb, func(out io.Writer) error { return render.TestBeds(out, []apitypes.TestBed{tb}) }, nil
	}
	l, err := c.ListTestBeds(ctx)
	if err != nil {
		return nil, nil, err
	}
	return l, func(out io.Writer) error { return render.TestBeds(out, l.Items) }, nil
}

// getSlots fetches a test bed's slots, each with the job whose pod holds it. The API names
// a slot's pod, not its job: the job is the one running in the bed that was given the
// slot.
func getSlots(ctx context.Context, c *apiclient.Client, bed string) (any, func(io.Writer) error, error) {
	tb, err := c.GetTestBed(ctx, bed)
	if err != nil {
		return nil, nil, err
	}
	holders, err := slotHolders(ctx, c, bed)
	if err != nil {
		return nil, nil, err
	}
	return tb, func(out io.Writer) error { return render.Slots(out, tb, holders) }, nil
}

// slotHolders maps slot positions of the bed to the jobs that were given them and have not
// ended. A user who may not list jobs or Schedulings gets the slots without jobs.
func slotHolders(ctx context.Context, c *apiclient.Client, bed string) (map[int32]string, error) {
	holder := map[int32]string{}
	jobs, err := c.ListJobs(ctx, apiclient.JobFilter{})
	if apiclient.IsForbidden(err) {
		return holder, nil
	} else if err != nil {
		return nil, err
	}
	bedOf := map[string]string{} // Scheduling -> its test bed, for jobs whose status names none
	if scheds, err := c.ListSchedulings(ctx); err == nil {
		for _, s := range scheds.Items {
			bedOf[s.Name] = s.TestBed
		}
	} else if !apiclient.IsForbidden(err) {
		return nil, err
	}
	for _, j := range jobs.Items {
		if j.Status.State != v1alpha1.JobSubmitted && j.Status.State != v1alpha1.JobRunning {
			continue
		}
		b := j.Status.TestBed
		if b == "" {
			b = bedOf[cmp.Or(j.Status.Scheduling, j.Scheduling)]
		}
		if b != bed {
			continue
		}
		for _, id := range j.Status.Slots {
			holder[id] = j.Name
		}
	}
	return holder, nil
}

// getQueues fetches a test bed's queues with the jobs waiting and running in them. The API
// reports no queue weights; the steady fair share is what they come to.
func getQueues(ctx context.Context, c *apiclient.Client, bed string) (any, func(io.Writer) error, error) {
	t, err := c.Queues(ctx, bed)
	if err != nil {
		return nil, nil, err
	}
	return t, func(out io.Writer) error { return render.Queues(out, t) }, nil
}
