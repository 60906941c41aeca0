package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"slotplane/apitypes"
)

func invalid(fields ...apitypes.FieldError) *apitypes.Error {
	msg := "the request is invalid"
	if len(fields) == 1 {
		msg = fields[0].Field + ": " + fields[0].Message
	} else if len(fields) > 1 {
		msg = fmt.Sprintf("the request is invalid in %d fields; the first: %s: %s", len(fields), fields[0].Field, fields[0].Message)
	}
	return &apitypes.Error{Code: apitypes.CodeInvalid, Message: msg, Fields: fields, Status: http.StatusUnprocessableEntity}
}

func notFound(format string, args ...any) *apitypes.Error {
	return &apitypes.Error{Code: apitypes.CodeNotFound, Message: fmt.Sprintf(format, args...), Status: http.StatusNotFound}
}

// fromKube turns a Kubernetes API error into an answer: its status mapped to ours, its
// message kept.
func fromKube(what string, err error) *apitypes.Error {
	msg := what + ": " + err.Error()
	switch {
	case apierrors.IsNotFound(err):
		return &apitypes.Error{Code: apitypes.CodeNotFound, Message: msg, Status: http.StatusNotFound}
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return &apitypes.Error{Code: apitypes.CodeConflict, Message: msg, Status: http.StatusConflict}
	case apierrors.IsInvalid(err):
		var fields []apitypes.FieldError
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil {
			for _, c := range status.Status().Details.Causes {
				fields = append(fields, apitypes.FieldError{Field: c.Field, Message: c.Message})
			}
		}
		return &apitypes.Error{Code: apitypes.CodeInvalid, Message: msg, Fields: fields, Status: http.StatusUnprocessableEntity}
	case apierrors.IsForbidden(err):
		return &apitypes.Error{Code: apitypes.CodeForbidden, Message: msg, Status: http.StatusForbidden}
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err):
		return &apitypes.Error{Code: apitypes.CodeUnavailable, Message: msg, Status: http.StatusServiceUnavailable}
	}
	return &apitypes.Error{Code: apitypes.CodeInternal, Message: msg, Status: http.StatusInternalServerError}
}

// fail ends the request with e (any other error is an internal one).
func fail(c *gin.Context, err error) {
	var e *apitypes.Error
	if !errors.As(err, &e) {
		e = &apitypes.Error{Code: apitypes.CodeInternal, Message: err.Error(), Status: http.StatusInternalServerError}
	}
	c.AbortWithStatusJSON(e.Status, e)
}
