package status

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// fakeSource explains every line as counted by one rule with the line as its label
// (rewritten from /raw/ and the line), its top value and its distinct text; but the lines
// of otherLines, which it explains as they name, and "too_long", which it tells too long
// for its input.
type fakeSource struct {
	cfg        *config.Config
	input      string // the input of the last line explained
	reloadErr  error
	notRunning []pipeline.NotRunning
}

func (f *fakeSource) Config() *config.Config { return f.cfg }

func (f *fakeSource) ReloadError() error { return f.reloadErr }

func (f *fakeSource) InputsNotRunning() []pipeline.NotRunning { return f.notRunning }

// otherLines are the lines fakeSource explains with other outcomes: a rule reading
// candidate formats that does not apply to the line's, and one whose formats the line
// fits none of.
var otherLines = map[string]explain.Rule{
	"other_format": {Name: "r", Outcome: "other_format", Format: "combined", Lacks: []string{"upstream_addr"}},
	"no_format": {Name: "r", Outcome: "no_match", Miss: &explain.NoMatch{Candidates: []string{"combined", "upstreaminfo"}, LogFormat: "combined",
		End: 3, After: "$remote_addr", Expected: []string{"' '"}}},
	"repeated_hour": {Name: "r", Outcome: "counted", Time: "2026-11-01T06:30:00Z", Repeated: "2026-11-01T05:30:00Z", Zone: "America/New_York",
		Fate: &explain.Fate{Placement: "placed"}},
	"bad_layout": {Name: "r", Outcome: "bad_timestamp", Drop: &explain.DropInfo{Capture: "t", Value: "x", Layout: "2006-01-02 MST"}},
	"unknown_zone": {Name: "r", Outcome: "bad_timestamp", Drop: &explain.DropInfo{Capture: "t", Value: "2026-11-01 CET", Layout: "2006-01-02 MST",
		Zone: "CET", Location: "UTC"}},
}

func (f *fakeSource) Explain(input string, line []byte) explain.Line {
	f.input = input
	if string(line) == "too_long" {
		return explain.TooLongLine(input, line)
	}
	if r, ok := otherLines[string(line)]; ok {
		return explain.Line{Input: input, Text: string(line), Unmatched: true, Rules: []explain.Rule{r}}
	}
	text, raw := string(line), "/raw/"+string(line)
	return explain.Line{Input: input, Text: string(line), Counted: true, Rules: []explain.Rule{{
		Name: "r", Outcome: "counted", Labels: []explain.Label{{Name: "l", Value: text, Raw: &raw}},
		Top: &explain.Label{Name: "t", Value: text}, Distinct: &text,
		Fate: &explain.Fate{Placement: "placed"},
	}}}
}

