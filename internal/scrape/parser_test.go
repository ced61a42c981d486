package scrape

import (
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/parser"
)

// parserRules are two rules over one regex, a counting and a value rule, as config and
// parser build them: the test checks that the store's keys are the parser's keys.
const parserRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100}
rules:
  - name: http_requests
    help: Requests.
    match: '^(?P<method>[A-Z]+) (?P<status>[0-9]{3}) (?P<time>-?[0-9.]+)$'
    labels: {method: '${method}', status: '${status}'}
  - name: request_seconds
    help: Request time.
    match: '^(?P<method>[A-Z]+) (?P<status>[0-9]{3}) (?P<time>-?[0-9.]+)$'
    value: time
    labels: {method: '${method}'}
`

// parserSet loads rules and returns their parser and a new store.Set, for tests feeding lines
// through parser, sink and collector.
func parserSet(t testing.TB, rules string) (*parser.Parser, *store.Set) {
	t.Helper()
	cfg, p := storetest.ParseRules(t, rules)
	return p, mustSet(t, cfg, nil)
}

func TestParserToCollector(t *testing.T) {
	p, set := parserSet(t, parserRules)
	k := set.NewSink()
	k.SetNow(start, start)
	for _, l := range []string{"GET 200 0.5", "GET 200 1.5", "GET 200 1.2.3", "POST 500 0.25", "GET 200 -1", "not a request"} {
		p.Parse("app", []byte(l), k)
	}
	now := int64(start)
	want := `
# HELP http_requests_total Requests. Matched lines since the exporter started.
# TYPE http_requests_total counter
http_requests_total{method="GET",status="200"} 4
http_requests_total{method="POST",status="500"} 1
# HELP request_seconds_total Request time. Sum of time since the exporter started.
# TYPE request_seconds_total counter
request_seconds_total{method="GET"} 2
request_seconds_total{method="POST"} 0.25
# HELP logwindow_rule_dropped_lines_total Matched lines not counted as is, by reason: no_value, bad_number, bad_timestamp and negative lines are not counted, nor too_large ones (a value that would make a sum of its series too large for a float); late lines (older than the longest window) are in no window, and in a _total only if their label set has a live series; future lines were placed at the current second.
# TYPE logwindow_rule_dropped_lines_total counter
logwindow_rule_dropped_lines_total{reason="bad_number",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="bad_number",rule="request_seconds"} 1
logwindow_rule_dropped_lines_total{reason="bad_timestamp",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="bad_timestamp",rule="request_seconds"} 0
logwindow_rule_dropped_lines_total{reason="future",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="future",rule="request_seconds"} 0
logwindow_rule_dropped_lines_total{reason="late",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="late",rule="request_seconds"} 0
logwindow_rule_dropped_lines_total{reason="negative",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="negative",rule="request_seconds"} 1
logwindow_rule_dropped_lines_total{reason="no_value",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="no_value",rule="request_seconds"} 0
logwindow_rule_dropped_lines_total{reason="too_large",rule="http_requests"} 0
logwindow_rule_dropped_lines_total{reason="too_large",rule="request_seconds"} 0
`
	names := []string{"http_requests_total", "request_seconds_total", "logwindow_rule_dropped_lines_total"}
	if err := testutil.GatherAndCompare(scraped(collectorAt(fixed(set), &now)), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// The parser's key is the store's key, so the next line of a known label set takes the
	// lookup path, not the allocating one.
	p.Parse("app", []byte("GET 200 0.5"), keyCheck{k, set, t})
}

// keyCheck fails the test when the store has no series under the key of an event it was
// just given.
type keyCheck struct {
	*store.Sink
	set *store.Set
	t   *testing.T
}

func (c keyCheck) Event(e *parser.Event) {
	c.Sink.Event(e)
	all := c.set.Rule(e.Rule).Snapshot(nil)
	for _, s := range all {
		if strings.Join(s.Labels(), parser.KeySep) == string(e.Key) {
			return
		}
	}
	c.t.Errorf("rule %d: no series under the parser's key %q", e.Rule, e.Key)
}

// BenchmarkParseAndStore is a line through the parser into the store, both rules matching:
// the store's share of the per-line cost next to BenchmarkSinkEvent.
func BenchmarkParseAndStore(b *testing.B) {
	p, set := parserSet(b, parserRules)
	k := set.NewSink()
	lines := [][]byte{[]byte("GET 200 0.5"), []byte("GET 404 0.01"), []byte("POST 201 1.25"), []byte("GET 200 0.75")}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := start + int64(i>>16)
		k.SetNow(now, now)
		p.Parse("app", lines[i%len(lines)], k)
	}
}
