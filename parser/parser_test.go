package parser

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// record is one Sink call in a comparable form.
type record struct {
	Rule    string
	Labels  string // name=value pairs, comma separated, in rule order
	Value   float64
	Time    int64
	HasTime bool
	Drop    string
}

func (r record) String() string {
	if r.Drop != "" {
		return fmt.Sprintf("%s drop %s", r.Rule, r.Drop)
	}
	return fmt.Sprintf("%s{%s} %g t=%d/%v", r.Rule, r.Labels, r.Value, r.Time, r.HasTime)
}

// recorder is a Sink keeping every call; it also checks the Event invariants the store
// relies on, since every test goes through it.
type recorder struct {
	t     testing.TB
	rules []*config.Rule
	got   []record
}

func (r *recorder) Event(e *Event) {
	rule := r.rules[e.Rule]
	if len(e.Labels) != len(rule.Labels) {
		r.t.Fatalf("rule %s: %d label values for %d labels", rule.Name, len(e.Labels), len(rule.Labels))
	}
	if !bytes.Equal(e.Key, bytes.Join(e.Labels, []byte{0xff})) {
		r.t.Fatalf("rule %s: key %q is not the labels %q joined by 0xff", rule.Name, e.Key, e.Labels)
	}
	pairs := make([]string, len(e.Labels))
	for i, v := range e.Labels {
		if !utf8.Valid(v) || len(v) > MaxLabelValueLen {
			r.t.Fatalf("rule %s: label value %q is not valid UTF-8 within the cap", rule.Name, v)
		}
		pairs[i] = rule.Labels[i].Name + "=" + string(v)
	}
	r.got = append(r.got, record{Rule: rule.Name, Labels: strings.Join(pairs, ","), Value: e.Value, Time: e.Time, HasTime: e.HasTime})
}

func (r *recorder) Drop(rule int, reason DropReason) {
	r.got = append(r.got, record{Rule: r.rules[rule].Name, Drop: reason.String()})
}

func (r *recorder) take() []record {
	got := r.got
	r.got = nil
	return got
}

// validLabel is s with each byte that is not part of valid UTF-8 replaced by U+FFFD, as
// Go reads a string's runes and encoding/json decodes a string: what a label has of it.
func validLabel(s string) string { return string([]rune(s)) }

