package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"slotplane/apitypes"
)

// StatusError is a failed answer: its HTTP status and the API's error body (code,
// message, field errors). errors.As(err, &e) with e a *apitypes.Error finds the body.
type StatusError struct {
	// Status is the HTTP status code, such as 404 or 422.
	Status int
	// Method and Path are the request's, for messages (the path is under /api/v1).
	Method, Path string
	// API is the answer's body. An answer that was not the API's JSON (a proxy's page, say)
	// has an empty Code and the start of the body as its Message.
	API apitypes.Error
}

// Error is the API's message with the status and code, such as
// "scheduling x does not exist in namespace default (404 not_found)".
func (e *StatusError) Error() string {
	code := e.API.Code
	if code == "" {
		code = strings.ToLower(http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s (%d %s)", e.API.Message, e.Status, code)
}

// Unwrap gives errors.As the *apitypes.Error.
func (e *StatusError) Unwrap() error { return &e.API }

// statusError makes the error of a non-2xx answer from its body.
func statusError(method, path string, resp *http.Response, raw []byte) *StatusError {
	e := &StatusError{Status: resp.StatusCode, Method: method, Path: path}
	if json.Unmarshal(raw, &e.API) != nil || (e.API.Code == "" && e.API.Message == "") {
		e.API = apitypes.Error{Message: fmt.Sprintf("%s %s answered %s", method, path, resp.Status)}
		if s := snippet(raw); s != "" {
			e.API.Message += ": " + s
		}
	}
	return e
}

// StatusOf is the HTTP status of a failed answer, or 0 when err is no answer of the API
// (a connection that failed, say).
func StatusOf(err error) int {
	var e *StatusError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound: the object named does not exist (404).
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict: the object exists already, or changed since it was read (409).
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsInvalid: the request's fields break the API's rules (422); the *apitypes.Error's Fields say
// which.
func IsInvalid(err error) bool { return StatusOf(err) == http.StatusUnprocessableEntity }

// IsUnauthorized: no token, or one the API does not know (401).
func IsUnauthorized(err error) bool { return StatusOf(err) == http.StatusUnauthorized }

// IsForbidden: the caller may not do this (403).
func IsForbidden(err error) bool { return StatusOf(err) == http.StatusForbidden }
