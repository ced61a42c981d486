//go:build unix

package parser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/cputime"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/versus"
)

// parseLoop is the timed part of the benchmarks: one op per line, cycling through lines,
// reported also as lines per second and as CPU time per line.
func parseLoop(b *testing.B, p *Parser, lines [][]byte, sink Sink) {
	b.ReportAllocs()
	cpu0 := cputime.Process(b)
	i := 0
	for b.Loop() {
		p.Parse("nginx", lines[i%len(lines)], sink)
		i++
	}
	cpu := cputime.Process(b) - cpu0
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(i), "cpu-ns/line")
}

// seriesSink does what the store does per event: find the series by m[string(e.Key)] and
// create it (copying the key) when new, so allocations per line count only new series.
type seriesSink struct {
	series []map[string]*float64
	drops  int
}

func newSeriesSink(rules int) *seriesSink {
	s := &seriesSink{series: make([]map[string]*float64, rules)}
	for i := range s.series {
		s.series[i] = map[string]*float64{}
	}
	return s
}

func (s *seriesSink) Event(e *Event) {
	m := s.series[e.Rule]
	sum, ok := m[string(e.Key)]
	if !ok {
		sum = new(float64)
		m[string(e.Key)] = sum
	}
	*sum += e.Value
}

func (s *seriesSink) Drop(int, DropReason) { s.drops++ }

// BenchmarkParseNginx parses gen-nginx-log.py's 100,000 lines with example-rules.yaml,
// on the log format's scanner, on fastmatch and on plain regexp in the same run. One op
// is one line. Every label set is created during a warm-up pass, so the timed passes
// measure lines that make no new series. ratio runs blocks of lines through the scanner's
// parser and fastmatch's in turn and reports fastmatch's time over the scanner's; the
// parser that reads a block first fetches its lines from memory for the other, so
// ratio-fastmatch-first runs them the other way round (scanner over fastmatch).
func BenchmarkParseNginx(b *testing.B) {
	lines := nginxlog.Lines(b, 100000, 1)
	rules := loadExample(b).Rules
	var engines []versus.Engine
	for _, m := range matchers {
		p, err := build(rules, m.engine)
		if err != nil {
			b.Fatal(err)
		}
		sink := warmUp(b, m.name, p, rules, lines)
		b.Run(m.name, func(b *testing.B) { parseLoop(b, p, lines, sink) })
		if m.engine != viaRegexp {
			engines = append(engines, versus.Engine{Name: m.name, Read: func(l []byte) { p.Parse("nginx", l, sink) }})
		}
	}
	versus.Ratio(b, "ratio", lines, engines...)
	versus.Ratio(b, "ratio-fastmatch-first", lines, engines[1], engines[0])
}

// BenchmarkExampleForms parses the same lines with example-rules.yaml, whose input has a
// log_format, and with the same rules in their regex form (bench/), in one run: what
// reading by the format costs against the hand-written regex. ratio runs blocks of lines
// through each in turn, so that a neighbour's load hits both alike, and reports the log
// format's time per line over the regex's.
func BenchmarkExampleForms(b *testing.B) {
	lines := nginxlog.Lines(b, 100000, 1)
	type form struct {
		name string
		p    *Parser
		sink *seriesSink
	}
	var forms []form
	for _, f := range []struct {
		name string
		cfg  *config.Config
	}{{"log_format", loadExample(b)}, {"regex", loadRegexExample(b)}} {
		rules := f.cfg.Rules
		p, err := New(rules)
		if err != nil {
			b.Fatal(err)
		}
		sink := warmUp(b, f.name, p, rules, lines)
		forms = append(forms, form{f.name, p, sink})
	}
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) { parseLoop(b, f.p, lines, f.sink) })
	}
	engines := make([]versus.Engine, len(forms))
	for k, f := range forms {
		engines[k] = versus.Engine{Name: f.name, Read: func(l []byte) { f.p.Parse("nginx", l, f.sink) }}
	}
	versus.Ratio(b, "ratio", lines, engines...)
}