func mustParse(t testing.TB, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func loadExample(t testing.TB) *config.Config {
	t.Helper()
	c, err := config.Load("../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadRegexExample is the example's rules in their regex form (bench/), whose NGINX_ACCESS
// pattern names the captures a few tests and benchmarks build on.
func loadRegexExample(t testing.TB) *config.Config {
	t.Helper()
	c, err := config.Load("../bench/example-rules-regex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// matchers runs a test on the parser of each engine (log format scanners, fastmatch and
// plain regexp): they must agree.
var matchers = []struct {
	name   string
	engine engine
}{{"scanner", viaScanner}, {"fastmatch", viaFastmatch}, {"regexp", viaRegexp}}

// parseOnEachMatcher parses the line of each of n cases with the parser built on each
// matcher (scanner, fastmatch and plain regexp), in a subtest named after the matcher and
// the case, and hands check what the parser emitted.
func parseOnEachMatcher(t *testing.T, rules []*config.Rule, input string, n int, name, line func(i int) string, check func(t *testing.T, i int, got []record)) {
	t.Helper()
	for _, m := range matchers {
		p, err := build(rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			t.Run(m.name+"/"+name(i), func(t *testing.T) {
				rec := &recorder{t: t, rules: rules}
				p.Parse(input, []byte(line(i)), rec)
				check(t, i, rec.got)
			})
		}
	}
}

const mar1 = 1709294400 // 01/Mar/2024:12:00:00 +0000

// TestExampleRules checks every rule of example-rules.yaml against lines of nginx's
// combined format and of the main format with timings that the generator writes.
func TestExampleRules(t *testing.T) {
	c := loadExample(t)
	const (
		req   = "nginx_http_requests"
		errs  = "nginx_http_server_errors"
		body  = "nginx_http_response_body_bytes"
		dur   = "nginx_http_request_duration_seconds"
		upstr = "nginx_http_upstream_response_time_seconds"
		cli   = "nginx_http_clients"
		// The path rules rank their path label (top:), so their events carry no label.
		paths    = "nginx_http_path_requests"
		pathErrs = "nginx_http_path_server_errors"
	)
	ev := func(rule, labels string, v float64, at int64) record {
		return record{Rule: rule, Labels: labels, Value: v, Time: at, HasTime: true}
	}
	drop := func(rule string, r DropReason) record { return record{Rule: rule, Drop: r.String()} }
	tests := []struct {
		name string
		line string
		want []record
	}{
		{"main", `23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 200 460 "-" "Mozilla/5.0 (X11; Linux x86_64)" 0.022 0.019`, []record{
			ev(req, "method=GET,status=200,status_class=2xx", 1, mar1),
			ev(cli, "status_class=2xx", 1, mar1),
			ev(body, "status_class=2xx", 460, mar1),
			ev(dur, "status_class=2xx", 0.022, mar1),
			ev(upstr, "", 0.019, mar1),
			ev(paths, "", 1, mar1),
		}},
		{"main, served by nginx itself (upstream -)", `91.1.2.3 - - [01/Mar/2024:12:00:00 +0000] "GET /static/js/app.1f2e.js HTTP/2.0" 304 0 "https://shop.example.com/" "curl/8.5.0" 0.001 -`, []record{
			ev(req, "method=GET,status=304,status_class=3xx", 1, mar1),
			ev(cli, "status_class=3xx", 1, mar1),
			ev(body, "status_class=3xx", 0, mar1),
			ev(dur, "status_class=3xx", 0.001, mar1),
			ev(paths, "", 1, mar1),
		}},
		{"main, retried upstream, query string, user, zone", `10.0.0.1 - alice [01/Mar/2024:13:00:01 +0100] "POST /api/v1/checkout?x=1&y=2 HTTP/1.1" 502 173 "-" "okhttp/4.12.0" 0.045 0.004, 0.041`, []record{
			ev(req, "method=POST,status=502,status_class=5xx", 1, mar1+1),
			ev(errs, "status=502", 1, mar1+1),
			ev(cli, "status_class=5xx", 1, mar1+1),
			ev(body, "status_class=5xx", 173, mar1+1),
			ev(dur, "status_class=5xx", 0.045, mar1+1),
			ev(upstr, "", 0.004, mar1+1), // the first upstream's time
			ev(paths, "", 1, mar1+1),
			ev(pathErrs, "", 1, mar1+1),
		}},
		{"main, internal redirect", `10.0.0.1 - - [01/Mar/2024:12:00:02 +0000] "HEAD /healthz HTTP/1.1" 200 0 "-" "kube-probe/1.29" 0.010 0.25 : 0.5`, []record{
			ev(req, "method=HEAD,status=200,status_class=2xx", 1, mar1+2),
			ev(cli, "status_class=2xx", 1, mar1+2),
			ev(body, "status_class=2xx", 0, mar1+2),
			ev(dur, "status_class=2xx", 0.010, mar1+2),
			ev(upstr, "", 0.25, mar1+2),
			ev(paths, "", 1, mar1+2),
		}},
		// A line may end before the format's timings; the rules over them filter it out.
		{"combined", `93.184.216.34 - - [01/Mar/2024:12:00:03 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "Mozilla/5.0"`, []record{
			ev(req, "method=GET,status=200,status_class=2xx", 1, mar1+3),
			ev(cli, "status_class=2xx", 1, mar1+3),
			ev(body, "status_class=2xx", 612, mar1+3),
			ev(paths, "", 1, mar1+3),
		}},
		{"combined and $request_time, 5xx", `93.184.216.34 - - [01/Mar/2024:12:00:03 +0000] "DELETE /api/v1/cart HTTP/2.0" 503 197 "https://x.example/" "python-requests/2.31.0" 1.5`, []record{
			ev(req, "method=DELETE,status=503,status_class=5xx", 1, mar1+3),
			ev(errs, "status=503", 1, mar1+3),
			ev(cli, "status_class=5xx", 1, mar1+3),
			ev(body, "status_class=5xx", 197, mar1+3),
			ev(dur, "status_class=5xx", 1.5, mar1+3),
			ev(paths, "", 1, mar1+3),
			ev(pathErrs, "", 1, mar1+3),
		}},
		{"unparsable request time", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-" 0.0.1 0.001`, []record{
			ev(req, "method=GET,status=200,status_class=2xx", 1, mar1),
			ev(cli, "status_class=2xx", 1, mar1),
			ev(body, "status_class=2xx", 5, mar1),
			drop(dur, BadNumber),
			ev(upstr, "", 0.001, mar1),
			ev(paths, "", 1, mar1),
		}},
		{"bad timestamp", `10.0.0.1 - - [32/Foo/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-" 0.002 0.001`, []record{
			drop(req, BadTimestamp), drop(cli, BadTimestamp), drop(body, BadTimestamp), drop(dur, BadTimestamp), drop(upstr, BadTimestamp), drop(paths, BadTimestamp),
		}},
		// nginx answered it: it counts, with no method or path.
		{"request nginx could not parse", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "-" 400 0 "-" "-" 0.000 -`, []record{
			ev(req, "method=,status=400,status_class=4xx", 1, mar1),
			ev(cli, "status_class=4xx", 1, mar1),
			ev(body, "status_class=4xx", 0, mar1),
			ev(dur, "status_class=4xx", 0, mar1),
			ev(paths, "", 1, mar1),
		}},
		{"error log line", `2024/03/01 12:00:00 [error] 12#12: *1 open() "/usr/share/nginx/html/x" failed (2: No such file or directory)`, nil},
		// Nothing may follow the format: a line with a field more than it does not fit.
		{"text after the format", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-" 0.002 0.001 "10.1.1.1"`, nil},
		// A line may end before $request_time: a field in its place (main's forwarded-for)
		// is read as it, and is no number.
		{"main format's forwarded-for where $request_time is", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-" "10.1.1.1"`, []record{
			ev(req, "method=GET,status=200,status_class=2xx", 1, mar1),
			ev(cli, "status_class=2xx", 1, mar1),
			ev(body, "status_class=2xx", 5, mar1),
			drop(dur, BadNumber),
			ev(paths, "", 1, mar1),
		}},
		{"empty", ``, nil},
	}
	parseOnEachMatcher(t, c.Rules, "nginx", len(tests),
		func(i int) string { return tests[i].name }, func(i int) string { return tests[i].line },
		func(t *testing.T, i int, got []record) {
			// Rules of one regex (here, one format) report together: in rule order
			// within a group, group after group.
			if !reflect.DeepEqual(byRule(c.Rules, got), tests[i].want) {
				t.Errorf("got  %v\nwant %v", got, tests[i].want)
			}
		})
}

// byRule sorts records into the order of their rules.
func byRule(rules []*config.Rule, rs []record) []record {
	index := func(name string) int {
		return slices.IndexFunc(rules, func(r *config.Rule) bool { return r.Name == name })
	}
	slices.SortStableFunc(rs, func(a, b record) int { return index(a.Rule) - index(b.Rule) })
	return rs
}

// TestExampleRulesOnGeneratedLog runs the example rules over the generator's log, whose
// every line is a request with timings; the expected counts come from reading the lines
// without the regex.
func TestExampleRulesOnGeneratedLog(t *testing.T) {
	lines := nginxlog.Lines(t, 20000, 3)
	c := loadExample(t)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"nginx_http_requests":                 len(lines),
		"nginx_http_clients":                  len(lines),
		"nginx_http_response_body_bytes":      len(lines),
		"nginx_http_request_duration_seconds": len(lines),
		"nginx_http_path_requests":            len(lines),
	}
	for _, l := range lines {
		proto := bytes.Index(l, []byte(" HTTP/"))
		status := l[proto+bytes.IndexByte(l[proto:], '"')+2]
		if status == '5' {
			want["nginx_http_server_errors"]++
			want["nginx_http_path_server_errors"]++
		}
		timings := bytes.Fields(l[bytes.LastIndex(l, []byte(`" `))+2:])
		if c := timings[1][0]; c >= '0' && c <= '9' {
			want["nginx_http_upstream_response_time_seconds"]++
		}
	}
	if want["nginx_http_server_errors"] == 0 || want["nginx_http_upstream_response_time_seconds"] == 0 {
		t.Fatalf("the log has no 5xx or no upstream times (%v): the filters would go untested", want)
	}
	rec := &recorder{t: t, rules: c.Rules}
	got := map[string]int{}
	for _, l := range lines {
		p.Parse("nginx", l, rec)
		for _, r := range rec.take() {
			if r.Drop != "" {
				t.Fatalf("%s on %q", r, l)
			}
			got[r.Rule]++
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events per rule %v, want %v", got, want)
	}
}

// TestExampleUsesFastmatch guards the performance of the shipped rules: one group, the
// format's, on fastmatch (a format fastmatch refused would quietly cost 10x).
func TestExampleUsesFastmatch(t *testing.T) {
	p, err := New(loadExample(t).Rules)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.groups) != 1 || p.groups[0].format == nil || p.groups[0].m.viaRegexp {
		t.Errorf("%d groups, the first with format %v on regexp %v; want one group, the format's, on fastmatch", len(p.groups), p.groups[0].format != nil, p.groups[0].m.viaRegexp)
	}
}

func TestValues(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: v
    match: '^(?:v=(?P<v>[^ ]*))?(?: t=(?P<t>.*))?$'
    value: v
`)
	tests := []struct {
		line string
		want record
	}{
		{"v=42", record{Rule: "v", Value: 42}},
		{"v=1.5e3", record{Rule: "v", Value: 1500}},
		{"v=-1.5e3", record{Rule: "v", Drop: "negative"}},
		{"v=-1", record{Rule: "v", Drop: "negative"}},
		{"v=-0", record{Rule: "v", Value: 0}},
		{"v=-0.000", record{Rule: "v", Value: 0}},
		{"v=-1e-400", record{Rule: "v", Value: 0}}, // below the smallest float: 0
		{"v=.5", record{Rule: "v", Value: 0.5}},
		{"v=-", record{Rule: "v", Drop: "no_value"}},
		{"v=", record{Rule: "v", Drop: "no_value"}},
		{" t=x", record{Rule: "v", Drop: "no_value"}}, // the group did not participate
		{"v=--", record{Rule: "v", Drop: "bad_number"}},
		{"v=12ms", record{Rule: "v", Drop: "bad_number"}},
		{"v=NaN", record{Rule: "v", Drop: "bad_number"}},
		{"v=+Inf", record{Rule: "v", Drop: "bad_number"}},
		{"v=1e999", record{Rule: "v", Drop: "bad_number"}},
		{"v=0.004,", record{Rule: "v", Drop: "bad_number"}},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if want := []record{tests[i].want}; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

// timedAt is what a line of rule counted at its own time, unix, is parsed as.
func timedAt(rule string, unix int64) []record {
	return []record{{Rule: rule, Value: 1, Time: unix, HasTime: true}}
}

// badTime is what a line of rule whose time does not parse is parsed as.
func badTime(rule string) []record { return []record{{Rule: rule, Drop: "bad_timestamp"}} }

func TestTimestamps(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: nginx
    match: '^\[(?P<t>[^\]]*)\]'
    timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}
  - name: iso
    match: '^(?P<t>[^ ]+) iso'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05.999Z07:00'}
  - name: nozone
    match: '^(?P<t>.+) nozone$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05'}
  - name: newyork
    match: '^(?P<t>.+) nozone$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05', location: America/New_York}
  - name: milli
    match: '^(?P<t>[^ ]+) milli$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05.000Z07:00'}
  - name: nano
    match: '^(?P<t>[^ ]+) nano$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05.000000000Z'}
  - name: comma
    match: '^(?P<t>.+) comma$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05,000000', location: Europe/Berlin}
`)
	// Two rules of one match read one capture with one layout in two zones: each its own.
	zoned := func(utc, newYork int64) []record {
		return append(timedAt("nozone", utc), timedAt("newyork", newYork)...)
	}
	const jul1 = mar1 + 122*86400 // 2024-07-01 12:00:00 UTC
	tests := []struct {
		line string
		want []record
	}{
		{"[01/Mar/2024:12:00:00 +0000]", timedAt("nginx", mar1)},
		{"[01/Mar/2024:12:00:00 +0000]", timedAt("nginx", mar1)}, // from the cache
		{"[01/Mar/2024:14:30:00 +0230]", timedAt("nginx", mar1)}, // offsets that are not whole hours
		{"[01/Mar/2024:07:00:00 -0500]", timedAt("nginx", mar1)},
		{"[01/Mar/2024:12:00:59 +0000]", timedAt("nginx", mar1+59)},
		{"[]", badTime("nginx")},
		{"[-]", badTime("nginx")},
		{"[01/Mar/2024:12:00:00]", badTime("nginx")},
		{"[01/Mar/2024:12:00:00]", badTime("nginx")}, // a cached failure stays a failure
		{"2024-03-01T12:00:00.250Z iso", timedAt("iso", mar1)},
		{"2024-03-01T13:00:00+01:00 iso", timedAt("iso", mar1)},
		{"2024-03-01 12:00:01 nozone", zoned(mar1+1, mar1+1+5*3600)}, // read as UTC; in New York, EST
		{"2024-07-01 12:00:00 nozone", zoned(jul1, jul1+4*3600)},     // EDT in summer
		{"2024-07-01 12:00:00 nozone", zoned(jul1, jul1+4*3600)},     // from the cache
		// A layout that writes a fraction of a second with a fixed number of digits (.000,
		// ,000000) reads a time with any number of them, or none, as .999 does: the line
		// counts at its second, which the fraction does not change. A log whose writer trims
		// a fraction's zeros (Go's RFC3339Nano) or leaves a whole second's out (Python's
		// isoformat) lost those lines as bad_timestamp, a tenth of them at nine digits.
		{"2024-03-01T12:00:00.123Z milli", timedAt("milli", mar1)},
		{"2024-03-01T12:00:00.5Z milli", timedAt("milli", mar1)},
		{"2024-03-01T12:00:00.123456Z milli", timedAt("milli", mar1)},
		{"2024-03-01T12:00:00Z milli", timedAt("milli", mar1)},
		{"2024-03-01T13:00:00.999+01:00 milli", timedAt("milli", mar1)},
		{"2024-03-01T12:00:00.12 nano", badTime("nano")}, // its Z missing
		{"2024-03-01T12:00:00.12345678Z nano", timedAt("nano", mar1)},
		{"2024-03-01T12:00:00Z nano", timedAt("nano", mar1)},
		{"2024-03-01 13:00:00,123456 comma", timedAt("comma", mar1)},
		{"2024-03-01 13:00:00 comma", timedAt("comma", mar1)},
		{"2024-03-01 13:00:00.1 comma", timedAt("comma", mar1)},
		{"2024-03-01T12:00:00.Z milli", badTime("milli")}, // a point without digits
		{"2024-03-01T12:00:00.12aZ milli", badTime("milli")},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if !reflect.DeepEqual(got, tests[i].want) {
			t.Errorf("%q: got %v, want %v", tests[i].line, got, tests[i].want)
		}
	})
}

// TestTimeISO8601Zulu: a $time_iso8601 read by a log format's own layout, text or JSON,
// takes UTC written as Z (as proxies and JSON loggers write it where nginx writes
// +00:00), in lower case too, as RFC 3339 allows (its t as well), and so does a layout
// given with a numeric offset; any other letter is no offset.
func TestTimeISO8601Zulu(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: text, path: /a, log_format: '$time_iso8601 $status'}
  - {name: json, path: /b, log_format: '{"t":"$time_iso8601","s":"$status"}', log_format_escape: json}
rules:
  - {name: text, inputs: [text], timestamp: {capture: time_iso8601}}
  - {name: json, inputs: [json], timestamp: {capture: time_iso8601}}
  - name: given
    match: '^(?P<t>[^ ]+) given$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05-07:00'}
`)
	const at = 1796014800 // 2026-11-30T05:00:00Z
	tests := []struct {
		input, line string
		want        []record
	}{
		{"text", "2026-11-30T05:00:00+00:00 200", timedAt("text", at)},
		{"text", "2026-11-30T05:00:00Z 200", timedAt("text", at)},
		{"text", "2026-11-30T05:00:00z 200", timedAt("text", at)},
		{"text", "2026-11-30t05:00:00z 200", timedAt("text", at)},
		{"text", "2026-11-30T06:00:00+01:00 200", timedAt("text", at)},
		{"text", "2026-11-30T05:00:00 200", badTime("text")},
		{"text", "2026-11-30T05:00:00X 200", badTime("text")},
		{"text", "2026-11-30x05:00:00Z 200", badTime("text")},
		{"text", "2026-11-30T05:00:60z 200", badTime("text")}, // no leap second at 05:00
		{"text", "2026-12-31t23:59:60z 200", timedAt("text", 1798761599)},
		{"json", `{"t":"2026-11-30T05:00:00Z","s":"200"}`, timedAt("json", at)},
		{"json", `{"t":"2026-11-30T05:00:00+00:00","s":"200"}`, timedAt("json", at)},
		{"", "2026-11-30T05:00:00Z given", timedAt("given", at)},
		{"", "2026-11-30T05:00:00z given", timedAt("given", at)},
	}
	for _, m := range matchers {
		p, err := build(c.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			t.Run(m.name+"/"+tc.line, func(t *testing.T) {
				rec := &recorder{t: t, rules: c.Rules}
				p.Parse(tc.input, []byte(tc.line), rec)
				if !reflect.DeepEqual(rec.got, tc.want) {
					t.Errorf("got %v, want %v", rec.got, tc.want)
				}
			})
		}
	}
}

// TestLeapSecond: a time at a leap second (23:59:60 UTC, as a clock that follows UTC
// writes it) is read as second 59 of its minute, which Go's time.Parse alone refuses as
// out of range: the line counts, at the last second before the next minute, rather than
// being dropped as bad_timestamp. Only 60 is read so, and only in the last minute of a UTC
// day, the one minute a leap second is inserted in (23:59:60 UTC is 05:29:60 in +05:30,
// 18:59:60 in New York in winter): 12:34:60 is no time any clock writes, and a line with
// it is a bad timestamp, as any other second, or minute, out of range is.
func TestLeapSecond(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: utc
    match: '^(?P<t>[^ ]+) utc$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z'}
  - name: rfc3339
    match: '^(?P<t>[^ ]+) rfc$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05.999999999Z07:00'}
  - name: nginx
    match: '^\[(?P<t>[^\]]*)\]'
    timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}
  - name: compact
    match: '^(?P<t>\d+) compact$'
    timestamp: {capture: t, layout: '20060102150405'}
  - name: unpadded
    match: '^(?P<t>.+) unpadded$'
    timestamp: {capture: t, layout: '2006-01-02 15:4:5', location: America/New_York}
`)
	const leap = 1483228799 // 2016-12-31T23:59:59Z; 23:59:60 came after it
	tests := []struct {
		line string
		want []record
	}{
		{"2016-12-31T23:59:60Z utc", timedAt("utc", leap)},
		{"2016-12-31T23:59:60Z utc", timedAt("utc", leap)}, // from the cache
		{"2016-12-31T23:59:59Z utc", timedAt("utc", leap)},
		{"2017-01-01T00:00:00Z utc", timedAt("utc", leap+1)},
		{"2016-12-31T23:59:60.999Z rfc", timedAt("rfc3339", leap)},
		{"2017-01-01T05:29:60+05:30 rfc", timedAt("rfc3339", leap)},
		{"[31/Dec/2016:23:59:60 +0000]", timedAt("nginx", leap)},
		{"20161231235960 compact", timedAt("compact", leap)},
		{"2016-12-31 18:59:60 unpadded", timedAt("unpadded", leap)}, // EST
		{"2016-12-31T12:34:60Z utc", badTime("utc")},
		{"2016-12-31T23:58:60Z utc", badTime("utc")},
		{"2016-12-31T22:59:60Z utc", badTime("utc")},
		{"2016-12-31T23:59:60+01:00 rfc", badTime("rfc3339")},
		{"2016-12-31 23:59:60 unpadded", badTime("unpadded")}, // 04:59:60 UTC
		{"[01/Jan/2017:05:29:60 +0530]", timedAt("nginx", leap)},
		{"2016-06-30T23:59:60Z utc", timedAt("utc", 1467331199)}, // none was inserted then, but any UTC day may end with one
		{"2016-12-31T23:59:61Z utc", badTime("utc")},
		{"2016-12-31T23:59:99Z utc", badTime("utc")},
		{"2016-12-31T23:60:00Z utc", badTime("utc")},
		{"2016-12-31T23:59:60 utc", badTime("utc")}, // its Z missing: bad whatever the second
		{"2016-12-31T23:59:60.5Z rfc", timedAt("rfc3339", leap)},
		{"2016-12-31T23:59:60.5+0100 rfc", badTime("rfc3339")},
		{"[31/Dec/2016:23:59:60]", badTime("nginx")},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if !reflect.DeepEqual(got, tests[i].want) {
			t.Errorf("got %v, want %v", got, tests[i].want)
		}
	})
}

