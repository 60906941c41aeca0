package temporalserver

import (
	"fmt"
	"strings"
	"sync/atomic"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// fatalPanics is the server's logger with Fatal turned into a panic while the server is
// being made (while building is set). The server reports some failures of its making only
// through its logger's Fatal: a gRPC port that cannot be bound is one. Temporal's own
// logger then exits the process (slotplane dev, a test binary), and a logger that does
// nothing lets the server go on with no listener until it dereferences nil. As a panic on
// the goroutine that makes the server, startOn recovers the failure, reports it as an
// error, and other ports can be tried. Once the server is made, Fatal is the logger's own,
// as before.
type fatalPanics struct {
	tlog.Logger
	building *atomic.Bool
}

// fatalLog is what fatalPanics' Fatal panics with.
type fatalLog struct {
	msg  string
	tags []tag.Tag
}

func (f fatalLog) Error() string {
	var b strings.Builder
	b.WriteString(f.msg)
	for _, t := range f.tags {
		fmt.Fprintf(&b, "; %s: %v", t.Key(), t.Value())
	}
	return b.String()
}

func (l fatalPanics) Fatal(msg string, tags ...tag.Tag) {
	logger := l.Logger
	if s, ok := logger.(tlog.SkipLogger); ok {
		logger = s.Skip(1) // name Fatal's caller, not this method
	}
	if !l.building.Load() {
		logger.Fatal(msg, tags...)
		return
	}
	logger.Error(msg, tags...)
	panic(fatalLog{msg: msg, tags: tags})
}

// With keeps the wrapper on the loggers the server derives with tags.
func (l fatalPanics) With(tags ...tag.Tag) tlog.Logger {
	return fatalPanics{tlog.With(l.Logger, tags...), l.building}
}

// Skip keeps the wrapper on the loggers the server derives to name other callers.
func (l fatalPanics) Skip(extra int) tlog.Logger {
	if s, ok := l.Logger.(tlog.SkipLogger); ok {
		return fatalPanics{s.Skip(extra), l.building}
	}
	return l
}

// recoverFatal turns a fatalLog panic into *err; any other panic goes on.
func recoverFatal(err *error) {
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(fatalLog)
	if !ok {
		panic(r)
	}
	*err = f
}