// BenchmarkSharedPattern adds rules over the same pattern: the regex runs once per line
// whatever their number, so each extra rule costs only its own filter, value and labels.
func BenchmarkSharedPattern(b *testing.B) {
	lines := nginxlog.Lines(b, 20000, 2)
	example := loadRegexExample(b)
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			var y strings.Builder
			fmt.Fprintf(&y, "patterns:\n  NGINX_ACCESS: '%s'\nrules:\n", strings.ReplaceAll(example.Patterns["NGINX_ACCESS"], "'", "''"))
			for i := range n {
				fmt.Fprintf(&y, "  - {name: r%d, match: '^%%{NGINX_ACCESS}$', labels: {status: '${status}'}}\n", i)
			}
			c, err := config.Parse([]byte(y.String()), "bench.yaml")
			if err != nil {
				b.Fatal(err)
			}
			p, err := New(c.Rules)
			if err != nil {
				b.Fatal(err)
			}
			sink := newSeriesSink(n)
			for _, l := range lines {
				p.Parse("nginx", l, sink)
			}
			parseLoop(b, p, lines, sink)
		})
	}
}

// BenchmarkRuleCosts splits what example-rules.yaml costs the parser alone, the store
// left out (a sink that keeps nothing). It runs blocks of lines through several parsers in
// turn and reports the time per line of "all", every rule, and the time of each other
// parser over it: "format" has one rule that no line passes (the lines cut by the
// example's log format and nothing else), "without=NAME" every rule but one, so that
// all-ns/line × (1 − its ratio) is what that rule adds to the parse. `go run ./bench
// -without NAME` gives the same rule's cost end to end; what the store and windows add is
// the difference.
func BenchmarkRuleCosts(b *testing.B) {
	lines := nginxlog.Lines(b, 100000, 1)
	example := loadExample(b)
	format, err := config.Parse([]byte(fmt.Sprintf(
		"inputs: [{name: nginx, path: /a, log_format: '%s'}]\nrules:\n  - {name: none, where: {status: '^9'}}\n",
		example.Inputs[0].LogFormat.Text)), "format.yaml")
	if err != nil {
		b.Fatal(err)
	}
	type set struct {
		name  string
		rules []*config.Rule
	}
	sets := []set{{"all", example.Rules}, {"format", format.Rules}}
	for i, r := range example.Rules {
		sets = append(sets, set{"without=" + r.Name, slices.Delete(slices.Clone(example.Rules), i, i+1)})
	}
	engines := make([]versus.Engine, len(sets))
	for k, s := range sets {
		p, err := New(s.rules)
		if err != nil {
			b.Fatal(err)
		}
		sink := &nopSink{}
		for _, l := range lines {
			p.Parse("nginx", l, sink)
		}
		if s.name != "format" && (sink.events == 0 || sink.drops != 0) {
			b.Fatalf("%s: %d events, %d drops", s.name, sink.events, sink.drops)
		}
		engines[k] = versus.Engine{Name: s.name, Read: func(l []byte) { p.Parse("nginx", l, sink) }}
	}
	versus.Ratio(b, "ratio", lines, engines...)
}

