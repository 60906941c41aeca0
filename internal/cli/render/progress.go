package render

import (
	"fmt"
	"io"
	"os"
	"strings"

	"slotplane/apitypes"
	"slotplane/crds/v1alpha1"
)

// Bar is one followed Scheduling as its progress bar shows it.
type Bar struct {
	// Name is the Scheduling's name; it heads the bar even before Scheduling is known.
	Name string
	// Scheduling is the newest state of it that the feed or the API gave.
	Scheduling apitypes.Scheduling
	// Deleted says it was deleted while followed, which counts as ended.
	Deleted bool
}

// barWidth is how many characters a bar's filling spans.
const barWidth = 20

// barLine is one Scheduling's drawn bar: padded lines up the bars of a screen, key is the
// same text unpadded, which tells whether the bar changed.
type barLine struct{ name, padded, key string }

// barLines turns bars into their lines, names padded to the longest.
func barLines(bars []Bar) []barLine {
	width := 0
	for _, b := range bars {
		width = max(width, len(b.Name))
	}
	out := make([]barLine, 0, len(bars))
	for _, b := range bars {
		rest := barText(b)
		out = append(out, barLine{name: b.Name, padded: fmt.Sprintf("%-*s  %s", width, b.Name, rest), key: b.Name + " " + rest})
	}
	return out
}

// barText is a bar without its name: the filling, the counts and the state.
func barText(b Bar) string {
	s := b.Scheduling
	total, finished := totalJobs(s), int(s.Status.FinishedJobs)
	filled := 0
	if total > 0 {
		filled = min(barWidth, finished*barWidth/total)
	}
	state := string(s.Status.State)
	switch {
	case b.Deleted:
		state = "deleted"
	case state == "":
		state = "new" // its workflow has not written a state yet
	}
	if s.Deleting && !b.Deleted && !Ended(s.Status.State) {
		state += " (cancelling)"
	}
	if s.Status.State == v1alpha1.SchedulingFailed && s.Status.Message != "" {
		state += ": " + s.Status.Message
	}
	return fmt.Sprintf("[%s%s] %d/%d finished, %d running, %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
		finished, total, s.Status.RunningJobs, state)
}

// ProgressView draws progress bars: on a terminal it redraws them in place; elsewhere (a
// file, a pipe, a test) it prints a line per change, without escape codes.
type ProgressView struct {
	out   io.Writer
	ansi  bool
	drawn []barLine         // on a terminal: what is on the screen, under the cursor's line
	last  map[string]string // elsewhere: each Scheduling's last printed line
}

// NewProgressView draws on out, redrawing in place with escape codes if ansi is set (see
// IsTerminal).
func NewProgressView(out io.Writer, ansi bool) *ProgressView {
	return &ProgressView{out: out, ansi: ansi, last: map[string]string{}}
}

// IsTerminal is whether w is a terminal that understands cursor movement.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// Draw shows the bars: on a terminal all of them, in place of those drawn before; elsewhere
// only the ones that changed since they were last printed.
func (v *ProgressView) Draw(bars []Bar) {
	lines := barLines(bars)
	if !v.ansi {
		for _, l := range lines {
			if v.last[l.name] != l.key {
				v.last[l.name] = l.key
				fmt.Fprintln(v.out, l.key)
			}
		}
		return
	}
	var b strings.Builder
	v.erase(&b)
	for _, l := range lines {
		b.WriteString(l.padded + "\n")
	}
	v.drawn = lines
	_, _ = io.WriteString(v.out, b.String())
}

// erase moves the cursor back over the bars drawn last and clears them.
func (v *ProgressView) erase(b *strings.Builder) {
	if len(v.drawn) > 0 {
		fmt.Fprintf(b, "\x1b[%dA", len(v.drawn))
	}
	b.WriteString("\r\x1b[J")
}

// Note prints a message above the bars.
func (v *ProgressView) Note(msg string) {
	if !v.ansi {
		fmt.Fprintln(v.out, msg)
		return
	}
	var b strings.Builder
	v.erase(&b)
	b.WriteString(msg + "\n")
	for _, l := range v.drawn {
		b.WriteString(l.padded + "\n")
	}
	_, _ = io.WriteString(v.out, b.String())
}

// Finish prints the closing line under the bars, which stay: how the Schedulings ended.
func (v *ProgressView) Finish(bars []Bar) {
	fmt.Fprintln(v.out, watchSummary(bars))
}

// watchSummary counts how the Schedulings ended.
func watchSummary(bars []Bar) string {
	if len(bars) == 0 {
		return "no Schedulings to watch"
	}
	counts := map[string]int{}
	for _, b := range bars {
		st := string(b.Scheduling.Status.State)
		if b.Deleted {
			st = "deleted"
		}
		counts[st]++
	}
	var parts []string
	for _, st := range []string{"Completed", "Failed", "Cancelled", "deleted"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return fmt.Sprintf("all %d Schedulings ended: %s", len(bars), strings.Join(parts, ", "))
}
