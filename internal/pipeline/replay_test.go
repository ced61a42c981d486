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