// TestZoneAbbreviations: a layout reading a zone abbreviation (MST) reads those of the
// rule's location, UTC and GMT; any other (GMT+1 too) is a bad timestamp,
// which Go's time parser alone reads at offset 0: CET an hour off, PST eight. An
// abbreviation is only known in its zone, and several zones write one (IST, CST).
func TestZoneAbbreviations(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: utc
    match: '^(?P<t>.+) utc$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST'}
  - name: berlin
    match: '^(?P<t>.+) berlin$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST', location: Europe/Berlin}
  - name: newyork
    match: '^(?P<t>.+) newyork$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST', location: America/New_York}
  - name: leap
    match: '^(?P<t>.+) leap$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05 MST'}
  - name: offset
    match: '^(?P<t>.+) offset$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05 -0700 MST'}
`)
	const jul1 = mar1 + 122*86400 // 2024-07-01 12:00:00 UTC
	tests := []struct {
		line string
		want []record
	}{
		{"2024-03-01 12:00:00 UTC utc", timedAt("utc", mar1)},
		{"2024-03-01 12:00:00 GMT utc", timedAt("utc", mar1)},
		{"2024-03-01 13:00:00 GMT+1 utc", badTime("utc")}, // Go's parser: UTC's instant; Etc/GMT+1: UTC-1
		{"2024-03-01 07:00:00 GMT-5 utc", badTime("utc")},
		{"2024-03-01 13:00:00 CET utc", badTime("utc")},
		{"2024-03-01 13:00:00 CET utc", badTime("utc")}, // a cached failure stays one
		{"2024-03-01 04:00:00 PST utc", badTime("utc")},
		{"2024-03-01 13:00:00 +01 utc", badTime("utc")}, // a numeric name, also read at 0
		{"2024-03-01 13:00:00 CET berlin", timedAt("berlin", mar1)},
		{"2024-07-01 14:00:00 CEST berlin", timedAt("berlin", jul1)},
		{"2024-03-01 12:00:00 UTC berlin", timedAt("berlin", mar1)},
		{"2024-03-01 12:00:00 GMT berlin", timedAt("berlin", mar1)},
		{"2024-03-01 07:00:00 EST berlin", badTime("berlin")},
		{"2024-03-01 07:00:00 EST newyork", timedAt("newyork", mar1)},
		{"2024-07-01 08:00:00 EDT newyork", timedAt("newyork", jul1)},
		{"2024-03-01 08:00:00 EDT newyork", timedAt("newyork", mar1)}, // an abbreviation out of its season reads its offset
		{"2024-03-01 04:00:00 PST newyork", badTime("newyork")},
		{"2016-12-31T23:59:60 UTC leap", timedAt("leap", 1483228799)},
		{"2017-01-01T00:59:60 CET leap", badTime("leap")},
		{"2024-03-01 12:00:00 GMT+0 utc", timedAt("utc", mar1)}, // names of offset 0, read right
		{"2024-03-01 12:00:00 GMT-00 utc", timedAt("utc", mar1)},
		{"2024-03-01 12:00:00 +00 utc", timedAt("utc", mar1)},
		{"2024-03-01 12:00:00 -00 berlin", timedAt("berlin", mar1)},
		{"2024-03-01 12:00:00 -0000 newyork", timedAt("newyork", mar1)},
		{"2024-03-01 13:00:00 +0100 CET offset", timedAt("offset", mar1)}, // the offset says it (time.Time's String)
		{"2024-03-01 07:00:00 -0500 EST offset", timedAt("offset", mar1)},
		{"2024-03-01 04:00:00 -0800 PST offset", timedAt("offset", mar1)},
		{"2024-03-01 13:00:00 +0100 +01 offset", timedAt("offset", mar1)},
		{"2024-03-01 12:00:00 +0000 UTC offset", timedAt("offset", mar1)},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if !reflect.DeepEqual(got, tests[i].want) {
			t.Errorf("%q: got %v, want %v", tests[i].line, got, tests[i].want)
		}
	})
}

// TestRepeatedHour: in the hour a zone repeats when its clocks go back, a log written in
// local time without an offset gives each time twice, first at the summer offset, then
// at the winter one. Read in order, a line of that hour is read at the offset that puts it
// nearer the line before it: the second time through the hour the lines go on from the
// first's end rather than being placed an hour back, where no window shorter than an
// hour holds them. A layout with a zone name reads the line's own, whatever came before.
//
// Lines read as they are written (Session.SetWall) are read in the repeated hour at the
// offset that puts them nearer the clock, not ahead of it, when the line before is not
// minutes from them: a quiet log's line of the second time through half an hour or more
// after the first's last goes on at the clock rather than an hour back, and so do the
// lines after it; a start in the first time through reads it at the clock rather than an
// hour ahead. Lines minutes apart still go on from the line before, as a backlog of the
// first time read during the second does.
func TestRepeatedHour(t *testing.T) {
	// A rule a zone: its name ends its lines, its layout and zone read the time before.
	var rules strings.Builder
	rules.WriteString("rules:\n")
	for _, r := range []struct{ name, layout, zone string }{
		{"ny", "2006-01-02 15:04:05", "America/New_York"},
		{"sydney", "2006-01-02 15:04:05", "Australia/Sydney"},
		{"named", "2006-01-02 15:04:05 MST", "America/New_York"},
		{"lordhowe", "2006-01-02 15:04:05", "Australia/Lord_Howe"},
	} {
		fmt.Fprintf(&rules, "  - name: %s\n    match: '^(?P<t>.+) %[1]s$'\n    timestamp: {capture: t, layout: '%s', location: %s}\n", r.name, r.layout, r.zone)
	}
	c := mustParse(t, rules.String())
	utc := func(s string) int64 {
		u, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return u.Unix()
	}
	for _, run := range []struct {
		name  string
		lines []string
		want  []string // each line's time, UTC; "" for a bad timestamp
		walls []string // the wall clock's second as each line is read, UTC; none when not live
	}{
		{"new york", []string{
			"2026-11-01 00:59:59 ny", "2026-11-01 01:00:00 ny", "2026-11-01 01:59:59 ny",
			"2026-11-01 01:00:00 ny", "2026-11-01 01:00:00 ny", "2026-11-01 01:30:00 ny", "2026-11-01 02:00:00 ny",
		}, []string{
			"2026-11-01T04:59:59Z", "2026-11-01T05:00:00Z", "2026-11-01T05:59:59Z",
			"2026-11-01T06:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z",
		}, nil},
		// Go reads this hour at the winter offset where New York's reads at the summer one.
		{"sydney", []string{
			"2026-04-05 01:59:59 sydney", "2026-04-05 02:30:00 sydney", "2026-04-05 02:59:59 sydney",
			"2026-04-05 02:00:00 sydney", "2026-04-05 03:00:00 sydney",
		}, []string{
			"2026-04-04T14:59:59Z", "2026-04-04T15:30:00Z", "2026-04-04T15:59:59Z",
			"2026-04-04T16:00:00Z", "2026-04-04T17:00:00Z",
		}, nil},
		{"the offset named", []string{
			"2026-11-01 01:59:00 EST named", "2026-11-01 01:05:00 EDT named", "2026-11-01 01:06:00 EST named",
		}, []string{
			"2026-11-01T06:59:00Z", "2026-11-01T05:05:00Z", "2026-11-01T06:06:00Z",
		}, nil},
		// Away from the repeated hour the line before does not count.
		{"an hour apart", []string{
			"2026-11-01 00:59:59 ny", "2026-11-01 01:59:59 ny", "2026-11-01 00:30:00 ny", "2026-11-01 03:00:00 ny",
		}, []string{
			"2026-11-01T04:59:59Z", "2026-11-01T05:59:59Z", "2026-11-01T04:30:00Z", "2026-11-01T08:00:00Z",
		}, nil},
		// A line whose time does not parse is no line before: the one before it still is.
		// Read at Go's reading, the summer offset, the rest of the hour went an hour back.
		{"a bad time between", []string{
			"2026-11-01 00:59:59 ny", "2026-11-01 01:59:59 ny", "2026-11-01 01:00:00 ny", "2026-11-01 01:00:61 ny", "2026-11-01 01:10:00 ny",
		}, []string{
			"2026-11-01T04:59:59Z", "2026-11-01T05:59:59Z", "2026-11-01T06:00:00Z", "", "2026-11-01T06:10:00Z",
		}, nil},
		// With no line before (a start, a reload), the later reading, whichever Go gives:
		// right the second time through; the first time through, ahead of the clock, a
		// line is placed at the second it is read rather than left out of the windows
		// shorter than an hour.
		{"starting in the second time", []string{
			"2026-11-01 01:30:00 ny", "2026-11-01 01:45:00 ny", "2026-11-01 02:00:00 ny",
		}, []string{
			"2026-11-01T06:30:00Z", "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z",
		}, nil},
		{"starting in the first time", []string{
			"2026-04-05 02:30:00 sydney", "2026-04-05 02:59:59 sydney", "2026-04-05 02:00:00 sydney",
		}, []string{
			"2026-04-04T16:30:00Z", "2026-04-04T16:59:59Z", "2026-04-04T16:00:00Z",
		}, nil},
		// Lord Howe's clocks go back by half an hour.
		{"lord howe", []string{
			"2026-04-05 01:20:00 lordhowe", "2026-04-05 01:40:00 lordhowe", "2026-04-05 01:55:00 lordhowe",
			"2026-04-05 01:35:00 lordhowe", "2026-04-05 01:50:00 lordhowe", "2026-04-05 02:05:00 lordhowe",
		}, []string{
			"2026-04-04T14:20:00Z", "2026-04-04T14:40:00Z", "2026-04-04T14:55:00Z",
			"2026-04-04T15:05:00Z", "2026-04-04T15:20:00Z", "2026-04-04T15:35:00Z",
		}, nil},
		{"read live, a quiet log", []string{
			"2026-11-01 00:50:00 ny", "2026-11-01 01:40:00 ny", "2026-11-01 01:15:00 ny", "2026-11-01 01:16:00 ny",
		}, []string{
			"2026-11-01T04:50:00Z", "2026-11-01T05:40:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:16:00Z",
		}, []string{
			"2026-11-01T04:50:00Z", "2026-11-01T05:40:00Z", "2026-11-01T06:15:00Z", "2026-11-01T06:16:00Z",
		}},
		{"read live, starting in the first time", []string{
			"2026-04-05 02:30:00 sydney", "2026-04-05 02:45:00 sydney",
		}, []string{
			"2026-04-04T15:30:00Z", "2026-04-04T15:45:00Z",
		}, []string{
			"2026-04-04T15:30:00Z", "2026-04-04T15:45:00Z",
		}},
		{"read live, starting in the second time", []string{
			"2026-11-01 01:30:00 ny",
		}, []string{
			"2026-11-01T06:30:00Z",
		}, []string{
			"2026-11-01T06:30:00Z",
		}},
		// The later reading is nearer the clock, but more than foldNear ahead of it.
		{"read live, a line of the first time read 40 minutes late", []string{
			"2026-11-01 01:10:00 ny",
		}, []string{
			"2026-11-01T05:10:00Z",
		}, []string{
			"2026-11-01T05:50:00Z",
		}},
		// Ahead, but by less than foldNear: the earlier reading is an hour behind.
		{"read live, a writer's clock two minutes ahead in the second time", []string{
			"2026-11-01 01:32:00 ny",
		}, []string{
			"2026-11-01T06:32:00Z",
		}, []string{
			"2026-11-01T06:30:00Z",
		}},
		{"read live, a backlog of the first time read in the second", []string{
			"2026-11-01 01:50:00 ny", "2026-11-01 01:59:00 ny", "2026-11-01 01:01:00 ny",
		}, []string{
			"2026-11-01T05:50:00Z", "2026-11-01T05:59:00Z", "2026-11-01T06:01:00Z",
		}, []string{
			"2026-11-01T06:10:00Z", "2026-11-01T06:10:00Z", "2026-11-01T06:10:00Z",
		}},
	} {
		for _, m := range matchers {
			t.Run(run.name+"/"+m.name, func(t *testing.T) {
				p, err := build(c.Rules, m.engine)
				if err != nil {
					t.Fatal(err)
				}
				s := p.NewSession()
				for i, line := range run.lines {
					read := ""
					if run.walls != nil {
						s.SetWall(utc(run.walls[i]))
						read = " read at " + run.walls[i]
					}
					rec := &recorder{t: t, rules: c.Rules}
					s.ParseWrapped("", []byte(line), nil, rec)
					if run.want[i] == "" {
						if len(rec.got) != 1 || rec.got[0].Drop != BadTimestamp.String() {
							t.Errorf("line %d %q%s: %v; want a bad timestamp", i, line, read, rec.got)
						}
						continue
					}
					if len(rec.got) != 1 || !rec.got[0].HasTime || rec.got[0].Time != utc(run.want[i]) {
						t.Errorf("line %d %q%s: %v, want a time of %s (%d)", i, line, read, rec.got, run.want[i], utc(run.want[i]))
					}
				}
			})
		}
	}
}

func TestLabelValues(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: l
    match: '^(?P<a>[^|]*)\|(?P<b>[^|]*)(?:\|(?P<c>.*))?$'
    labels:
      a: '${a}'
      b: 'pre-${b}-post'
      c: '${c}$$'
`)
	long := strings.Repeat("x", MaxLabelValueLen+10)
	// 341 three-byte runes end at byte 1023; the next one would cross the cap.
	runes := strings.Repeat("€", MaxLabelValueLen/3+5)
	tests := []struct {
		name string
		line string
		want string
	}{
		{"plain", "GET|200|x", "a=GET,b=pre-200-post,c=x$"},
		{"group not taken", "GET|200", "a=GET,b=pre-200-post,c=$"},
		{"empty values", "||", "a=,b=pre--post,c=$"},
		{"each invalid UTF-8 byte becomes U+FFFD", "a\xff\xfeb|\xc3|ok", "a=a\uFFFD\uFFFDb,b=pre-\uFFFD-post,c=ok$"},
		{"0xff cannot fake a separator", "x\xffy|z", "a=x\uFFFDy,b=pre-z-post,c=$"},
		{"valid non-ASCII kept", "été|日本|ø", "a=été,b=pre-日本-post,c=ø$"},
		{"capped", long + "|1|", "a=" + long[:MaxLabelValueLen] + ",b=pre-1-post,c=$"},
		{"capped at a rune boundary", runes + "|1|", "a=" + runes[:MaxLabelValueLen/3*3] + ",b=pre-1-post,c=$"},
		{"cap counts the template", "a|" + long + "|", "a=a,b=" + ("pre-" + long)[:MaxLabelValueLen] + ",c=$"},
	}
	parseOnEachMatcher(t, c.Rules, "", len(tests),
		func(i int) string { return tests[i].name }, func(i int) string { return tests[i].line },
		func(t *testing.T, i int, got []record) {
			if len(got) != 1 || got[0].Labels != tests[i].want {
				t.Errorf("got %v, want labels %s", got, tests[i].want)
			}
		})
}

