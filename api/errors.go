package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Error is every failed answer's body: a stable code a program can switch on, a message
// for people, and the request fields at fault, if any.
type Error struct {
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields,omitempty"`
	status  int
}

// FieldError names one field of the request and what is wrong with it. Field is a path
// into the request body (jobs[2].slotIDs) or a query parameter.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// The codes an answer can carry.
const (
	CodeBadRequest      = "bad_request"       // the body is not one JSON object of the right shape
	CodeInvalid         = "invalid"           // well formed, but fields break the rules (Fields says which)
	CodeUnauthorized    = "unauthorized"      // no token, or one nobody issued
	CodeForbidden       = "forbidden"         // the caller may not do this
	CodeNotFound        = "not_found"         // the object named in the path does not exist
	CodeConflict        = "conflict"          // it exists already, or changed since it was read
	CodeTooLarge        = "too_large"         // the body is over the limit
	CodeTooManyRequests = "too_many_requests" // a cap on connections or requests is reached (Retry-After says when to try again)
	CodeUnavailable     = "unavailable"       // Kubernetes or Temporal did not answer
	CodeInternal        = "internal"          // a fault of slotplane's
)

func invalid(fields ...FieldError) *Error {
	msg := "the request is invalid"
	if len(fields) == 1 {
		msg = fields[0].Field + ": " + fields[0].Message
	} else if len(fields) > 1 {
		msg = fmt.Sprintf("the request is invalid in %d fields; the first: %s: %s", len(fields), fields[0].Field, fields[0].Message)
	}
	return &Error{Code: CodeInvalid, Message: msg, Fields: fields, status: http.StatusUnprocessableEntity}
}

func notFound(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf(format, args...), status: http.StatusNotFound}
}

// fromKube turns a Kubernetes API error into an answer: its status mapped to ours, its
// message kept.
func fromKube(what string, err error) *Error {
	msg := what + ": " + err.Error()
	switch {
	case apierrors.IsNotFound(err):
		return &Error{Code: CodeNotFound, Message: msg, status: http.StatusNotFound}
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return &Error{Code: CodeConflict, Message: msg, status: http.StatusConflict}
	case apierrors.IsInvalid(err):
		var fields []FieldError
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				fields = append(fields, FieldError{Field: c.Field, Message: c.Message})
			}
		}
		return &Error{Code: CodeInvalid, Message: msg, Fields: fields, status: http.StatusUnprocessableEntity}
	case apierrors.IsForbidden(err):
		return &Error{Code: CodeForbidden, Message: msg, status: http.StatusForbidden}
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err):
		return &Error{Code: CodeUnavailable, Message: msg, status: http.StatusServiceUnavailable}
	}
	return &Error{Code: CodeInternal, Message: msg, status: http.StatusInternalServerError}
}

// fail ends the request with e (any other error is an internal one).
func fail(c *gin.Context, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeInternal, Message: err.Error(), status: http.StatusInternalServerError}
	}
	c.AbortWithStatusJSON(e.status, e)
}
