package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// startTimed starts a pipeline, on o's clocks, on timedLog's rules of windows. Its lines
// appends five lines stamped at to the log and returns once timed_total is total.
func startTimed(t *testing.T, windows string, out *syncbuf.Buffer, o Options) (*Pipeline, func(at time.Time, total float64)) {
	t.Helper()
	rules, lines := timedLog(t, windows)
	p := startStoredOn(t, rules, t.TempDir(), out, o)
	return p, func(at time.Time, total float64) {
		t.Helper()
		lines(p, at, total)
	}
}

// timedLog returns the rules of one event-time rule, timed, with the given windows (YAML's
// list), on a log of its own, and a function that appends five lines stamped at to the
// log and returns once p's timed_total is total.
func timedLog(t *testing.T, windows string) (string, func(p *Pipeline, at time.Time, total float64)) {
	t.Helper()
	rules := `
global: {windows: WINDOWS}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: timed
    match: 'ts=(?P<ts>\S+) n='
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("WINDOWS", windows, "LOG", log).Replace(rules), func(p *Pipeline, at time.Time, total float64) {
		t.Helper()
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for n := range 5 {
			fmt.Fprintf(f, "ts=%s n=%d\n", at.Format(time.RFC3339), n)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if !await.Until(t, func() bool { return gatherPipeline(t, p)[`timed_total{}`] == total }) {
			t.Fatalf("timed_total not %v", total)
		}
	}
}

// TestEventTimeClockAheadAndBack: the host's wall clock is set half an hour ahead and
// back while the log's lines keep their right times (a log written on another host). The
// lines read once it is back are in an event-time rule's 1m and 5m windows at once, not
// after the half hour it takes the clock to reach the second it had been set to; the
// lines read while it was ahead are in the 1h window.
func TestEventTimeClockAheadAndBack(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := testclock.New(t0)
	var out syncbuf.Buffer
	p, lines := startTimed(t, "[1m, 5m, 1h]", &out, Options{Now: clock.Now})
	lines(t0, 5)
	clock.Add(30 * time.Minute)
	lines(t0.Add(10*time.Second), 10)
	clock.Add(-30*time.Minute + 20*time.Second)
	lines(t0.Add(20*time.Second), 15)
	got := gatherPipeline(t, p)
	for window, want := range map[string]float64{"1m": 5, "5m": 5, "1h": 15} {
		if w := got[fmt.Sprintf("timed_window{window=%q}", window)]; w != want {
			t.Errorf("%s window: %v, want %v", window, w, want)
		}
	}
}

// TestEventTimeWallStep: the host's wall clock steps two days ahead while the monotonic
// clock goes on (an NTP step on a VM resumed from suspend, a mistyped date -s). A step
// set right within wallStepHold reaches no window: the windows the lines before it filled
// keep them, and the lines a writer on the host stamped by the stepped clock meanwhile are
// future, counted at the second the clock held. One that lasts wallStepHold is the clock
// from then on: the lines before it are two days old, in no window.
func TestEventTimeWallStep(t *testing.T) {
	const step = 48 * time.Hour
	cases := []struct {
		name     string
		lasts    time.Duration // how long the step lasts on the monotonic clock
		back     bool          // whether it is set right then
		want1m   float64
		want24h  float64
		future   float64
		logWants string
	}{
		{"set right within the hold", 20 * time.Second, true, 15, 15, 5, "came back"},
		{"kept past the hold", wallStepHold + time.Second, false, 5, 5, 5, "stayed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
			mono, wall := testclock.New(t0), testclock.New(t0)
			both := func(d time.Duration) { mono.Add(d); wall.Add(d) }
			var out syncbuf.Buffer
			p, lines := startTimed(t, "[1m, 24h]", &out, Options{Now: mono.Now, wall: wall.Now})
			lines(t0, 5)
			both(10 * time.Second)
			wall.Add(step)
			p.Expire() // as its ticker would, while the clock is ahead
			// A writer on the host stamps its lines by the clock it reads.
			lines(wall.Now(), 10)
			both(c.lasts)
			if c.back {
				wall.Add(-step)
			}
			p.Expire()
			lines(wall.Now(), 15)
			got := gatherPipeline(t, p)
			for key, want := range map[string]float64{
				`timed_window{window="1m"}`:                                        c.want1m,
				`timed_window{window="24h"}`:                                       c.want24h,
				`logwindow_rule_dropped_lines_total{reason="future",rule="timed"}`: c.future,
			} {
				if got[key] != want {
					t.Errorf("%s: %v, want %v", key, got[key], want)
				}
			}
			if !strings.Contains(out.String(), c.logWants) {
				t.Errorf("no log of the step (%q):\n%s", c.logWants, out.String())
			}
		})
	}
}

// TestEventTimeBootBehindSnapshot: a node without a clock of its own (no RTC, no NTP at
// boot) restarts the exporter with its wall clock an hour behind the snapshot's lines,
// which the start warns of; then NTP sets it right, a step ahead of an hour and two
// minutes. The snapshot's lines were read an hour behind them, in no window, and the
// step was held a minute as any: the lines after it, stamped by the right clock, were
// future, placed an hour back. The wall clock given is now held at the snapshot's, and
// the step that sets it right taken at once: the snapshot's lines are in the windows,
// counted once, and those after the step in the 1m window at once.
func TestEventTimeBootBehindSnapshot(t *testing.T) {
	rules, lines := timedLog(t, "[1m, 5m, 1h]")
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var out syncbuf.Buffer
	mono, wall := testclock.New(t0), testclock.New(t0)
	p := startStoredOn(t, rules, dir, &out, Options{Now: mono.Now, wall: wall.Now})
	lines(p, t0, 5)
	p.Stop()

	// Two minutes later the node is up again, its clock an hour behind.
	boot := t0.Add(-time.Hour)
	mono, wall = testclock.New(boot), testclock.New(boot)
	p = startStoredOn(t, rules, dir, &out, Options{Now: mono.Now, wall: wall.Now})
	if !strings.Contains(out.String(), "behind") {
		t.Errorf("the start did not warn of a clock behind the snapshot:\n%s", out.String())
	}
	check := func(when string, want map[string]float64) {
		t.Helper()
		got := gatherPipeline(t, p)
		for key, want := range want {
			if got[key] != want {
				t.Errorf("%s: %s: %v, want %v", when, key, got[key], want)
			}
		}
	}
	check("restored", map[string]float64{`timed_total{}`: 5, `timed_window{window="1h"}`: 5, `timed_window{window="5m"}`: 5})
	mono.Add(10 * time.Second)
	wall.Add(time.Hour + 2*time.Minute + 10*time.Second)
	p.Expire() // as its ticker would
	lines(p, wall.Now(), 10)
	check("set right", map[string]float64{
		`timed_window{window="1m"}`: 5, `timed_window{window="5m"}`: 10, `timed_window{window="1h"}`: 10,
		`logwindow_rule_dropped_lines_total{reason="future",rule="timed"}`: 0,
		`logwindow_rule_dropped_lines_total{reason="late",rule="timed"}`:   0,
	})
	if !strings.Contains(out.String(), "was set right") {
		t.Errorf("no log of the clock set right:\n%s", out.String())
	}
}
