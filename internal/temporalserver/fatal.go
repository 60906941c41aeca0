package temporalserver

import (
	"fmt"
	"strings"

	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// fatalPanics is the server's logger with Fatal turned into a panic. The server reports
// some start-up failures only through its logger's Fatal: a gRPC port that cannot be bound
// is one. Temporal's own logger then exits the process (slotplane dev, a test binary), and
// a logger that does nothing lets the server go on with no listener until it dereferences
// nil. As a panic, startOnFreePorts can recover the failure, report it as an error and try
// other ports. A Fatal after the start panics on in its goroutine and ends the process, as
// the exit would have, with the message logged first.
type fatalPanics struct{ tlog.Logger }

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
	logger.Error(msg, tags...)
	panic(fatalLog{msg: msg, tags: tags})
}

// With keeps the wrapper on the loggers the server derives with tags.
func (l fatalPanics) With(tags ...tag.Tag) tlog.Logger {
	return fatalPanics{tlog.With(l.Logger, tags...)}
}

// Skip keeps the wrapper on the loggers the server derives to name other callers.
func (l fatalPanics) Skip(extra int) tlog.Logger {
	if s, ok := l.Logger.(tlog.SkipLogger); ok {
		return fatalPanics{s.Skip(extra)}
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