// TestHandlers checks methods, paths, the body bound and what the tester echoes.
func TestHandlers(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs: [{name: web, path: /x.log}]\nrules: [{name: r, match: 'x'}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{cfg: cfg}
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	Register(mux, Options{Name: "test", Source: src, Gatherer: reg, MetricsPath: "/metrics", LineTester: true})
	big := "input=web&lines=" + strings.Repeat("a", MaxExplainBody)
	cases := []struct {
		name, method, path, body string
		code                     int
		contains                 string
	}{
		{"page", http.MethodGet, "/", "", http.StatusOK, `<option value="web">web</option>`},
		{"page by HEAD", http.MethodHead, "/", "", http.StatusOK, ""},
		{"other path", http.MethodGet, "/nope", "", http.StatusNotFound, ""},
		{"page by POST", http.MethodPost, "/", "", http.StatusMethodNotAllowed, ""},
		{"tester by GET", http.MethodGet, ExplainPath, "", http.StatusMethodNotAllowed, "Use POST"},
		{"tester", http.MethodPost, ExplainPath, "input=web&lines=a%0D%0Ab", http.StatusOK, `<code>l=&#34;b&#34;</code>`},
		{"tester shows the value a label was rewritten from", http.MethodPost, ExplainPath, "input=web&lines=b", http.StatusOK, `<code>l=&#34;b&#34;</code> (rewritten from <code>&#34;/raw/b&#34;</code>)`},
		{"tester shows the top value", http.MethodPost, ExplainPath, "input=web&lines=b", http.StatusOK, `<code class="top">t=&#34;b&#34;</code>`},
		// A label's value is Go-quoted, as --explain writes it: a bidi override would
		// otherwise show it reordered, an invisible character not at all.
		{"tester shows a label's formatting characters escaped", http.MethodPost, ExplainPath, "input=web&lines=" + url.QueryEscape("5\u202e00\u200b"), http.StatusOK,
			`<code>l=&#34;5\u202e00\u200b&#34;</code>`},
		{"tester shows the distinct text", http.MethodPost, ExplainPath, "input=web&lines=b", http.StatusOK, `<code class="distinct">&#34;b&#34;</code>`},
		{"tester says a rule does not apply to the line's format", http.MethodPost, ExplainPath, "input=web&lines=other_format", http.StatusOK,
			"does not apply to the line's log format, <code>combined</code>, which has no <code>upstream_addr</code>"},
		{"tester says the line fits none of the formats", http.MethodPost, ExplainPath, "input=web&lines=no_format", http.StatusOK,
			"the line fits none of the log formats <code>combined, upstreaminfo</code>; it fits <code>combined</code> the farthest"},
		// A time in the hour its zone repeats is said to be so, with the other instant it
		// reads, as --explain says it.
		{"tester says the line's time is in an hour its zone repeats", http.MethodPost, ExplainPath, "input=web&lines=repeated_hour", http.StatusOK,
			"of the hour America/New_York repeats; also 2026-11-01T05:30:00Z"},
		// A time that does not parse names the layout; one whose zone abbreviation the
		// rule's location has no offset for names the abbreviation, not the layout.
		{"tester says a time does not parse with its layout", http.MethodPost, ExplainPath, "input=web&lines=bad_layout", http.StatusOK,
			"<code>t</code> = <code>x</code> does not parse with layout <code>2006-01-02 MST</code>"},
		{"tester says a time's zone is unknown", http.MethodPost, ExplainPath, "input=web&lines=unknown_zone", http.StatusOK,
			"<code>t</code> = <code>2026-11-01 CET</code>: its zone <code>CET</code> is none of UTC's abbreviations"},
		// Its input skips it unread: neither unmatched nor matched and not counted. Not said
		// counted as too long: a CRI line of a stream its input does not read is counted read.
		{"tester says a line past --input.max-line-bytes is skipped", http.MethodPost, ExplainPath, "input=web&lines=too_long", http.StatusOK,
			`<pre>too_long</pre>

<p class="bad">Skipped: the line is longer than <code>--input.max-line-bytes</code>; its input skips it, and no rule reads it.</p>

</div>`},
		{"over the bound", http.MethodPost, ExplainPath, big, http.StatusRequestEntityTooLarge, "at most 256 KiB"},
		{"bad form", http.MethodPost, ExplainPath, "lines=%zz", http.StatusBadRequest, "Bad form"},
		{"too many lines", http.MethodPost, ExplainPath, "lines=" + strings.Repeat("x%0A", MaxExplainLines+1), http.StatusOK, "Only the first 100 lines"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != c.code {
				t.Fatalf("HTTP %d, want %d: %.200s", rec.Code, c.code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), c.contains) {
				t.Errorf("the answer lacks %q:\n%.2000s", c.contains, rec.Body)
			}
		})
	}
	if src.input != "" {
		t.Errorf("the last tester request had no input, the source was asked for %q", src.input)
	}
}

// TestPageParses parses the page's template, which the server does only at the first
// page asked for: a template that does not parse fails here rather than in a running
// exporter. The templates the handlers execute by name must be defined.
func TestPageParses(t *testing.T) {
	tmpl, err := parsePage()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"page.html", "line"} {
		t.Run(name, func(t *testing.T) {
			if tmpl.Lookup(name) == nil {
				t.Errorf("the page defines no template %q; it has %s", name, tmpl.DefinedTemplates())
			}
		})
	}
}

// TestPageHeaders: the page and the tester's reply say what they are, with nothing for a
// browser to sniff, may not be framed by another site's page (which could overlay the
// form), and are not kept by a cache: each is the state of one moment, and a reply holds
// the lines pasted, which may hold what a log should not leave (tokens in URLs).
func TestPageHeaders(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs: [{name: web, path: /x.log}]\nrules: [{name: r, match: 'x'}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: prometheus.NewRegistry(), MetricsPath: "/metrics", LineTester: true})
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
		"Cache-Control":           "no-store",
	}
	for _, c := range []struct{ name, method, path, body string }{
		{"page", http.MethodGet, "/", ""},
		{"page by HEAD", http.MethodHead, "/", ""},
		{"tester", http.MethodPost, ExplainPath, "input=web&lines=GET"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("HTTP %d: %.200s", rec.Code, rec.Body)
			}
			for name, value := range want {
				if got := rec.Header().Values(name); len(got) != 1 || got[0] != value {
					t.Errorf("%s: %q, want %q", name, got, value)
				}
			}
		})
	}
}