func TestAppendValidUTF8(t *testing.T) {
	tests := []string{"", "abc", "\xff", "a\xff\xfe\xfdb", "\xe2\x82", "\xe2\x82\xac", "\uFFFD\xff", "\xf0\x9f\x98", "x\xc3"}
	for _, in := range tests {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			if got, want := string(appendValidUTF8(nil, []byte(in))), validLabel(in); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestInputs(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: web, path: /a}
  - {name: api, path: /b}
  - {path: /c}
rules:
  - {name: any, match: 'x'}
  - {name: web_only, match: 'x', inputs: [web]}
  - {name: api_web, match: 'x', inputs: [api, web]}
  - {name: api_only, match: 'y', inputs: [api]}
`)
	tests := []struct {
		input string
		line  string
		want  []string
	}{
		{"web", "xy", []string{"any", "web_only", "api_web"}},
		{"api", "xy", []string{"any", "api_web", "api_only"}},
		{"", "xy", []string{"any"}},
		{"other", "y", nil},
	}
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.input+"/"+tt.line, func(t *testing.T) {
			rec := &recorder{t: t, rules: c.Rules}
			p.Parse(tt.input, []byte(tt.line), rec)
			var got []string
			for _, r := range rec.got {
				got = append(got, r.Rule)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWhere(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: w
    match: '^(?P<s>[0-9]+)(?: (?P<u>[^ ]+))?$'
    where: {s: '^5', u: '^(?:[a-z]+)$|^$'}
`)
	tests := []struct {
		line string
		want bool
	}{
		{"503 abc", true},
		{"503", true}, // u did not participate: it reads as empty
		{"403 abc", false},
		{"503 ABC", false},
		{"15 abc", false},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if matched := len(got) == 1; matched != tests[i].want {
			t.Errorf("matched = %v (%v), want %v", matched, got, tests[i].want)
		}
	})
}

