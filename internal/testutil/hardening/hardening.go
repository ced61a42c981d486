// Package hardening holds what the hostile-input tests share, in process and against the
// built binary: their rule files (testdata, with LOGFILE standing for the log's path), the
// event-time access line they write, and the naive reference for event-time windows.
package hardening

import (
	"embed"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

//go:embed testdata/*.yaml
var configs embed.FS

// Config returns the rule file testdata/name for a log at logPath.
func Config(tb testing.TB, name string) func(logPath string) string {
	tb.Helper()
	text, err := configs.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return func(logPath string) string { return strings.ReplaceAll(string(text), "LOGFILE", logPath) }
}

// TimeLocal formats Unix second at as nginx's $time_local in the given zone.
func TimeLocal(at int64, zone *time.Location) string {
	return time.Unix(at, 0).In(zone).Format("02/Jan/2006:15:04:05 -0700")
}

// EventLine is an access line of time at (in zone) with the given status, as the
// event-time rule file reads it.
func EventLine(at int64, zone *time.Location, status int) string {
	return fmt.Sprintf(`10.0.0.1 - - [%s] "GET / HTTP/1.1" %d 5 "-" "x"`, TimeLocal(at, zone), status)
}

// EventWindows is the reference for event-time windows: every event kept in a list, placed
// as the window semantics say, and counted second by second.
type EventWindows struct {
	Longest int64
	placed  []int64 // the seconds the kept events were placed at
	Late    int     // older than the longest window when they arrived: only in _total
	Future  int     // ahead of the processing time when they arrived: placed at it
}

// Add is an event of time at arriving at processing second now.
func (n *EventWindows) Add(now, at int64) {
	switch {
	case at <= now-n.Longest:
		n.Late++
	case at > now:
		n.Future++
		n.placed = append(n.placed, now)
	default:
		n.placed = append(n.placed, at)
	}
}

// Count returns the events placed in the seconds from … to.
func (n *EventWindows) Count(from, to int64) float64 {
	c := 0.0
	for _, p := range n.placed {
		if from <= p && p <= to {
			c++
		}
	}
	return c
}

// Oldest is the second of the oldest event placed, or now when none was.
func (n *EventWindows) Oldest(now int64) int64 {
	return slices.Min(append([]int64{now}, n.placed...))
}

// Check compares the window gauges of series labels, read at second now, with the
// reference: windows of up to 5m exactly, longer ones within the events of the minute slot
// at their old edge. The rates divide by the seconds observed since observedFrom: the
// exporter's start or the oldest event placed in any series, whichever is earlier.
func (n *EventWindows) Check(t testing.TB, m metrictest.Families, name string, labels map[string]string, now, observedFrom int64) {
	t.Helper()
	observed := now - observedFrom + 1
	for _, w := range []struct {
		label string
		secs  int64
	}{{"1m", 60}, {"5m", 300}, {"15m", 900}} {
		lo := now - w.secs + 1
		want := n.Count(lo, now)
		slack := 0.0
		if w.secs > 300 {
			edge := lo - ((lo%60)+60)%60
			slack = n.Count(edge, edge+59)
		}
		got := metrictest.Value(m, name+"_window", metrictest.WithLabel(labels, "window", w.label))
		if got == -1 && want == 0 {
			got = 0 // absent: the series expired, as it should once every window is empty
		}
		if math.Abs(got-want) > slack {
			t.Errorf("%s window at %d = %v, want %v (± %v)", w.label, now, got, want, slack)
		}
		if slack == 0 {
			rate := max(metrictest.Value(m, name+"_window_per_second", metrictest.WithLabel(labels, "window", w.label)), 0)
			if wantRate := want / float64(min(w.secs, observed)); math.Abs(rate-wantRate) > 1e-9 {
				t.Errorf("%s rate at %d = %v, want %v", w.label, now, rate, wantRate)
			}
		}
	}
}

// Placed is the number of events placed in some window (not late).
func (n *EventWindows) Placed() int { return len(n.placed) }
