package pipeline

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

const warmRules = `
global: {windows: [1m, 5m, 15m]}
inputs: [{name: web, path: LOG}]
rules:
  - name: requests
    match: 'ts=(?P<ts>\S+) status=(?P<s>\d+)'
    labels: {status: '${s}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: arrivals
    match: 'status='
`

// warmLog is a log of the two hours before now, three lines a second on average, a few
// seconds out of order; it returns the text and each line's time and status.
func warmLog(now int64) (string, []int64, []string) {
	rng := rand.New(rand.NewPCG(5, 15))
	var b strings.Builder
	var times []int64
	var statuses []string
	for t := now - 7200; t <= now; t++ {
		for range rng.IntN(7) {
			at := min(now, t-rng.Int64N(5))
			s := []string{"200", "200", "404", "500"}[rng.IntN(4)]
			fmt.Fprintf(&b, "ts=%s status=%s\n", time.Unix(at, 0).UTC().Format(time.RFC3339), s)
			times, statuses = append(times, at), append(statuses, s)
		}
	}
	return b.String(), times, statuses
}

// gatherPipeline returns every sample of p's collector by family and label text.
func gatherPipeline(t *testing.T, p *Pipeline) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	coll := p.Collector()
	reg.MustRegister(coll)
	mfs, err := metrictest.Scraped(exporter.Handler(coll, reg, nil)).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[mf.GetName()+labelText(m.GetLabel())] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func labelText(pairs []*dto.LabelPair) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p.GetName(), p.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// startWarm writes text to a new log, then starts a pipeline on warmRules at now with
// the given backfill bound, and waits until it is ready (backfill done).
func startWarm(t *testing.T, text string, now time.Time, backfill int64) (*Pipeline, *config.Config) {
	t.Helper()
	return startWarmLogging(t, text, now, backfill, nil)
}

// startWarmLogging is startWarm logging to logger (nil: the default).
func startWarmLogging(t *testing.T, text string, now time.Time, backfill int64, logger *slog.Logger) (*Pipeline, *config.Config) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(warmRules, "LOG", log)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: func() time.Time { return now }, PollInterval: 10 * time.Millisecond, BackfillBytes: backfill, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitReady(t, p)
	return p, cfg
}

// TestWarmStart: at start, with start_at: end, the windows of the event-time rule equal a
// naive count of the file's lines (1m and 5m exactly, 15m within the minute slot at its
// old edge); nothing is added to a _total or to the processing-time rule.
func TestWarmStart(t *testing.T) {
	const nowSec = 1_700_000_000
	now := time.Unix(nowSec, 0)
	text, times, statuses := warmLog(nowSec)
	for _, tc := range []struct {
		name     string
		backfill int64
		// from is the offset of the first line the naive count includes.
		from int
	}{
		{"whole windows", DefaultBackfillBytes, 0},
		{"bounded by backfill bytes", 5000, strings.Index(text[len(text)-5000:], "\n") + 1 + len(text) - 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := startWarm(t, text, now, tc.backfill)
			got := gatherPipeline(t, p)
			// The lines at or after tc.from, by the offset each starts at.
			first := strings.Count(text[:tc.from], "\n")
			for _, s := range []string{"200", "404", "500"} {
				for _, w := range []struct {
					label string
					secs  int64
				}{{"1m", 60}, {"5m", 300}, {"15m", 900}} {
					want, edge := 0.0, 0.0
					lo := int64(nowSec) - w.secs + 1
					edgeStart := lo - ((lo%60)+60)%60
					for i := first; i < len(times); i++ {
						if statuses[i] != s {
							continue
						}
						if times[i] >= lo {
							want++
						}
						if times[i] >= edgeStart && times[i] < edgeStart+60 {
							edge++
						}
					}
					slack := 0.0
					if w.secs > 300 {
						slack = edge
					}
					key := fmt.Sprintf(`requests_window{status=%q,window=%q}`, s, w.label)
					if g := got[key]; math.Abs(g-want) > slack {
						t.Errorf("%s = %v, want %v (± %v)", key, g, want, slack)
					}
				}
				if key := fmt.Sprintf(`requests_total{status=%q}`, s); got[key] != 0 {
					t.Errorf("%s = %v, want 0: backfilled lines are not counted again", key, got[key])
				}
			}
			for _, key := range []string{`arrivals_total{}`, `arrivals_window{window="5m"}`, `logwindow_rule_matched_lines_total{rule="requests"}`, `logwindow_input_lines_total{input="web"}`} {
				if got[key] != 0 {
					t.Errorf("%s = %v, want 0", key, got[key])
				}
			}
		})
	}
}