// countingMatcher counts the lines a group's matcher is run on.
type countingMatcher struct {
	matcher
	n *int
}

func (c countingMatcher) Match(line []byte, caps []int) bool {
	*c.n++
	return c.matcher.Match(line, caps)
}

// TestSharedMatch checks that rules with the same expanded regex cost one match per line,
// however many there are, and that a different regex gets its own group.
func TestSharedMatch(t *testing.T) {
	var b strings.Builder
	b.WriteString("patterns:\n  P: '(?P<w>[a-z]+) (?P<n>[0-9]+)'\nrules:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  - {name: r%d, match: '^%%{P}$', labels: {w: '${w}'}, value: n}\n", i)
	}
	b.WriteString("  - {name: other, match: '^(?P<w>[a-z]+) (?P<n>[0-9]+)$'}\n")
	c := mustParse(t, b.String())
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.groups) != 2 || len(p.groups[0].rules) != 20 || len(p.groups[1].rules) != 1 {
		t.Fatalf("groups: %d, want 20 rules sharing one and 1 in another", len(p.groups))
	}
	runs := 0
	p.groups[0].parse.matcher = countingMatcher{p.groups[0].parse.matcher, &runs}
	rec := &recorder{t: t, rules: c.Rules}
	for range 5 {
		p.Parse("", []byte("abc 12"), rec)
	}
	if runs != 5 || len(rec.got) != 5*21 {
		t.Errorf("%d regex runs and %d events for 5 lines, want 5 and %d", runs, len(rec.got), 5*21)
	}
}

