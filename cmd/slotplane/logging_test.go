package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// json writes one object a line, with the level, the message and the attributes as fields;
// lines below the level are left out.
func TestLogHandler_JSONAtALevel(t *testing.T) {
	var b bytes.Buffer
	h, err := logHandler(&b, "json", "warn")
	if err != nil {
		t.Fatal(err)
	}
	l := slog.New(h)
	l.Info("not shown")
	l.Warn("slot lost", "testbed", "default/bed", "slot", 3)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want the warning alone, got %q", b.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if got["level"] != "WARN" || got["msg"] != "slot lost" || got["testbed"] != "default/bed" || got["slot"] != float64(3) {
		t.Errorf("got %v", got)
	}
	b.Reset()
	if h, err = logHandler(&b, "text", "debug"); err != nil {
		t.Fatal(err)
	}
	slog.New(h).Debug("seen", "k", "v")
	if !strings.Contains(b.String(), "level=DEBUG msg=seen k=v") {
		t.Errorf("text at debug: %q", b.String())
	}
}

// A format or level the handler does not know is refused, by every component, before it
// starts anything.
func TestLogFlags_RefuseWhatTheyDoNotKnow(t *testing.T) {
	for _, c := range []struct {
		run  func(context.Context, []string) error
		args []string
		want string
	}{
		{runWorker, []string{"-log-format", "xml"}, `-log-format "xml": want text or json`},
		{runBridge, []string{"-log-level", "verbose"}, `-log-level "verbose": want debug, info, warn or error`},
		{runAPI, []string{"-log-level", "info+2"}, `-log-level "info+2"`},
		{runExtender, []string{"-plain-http", "-log-format", "yaml"}, `-log-format "yaml"`},
	} {
		err := c.run(context.Background(), c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}
