package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestEventTimeClockAheadAndBack: the host's wall clock is set half an hour ahead and
// back while the log's lines keep their right times (a log written on another host). The
// lines read once it is back are in an event-time rule's 1m and 5m windows at once, not
// after the half hour it takes the clock to reach the second it had been set to; the
// lines read while it was ahead are in the 1h window.
func TestEventTimeClockAheadAndBack(t *testing.T) {
	const rules = `
global: {windows: [1m, 5m, 1h]}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: timed
    match: 'ts=(?P<ts>\S+) n='
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cfg, o := storedOn(t, strings.ReplaceAll(rules, "LOG", log), t.TempDir(), &out, Options{})
	clock := testclock.New(t0)
	o.Now = clock.Now
	p, err := Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	lines := func(at time.Time, total float64) {
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
		deadline := time.Now().Add(20 * time.Second)
		for gatherPipeline(t, p)[`timed_total{}`] != total {
			if time.Now().After(deadline) {
				t.Fatalf("timed_total not %v", total)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
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