func TestRequiredLiteral(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`^(?P<ip>[^ ]+) \[(?P<t>[^\]]+)\] "GET `, `] "GET `},
		{`level=(error|warn) code=\d+`, `level=`},
		{`(?P<x>abc)def[0-9]`, `abcdef`},
		{`x(?:ab)+y`, `ab`},
		{`(?:hello){2,}`, `hello`},
		{`a(?:bcd)?e`, `a`},
		{`(?i)error`, ``},
		{`error|warn`, ``},
		{`[0-9]+`, ``},
		{`ab\x{FFFD}cd`, ``},
		{`(?m)^abc$\ndef`, "abc\ndef"},
		{`level=error`, `level=error`},
		{`^$`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			if got := string(requiredLiteral(regexp.MustCompile(tt.expr))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompileEngines checks which matcher compile gives a regex: fastmatch's when it
// takes the regex, else regexp's behind the prefilter of its required literal, which
// is worked out only then.
func TestCompileEngines(t *testing.T) {
	tests := []struct {
		name, expr string
		eng        engine
		viaRegexp  bool
		required   string
	}{
		{"fastmatch takes it", `^GET (\S+) status=200`, viaFastmatch, false, ""},
		{"fastmatch refuses it", `(a*)*done`, viaFastmatch, true, "done"},
		{"regexp asked for", `^GET (\S+) status=200`, viaRegexp, true, " status=200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compile(regexp.MustCompile(tt.expr), tt.eng, nil)
			if c.viaRegexp != tt.viaRegexp {
				t.Fatalf("viaRegexp = %v, want %v (matcher %T)", c.viaRegexp, tt.viaRegexp, c.matcher)
			}
			m, ok := c.matcher.(*regexpMatcher)
			if ok != tt.viaRegexp {
				t.Fatalf("matcher %T", c.matcher)
			}
			if ok && string(m.required) != tt.required {
				t.Errorf("prefilter %q, want %q", m.required, tt.required)
			}
			if !c.Match([]byte("GET /x status=200 done"), make([]int, c.capsNeeded(true))) {
				t.Error("no match")
			}
		})
	}
}

func TestNewRejectsBrokenRules(t *testing.T) {
	ok := mustParse(t, "rules: [{name: a, match: '(?P<x>.)', value: x, labels: {l: '${x}'}}]").Rules[0]
	combined, err := logformat.ParseCandidate("combined")
	if err != nil {
		t.Fatal(err)
	}
	with := func(edit func(r *config.Rule)) *config.Rule {
		r := *ok
		r.Labels = []config.Label{{Name: "l", Template: config.Template{{Capture: 1}}}}
		edit(&r)
		return &r
	}
	tests := []struct {
		name string
		rule *config.Rule
	}{
		{"nil rule", nil},
		{"no regex", with(func(r *config.Rule) { r.Regexp = nil })},
		// Only a variant for any JSON object reads no regex nor field.
		{"no regex and no capture", with(func(r *config.Rule) { r.Regexp, r.Labels, r.ValueCapture = nil, nil, 0 })},
		{"no regex and no capture, of a text format", with(func(r *config.Rule) {
			r.Regexp, r.Labels, r.ValueCapture = nil, nil, 0
			r.LogFormat = combined
		})},
		{"value out of range", with(func(r *config.Rule) { r.ValueCapture = 2 })},
		{"label out of range", with(func(r *config.Rule) { r.Labels[0].Template[0].Capture = 5 })},
		{"where out of range", with(func(r *config.Rule) {
			r.Where = []config.Where{{CaptureName: "y", Capture: -1, Regexp: regexp.MustCompile("x")}}
		})},
		{"timestamp out of range", with(func(r *config.Rule) { r.Timestamp = &config.Timestamp{Capture: 9, Layout: "2006"} })},
	}
	if _, err := New([]*config.Rule{ok}); err != nil {
		t.Fatalf("a valid rule was refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New([]*config.Rule{ok, tt.rule}); err == nil || !strings.HasPrefix(err.Error(), "rule 1: ") {
				t.Errorf("err = %v, want one naming rule 1", err)
			}
		})
	}
}