// BenchmarkParseFloor is the parse alone (a sink that keeps nothing) of the example's rules
// and of the harness's -like-mtail rules over 20,000 lines in blocks of 200: each op is a
// round over every block, and each block's fastest round is kept, so that the sum of the
// fastest is what a line costs when nothing else takes the core. The parse's time moves
// by several percent with where its scratch's buffers fall (bench/RESULTS.md, the per-rule
// parse), so each round runs parsers of the same rules in eight layouts, made after 0 to 7
// objects more of the scratch's sizes: min-ns/line is the mean of their times, and the
// fastest and the slowest layout's are given beside it. no-status and object are a rule
// reading the request's method and path from the same requests logged in a format without
// $status (every request line checked as nginx checks it) and as JSON objects with their
// status (log_format: [json]).
func BenchmarkParseFloor(b *testing.B) {
	lines := nginxlog.Lines(b, 20000, 1)
	example := loadExample(b)
	var mtail []*config.Rule
	for _, r := range example.Rules {
		if r.Aggregations.Distinct {
			continue
		}
		c := *r
		if c.Top != nil {
			c.Top, c.Labels, c.Items = nil, nil, nil
		}
		mtail = append(mtail, &c)
	}
	var noStatus, objects [][]byte
	for _, l := range lines {
		// The generator's lines are of nginx's main format: "$request" after "] ",
		// $status after it.
		from := bytes.Index(l, []byte(`] "`)) + 2
		to := from + 1 + bytes.IndexByte(l[from+1:], '"')
		status, _, _ := bytes.Cut(l[to+2:], []byte(" "))
		noStatus = append(noStatus, l[:to+1])
		req, _ := json.Marshal(string(l[from+1 : to]))
		objects = append(objects, []byte(fmt.Sprintf(`{"request":%s,"status":%s}`, req, status)))
	}
	requests := func(format string) *config.Config {
		return mustParse(b, "inputs: [{name: nginx, path: /a, log_format: "+format+"}]\n"+
			"rules:\n  - {name: requests, labels: {method: '${request_method}', path: '${uri}'}}\n")
	}
	object := requests("[json]")
	const layouts, block = 8, 200
	var pads [][]byte
	for _, set := range []struct {
		name  string
		rules []*config.Rule
		lines [][]byte
		// formats: the input's candidate formats, whose lines are read as a file's.
		formats []*logformat.Format
	}{
		{"example", example.Rules, lines, nil},
		{"like-mtail", mtail, lines, nil},
		{"no-status", requests(`'$remote_addr - $remote_user [$time_local] "$request"'`).Rules, noStatus, nil},
		{"object", object.Rules, objects, object.Inputs[0].LogFormats},
	} {
		sink := &nopSink{}
		parsers := make([]func([]byte), layouts)
		for k := range parsers {
			for range k {
				for _, size := range []int{64, 192, 256, 384} {
					pads = append(pads, make([]byte, size))
				}
			}
			p, err := New(set.rules)
			if err != nil {
				b.Fatal(err)
			}
			parsers[k] = func(l []byte) { p.Parse("nginx", l, sink) }
			if set.formats != nil {
				s := p.NewSession()
				s.SetFormats(set.formats, NewFiles())
				parsers[k] = func(l []byte) { s.ParseFile("f", "nginx", l, nil, sink, func(bool, bool) {}) }
			}
			parsers[k](set.lines[0]) // its scratch, made now
		}
		b.Run(set.name, func(b *testing.B) {
			best := make([][]time.Duration, layouts)
			for k := range best {
				best[k] = make([]time.Duration, len(set.lines)/block)
				for i := range best[k] {
					best[k][i] = time.Hour
				}
			}
			for b.Loop() {
				for k, parse := range parsers {
					for i := range best[k] {
						t0 := time.Now()
						for _, l := range set.lines[i*block : (i+1)*block] {
							parse(l)
						}
						best[k][i] = min(best[k][i], time.Since(t0))
					}
				}
			}
			per := make([]float64, layouts)
			for k := range best {
				var sum time.Duration
				for _, d := range best[k] {
					sum += d
				}
				per[k] = float64(sum.Nanoseconds()) / float64(len(set.lines))
				if slices.Contains(best[k], time.Hour) {
					b.Fatal("a block was not timed")
				}
			}
			var mean float64
			for _, x := range per {
				mean += x / layouts
			}
			b.ReportMetric(mean, "min-ns/line")
			b.ReportMetric(slices.Min(per), "fastest-layout-ns/line")
			b.ReportMetric(slices.Max(per), "slowest-layout-ns/line")
			if sink.drops != 0 || sink.events == 0 {
				b.Fatalf("%d events, %d drops", sink.events, sink.drops)
			}
		})
	}
	runtime.KeepAlive(pads)
}

// BenchmarkParseFormats parses the same records as text through the example's regex form and as
// JSON and logfmt (written from the text lines' own captures, under the field names of
// example-rules-json.yaml's log_format) through example-rules-json.yaml, in one run.
func BenchmarkParseFormats(b *testing.B) {
	text := nginxlog.Lines(b, 100000, 1)
	example := loadRegexExample(b)
	data, err := os.ReadFile("../example-rules-json.yaml")
	if err != nil {
		b.Fatal(err)
	}
	forms := []struct {
		name  string
		rules string
		lines [][]byte
	}{
		{"text", "", text},
		{"json", string(data), structuredLines(b, example.Rules[0], text, "json")},
		{"logfmt", strings.Replace(string(data), "format: json", "format: logfmt", 1), structuredLines(b, example.Rules[0], text, "logfmt")},
	}
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) {
			rules := example.Rules
			if f.rules != "" {
				rules = mustParse(b, f.rules).Rules
			}
			p, err := New(rules)
			if err != nil {
				b.Fatal(err)
			}
			sink := newSeriesSink(len(rules))
			for _, l := range f.lines {
				p.Parse("nginx", l, sink)
			}
			if sink.drops != 0 || len(sink.series[0]) == 0 {
				b.Fatalf("warm-up: %d drops, %d request series", sink.drops, len(sink.series[0]))
			}
			parseLoop(b, p, f.lines, sink)
		})
	}
}

