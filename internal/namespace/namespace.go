// Package namespace sets up the Temporal namespace slotplane runs in: it registers the
// namespace with a retention, or brings an existing one's retention to what is asked, and
// checks that the namespace's visibility store answers the queries slotplane's bridge makes.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"time"

	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"slotplane/installation"
)

// DefaultRetention is how long closed workflow runs stay readable unless told otherwise: a
// week, for reading a finished Scheduling's history after a weekend.
const DefaultRetention = 7 * 24 * time.Hour

// Result says what Ensure found and did.
type Result struct {
	// Registered: the namespace did not exist and was made. Updated: its retention was
	// changed from Was.
	Registered, Updated bool
	Was                 time.Duration
	Retention           time.Duration
}

// Ensure makes the namespace exist with retention. Both steps are idempotent: a second run
// changes nothing. It returns once the namespace answers a describe, which a freshly
// registered one may take a moment to do.
func Ensure(ctx context.Context, nc client.NamespaceClient, name string, retention time.Duration) (Result, error) {
	if retention < 24*time.Hour {
		return Result{}, fmt.Errorf("a retention of %s: Temporal keeps closed runs for a day at least", retention)
	}
	r := Result{Retention: retention}
	desc, err := nc.Describe(ctx, name)
	if _, missing := errors.AsType[*serviceerror.NamespaceNotFound](err); missing {
		err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: name, Description: "slotplane's workflows",
			WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		if _, exists := errors.AsType[*serviceerror.NamespaceAlreadyExists](err); err != nil && !exists {
			return r, fmt.Errorf("register namespace %s: %w", name, err)
		}
		r.Registered = true
		return r, waitDescribed(ctx, nc, name)
	}
	if err != nil {
		return r, fmt.Errorf("describe namespace %s: %w", name, err)
	}
	r.Was = desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration()
	if r.Was == retention {
		return r, nil
	}
	err = nc.Update(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: name,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	})
	if err != nil {
		return r, fmt.Errorf("set the retention of namespace %s: %w", name, err)
	}
	r.Updated = true
	return r, nil
}

// waitDescribed waits until the namespace answers a describe.
func waitDescribed(ctx context.Context, nc client.NamespaceClient, name string) error {
	for {
		_, err := nc.Describe(ctx, name)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s does not answer: %w", name, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CheckVisibility runs, in the namespace c is a client of, the visibility query the bridge
// runs for the installation ids (the running workflows of a type on its task queue, under
// its id prefix), and fails with the store's answer when it cannot serve it.
// A namespace registered a moment ago is not found until the frontend's namespace cache
// refreshes (about 10 s): that answer is waited out.
func CheckVisibility(ctx context.Context, c client.Client, ids installation.Names) error {
	q := installation.RunningQuery(ids, "TestBedWorkflow")
	for {
		_, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 1})
		if err == nil {
			return nil
		}
		_, notYet := errors.AsType[*serviceerror.NamespaceNotFound](err)
		if !notYet {
			return fmt.Errorf("the namespace's visibility store does not answer %q, which the bridge asks: %w", q, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the namespace is not found by its frontend: %w", errors.Join(ctx.Err(), err))
		case <-time.After(500 * time.Millisecond):
		}
	}
}
