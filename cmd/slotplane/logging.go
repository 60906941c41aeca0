package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// logFlags are -log-format and -log-level of the long-running components.
type logFlags struct{ format, level *string }

func addLogFlags(fs *flag.FlagSet) logFlags {
	return logFlags{
		format: fs.String("log-format", envOr("SLOTPLANE_LOG_FORMAT", "text"), "log lines as text (key=value pairs) or json (one object a line, for a log collector)"),
		level:  fs.String("log-level", envOr("SLOTPLANE_LOG_LEVEL", "info"), "the least level logged: debug, info, warn or error"),
	}
}

// apply sends every log line of the process through the handler the flags ask for.
func (f logFlags) apply() error {
	h, err := logHandler(logOut, *f.format, *f.level)
	if err != nil {
		return err
	}
	setLogger(h)
	return nil
}

// logHandler writes to w in format (text or json) the lines at level or above.
func logHandler(w io.Writer, format, level string) (slog.Handler, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || strings.ContainsAny(level, "+-") {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", format)
}

// setLogger makes h the handler of slog's default logger and of the libraries' loggers:
// controller-runtime's, client-go's (klog) and, through slog's default, the Temporal SDK's
// (worker.ClientLogger). One place, one format, one level.
func setLogger(h slog.Handler) {
	slog.SetDefault(slog.New(h))
	ctrllog.SetLogger(logr.FromSlogHandler(h))
	klog.SetSlogLogger(slog.Default())
}