// structuredLines writes each text line's captures (by the example's regex form) as a JSON
// object or logfmt pairs with the field names of example-rules-json.yaml.
func structuredLines(b *testing.B, r *config.Rule, text [][]byte, format string) [][]byte {
	names := map[string]string{
		"time_local": "time_local", "remote_addr": "remote_addr", "method": "request_method", "path": "request_path",
		"status": "status", "status_class": "status_class", "body_bytes_sent": "body_bytes_sent",
		"request_time": "request_time", "upstream_time": "upstream_response_time", "referer": "http_referer", "user_agent": "http_user_agent",
	}
	out := make([][]byte, 0, len(text))
	for _, l := range text {
		m := r.Regexp.FindSubmatch(l)
		if m == nil {
			b.Fatalf("a generated line the example does not match: %q", l)
		}
		var o []byte
		if format == "json" {
			o = append(o, '{')
		}
		for i, group := range r.Regexp.SubexpNames() {
			key, ok := names[group]
			if !ok {
				continue
			}
			v, _ := json.Marshal(string(m[i]))
			if format == "json" {
				if len(o) > 1 {
					o = append(o, ',')
				}
				k, _ := json.Marshal(key)
				o = append(append(append(o, k...), ':'), v...)
				continue
			}
			if len(o) > 0 {
				o = append(o, ' ')
			}
			o = append(append(append(o, key...), '='), v...)
		}
		if format == "json" {
			o = append(o, '}')
		}
		out = append(out, o)
	}
	return out
}

// BenchmarkJSONExtract reads the fields of example-rules-json.yaml's rules from the same
// JSON lines with the exporter's extractor and with encoding/json: Valid (the validation
// the extractor does too, without reading any field), Unmarshal into a struct of those
// fields, and Unmarshal into a map[string]any. One op is one line. ratio runs blocks of
// lines through each in turn, so that a neighbour's load hits all alike, and reports each
// one's time per line over the extractor's.
func BenchmarkJSONExtract(b *testing.B) {
	lines := structuredLines(b, loadRegexExample(b).Rules[0], nginxlog.Lines(b, 20000, 1), "json")
	data, err := os.ReadFile("../example-rules-json.yaml")
	if err != nil {
		b.Fatal(err)
	}
	fields := mustParse(b, string(data)).Rules[0].Fields
	paths := make([][]string, len(fields))
	for i, f := range fields {
		paths[i] = f.Segments
	}
	x := newJSONExtractor(paths)
	sc := &scratch{}
	caps := make([]int, 2*(len(paths)+1))
	// record holds the fields the rules read; encoding/json skips the others.
	type record struct {
		Method       string `json:"request_method"`
		Status       string `json:"status"`
		StatusClass  string `json:"status_class"`
		BodyBytes    string `json:"body_bytes_sent"`
		RequestTime  string `json:"request_time"`
		UpstreamTime string `json:"upstream_response_time"`
		TimeLocal    string `json:"time_local"`
		RemoteAddr   string `json:"remote_addr"`
		Path         string `json:"request_path"`
	}
	engines := []versus.Engine{
		{Name: "extractor", Read: func(l []byte) { x.extract(l, caps, sc) }},
		{Name: "json.Valid", Read: func(l []byte) { json.Valid(l) }},
		{Name: "json.Unmarshal-struct", Read: func(l []byte) { var r record; _ = json.Unmarshal(l, &r) }},
		{Name: "json.Unmarshal-map", Read: func(l []byte) { var m map[string]any; _ = json.Unmarshal(l, &m) }},
	}
	for _, l := range lines {
		src, ok := x.extract(l, caps, sc)
		var m map[string]any
		if !ok || json.Unmarshal(l, &m) != nil {
			b.Fatalf("not read: %q", l)
		}
		for k, p := range paths {
			if got, want := string(capture(&src, caps, k+1)), m[p[0]]; got != want {
				b.Fatalf("field %s: extractor %q, encoding/json %q", p[0], got, want)
			}
		}
	}
	versus.Run(b, "", lines, engines...)
}

// nodeRules are rules as a node's exporter runs them over its pods' nginx logs, with the
// pod's labels given by extra: path captures or literal text of the same length.
func nodeRules(b *testing.B, extra string) []*config.Rule {
	example := loadExample(b)
	text := `
inputs:
  - name: nginx
    path: /var/log/pods/*_*_*/nginx/*.log
    path_captures: '^/var/log/pods/(?P<namespace>[^_]+)_(?P<pod>[^_]+)_[^/]+/(?P<container>[^/]+)/'
patterns:
  NGINX_ACCESS: '` + strings.ReplaceAll(example.Patterns["NGINX_ACCESS"], "'", "''") + `'
rules:
  - name: nginx_http_requests
    match: '^%{NGINX_ACCESS}$'
    labels: {method: '${method}', status: '${status}', ` + extra + `}
  - name: nginx_http_request_duration_seconds
    match: '^%{NGINX_ACCESS}$'
    value: request_time
    labels: {` + extra + `}
    aggregations: [window, quantiles]
  - name: nginx_http_response_size_bytes
    match: '^%{NGINX_ACCESS}$'
    value: body_bytes_sent
    labels: {status_class: '${status_class}xx', ` + extra + `}
`
	return mustParse(b, text).Rules
}

