// Package testbrowser gives tests a headless Chromium: where it is, where to leave what
// it shows, and a tab that records every error the page raises. It is for tests only; it
// fails the test rather than returning errors, and it never installs a browser.
package testbrowser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path finds Chromium: $SLOTPLANE_CHROMIUM, else the first of chromium, chromium-browser
// and google-chrome on PATH. Without one the test fails, saying how to get one: a test that
// looks at a page has nothing to say without a browser, and skipping would hide that.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SLOTPLANE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium found: make tools installs Debian's chromium package, or set SLOTPLANE_CHROMIUM")
	return ""
}

// ArtifactDir is a folder for what a test leaves to be looked at (screenshots, reports),
// created if need be: $SLOTPLANE_ARTIFACTS/sub, else slotplane-artifacts/sub in the
// system's temporary directory. Unlike t.TempDir it outlives the test, which is the point.
func ArtifactDir(t testing.TB, sub string) string {
	t.Helper()
	root := os.Getenv("SLOTPLANE_ARTIFACTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "slotplane-artifacts")
	}
	dir := filepath.Join(root, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact folder: %v", err)
	}
	return dir
}

// Open starts a headless Chromium (Path) with one tab of 1280x900 and returns the tab's
// context for chromedp.Run and chromedp.Do, and errs, which lists what the page threw or
// logged with console.error so far. The browser stops when the test ends.
//
// The browser is already running when Open returns, so a caller may put a deadline on any
// action: a deadline on the first one would stop the whole browser with it.
func Open(t testing.TB) (ctx context.Context, errs func() []string) {
	t.Helper()
	// Chromium leaves its singleton socket's directory in TMPDIR when it stops: a directory
	// of the test's takes it, and goes with the test. Not t.TempDir: a path with a long test
	// name leaves the socket's path over the 107 bytes a Unix socket's may have, and
	// Chromium does not start.
	tmp, err := os.MkdirTemp("", "slotplane-chromium-")
	if err != nil {
		t.Fatalf("make chromium's directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) }) // runs after the browser stops (below)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		chromedp.Env("TMPDIR="+tmp), chromedp.UserDataDir(filepath.Join(tmp, "profile")))...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel) // runs before cancelAlloc: the tab closes, then the browser

	var mu sync.Mutex
	var seen []string
	record := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf(format, args...))
	}
	// Listen starts the browser; it must stay cheap, since it runs on the tab's reader.
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			record("exception %s at %s:%d:%d", exceptionText(d), d.URL, d.LineNumber, d.ColumnNumber)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				record("console.error %s", consoleArgs(ev.Args))
			}
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// exceptionText prefers the thrown value's description (it carries the message) over the
// bare "Uncaught" that Text often is.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Text + " " + d.Exception.Description
	}
	return d.Text
}

func consoleArgs(args []*runtime.RemoteObject) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch {
		case a.Description != "":
			parts[i] = a.Description
		case len(a.Value) > 0:
			parts[i] = string(a.Value)
		default:
			parts[i] = string(a.Type)
		}
	}
	return strings.Join(parts, " ")
}