// TestWarmStartAheadOfClock: lines stamped ahead of the host's clock (local times read
// as UTC east of Greenwich, a writer whose clock is ahead) have no second to go to: a warm
// start leaves them out, rather than putting everything it read of the file into the
// current second, as a live line ahead of the clock is put, and warns of how many. Those
// behind the clock fill the windows as ever; with none ahead, nothing is warned of.
func TestWarmStartAheadOfClock(t *testing.T) {
	const nowSec = 1_700_000_000
	now := time.Unix(nowSec, 0)
	behind, times, statuses := warmLog(nowSec)
	ahead, _, _ := warmLog(nowSec + 3*3600) // its lines from an hour ahead on
	for _, tc := range []struct {
		name string
		text string
		// want counts the lines of times (with statuses) in the windows.
		times    []int64
		statuses []string
	}{
		{"every line an hour ahead or more", ahead, nil, nil},
		{"the last lines an hour ahead", behind + ahead[len(ahead)-2000:][strings.Index(ahead[len(ahead)-2000:], "\n")+1:], times, statuses},
		{"none ahead", behind, times, statuses},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncbuf.Buffer
			p, _ := startWarmLogging(t, tc.text, now, DefaultBackfillBytes, slog.New(slog.NewTextHandler(&log, nil)))
			// Every line ahead is read (none is old enough to stop the probe back) and
			// matched by the one event-time rule.
			warning := ""
			if n := strings.Count(tc.text, "\n") - len(tc.times); n > 0 {
				warning = fmt.Sprintf("rule_matches=%d ", n)
			}
			var warned []string
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.Contains(line, "lines stamped after the host's clock were left out") {
					warned = append(warned, line)
				}
			}
			if warning == "" && len(warned) > 0 || warning != "" && (len(warned) != 1 || !strings.Contains(warned[0], warning)) {
				t.Errorf("warned %q, want %q", warned, warning)
			}
			got := gatherPipeline(t, p)
			for _, s := range []string{"200", "404", "500"} {
				for _, w := range []struct {
					label string
					secs  int64
				}{{"1m", 60}, {"5m", 300}} {
					want := 0.0
					for i, at := range tc.times {
						if tc.statuses[i] == s && at > nowSec-w.secs {
							want++
						}
					}
					key := fmt.Sprintf(`requests_window{status=%q,window=%q}`, s, w.label)
					if got[key] != want {
						t.Errorf("%s = %v, want %v", key, got[key], want)
					}
				}
			}
		})
	}
}

// A reload does not warm-start: only the process start does.
func TestWarmStartNotOnReload(t *testing.T) {
	const nowSec = 1_700_000_000
	text, _, _ := warmLog(nowSec)
	p, cfg := startWarm(t, text, time.Unix(nowSec, 0), DefaultBackfillBytes)
	if got := gatherPipeline(t, p)[`requests_window{status="200",window="5m"}`]; got == 0 {
		t.Fatal("no warm start at all")
	}
	changed, err := config.Parse([]byte(strings.ReplaceAll(strings.ReplaceAll(warmRules, "LOG", cfg.Inputs[0].File.Path), "[1m, 5m, 15m]", "[1m, 5m, 10m]")), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(changed); err != nil {
		t.Fatal(err)
	}
	if got := gatherPipeline(t, p)[`requests_window{status="200",window="5m"}`]; got != 0 {
		t.Errorf("5m window after a reload that changed the rule = %v, want 0 (no warm start on reload)", got)
	}
}

// readLines hands on complete lines only, skips the one it starts inside and those over
// the cap.
func TestReadLines(t *testing.T) {
	text := "first\nsecond line\n" + strings.Repeat("x", 100) + "\nthird\nunfinished"
	r := strings.NewReader(text)
	for _, tc := range []struct {
		from int64
		want string
	}{
		{0, "first|second line|third"},
		{3, "second line|third"},
		{6, "second line|third"},
	} {
		var got []string
		readLines(r, tc.from, int64(len(text)), 20, func(l []byte) { got = append(got, string(l)) })
		if strings.Join(got, "|") != tc.want {
			t.Errorf("from %d: %q, want %q", tc.from, strings.Join(got, "|"), tc.want)
		}
	}
}
