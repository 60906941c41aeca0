package activities

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// Error types of non-retryable activity failures, which workflows branch on.
const (
	// ErrInvalidJob: the job cannot make an application; a person must fix the BatchJob.
	ErrInvalidJob = "InvalidJob"
)

func nonRetryable(kind, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), kind, nil)
}

// IsNotHeld reports whether an activity error says the Scheduling lost its job.
func IsNotHeld(err error) bool { return hasErrorType(err, ErrNotHeld) }

// IsSlotsGone says whether err is ErrSlotsGone.
func IsSlotsGone(err error) bool { return hasErrorType(err, ErrSlotsGone) }

// hasErrorType says whether err is an application error of type t.
func hasErrorType(err error, t string) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == t
}