// TestFileNamesShown: a file a glob matched is named by whoever can write in its
// directory; a name holding a bidi override or an invisible character is shown Go-quoted,
// as the line tester shows such a line, rather than reordered or with what is hidden.
func TestFileNamesShown(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs: [{name: web, path: '/logs/*.log'}]\nrules: [{name: r, match: 'x'}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	behind := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: selfmetric.InputBehindBytes.Name, Help: "h"}, selfmetric.InputBehindBytes.Labels)
	reg.MustRegister(behind)
	for path, want := range map[string]string{
		"/logs/access.log":           "<code>/logs/access.log</code>",
		"/logs/a\u202egol.exe.log":   `<code>&#34;/logs/a\u202egol.exe.log&#34;</code>`,
		"/logs/b\u200b.log":          `<code>&#34;/logs/b\u200b.log&#34;</code>`,
		"/logs/c\x1b]8;;x\x1b\\.log": `<code>&#34;/logs/c\x1b]8;;x\x1b\\.log&#34;</code>`,
	} {
		t.Run(path, func(t *testing.T) {
			behind.Reset()
			behind.WithLabelValues("web", path).Set(1)
			_, raw := getPage(t, Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: reg, MetricsPath: "/metrics"})
			if !strings.Contains(raw, want) {
				i := max(strings.Index(raw, `<h2 id="inputs">`), 0)
				t.Errorf("the inputs table lacks %q:\n%.1500s", want, raw[i:])
			}
		})
	}
}

// TestMalformedDatagramsShown: a socket input's datagrams that are not syslog (no
// priority, or a version 1 header that is not RFC 5424's) are shown in its malformed
// cell beside the lines its fields rules could not read, which every input has: they
// were left out whenever that count was there, 0 or not.
func TestMalformedDatagramsShown(t *testing.T) {
	raw := inputCountsPage(t, "inputs: [{name: sys, syslog: 'udp://127.0.0.1:5140'}]\nrules: [{name: r, match: 'x'}]\n", "sys",
		inputCount{selfmetric.InputMalformedLines, 2}, inputCount{selfmetric.InputMalformedDatagrams, 3})
	malformed := inputCell(t, raw, "malformed")
	if !strings.Contains(malformed, "2") || !strings.Contains(malformed, "3 datagrams") {
		t.Errorf("the malformed cell says %q, want the 2 lines and the 3 datagrams", malformed)
	}
}

// TestUnreadLinesShown: the lines of another application's JSON log under candidate
// formats, which are not unmatched (logwindow_input_unread_lines_total), have a column of
// their own beside the unmatched ones: they were on no page, and a glob reading a
// controller's log took lines for nothing there.
func TestUnreadLinesShown(t *testing.T) {
	raw := inputCountsPage(t, "inputs: [{name: pods, path: /var/log/pods/*/*/*.log, log_format: auto}]\nrules: [{name: r, labels: {status: '${status}'}}]\n", "pods",
		inputCount{selfmetric.InputUnreadLines, 7}, inputCount{selfmetric.InputUnmatchedLines, 2})
	if got := inputCell(t, raw, "unread"); got != "7" {
		t.Errorf("the unread cell says %q, want 7", got)
	}
	if got := inputCell(t, raw, "unmatched"); got != "2" {
		t.Errorf("the unmatched cell says %q, want 2", got)
	}
}

// inputCount is a counter of an input's (labelled by the input alone) and its value.
type inputCount struct {
	metric selfmetric.Metric
	value  float64
}

// inputCountsPage is the raw status page of the config in yaml, its gatherer holding
// each of counts for input.
func inputCountsPage(t *testing.T, yaml, input string, counts ...inputCount) string {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	for _, c := range counts {
		counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: c.metric.Name, Help: "h"}, c.metric.Labels)
		reg.MustRegister(counter)
		counter.WithLabelValues(input).Add(c.value)
	}
	_, raw := getPage(t, Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: reg, MetricsPath: "/metrics"})
	return raw
}

// inputCell is the text of the first input's cell under header in the page's table of
// inputs.
func inputCell(t *testing.T, raw, header string) string {
	t.Helper()
	table := raw[strings.Index(raw, `<h2 id="inputs">`):]
	table = table[:strings.Index(table, "</table>")]
	rows := strings.Split(table, "<tr>")
	if len(rows) < 3 {
		t.Fatalf("the table of inputs has no input:\n%s", table)
	}
	text := func(cell string) string {
		return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(cell[strings.Index(cell, ">")+1:], ""))
	}
	headers, cells := strings.Split(rows[1], "<th"), strings.Split(rows[2], "<td")
	for i, h := range headers[1:] {
		if strings.TrimSpace(text(h)) == header {
			if i+1 >= len(cells) {
				t.Fatalf("the input's row has %d cells:\n%s", len(cells)-1, table)
			}
			return strings.TrimSpace(text(cells[i+1]))
		}
	}
	t.Fatalf("the table of inputs has no column %q:\n%s", header, table)
	return ""
}
