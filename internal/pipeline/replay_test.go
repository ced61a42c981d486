package pipeline

import (
	"fmt"
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
