package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestReplayCountsOldLines: a replay of an event-time rule counts every matched line in
// its label set's _total, however long before the newest line it came (days past the
// longest window and the counter TTL, both 24h by default): all of them come at the
// replay's instant.
func TestReplayCountsOldLines(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	lines := "2026-11-20T00:00:00Z GET 200\n2026-11-20T00:00:01Z GET 200\n2026-11-24T00:00:00Z GET 404\n"
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s'}
rules:
  - name: requests
    match: '^(?P<time>\S+) \S+ (?P<status>\d{3})$'
    labels: {status: '${status}'}
    timestamp: {capture: time, layout: '2006-01-02T15:04:05Z07:00'}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Replay(cfg, []string{log}, Options{Now: time.Now}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`requests_total{status="200"} 2`, `requests_total{status="404"} 1`} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("replay lacks %s:\n%s", want, out.String())
		}
	}
}

// TestReplayInstantIgnoresFutureLines: a replay's instant is the newest line's own time
// that is not ahead of the clock. A line stamped ahead of it (a bad timestamp, a writer
// whose clock is ahead) is counted as future at that instant, as the exporter counts it,
// instead of moving the instant past every other line, which made them all late and every
// window empty; a log all of whose lines are ahead is read at the clock's second.
func TestReplayInstantIgnoresFutureLines(t *testing.T) {
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		lines string
		want  []string
	}{
		{
			name:  "one line years ahead",
			lines: "2026-11-20T00:00:00Z GET 200\n2099-01-01T00:00:00Z GET 200\n2026-11-20T00:00:30Z GET 404\n2026-11-20T00:00:31Z GET 200\n",
			want: []string{
				`requests_total{status="200"} 3`,
				`requests_window{status="200",window="1m"} 3`,
				`requests_window{status="404",window="1m"} 1`,
				`logwindow_rule_dropped_lines_total{reason="future",rule="requests"} 1`,
				`logwindow_rule_dropped_lines_total{reason="late",rule="requests"} 0`,
			},
		},
		{
			name:  "a line a second ahead of the clock",
			lines: "2026-11-25T11:59:30Z GET 200\n2026-11-25T12:00:01Z GET 200\n",
			want: []string{
				`requests_window{status="200",window="1m"} 2`,
				`logwindow_rule_dropped_lines_total{reason="future",rule="requests"} 1`,
			},
		},
		{
			name:  "every line ahead of the clock",
			lines: "2026-11-25T13:00:00Z GET 200\n2026-11-25T13:00:05Z GET 200\n",
			want: []string{
				`requests_window{status="200",window="1m"} 2`,
				`logwindow_rule_dropped_lines_total{reason="future",rule="requests"} 2`,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			if err := os.WriteFile(log, []byte(c.lines), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s'}
rules:
  - name: requests
    match: '^(?P<time>\S+) \S+ (?P<status>\d{3})$'
    labels: {status: '${status}'}
    windows: [1m]
    timestamp: {capture: time, layout: '2006-01-02T15:04:05Z07:00'}
`, log), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := Replay(cfg, []string{log}, Options{Now: func() time.Time { return clock }}, &out); err != nil {
				t.Fatal(err)
			}
			for _, want := range c.want {
				if !strings.Contains(out.String(), want+"\n") {
					t.Errorf("replay lacks %s:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestReplayAgainstModel: a replay of random lines, in no order, of times around the clock
// (in the windows, at their edge, older than every window) and, in some runs, ahead of it
// by a second to decades, in one run all of them, gives what a naive count of the lines
// says: the instant is the newest line's time not ahead of the clock (else the clock's),
// a line ahead of it is future and placed at it, one as old as the longest window or
// older is late, and the windows hold the rest of the last 60 and 300 seconds.
func TestReplayAgainstModel(t *testing.T) {
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	now := clock.Unix()
	cfg := func(log string) *config.Config {
		cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s'}
rules:
  - name: requests
    match: '^(?P<time>\S+)$'
    windows: [1m, 5m]
    timestamp: {capture: time, layout: '2006-01-02T15:04:05Z07:00'}
`, log), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 41))
		ahead := []float64{0, 0.02, 0.3, 1}[seed%4] // the share of lines ahead of the clock
		behind := rng.Int64N(4000)                  // how far behind the clock the log ends
		var times []int64
		for range 1 + rng.IntN(200) {
			switch t := now - behind; {
			case rng.Float64() < ahead:
				times = append(times, now+1+rng.Int64N([]int64{2, 600, 1e9}[rng.IntN(3)]))
			case rng.IntN(10) == 0:
				times = append(times, t-300+rng.Int64N(3)) // at the 5m window's edge
			case rng.IntN(10) == 0:
				times = append(times, t-300-rng.Int64N(1e6)) // late
			default:
				times = append(times, t-rng.Int64N(300))
			}
		}
		instant, seen := now, false
		for _, t := range times {
			if t <= now && (!seen || t > instant) {
				instant, seen = t, true
			}
		}
		var one, five, late, future int
		var log strings.Builder
		for _, t := range times {
			fmt.Fprintln(&log, time.Unix(t, 0).UTC().Format(time.RFC3339))
			switch {
			case t > instant:
				future++
				one++
				five++
			case instant-t >= 300:
				late++
			default:
				if instant-t < 60 {
					one++
				}
				five++
			}
		}
		path := filepath.Join(t.TempDir(), "access.log")
		if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := Replay(cfg(path), []string{path}, Options{Now: func() time.Time { return clock }}, &out); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			fmt.Sprintf(`requests_total %d`, len(times)),
			fmt.Sprintf(`requests_window{window="1m"} %d`, one),
			fmt.Sprintf(`requests_window{window="5m"} %d`, five),
			fmt.Sprintf(`logwindow_rule_dropped_lines_total{reason="late",rule="requests"} %d`, late),
			fmt.Sprintf(`logwindow_rule_dropped_lines_total{reason="future",rule="requests"} %d`, future),
		} {
			if !strings.Contains(out.String(), want+"\n") {
				t.Fatalf("seed %d (instant clock%+ds, %d lines): replay lacks %s:\n%s", seed, instant-now, len(times), want, out.String())
			}
		}
	}
}
