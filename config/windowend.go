package config

import "strings"

// WindowEnd is where a rule's windows end, as `window_end:` says.
type WindowEnd string

const (
	// WindowEndCurrent, the default: a window of W read during second S covers
	// S−W+1 … S, the second still filling included.
	WindowEndCurrent WindowEnd = "current_second"
	// WindowEndLastComplete: a window of W read during second S covers S−W … S−1, so that
	// rates and counts never dip while the current second fills.
	WindowEndLastComplete WindowEnd = "last_complete_second"
)

// windowEnds are the values `window_end:` takes, the default first.
var windowEnds = []string{string(WindowEndCurrent), string(WindowEndLastComplete)}

// windowEnd reads `window_end:`.
func (rd *ruleDecoder) windowEnd(e entry, r *Rule) {
	text, ok := rd.scalar(e, rd.subject, "window_end")
	if !ok {
		return
	}
	for _, end := range windowEnds {
		if text == end {
			r.WindowEnd = WindowEnd(text)
			return
		}
	}
	rd.add(e.key.Line, rd.subject, "window_end: %q is not one of %s (where a window read during a second ends: at it, or at the one before)%s",
		text, strings.Join(windowEnds, ", "), suggest(text, windowEnds))
}