// TestConcurrentParse runs one parser from several goroutines (one per input, as the
// pipeline does); under -race it proves the per-call buffers are not shared.
func TestConcurrentParse(t *testing.T) {
	c := loadExample(t)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 200 460 "-" "Mozilla/5.0" 0.022 0.019`,
		`10.0.0.1 - alice [01/Mar/2024:13:00:01 +0100] "POST /x?y HTTP/1.1" 502 173 "-" "okhttp/4.12.0" 0.045 0.004, 0.041`,
		`93.184.216.34 - - [01/Mar/2024:12:00:03 +0000] "GET /i\xff\xfe HTTP/1.1" 404 612 "-" "Mozilla/5.0"`,
	}
	want := make([][]record, len(lines))
	for i, l := range lines {
		rec := &recorder{t: t, rules: c.Rules}
		p.Parse("nginx", []byte(l), rec)
		want[i] = rec.got
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := &recorder{t: t, rules: c.Rules}
			for i := range 2000 {
				k := (i + g) % len(lines)
				p.Parse("nginx", []byte(lines[k]), rec)
				if got := rec.take(); !reflect.DeepEqual(got, want[k]) {
					errs <- fmt.Sprintf("goroutine %d line %d: got %v, want %v", g, k, got, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// nopSink keeps nothing, so AllocsPerRun sees only what Parse allocates.
type nopSink struct{ events, drops int }

func (s *nopSink) Event(*Event)         { s.events++ }
func (s *nopSink) Drop(int, DropReason) { s.drops++ }
func (s *nopSink) reset() (events, drops int) {
	e, d := s.events, s.drops
	s.events, s.drops = 0, 0
	return e, d
}

func TestParseDoesNotAllocate(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop buffers on purpose")
	}
	c := loadExample(t)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	lines := [][]byte{
		[]byte(`23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 200 460 "-" "Mozilla/5.0" 0.022 0.019`),
		[]byte(`23.124.205.19 - - [01/Mar/2024:12:00:01 +0000] "GET /api/v1/cart HTTP/1.1" 502 4 "-" "Mozilla/5.0" 0.5 0.004, 0.041`),
		[]byte(`93.184.216.34 - - [01/Mar/2024:12:00:03 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "Mozilla/5.0"`),
		[]byte(`2024/03/01 12:00:00 [error] 12#12: *1 open() failed`),
	}
	sink := &nopSink{}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		p.Parse("nginx", lines[i%len(lines)], sink)
		i++
	})
	if events, _ := sink.reset(); events == 0 || allocs != 0 {
		t.Errorf("%v allocs per line over %d events, want 0", allocs, events)
	}
}

