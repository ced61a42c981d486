package scrape

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/parser/event"
)

// start is the exporter's start second in every test.
const start = storetest.Start

// line is one parser event as a test writes it.
type line struct {
	rule   int
	labels []string
	now    int64   // processing second
	wall   int64   // wall-clock second; 0 means now
	at     int64   // event second; 0 for a processing-time rule
	value  float64 // 0 means 1
}

func (l line) event() *parser.Event { return storetest.Event(l.rule, l.at, l.value, l.labels...) }

func feed(k *store.Sink, lines []line) {
	for _, l := range lines {
		wall := l.wall
		if wall == 0 {
			wall = l.now
		}
		k.SetNow(l.now, wall)
		k.Event(l.event())
	}
}

func mustSet(t testing.TB, cfg *config.Config, prev *store.Set) *store.Set {
	t.Helper()
	s, err := store.NewSetWith(cfg, prev, store.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// collectorAt reads set at the second *now points to.
func collectorAt(set func() *store.Set, now *int64) *Collector {
	return NewCollector(Options{Set: set, Now: func() int64 { return *now }, Start: start})
}

func fixed(s *store.Set) func() *store.Set { return func() *store.Set { return s } }

// mustCount counts the samples a scrape of c shows in the families named (all if none).
func mustCount(t testing.TB, c *Collector, names ...string) int {
	t.Helper()
	n, err := testutil.GatherAndCount(scraped(c), names...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// scraped is what a scrape of c shows, as metric families: its self-metrics gathered by a
// pedantic registry and the rule families, served by the handler and parsed back.
func scraped(c *Collector) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return metrictest.Scraped(exporter.Handler(c, reg, nil))
}

func TestCollect(t *testing.T) {
	requests := storetest.CountRule("http_requests", storetest.MinFive, "status")
	duration := storetest.ValueRule("request_seconds", storetest.TenSec, "method")
	traffic := []line{
		{labels: []string{"200"}, now: 1000},
		{labels: []string{"200"}, now: 1000},
		{labels: []string{"200"}, now: 1000},
		{labels: []string{"500"}, now: 1100},
		{labels: []string{"200"}, now: 1100},
		{labels: []string{"500"}, now: 1100},
		{labels: []string{"200"}, now: 1290},
		{rule: 1, labels: []string{"POST"}, now: 1250, value: 0.25},
		{rule: 1, labels: []string{"GET"}, now: 1295, value: 0.5},
		{rule: 1, labels: []string{"GET"}, now: 1296, value: 1.5},
	}
	cases := []struct {
		name   string
		budget int
		rules  []*config.Rule
		lines  []line
		drops  [][2]int // rule, parser.DropReason
		now    int64
		names  []string
		want   string
	}{{
		name:   "counting rule: total and exact windows",
		budget: 100,
		rules:  []*config.Rule{requests, duration},
		lines:  traffic,
		now:    1300,
		names:  []string{"http_requests_total", "http_requests_window", "http_requests_window_per_second"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 5
http_requests_total{status="500"} 2
# HELP http_requests_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window gauge
http_requests_window{status="200",window="1m"} 1
http_requests_window{status="200",window="5m"} 2
http_requests_window{status="500",window="1m"} 0
http_requests_window{status="500",window="5m"} 2
# HELP http_requests_window_per_second Requests. Per-second rate of matched lines (divided by the seconds observed while fewer than the window) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window_per_second gauge
http_requests_window_per_second{status="200",window="1m"} 0.016666666666666666
http_requests_window_per_second{status="200",window="5m"} 0.006666666666666667
http_requests_window_per_second{status="500",window="1m"} 0
http_requests_window_per_second{status="500",window="5m"} 0.006666666666666667
`,
	}, {
		name:   "value rule: sum, events, extrema and mean; empty windows have no extrema",
		budget: 100,
		rules:  []*config.Rule{requests, duration},
		lines:  traffic,
		now:    1300,
		names: []string{"request_seconds_total", "request_seconds_window", "request_seconds_window_events",
			"request_seconds_window_max", "request_seconds_window_min", "request_seconds_window_mean"},
		want: `
# HELP request_seconds_total Request time. Sum of request_time since the exporter started.
# TYPE request_seconds_total counter
request_seconds_total{method="GET"} 2
request_seconds_total{method="POST"} 0.25
# HELP request_seconds_window Request time. Sum of request_time over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window gauge
request_seconds_window{method="GET",window="10s"} 2
request_seconds_window{method="GET",window="1m"} 2
request_seconds_window{method="POST",window="10s"} 0
request_seconds_window{method="POST",window="1m"} 0.25
# HELP request_seconds_window_events Request time. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window_events gauge
request_seconds_window_events{method="GET",window="10s"} 2
request_seconds_window_events{method="GET",window="1m"} 2
request_seconds_window_events{method="POST",window="10s"} 0
request_seconds_window_events{method="POST",window="1m"} 1
# HELP request_seconds_window_max Request time. Largest request_time (absent while the window holds no line) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window_max gauge
request_seconds_window_max{method="GET",window="10s"} 1.5
request_seconds_window_max{method="GET",window="1m"} 1.5
request_seconds_window_max{method="POST",window="1m"} 0.25
# HELP request_seconds_window_min Request time. Smallest request_time (absent while the window holds no line) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window_min gauge
request_seconds_window_min{method="GET",window="10s"} 0.5
request_seconds_window_min{method="GET",window="1m"} 0.5
request_seconds_window_min{method="POST",window="1m"} 0.25
# HELP request_seconds_window_mean Request time. Mean request_time (absent while the window holds no line) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window_mean gauge
request_seconds_window_mean{method="GET",window="10s"} 1
request_seconds_window_mean{method="GET",window="1m"} 1
request_seconds_window_mean{method="POST",window="1m"} 0.25
`,
	}, {
		name:   "series idle longer than the longest window keep their _total and lose their windows",
		budget: 100,
		rules:  []*config.Rule{requests, duration},
		lines:  traffic,
		now:    1401, // 500 last seen at 1100, GET at 1296: both idle longer than 5m and 1m
		names: []string{"http_requests_total", "http_requests_window", "request_seconds_total", "request_seconds_window",
			"logwindow_rule_series", "logwindow_rule_matched_lines_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 5
http_requests_total{status="500"} 2
# HELP http_requests_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window gauge
http_requests_window{status="200",window="1m"} 0
http_requests_window{status="200",window="5m"} 1
# HELP logwindow_rule_matched_lines_total Lines matched by the rule, including lines too old for any window (those of a label set with no live series are in no _total).
# TYPE logwindow_rule_matched_lines_total counter
logwindow_rule_matched_lines_total{rule="http_requests"} 7
logwindow_rule_matched_lines_total{rule="request_seconds"} 3
# HELP logwindow_rule_series Label sets the rule holds, with windows or as kept counters (only _total, after idling past the longest window), the overflow series included.
# TYPE logwindow_rule_series gauge
logwindow_rule_series{rule="http_requests"} 2
logwindow_rule_series{rule="request_seconds"} 2
# HELP request_seconds_total Request time. Sum of request_time since the exporter started.
# TYPE request_seconds_total counter
request_seconds_total{method="GET"} 2
request_seconds_total{method="POST"} 0.25
`,
	}, {
		name:   "label sets past the budget fold into the overflow series",
		budget: 2,
		rules:  []*config.Rule{storetest.CountRule("http_requests", storetest.OneMin, "status", "path")},
		lines: []line{
			{labels: []string{"200", "/"}, now: 1000},
			{labels: []string{"404", "/x"}, now: 1000},
			{labels: []string{"500", "/"}, now: 1001},
			{labels: []string{"200", "/"}, now: 1001},
			{labels: []string{"503", "/y"}, now: 1002},
			{labels: []string{"500", "/"}, now: 1002},
		},
		now:   1002,
		names: []string{"http_requests_total", "logwindow_rule_series", "logwindow_rule_series_limit", "logwindow_series_overflow_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{path="/",status="200"} 2
http_requests_total{path="/x",status="404"} 1
http_requests_total{path="__overflow__",status="__overflow__"} 3
# HELP logwindow_rule_series Label sets the rule holds, with windows or as kept counters (only _total, after idling past the longest window), the overflow series included.
# TYPE logwindow_rule_series gauge
logwindow_rule_series{rule="http_requests"} 3
# HELP logwindow_rule_series_limit The rule's max_series_per_rule; past it, new label sets are folded into the __overflow__ series.
# TYPE logwindow_rule_series_limit gauge
logwindow_rule_series_limit{rule="http_requests"} 2
# HELP logwindow_series_overflow_total Matched lines whose label set was folded into the rule's __overflow__ series because the rule held max_series_per_rule series or the series of all rules held --series.max-bytes.
# TYPE logwindow_series_overflow_total counter
logwindow_series_overflow_total{rule="http_requests"} 3
`,
	}, {
		name:   "a line whose labels read __overflow__ is the overflow series, not a duplicate",
		budget: 1,
		rules:  []*config.Rule{storetest.CountRule("http_requests", storetest.OneMin, "status")},
		lines: []line{
			{labels: []string{store.OverflowValue}, now: 1000},
			{labels: []string{"200"}, now: 1000},
			{labels: []string{"500"}, now: 1000},
			{labels: []string{store.OverflowValue}, now: 1000},
		},
		now:   1000,
		names: []string{"http_requests_total", "logwindow_series_overflow_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 1
http_requests_total{status="__overflow__"} 3
# HELP logwindow_series_overflow_total Matched lines whose label set was folded into the rule's __overflow__ series because the rule held max_series_per_rule series or the series of all rules held --series.max-bytes.
# TYPE logwindow_series_overflow_total counter
logwindow_series_overflow_total{rule="http_requests"} 1
`,
	}, {
		name:   "event time: late lines only in _total, future lines at now, parser drops counted",
		budget: 100,
		rules:  []*config.Rule{storetest.EventRule("http_requests", storetest.OneMin)},
		lines: []line{
			{now: 1300, at: 1310},
			{now: 1300, at: 1241},
			{now: 1300, at: 1240},
			{now: 1300, at: 900},
		},
		drops: [][2]int{{0, int(parser.NoValue)}, {0, int(parser.BadNumber)}, {0, int(parser.BadNumber)}, {0, int(parser.BadTimestamp)}},
		now:   1300,
		names: []string{"http_requests_total", "http_requests_window", "logwindow_rule_dropped_lines_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total 4
# HELP http_requests_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window gauge
http_requests_window{window="1m"} 2
# HELP logwindow_rule_dropped_lines_total Matched lines not counted as is, by reason: no_value, bad_number, bad_timestamp and negative lines are not counted, nor too_large ones (a value that would make a sum of its series too large for a float); late lines (older than the longest window) are in no window, and in a _total only if their label set has a live series; future lines were placed at the current second.
# TYPE logwindow_rule_dropped_lines_total counter
logwindow_rule_dropped_lines_total{reason="bad_number",rule="http_requests"} 2
logwindow_rule_dropped_lines_total{reason="bad_timestamp",rule="http_requests"} 1
logwindow_rule_dropped_lines_total{reason="future",rule="http_requests"} 1
logwindow_rule_dropped_lines_total{reason="late",rule="http_requests"} 2
logwindow_rule_dropped_lines_total{reason="negative",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="no_value",rule="http_requests"} 1
logwindow_rule_dropped_lines_total{reason="too_large",rule="http_requests"} 0
`,
	}, {
		name:   "series holding only late lines give way to live label sets at the budget",
		budget: 2,
		rules:  []*config.Rule{storetest.EventRule("http_requests", storetest.OneMin, "status")},
		lines: []line{
			{labels: []string{"200"}, now: 1300, at: 1200},
			{labels: []string{"404"}, now: 1300, at: 1000},
			{labels: []string{"500"}, now: 1300, at: 1290},
			{labels: []string{"503"}, now: 1300, at: 1300},
			{labels: []string{"500"}, now: 1300, at: 1100}, // late, of a live series
		},
		now: 1300,
		names: []string{"http_requests_total", "logwindow_rule_series", "logwindow_series_overflow_total",
			"logwindow_rule_matched_lines_total", "logwindow_rule_dropped_lines_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="500"} 2
http_requests_total{status="503"} 1
# HELP logwindow_rule_series Label sets the rule holds, with windows or as kept counters (only _total, after idling past the longest window), the overflow series included.
# TYPE logwindow_rule_series gauge
logwindow_rule_series{rule="http_requests"} 2
# HELP logwindow_series_overflow_total Matched lines whose label set was folded into the rule's __overflow__ series because the rule held max_series_per_rule series or the series of all rules held --series.max-bytes.
# TYPE logwindow_series_overflow_total counter
logwindow_series_overflow_total{rule="http_requests"} 0
# HELP logwindow_rule_matched_lines_total Lines matched by the rule, including lines too old for any window (those of a label set with no live series are in no _total).
# TYPE logwindow_rule_matched_lines_total counter
logwindow_rule_matched_lines_total{rule="http_requests"} 5
# HELP logwindow_rule_dropped_lines_total Matched lines not counted as is, by reason: no_value, bad_number, bad_timestamp and negative lines are not counted, nor too_large ones (a value that would make a sum of its series too large for a float); late lines (older than the longest window) are in no window, and in a _total only if their label set has a live series; future lines were placed at the current second.
# TYPE logwindow_rule_dropped_lines_total counter
logwindow_rule_dropped_lines_total{reason="bad_number",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="bad_timestamp",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="future",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="late",rule="http_requests"} 3
logwindow_rule_dropped_lines_total{reason="negative",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="no_value",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="too_large",rule="http_requests"} 0
`,
	}, {
		// A log read from its beginning brings a label set's old lines before its recent
		// ones: _total counts them all.
		name:   "old lines read before recent ones count in the label set's _total",
		budget: 2,
		rules:  []*config.Rule{storetest.EventRule("http_requests", storetest.OneMin, "status")},
		lines: []line{
			{labels: []string{"200"}, now: 1300, at: 700},
			{labels: []string{"200"}, now: 1300, at: 700},
			{labels: []string{"200"}, now: 1300, at: 701},
			{labels: []string{"404"}, now: 1300, at: 702},
			{labels: []string{"200"}, now: 1300, at: 1300},
			{labels: []string{"500"}, now: 1300, at: 1300},
		},
		now:   1300,
		names: []string{"http_requests_total", "http_requests_window", "logwindow_series_overflow_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 4
http_requests_total{status="500"} 1
# HELP http_requests_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window gauge
http_requests_window{status="200",window="1m"} 1
http_requests_window{status="500",window="1m"} 1
# HELP logwindow_series_overflow_total Matched lines whose label set was folded into the rule's __overflow__ series because the rule held max_series_per_rule series or the series of all rules held --series.max-bytes.
# TYPE logwindow_series_overflow_total counter
logwindow_series_overflow_total{rule="http_requests"} 0
`,
	}, {
		name:   "a label set the rule cannot export is skipped and counted, the scrape goes on",
		budget: 100,
		rules:  []*config.Rule{storetest.CountRule("http_requests", storetest.OneMin, "status")},
		lines: []line{
			{labels: []string{"200"}, now: 1000},
			{labels: []string{"200", "extra"}, now: 1000},
		},
		now:   1000,
		names: []string{"http_requests_total", "logwindow_collect_errors_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 1
# HELP logwindow_collect_errors_total Series (once per scrape) and self-metrics left out of scrapes because they could not be exported.
# TYPE logwindow_collect_errors_total counter
logwindow_collect_errors_total 1
`,
	}, {
		name:   "a rule whose families cannot be named (config refuses it) is left out and counted, the others are written",
		budget: 100,
		rules:  []*config.Rule{storetest.CountRule("bad", storetest.OneMin, "window"), storetest.CountRule("http_requests", storetest.OneMin, "status")},
		lines: []line{
			{rule: 0, labels: []string{"x"}, now: 1000},
			{rule: 1, labels: []string{"200"}, now: 1000},
		},
		now:   1000,
		names: []string{"bad_total", "bad_window", "http_requests_total", "logwindow_collect_errors_total"},
		want: `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{status="200"} 1
# HELP logwindow_collect_errors_total Series (once per scrape) and self-metrics left out of scrapes because they could not be exported.
# TYPE logwindow_collect_errors_total counter
logwindow_collect_errors_total 1
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.Config(tc.budget, tc.rules...), nil)
			k := set.NewSink()
			feed(k, tc.lines)
			for _, d := range tc.drops {
				k.Drop(d[0], parser.DropReason(d[1]))
			}
			now := tc.now
			c := collectorAt(fixed(set), &now)
			if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(tc.want), tc.names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHostileLabelValues checks that no label value a log line can carry fails a scrape,
// and that values which differ only in invalid bytes share one series.
func TestHostileLabelValues(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	cases := []struct {
		name   string
		values []string
		want   string // the exported value
		total  int
	}{
		{"invalid UTF-8", []string{"a\xffb", "a\xfeb"}, "a\uFFFDb", 2},
		{"NUL byte", []string{"a\x00b"}, "a\x00b", 1},
		{"64KiB", []string{long}, long, 1},
		{"quotes, backslashes, newlines", []string{"a\"b\\c\nd"}, `a\"b\\c\nd`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.Config(100, storetest.CountRule("http_requests", storetest.OneMin, "path")), nil)
			k := set.NewSink()
			for _, v := range tc.values {
				feed(k, []line{{labels: []string{v}, now: 1000}})
			}
			now := int64(1000)
			want := "# HELP http_requests_total Requests. Matched lines since the exporter started.\n" +
				"# TYPE http_requests_total counter\n" +
				`http_requests_total{path="` + tc.want + `"} ` + strconv.Itoa(tc.total) + "\n"
			if err := testutil.GatherAndCompare(scraped(collectorAt(fixed(set), &now)), strings.NewReader(want), "http_requests_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestGatherAndLint(t *testing.T) {
	set := mustSet(t, storetest.Config(1, storetest.CountRule("http_requests", storetest.MinFive, "status"), storetest.ValueRule("request_seconds", storetest.TenSec)), nil)
	k := set.NewSink()
	feed(k, []line{
		{labels: []string{"200"}, now: 1000},
		{labels: []string{"500"}, now: 1000},
		{rule: 1, now: 1000, value: 0.3},
	})
	now := int64(1001)
	c := NewCollector(Options{
		Set:   fixed(set),
		Now:   func() int64 { return now },
		Start: start,
		Inputs: func() []selfmetric.InputStats {
			return []selfmetric.InputStats{{Input: "nginx", Stats: input.Stats{LinesRead: 3, Files: []input.FileStats{{Path: "/var/log/nginx/access.log", BytesBehind: 10}}}}}
		},
		Reload: func() selfmetric.ReloadStats {
			return selfmetric.ReloadStats{Successful: true, LastSuccess: time.Unix(start, 0)}
		},
	})
	problems, err := testutil.GatherAndLint(scraped(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if n := mustCount(t, c); n == 0 {
		t.Error("collected nothing")
	}
}

func TestSelfMetrics(t *testing.T) {
	cases := []struct {
		name   string
		inputs []selfmetric.InputStats
		reload selfmetric.ReloadStats
		want   string
	}{{
		name: "inputs sharing a name are summed, invalid UTF-8 in paths replaced",
		inputs: []selfmetric.InputStats{
			{Input: "nginx", Stats: input.Stats{LinesRead: 10, TooLong: 1, Rotations: 2, Truncations: 3, Errors: 4,
				ErrorsByReason: map[string]uint64{"open": 3, "symlink": 1}, Formats: map[string]int{"main": 2},
				Files: []input.FileStats{{Path: "/a.log", BytesBehind: 5}, {Path: "/b\xff.log", BytesBehind: 6}}, Unmatched: 5, Backfilling: 2}},
			{Input: "nginx", Stats: input.Stats{LinesRead: 1, Polling: true, Backfilling: 1, Files: []input.FileStats{{Path: "/a.log", BytesBehind: 7}}, Unmatched: 1,
				ErrorsByReason: map[string]uint64{"open": 0, "symlink": 0}, Formats: map[string]int{"main": 1, "upstreaminfo": 1}}},
			{Input: "app", Stats: input.Stats{LinesRead: 2, Errors: 1}},
		},
		reload: selfmetric.ReloadStats{Successful: false, LastSuccess: time.Unix(1500, 500e6)},
		want: `
# HELP logwindow_input_lines_total Complete lines read from the input.
# TYPE logwindow_input_lines_total counter
logwindow_input_lines_total{input="app"} 2
logwindow_input_lines_total{input="nginx"} 11
# HELP logwindow_input_too_long_lines_total Lines skipped because they exceed the line length cap.
# TYPE logwindow_input_too_long_lines_total counter
logwindow_input_too_long_lines_total{input="app"} 0
logwindow_input_too_long_lines_total{input="nginx"} 1
# HELP logwindow_input_rotations_total Rotations (rename and create, delete and recreate, symlink retarget) seen on the input's files.
# TYPE logwindow_input_rotations_total counter
logwindow_input_rotations_total{input="app"} 0
logwindow_input_rotations_total{input="nginx"} 2
# HELP logwindow_input_truncations_total Truncations (copytruncate) seen on the input's files.
# TYPE logwindow_input_truncations_total counter
logwindow_input_truncations_total{input="app"} 0
logwindow_input_truncations_total{input="nginx"} 3
# HELP logwindow_input_errors_total Errors of the input, each logged and retried, by reason: for files watch, list, stat, open, not_regular (a FIFO, a device, a directory), read, symlink (refused: out of the glob's root); for sockets receive, and socket (a unix socket file found removed or replaced, bound again).
# TYPE logwindow_input_errors_total counter
logwindow_input_errors_total{input="app",reason="other"} 1
logwindow_input_errors_total{input="nginx",reason="open"} 3
logwindow_input_errors_total{input="nginx",reason="symlink"} 1
# HELP logwindow_input_polling 1 while the input has no inotify instance (e.g. the per-user instance limit is reached) and sees changes only by polling, up to --input.poll-interval later; a directory whose watch cannot be added is polled too and counted in errors.
# TYPE logwindow_input_polling gauge
logwindow_input_polling{input="app"} 0
logwindow_input_polling{input="nginx"} 1
# HELP logwindow_input_behind_bytes Bytes of the file not read yet.
# TYPE logwindow_input_behind_bytes gauge
logwindow_input_behind_bytes{input="nginx",path="/a.log"} 12
logwindow_input_behind_bytes{input="nginx",path="/b` + "\uFFFD" + `.log"} 6
# HELP logwindow_input_files Files the input follows now (paths with an open file); 0 when its path matches no file, which is logged as a warning at start and on reload.
# TYPE logwindow_input_files gauge
logwindow_input_files{input="app"} 0
logwindow_input_files{input="nginx"} 2
# HELP logwindow_input_warm_start_files Files of the input whose warm start (windows of event-time rules filled from the file's end at start) is still to run; /-/ready waits for 0 until 30 seconds after the start at most (a wait for the storage directory included).
# TYPE logwindow_input_warm_start_files gauge
logwindow_input_warm_start_files{input="app"} 0
logwindow_input_warm_start_files{input="nginx"} 3
# HELP logwindow_input_file_format Files of the input by the log format chosen for them (log_format: auto or a list of candidates); format="(none)": files whose last lines fit no candidate, or whose fewer lines fit none and were followed by none for a minute, or, for a glob of one log_format, whose first lines fit it not.
# TYPE logwindow_input_file_format gauge
logwindow_input_file_format{format="main",input="nginx"} 3
logwindow_input_file_format{format="upstreaminfo",input="nginx"} 1
# HELP logwindow_input_unmatched_lines_total Lines of the input that no rule matched (a line not of the input's format is counted as malformed instead).
# TYPE logwindow_input_unmatched_lines_total counter
logwindow_input_unmatched_lines_total{input="app"} 0
logwindow_input_unmatched_lines_total{input="nginx"} 6
# HELP logwindow_config_last_reload_successful Whether the last configuration load succeeded (1), or was refused or put in force but for inputs that could not start (0).
# TYPE logwindow_config_last_reload_successful gauge
logwindow_config_last_reload_successful 0
# HELP logwindow_config_last_reload_success_timestamp_seconds Unix time of the last successful configuration load.
# TYPE logwindow_config_last_reload_success_timestamp_seconds gauge
logwindow_config_last_reload_success_timestamp_seconds 1500.5
`,
	}, {
		name:   "no input and no successful load yet",
		reload: selfmetric.ReloadStats{},
		want: `
# HELP logwindow_config_last_reload_successful Whether the last configuration load succeeded (1), or was refused or put in force but for inputs that could not start (0).
# TYPE logwindow_config_last_reload_successful gauge
logwindow_config_last_reload_successful 0
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(Options{
				Set:    func() *store.Set { return nil },
				Now:    func() int64 { return start },
				Inputs: func() []selfmetric.InputStats { return tc.inputs },
				Reload: func() selfmetric.ReloadStats { return tc.reload },
			})
			names := []string{"logwindow_input_lines_total", "logwindow_input_too_long_lines_total",
				"logwindow_input_rotations_total", "logwindow_input_truncations_total", "logwindow_input_errors_total",
				"logwindow_input_polling", "logwindow_input_behind_bytes", "logwindow_input_files", "logwindow_input_unmatched_lines_total",
				"logwindow_input_file_format", "logwindow_input_warm_start_files", "logwindow_config_last_reload_successful",
				"logwindow_config_last_reload_success_timestamp_seconds"}
			if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestNewSetErrors(t *testing.T) {
	noWindows := storetest.CountRule("http_requests", storetest.OneMin)
	noWindows.Windows = nil
	cases := []struct {
		name string
		rule *config.Rule
		want string
	}{
		{"no windows", noWindows, `rule "http_requests": no windows`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.NewSetWith(storetest.Config(10, tc.rule), nil, store.SetOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("store.NewSet error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSinkEventAllocs: once a series exists, or the rule's overflow series does, an event
// costs no allocation.
func TestSinkEventAllocs(t *testing.T) {
	cases := []struct {
		name   string
		budget int
		rule   *config.Rule
		labels []string
	}{
		{"count rule", 10, storetest.CountRule("http_requests", storetest.MinFive, "method", "status"), []string{"GET", "200"}},
		{"value rule", 10, storetest.ValueRule("request_seconds", storetest.TenSec, "method", "status"), []string{"GET", "200"}},
		{"no labels", 10, storetest.CountRule("http_requests", storetest.MinFive), nil},
		{"folded into overflow", 1, storetest.CountRule("http_requests", storetest.MinFive, "method", "status"), []string{"GET", "404"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.Config(tc.budget, tc.rule), nil)
			k := set.NewSink()
			feed(k, []line{{labels: []string{"POST", "201"}[:len(tc.labels)], now: start}, {labels: tc.labels, now: start}})
			e := line{labels: tc.labels, value: 0.5}.event()
			if n := testing.AllocsPerRun(100, func() { k.Event(e) }); n != 0 {
				t.Errorf("Event allocates %v times per call", n)
			}
		})
	}
}

// TestRateObservedSince pins how rates count the seconds observed: event-time rules from
// the earlier of the start and the oldest line any event-time rule placed, so that a replay
// of a log from its beginning gives a series first seen near the log's end the rate over
// the whole log; processing-time rules from the start, whatever old lines event-time rules
// placed.
func TestRateObservedSince(t *testing.T) {
	hour := []time.Duration{time.Hour}
	const now = 5_000_000
	cases := []struct {
		name  string
		start int64
		lines []line
		want  string
	}{{
		name:  "event time: a replay observed the whole log",
		start: now,
		lines: []line{
			{labels: []string{"200"}, now: now, at: now - 599},
			{labels: []string{"502"}, now: now, at: now},
		},
		want: `
errors_window_per_second{status="200",window="1h"} 0.0016666666666666668
errors_window_per_second{status="502",window="1h"} 0.0016666666666666668
requests_window_per_second{window="1h"} 0
`,
	}, {
		name:  "processing time: an old event-time line does not stretch the observation",
		start: now - 9,
		lines: []line{
			{labels: []string{"200"}, now: now, at: now - 599},
			{rule: 1, now: now},
		},
		want: `
errors_window_per_second{status="200",window="1h"} 0.0016666666666666668
requests_window_per_second{window="1h"} 0.1
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.Config(10, storetest.EventRule("errors", hour, "status"), storetest.CountRule("requests", hour)), nil)
			feed(set.NewSink(), tc.lines)
			c := NewCollector(Options{Set: fixed(set), Now: func() int64 { return now }, Start: tc.start})
			want := `
# HELP errors_window_per_second Requests. Per-second rate of matched lines (divided by the seconds observed while fewer than the window) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE errors_window_per_second gauge
# HELP requests_window_per_second Requests. Per-second rate of matched lines (divided by the seconds observed while fewer than the window) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE requests_window_per_second gauge
` + tc.want
			if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(want), "errors_window_per_second", "requests_window_per_second"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestClocks: event-time rules are placed, judged, read and expired on the wall clock, the
// clock their lines' times come from; processing-time rules on the processing clock. So a
// wall-clock step makes no line of a new event-time series late or future, and moves
// nothing of processing-time rules.
func TestClocks(t *testing.T) {
	const processing = 100_000
	cases := []struct {
		name       string
		lineWall   int64 // wall second while the lines are written
		scrapeNow  int64
		scrapeWall int64
		want       string
	}{{
		name:       "wall clock stepped back 2h",
		lineWall:   processing - 7200,
		scrapeNow:  processing,
		scrapeWall: processing - 7200,
		want: `
events_window{status="200",window="1m"} 2
requests_window{window="1m"} 1
logwindow_rule_series{rule="events"} 1
logwindow_rule_series{rule="requests"} 1
`,
	}, {
		name:       "wall clock stepped forward 2h",
		lineWall:   processing + 7200,
		scrapeNow:  processing,
		scrapeWall: processing + 7200,
		want: `
events_window{status="200",window="1m"} 2
requests_window{window="1m"} 1
logwindow_rule_series{rule="events"} 1
logwindow_rule_series{rule="requests"} 1
`,
	}, {
		name:       "event-time series expire on the wall clock",
		lineWall:   processing,
		scrapeNow:  processing,
		scrapeWall: processing + 61,
		want: `
requests_window{window="1m"} 1
logwindow_rule_series{rule="events"} 1
logwindow_rule_series{rule="requests"} 1
`,
	}, {
		name:       "processing-time series expire on the processing clock",
		lineWall:   processing,
		scrapeNow:  processing + 61,
		scrapeWall: processing,
		want: `
events_window{status="200",window="1m"} 2
requests_window{window="1m"} 0
logwindow_rule_series{rule="events"} 1
logwindow_rule_series{rule="requests"} 1
`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.Config(10, storetest.EventRule("events", storetest.OneMin, "status"), storetest.CountRule("requests", storetest.OneMin)), nil)
			feed(set.NewSink(), []line{
				{labels: []string{"200"}, now: processing, wall: tc.lineWall, at: tc.lineWall - 10},
				{labels: []string{"200"}, now: processing, wall: tc.lineWall, at: tc.lineWall},
				{rule: 1, now: processing, wall: tc.lineWall},
			})
			c := NewCollector(Options{
				Set:   fixed(set),
				Now:   func() int64 { return tc.scrapeNow },
				Wall:  func() int64 { return tc.scrapeWall },
				Start: processing,
			})
			want := `
# HELP events_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE events_window gauge
# HELP requests_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE requests_window gauge
# HELP logwindow_rule_series Label sets the rule holds, with windows or as kept counters (only _total, after idling past the longest window), the overflow series included.
# TYPE logwindow_rule_series gauge
` + tc.want
			if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(want), "events_window", "requests_window", "logwindow_rule_series"); err != nil {
				t.Error(err)
			}
			for i := range set.NumRules() {
				r := set.Rule(i)
				if d := r.Drops(); d.Late != 0 || d.Future != 0 {
					t.Errorf("rule %s: %d late and %d future lines, want none", r.Config().Name, d.Late, d.Future)
				}
			}
		})
	}
}

// TestParserDropReasons: every reason the parser gives has a counter and a name of its
// own, and a reason the exporter does not know is ignored, not a panic. A new parser
// reason fails this test until it has a name of its own.
func TestParserDropReasons(t *testing.T) {
	if got := parser.DropReason(event.NumDropReasons).String(); got != "unknown" {
		t.Errorf("parser.DropReason(%d) is %q: the exporter does not count it", event.NumDropReasons, got)
	}
	set := mustSet(t, storetest.Config(10, storetest.CountRule("http_requests", storetest.OneMin)), nil)
	k := set.NewSink()
	names := map[string]bool{reasonLate: true, reasonFuture: true, reasonTooLarge: true}
	for i := range event.NumDropReasons {
		why := parser.DropReason(i)
		if names[why.String()] || why.String() == "unknown" {
			t.Errorf("parser.DropReason(%d) is named %q, not a name of its own", i, why)
		}
		names[why.String()] = true
		k.Drop(0, why)
	}
	k.Drop(0, parser.DropReason(event.NumDropReasons))
	for i, got := range set.Rule(0).Drops().Parser {
		if got != 1 {
			t.Errorf("%v drops = %d, want 1", parser.DropReason(i), got)
		}
	}
}
