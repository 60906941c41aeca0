package temporalserver

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// recorder is a Temporal logger that notes which levels were called.
type recorder struct {
	tlog.Logger // the no-op logger for what is not noted
	calls       *[]string
}

func (r recorder) Error(msg string, _ ...tag.Tag) { *r.calls = append(*r.calls, "error "+msg) }
func (r recorder) Fatal(msg string, _ ...tag.Tag) { *r.calls = append(*r.calls, "fatal "+msg) }

func fatalUnderTest(building bool) (tlog.Logger, *[]string) {
	calls := &[]string{}
	b := &atomic.Bool{}
	b.Store(building)
	return fatalPanics{recorder{tlog.NewNoopLogger(), calls}, b}, calls
}

// While the server is made, Fatal logs an error and becomes an error of the start; derived
// loggers keep that.
func TestFatalPanics_WhileBuildingIsAnError(t *testing.T) {
	logger, calls := fatalUnderTest(true)
	logger = tlog.With(logger, tag.Address("127.0.0.1:1"))
	err := func() (err error) {
		defer recoverFatal(&err)
		logger.Fatal("Failed to start gRPC listener", tag.Error(errors.New("bind: address already in use")))
		return nil
	}()
	require.EqualError(t, err, "Failed to start gRPC listener; error: bind: address already in use")
	require.True(t, portTaken(err))
	require.Equal(t, []string{"error Failed to start gRPC listener"}, *calls)
}

// Once the server is made, Fatal is the logger's own again.
func TestFatalPanics_AfterBuildingIsTheLoggersOwn(t *testing.T) {
	logger, calls := fatalUnderTest(false)
	require.NotPanics(t, func() { tlog.With(logger, tag.Address("x")).Fatal("late") })
	require.Equal(t, []string{"fatal late"}, *calls)
}

// A panic that is not a Fatal goes on.
func TestRecoverFatal_OtherPanicsGoOn(t *testing.T) {
	require.PanicsWithValue(t, "boom", func() {
		var err error
		defer recoverFatal(&err)
		panic("boom")
	})
}
