package main

// Counters and series the way Prometheus users expect, through the built binary on
// loopback: counters outlive their windows, label-less rules and initial label sets exist
// from the start, window labels are as written.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/internal/testexec"
)

// countersConfig has a 2 s window so that a window's expiry is seconds away, next to
// windows written in spellings Prometheus would print otherwise (90s is 1m30s, 24h is 1d).
const countersConfig = `
global:
  windows: [2s, 90s, 24h]
inputs:
  - {name: web, path: LOGFILE}
rules:
  - name: http_requests
    match: '" (?P<status>[0-9]{3}) '
    labels: {status: '${status}'}
    windows: [2s]
    initial: [{status: '503'}]
  - name: http_server_errors
    match: '" (?P<status>5[0-9]{2}) '
`

// writeFileLines appends n copies of line to path.
func writeFileLines(t *testing.T, path, line string, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Repeat(line+"\n", n)); err != nil {
		t.Fatal(err)
	}
}

// waitScrape scrapes p until cond holds, for at most 20 s.
func (p *exporterProcess) waitScrape(what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, _ := p.scrape()
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no scrape within 20s where %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestProcessCountersAndSeries(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(countersConfig, "LOGFILE", logPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, bin, "--config.file="+cfgPath, "--input.poll-interval=50ms")
	status := func(s string) map[string]string { return map[string]string{"status": s} }
	window := func(w string) map[string]string { return map[string]string{"window": w} }

	t.Run("0 samples at start", func(t *testing.T) {
		m, _ := p.scrape()
		checkSamples(t, m, []sampleWant{
			{"http_server_errors_total", nil, 0},
			{"http_server_errors_window", window("2s"), 0},
			{"http_server_errors_window", window("90s"), 0},
			{"http_server_errors_window", window("24h"), 0},
			{"http_server_errors_window_per_second", window("24h"), 0},
			{"http_requests_total", status("503"), 0},
			{"http_requests_window", withLabel(status("503"), "window", "2s"), 0},
		})
	})

	t.Run("window labels as written", func(t *testing.T) {
		m, _ := p.scrape()
		got := labelValues(m, "http_server_errors_window", "window")
		if fmt.Sprint(got) != "[24h 2s 90s]" {
			t.Errorf("window labels %v, want [24h 2s 90s]", got)
		}
	})

	t.Run("counters outlive their windows", func(t *testing.T) {
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 500 5 "-" "-"`, 7)
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 200 5 "-" "-"`, 3)
		p.waitForLines(10)
		// Within 2 s the window held the lines; then it expires and is released.
		m := p.waitScrape("the 2s windows of status 500 are released", func(m map[string]*dto.MetricFamily) bool {
			return value(m, "http_requests_window", withLabel(status("500"), "window", "2s")) == -1
		})
		checkSamples(t, m, []sampleWant{
			{"http_requests_total", status("500"), 7},
			{"http_requests_total", status("200"), 3},
			{"http_requests_total", status("503"), 0},
			{"http_requests_window", withLabel(status("503"), "window", "2s"), 0},
			{"http_server_errors_total", nil, 7},
		})
		// The label-less rule keeps exporting its windows, at 0 once they are empty.
		m = p.waitScrape("the label-less rule's 2s window is back to 0", func(m map[string]*dto.MetricFamily) bool {
			return value(m, "http_server_errors_window", window("2s")) == 0
		})
		checkSamples(t, m, []sampleWant{{"http_server_errors_total", nil, 7}})
		// A new line revives the label set: the counter goes on from where it was.
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 500 5 "-" "-"`, 2)
		m = p.waitForLines(12)
		checkSamples(t, m, []sampleWant{
			{"http_requests_total", status("500"), 9},
			{"http_server_errors_total", nil, 9},
		})
	})
}
