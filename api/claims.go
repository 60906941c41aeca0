package api

import (
	"context"
	"fmt"
	"net/http"

	"slotplane/apitypes"
)

// mayClaim refuses (403) a Scheduling that would run another user's job unless the caller
// may submit for that user: running a job runs it as its user, for the queue ACLs and the
// user limits, so claiming it takes the same right as creating it for them (impersonate on
// users, runAs). A job without a user, or the caller's own, needs nothing more.
func (s *server) mayClaim(ctx context.Context, caller apitypes.User, field string, i int, job, owner string) *apitypes.Error {
	if owner == "" || owner == caller.Name {
		return nil
	}
	a := Action{Group: "", Verb: "impersonate", Resource: "users", Name: owner}
	ok, reason, err := s.Authorizer.Authorize(ctx, caller, a)
	if err != nil {
		return &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), Status: http.StatusServiceUnavailable}
	}
	if ok {
		return nil
	}
	msg := fmt.Sprintf("%s may not run batch job %s of user %s, which takes impersonate on users %s", caller.Name, job, owner, owner)
	if reason != "" {
		msg += ": " + reason
	}
	return &apitypes.Error{Code: apitypes.CodeForbidden, Message: msg, Fields: []apitypes.FieldError{{Field: fmt.Sprintf("%s[%d].name", field, i), Message: "not allowed for " + caller.Name}}, Status: http.StatusForbidden}
}

// schedulingUser is whom a new Scheduling runs as (spec.user and groups): its caller, or no
// one in particular (it may claim any job) when the caller may submit for anyone, having
// been checked here for each job it names. With -auth tokens the cluster does not know the
// token file's users, and the worker asks the cluster: a Scheduling of a token user then
// runs that user's jobs and those the cluster lets it submit for, so only act-as=* tokens
// run other users' jobs.
func (s *server) schedulingUser(ctx context.Context, caller apitypes.User) (apitypes.User, error) {
	a := Action{Group: "", Verb: "impersonate", Resource: "users"} // no name: every user
	ok, _, err := s.Authorizer.Authorize(ctx, caller, a)
	if err != nil {
		return apitypes.User{}, &apitypes.Error{Code: apitypes.CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), Status: http.StatusServiceUnavailable}
	}
	if ok {
		return apitypes.User{}, nil
	}
	return apitypes.User{Name: caller.Name, Groups: caller.Groups}, nil
}