// fullSink writes down everything of each call, items included, one string per call.
type fullSink struct {
	rules []*config.Rule
	got   []string
}

func (s *fullSink) Event(e *Event) {
	s.got = append(s.got, fmt.Sprintf("%s key=%q labels=%q items=%q %g t=%d/%v",
		s.rules[e.Rule].Name, e.Key, e.Labels, e.Items, e.Value, e.Time, e.HasTime))
}

func (s *fullSink) Drop(rule int, reason DropReason) {
	s.got = append(s.got, s.rules[rule].Name+" drop "+reason.String())
}

// TestWorkSharedBetweenRules: the rules of a group render equal labels and items, and
// read a time capture, once per line and use the result again. Each rule must still see
// exactly what it sees when it is parsed alone: with other labels in between, in another
// group with the same templates, after a filter or a drop, on lines that are ASCII, valid
// UTF-8, invalid UTF-8 or too long for a label.
func TestWorkSharedBetweenRules(t *testing.T) {
	c := mustParse(t, `
rules:
  - {name: a1, match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]', labels: {x: '${a}', y: 'b-${b}'}}
  - name: a2
    match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]'
    labels: {other: '${a}', y: 'b-${b}'}
    timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}
  - name: b_only
    match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]'
    labels: {x: '${b}'}
    timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}
  - {name: filtered, match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]', where: {b: '^5'}, labels: {x: '${b}'}}
  - name: a_again
    match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]'
    labels: {x: '${a}', y: 'b-${b}'}
    timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}
  - {name: none, match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]'}
  - {name: a_last, match: '^(?P<a>\S*) (?P<b>\S*) \[(?P<t>[^\]]*)\]', labels: {x: '${a}', y: 'b-${b}'}}
  - {name: swapped, match: '^(?P<b>\S*) (?P<a>\S*) \[', labels: {x: '${a}', y: 'b-${b}'}}
`)
	// Items as the exporter's top and distinct rules have them, equal on some rules.
	c.Rules[0].Items = []config.Item{{Template: c.Rules[0].Labels[0].Template, Label: true}}
	c.Rules[4].Items = []config.Item{{Template: c.Rules[4].Labels[0].Template, Label: true}}
	c.Rules[6].Items = []config.Item{{Template: c.Rules[6].Labels[0].Template}}
	c.Rules[7].Items = []config.Item{{Template: c.Rules[7].Labels[0].Template, Label: true}}
	long := strings.Repeat("é", MaxLabelValueLen)
	lines := []string{
		"u1 500 [01/Mar/2024:12:00:00 +0000]",
		"u2 200 [01/Mar/2024:12:00:00 +0000]",
		"u2 200 [01/Mar/2024:12:00:01 +0000]",
		"u3 503 [not a time]",
		"u3 503 [not a time]",
		"été 日本 [01/Mar/2024:12:00:01 +0000]",
		"a\xffb 5\xfe [01/Mar/2024:12:00:02 +0000]",
		long + " 5" + long + " [01/Mar/2024:12:00:02 +0000]",
		"u4 404 [01/Mar/2024:12:00:03 +0000]",
	}
	for _, m := range matchers {
		t.Run(m.name, func(t *testing.T) {
			all, err := build(c.Rules, m.engine)
			if err != nil {
				t.Fatal(err)
			}
			alone := make([]*Parser, len(c.Rules))
			for i, r := range c.Rules {
				if alone[i], err = build([]*config.Rule{r}, m.engine); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range lines {
				got := &fullSink{rules: c.Rules}
				all.Parse("", []byte(l), got)
				want := &fullSink{}
				for i, r := range c.Rules {
					want.rules = []*config.Rule{r}
					alone[i].Parse("", []byte(l), want)
				}
				slices.Sort(got.got)
				slices.Sort(want.got)
				if !slices.Equal(got.got, want.got) {
					t.Fatalf("%q:\n got  %q\n want %q", l, got.got, want.got)
				}
			}
		})
	}
}

// TestIsASCII puts one byte from 0x80 up at every position of lines of every length up to
// past three steps of two blocks of the word-at-a-time check, whose last block (or word) overlaps the
// ones before it. A byte from 0x80 up follows each line in its array: nothing past the
// end may be read as the line's.
func TestIsASCII(t *testing.T) {
	for n := range 200 {
		line := append(bytes.Repeat([]byte{0x7f}, n), 0xff)[:n]
		if !isASCII(line) {
			t.Fatalf("%d ASCII bytes: not ASCII", n)
		}
		for i := range n {
			for _, b := range []byte{0x80, 0xc3, 0xff} {
				line[i] = b
				if isASCII(line) {
					t.Fatalf("%#x at %d of %d: ASCII", b, i, n)
				}
			}
			line[i] = 0x7f
		}
	}
}