// BenchmarkPathCaptures is what path captures cost a line: the same rules, labelled by
// namespace, pod and container from path captures or from literal text of those values,
// over the same lines of one file, in one run. One op is one line.
func BenchmarkPathCaptures(b *testing.B) {
	lines := nginxlog.Lines(b, 20000, 1)
	for _, tc := range []struct{ name, extra string }{
		{"literal", `namespace: 'shop', pod: 'web-7d9f8b6c5-x2x4k', container: 'nginx'`},
		{"path", `namespace: '${namespace}', pod: '${pod}', container: '${container}'`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, err := New(nodeRules(b, tc.extra))
			if err != nil {
				b.Fatal(err)
			}
			s := p.NewSession()
			s.SetPath([][]byte{[]byte("nginx"), []byte("shop"), []byte("web-7d9f8b6c5-x2x4k")})
			sink := newSeriesSink(3)
			for _, l := range lines {
				s.ParseWrapped("nginx", l, nil, sink)
			}
			b.ReportAllocs()
			cpu0 := cputime.Process(b)
			i := 0
			for b.Loop() {
				s.ParseWrapped("nginx", lines[i%len(lines)], nil, sink)
				i++
			}
			b.ReportMetric(float64((cputime.Process(b)-cpu0).Nanoseconds())/float64(i), "cpu-ns/line")
		})
	}
}

// BenchmarkRewrite parses the generator's lines through a rule labelled by route and
// status class, with and without rewriting the ids in route, in one run: what a rewrite
// costs per line. The generator's paths have ids of a long tail (26,987 distinct paths in
// its 100,000 lines, 22,897 of them seen once), so about a quarter of the lines bring a
// raw value the cache cannot have seen and pay the regex; the rest are cache hits. Each
// parser reads through a Session, as an input does, warmed by one pass over the lines.
func BenchmarkRewrite(b *testing.B) {
	lines := nginxlog.Lines(b, 100000, 1)
	const head = `inputs: [{name: nginx, path: /a, log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time'}]
rules:
  - name: routes
    labels: {route: '${uri}', status_class: '${status_class}'}
`
	var engines []versus.Engine
	for _, f := range []struct{ name, rewrite string }{
		{"plain", ""},
		{"rewrite", "    rewrite: [{label: route, regex: '/[0-9]+(/|$)', replacement: '/:id$1'}]\n"},
	} {
		c, err := config.Parse([]byte(head+f.rewrite), "bench.yaml")
		if err != nil {
			b.Fatal(err)
		}
		p, err := New(c.Rules)
		if err != nil {
			b.Fatal(err)
		}
		sess := p.NewSession()
		sink := newSeriesSink(1)
		read := func(l []byte) { sess.ParseWrapped("nginx", l, nil, sink) }
		for _, l := range lines {
			read(l)
		}
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cputime.Process(b)
			i := 0
			for b.Loop() {
				read(lines[i%len(lines)])
				i++
			}
			b.ReportMetric(float64((cputime.Process(b)-cpu0).Nanoseconds())/float64(i), "cpu-ns/line")
			b.ReportMetric(float64(len(sink.series[0])), "series")
		})
		engines = append(engines, versus.Engine{Name: f.name, Read: read})
	}
	versus.Ratio(b, "ratio", lines, engines...)
}

// warmUp parses lines once through p into a fresh sink, so that the series exist before
// the timed loop, and fails b unless every line counted without a drop.
func warmUp(b *testing.B, name string, p *Parser, rules []*config.Rule, lines [][]byte) *seriesSink {
	b.Helper()
	sink := newSeriesSink(len(rules))
	for _, l := range lines {
		p.Parse("nginx", l, sink)
	}
	if sink.drops != 0 || len(sink.series[0]) == 0 {
		b.Fatalf("%s: warm-up: %d drops, %d request series", name, sink.drops, len(sink.series[0]))
	}
	return sink
}
