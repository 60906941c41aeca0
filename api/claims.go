package api

import (
	"context"
	"fmt"
	"net/http"
)

// mayClaim refuses (403) a Scheduling that would run another user's job unless the caller
// may submit for that user: running a job runs it as its user, for the queue ACLs and the
// user limits, so claiming it takes the same right as creating it for them (impersonate on
// users, runAs). A job without a user, or the caller's own, needs nothing more.
func (s *server) mayClaim(ctx context.Context, caller User, field string, i int, job, owner string) *Error {
	if owner == "" || owner == caller.Name {
		return nil
	}
	a := Action{Group: "", Verb: "impersonate", Resource: "users", Name: owner}
	ok, reason, err := s.Authorizer.Authorize(ctx, caller, a)
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: "could not check the permission to " + a.String() + ": " + err.Error(), status: http.StatusServiceUnavailable}
	}
	if ok {
		return nil
	}
	msg := fmt.Sprintf("%s may not run batch job %s of user %s, which takes impersonate on users %s", caller.Name, job, owner, owner)
	if reason != "" {
		msg += ": " + reason
	}
	return &Error{Code: CodeForbidden, Message: msg, Fields: []FieldError{{Field: fmt.Sprintf("%s[%d].name", field, i), Message: "not allowed for " + caller.Name}}, status: http.StatusForbidden}
}
