package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/growth"
	logparser "github.com/logwindow/logwindow_exporter/parser"
)

// New returns the dashboard JSON that Write writes, for the tests that read it whole.
func New(cfg *config.Config, opts Options) ([]byte, error) {
	var out bytes.Buffer
	if err := Write(&out, cfg, opts); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// lines are what every case's rules read: each rule matches all of them.
const lines = `GET /a 200 0.010 512
GET /b 500 0.250 0
POST /a 200 0.030 128
`

const inputs = "inputs:\n  - path: %s\n    start_at: beginning\n"

var cases = []struct {
	name  string
	rules string
}{
	{"count rule without labels", `
rules:
  - name: requests
    match: '^\S+ \S+ \d+'
`},
	{"count rule with labels and windows of its own", `
global: {windows: [1m, 5m]}
rules:
  - name: requests
    match: '^(?P<method>\S+) \S+ (?P<status>\d+)'
    labels: {method: '${method}', status: '${status}'}
    windows: [30s, 2h]
  - name: errors
    match: '^\S+ \S+ (?P<status>5\d\d)'
    aggregations: [window]
`},
	{"value rules with every aggregation", `
global: {windows: [1m, 15m]}
rules:
  - name: request_duration_seconds
    match: '^\S+ (?P<path>\S+) \d+ (?P<took>[\d.]+)'
    value: took
    labels: {path: '${path}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.999]
    buckets: [0.1, 1]
  - name: response_bytes
    match: ' (?P<bytes>\d+)$'
    value: bytes
    aggregations: [per_second, mean]
`},
	{"distinct values", `
rules:
  - name: clients
    match: '^\S+ (?P<path>\S+) (?P<status>\d)'
    labels: {status_class: '${status}xx'}
    distinct: '${path}'
`},
	{"distinct values across instances", `
rules:
  - name: clients
    match: '^\S+ (?P<path>\S+) (?P<status>\d)'
    labels: {status_class: '${status}xx'}
    distinct: '${path}'
    distinct_registers: 16
`},
	{"rules with top values", `
global: {windows: [1m, 5m]}
rules:
  - name: path_requests
    match: '^(?P<method>\S+) (?P<path>\S+)'
    labels: {method: '${method}', path: '${path}'}
    top: {label: path, k: 2}
  - name: path_response_bytes
    match: '^\S+ (?P<path>\S+) \d+ \S+ (?P<bytes>\d+)$'
    value: bytes
    labels: {path: '${path}'}
    top: {label: path, k: 5, min: 100}
`},
	// PromQL reads without as a keyword, inf and nan as numbers.
	{"labels PromQL does not read as labels unquoted", `
rules:
  - name: requests
    match: '^(?P<method>\S+) (?P<path>\S+) (?P<status>\d)'
    labels: {without: '${method}', nan: '${status}', by: '${method}', inf: '${path}'}
    top: {label: inf, k: 2}
    distinct: '${path}'
    distinct_registers: 16
`},
	{"labels PromQL does not read as labels unquoted, in another case", `
rules:
  - name: requests
    match: '^(?P<method>\S+) (?P<path>\S+) (?P<status>\d)'
    labels: {WITHOUT: '${method}', Nan: '${status}', Inf: '${path}'}
`},
	{"quantiles without buckets, and a native histogram beside buckets", `
rules:
  - name: request_duration_seconds
    match: '^\S+ (?P<path>\S+) \d+ (?P<took>[\d.]+)'
    value: took
    labels: {path: '${path}'}
    aggregations: [quantiles]
  - name: response_bytes
    match: ' (?P<bytes>\d+)$'
    value: bytes
    buckets: [100, 1000]
    native_histogram: true
`},
}

// load writes a rule file reading a log of lines and loads it.
func load(t *testing.T, rules string) (*config.Config, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(inputs, "%s", log, 1)+rules), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, log
}

// exposure is what the exporter exposes under a series name: the window label values
// seen, and the label names.
type exposure struct {
	windows []string
	labels  map[string]bool
}

// exposed runs the rules over the log with the exporter's replay (text) and with its
// collector in protobuf, the only format with native histograms, and returns each series
// name a query can select: a histogram's classic buckets as <family>_bucket, a native
// histogram as <family>.
func exposed(t *testing.T, cfg *config.Config, log string) map[string]*exposure {
	t.Helper()
	var out bytes.Buffer
	opts := pipeline.Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := pipeline.Replay(cfg, []string{log}, opts, &out); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*exposure{}
	add := func(mf *dto.MetricFamily) {
		for _, m := range mf.GetMetric() {
			names := []string{mf.GetName()}
			if h := m.GetHistogram(); h != nil {
				names = nil
				if len(h.GetBucket()) > 0 {
					names = append(names, mf.GetName()+"_bucket")
				}
				if h.GetZeroThreshold() > 0 || len(h.GetPositiveSpan())+len(h.GetNegativeSpan()) > 0 {
					names = append(names, mf.GetName())
				}
			}
			for _, name := range names {
				e := got[name]
				if e == nil {
					e = &exposure{labels: map[string]bool{}}
					got[name] = e
				}
				if strings.HasSuffix(name, "_bucket") {
					e.labels["le"] = true // a bucket's bound, a label of the series
				}
				for _, lp := range m.GetLabel() {
					e.labels[lp.GetName()] = true
					if lp.GetName() == "window" && !slices.Contains(e.windows, lp.GetValue()) {
						e.windows = append(e.windows, lp.GetValue())
					}
				}
			}
		}
	}
	for _, mf := range families {
		add(mf)
	}
	for _, mf := range protobufScrape(t, cfg, log) {
		add(mf)
	}
	return got
}

// protobufScrape feeds the log's lines through the rules' parser and store and returns
// what a protobuf scrape of them exposes.
func protobufScrape(t *testing.T, cfg *config.Config, log string) []*dto.MetricFamily {
	t.Helper()
	p, err := logparser.New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	p.SetInputs(cfg.Inputs)
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_700_000_000
	sink := set.NewSink()
	sink.SetNow(now, now)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		p.Parse(cfg.Inputs[0].Name, []byte(strings.TrimSuffix(line, "\n")), sink)
	}
	sink.Flush()
	c := scrape.NewCollector(scrape.Options{Set: func() *store.Set { return set }, Now: func() int64 { return now }, Start: now})
	format := expfmt.NewFormat(expfmt.TypeProtoDelim)
	var buf bytes.Buffer
	if err := c.Encode(&buf, nil, format); err != nil {
		t.Fatal(err)
	}
	var out []*dto.MetricFamily
	dec := expfmt.NewDecoder(&buf, format)
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, mf)
	}
}

// parsed is the part of the JSON the tests read, decoded strictly.
type parsed struct {
	dashboardJSON
	Templating struct {
		List []struct {
			variable
			Query   json.RawMessage `json:"query"`
			Current current0        `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

func decode(t *testing.T, b []byte) *parsed {
	t.Helper()
	var d parsed
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// groupedBy finds the labels of an aggregation's by (...) clause.
var groupedBy = regexp.MustCompile(`\bby \(([^)]*)\)`)

// legendLabel finds the labels a legend format names.
var legendLabel = regexp.MustCompile(`\{\{(\w+)\}\}`)

// metricRef finds metric names selected in PromQL: a name followed by its matchers.
var metricRef = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// TestPanelsMatchExporter compares the dashboard with what the exporter exposes for the
// same rules, in text and in protobuf: every windowed family of every rule has a panel
// (a native histogram too), every family a query selects is exposed with the labels it
// groups by and its legend names, and the window variable offers exactly the window label
// values.
func TestPanelsMatchExporter(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, log := load(t, c.rules)
			out, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := decode(t, out)
			have := exposed(t, cfg, log)

			used := map[string]bool{}
			for _, p := range d.Panels {
				for _, tg := range p.Targets {
					// The labels a query groups by or names in its legend are on a family it
					// selects, or are the target's that Prometheus adds.
					labels := map[string]bool{"job": true, "instance": true}
					for _, m := range metricRef.FindAllStringSubmatch(tg.Expr, -1) {
						used[m[1]] = true
						if strings.HasPrefix(m[1], "logwindow_") {
							labels = nil // a self-metric: not replayed with its labels
							continue
						}
						e, ok := have[m[1]]
						if !ok {
							t.Errorf("panel %q selects %s, which the exporter does not expose", p.Title, m[1])
							continue
						}
						for l := range e.labels {
							if labels != nil {
								labels[l] = true
							}
						}
					}
					var named []string
					for _, g := range groupedBy.FindAllStringSubmatch(tg.Expr, -1) {
						for _, l := range strings.Split(g[1], ", ") {
							if unquoted, err := strconv.Unquote(l); err == nil {
								l = unquoted
							}
							named = append(named, l)
						}
					}
					for _, l := range legendLabel.FindAllStringSubmatch(tg.Legend, -1) {
						named = append(named, l[1])
					}
					for _, l := range named {
						if labels != nil && !labels[l] {
							t.Errorf("panel %q: %s or its legend names the label %s, which no family it selects has", p.Title, tg.Expr, l)
						}
					}
				}
			}
			var windows []string
			for name, e := range have {
				ws := e.windows
				if len(ws) == 0 {
					continue // _total and self-metrics: not windowed
				}
				if !used[name] {
					t.Errorf("no panel shows %s", name)
				}
				for _, w := range ws {
					if !slices.Contains(windows, w) {
						windows = append(windows, w)
					}
				}
			}
			var offered []string
			for _, v := range d.Templating.List {
				if v.Name == "window" {
					for _, o := range v.Options {
						offered = append(offered, o.Value)
					}
				}
			}
			slices.Sort(windows)
			slices.Sort(offered)
			if !slices.Equal(windows, offered) {
				t.Errorf("window variable offers %v, the exporter labels windows %v", offered, windows)
			}
		})
	}
}

// TestSchemaFacts checks what Grafana's dashboard model requires of the JSON: a UID of 8
// to 40 URL-safe characters, unique panel ids, panels on the 24-column grid without
// overlapping, queries with unique refIds on the ${datasource} variable, and variables
// whose current value is one of their options.
func TestSchemaFacts(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, _ := load(t, c.rules)
			out, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := decode(t, out)
			if !regexp.MustCompile(`^[a-zA-Z0-9_-]{8,40}$`).MatchString(d.UID) {
				t.Errorf("uid %q is not 8-40 URL-safe characters", d.UID)
			}
			if d.Title == "" || d.SchemaVersion == 0 || d.Time.From == "" {
				t.Error("title, schemaVersion or time missing")
			}
			ids := map[int]bool{}
			type cell struct{ x, y int }
			taken := map[cell]string{}
			for _, p := range d.Panels {
				if ids[p.ID] {
					t.Errorf("panel id %d twice", p.ID)
				}
				ids[p.ID] = true
				g := p.GridPos
				if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
					t.Errorf("panel %q off the grid: %+v", p.Title, g)
				}
				for x := g.X; x < g.X+g.W; x++ {
					for y := g.Y; y < g.Y+g.H; y++ {
						if other, ok := taken[cell{x, y}]; ok {
							t.Fatalf("panel %q overlaps %q at %d,%d", p.Title, other, x, y)
						}
						taken[cell{x, y}] = p.Title
					}
				}
				// Grafana substitutes variables in a description and renders it as Markdown:
				// either turns the dashboard's own words into something else but in a
				// code span.
				text := codeSpan.ReplaceAllString(characterReference.ReplaceAllString(p.Description, ""), "")
				if m := markdownSyntax.FindString(text) + grafanaVariable.FindString(text); m != "" {
					t.Errorf("panel %q: description %q holds %q", p.Title, p.Description, m)
				}
				if p.Type == "row" {
					if len(p.Targets) > 0 {
						t.Errorf("row %q has queries", p.Title)
					}
					continue
				}
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
					t.Errorf("panel %q: no query or not on ${datasource}", p.Title)
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					if tg.RefID == "" || refs[tg.RefID] || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
						t.Errorf("panel %q: target %+v", p.Title, tg)
					}
					refs[tg.RefID] = true
				}
			}
			names := map[string]bool{}
			for _, v := range d.Templating.List {
				if names[v.Name] {
					t.Errorf("variable %s twice", v.Name)
				}
				names[v.Name] = true
				if len(v.Options) > 0 && !slices.ContainsFunc(v.Options, func(o option) bool { return o.Value == v.Current.Value && o.Selected }) {
					t.Errorf("variable %s: current %q is not its selected option", v.Name, v.Current.Value)
				}
			}
			for _, want := range []string{"datasource", "job", "instance", "window"} {
				if !names[want] {
					t.Errorf("no variable %s", want)
				}
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	cases := []struct {
		file, title, uid string
	}{
		{"/etc/logwindow_exporter/rules.yaml", "logwindow_exporter: rules", "logwindow-rules"},
		{"my rules (v2).yml", "logwindow_exporter: my rules (v2)", "logwindow-my-rules-v2"},
		{strings.Repeat("x", 60) + ".yaml", "logwindow_exporter: " + strings.Repeat("x", 60), "logwindow-" + strings.Repeat("x", 30)},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			o := Options{}.defaults(c.file)
			if o.Title != c.title || o.UID != c.uid {
				t.Errorf("got %q %q, want %q %q", o.Title, o.UID, c.title, c.uid)
			}
			if set := (Options{Title: "t", UID: "u"}).defaults(c.file); set.Title != "t" || set.UID != "u" {
				t.Errorf("given title and uid replaced: %+v", set)
			}
		})
	}
}

// TestHostileText: help text, label values and a rule file name holding what JSON, PromQL
// and Grafana's templates give a meaning (quotes, backslashes, $, braces, newlines) never
// reach a query: every string a query holds is one of the dashboard's variables; the file's
// name makes the title as written (TestHelpReadsAsWritten follows the help).
func TestHostileText(t *testing.T) {
	help := "Say \"hi\" \\ back\\slash $job ${window} {{instance}} } {\nsecond line </script>"
	rules := `
rules:
  - name: hostile
    help: ` + strconvQuote(help) + `
    match: '^(?P<method>\S+) (?P<path>\S+)'
    labels: {method: '${method}', path: '"${path}"\n{}$$'}
    initial: [{method: "GET\"}\\ {{x}} $job\n"}]
    top: {label: path, k: 2}
`
	cfg, _ := load(t, rules)
	cfg.File = filepath.Join(t.TempDir(), `we"ird \ $x {y}.yaml`)
	out, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := decode(t, out)
	if want := `logwindow_exporter: we"ird \ $x {y}`; d.Title != want {
		t.Errorf("title %q, want %q", d.Title, want)
	}
	var row *panel
	literal := regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	for i, p := range d.Panels {
		if p.Type == "row" && p.Title == "hostile" {
			row = &d.Panels[i]
		}
		for _, tg := range p.Targets {
			for _, s := range literal.FindAllString(tg.Expr, -1) {
				if !slices.Contains([]string{`"$job"`, `"$instance"`, `"$window"`}, s) {
					t.Errorf("panel %q: query %s holds the string %s", p.Title, tg.Expr, s)
				}
			}
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: unbalanced query %s", p.Title, tg.Expr)
			}
		}
	}
	if row == nil {
		t.Fatal("the rule's row is missing")
	}
}

// grafanaVariable is the variable reference Grafana's template service substitutes
// (variableRegex of public/app/features/variables/utils.ts): $var, [[var]], [[var:fmt]],
// ${var}, ${var.path} and ${var:fmt}.
var grafanaVariable = regexp.MustCompile(`\$(\w+)|\[\[([\s\S]+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}`)

// shown is what Grafana shows of a panel description: its variables replaced (every
// reference, as the dashboard's variables and the built-in ones such as $__interval may
// be any), then rendered as Markdown, modelled here for text that holds no Markdown
// syntax: its character references decoded and its line breaks soft (a space).
func shown(description string) string {
	s := grafanaVariable.ReplaceAllString(description, "VALUE")
	s = html.UnescapeString(s)
	return strings.Join(strings.Fields(s), " ")
}

// markdownSyntax finds what Markdown gives a meaning: emphasis, code, links, HTML,
// character references, escapes, tables and strikethrough anywhere, and headings, lists,
// quotes and setext underlines at the start of a line.
var markdownSyntax = regexp.MustCompile("[*_`\\[\\]<>&|~\\\\]|(?m)^\\s*(?:[#>=+-]|\\d+[.)])")

// codeSpan is a Markdown code span, which shows its text as written.
var codeSpan = regexp.MustCompile("`[^`]*`")

// characterReference is a decimal character reference, which the model of Markdown decodes.
var characterReference = regexp.MustCompile(`&#[0-9]+;`)

// TestHelpReadsAsWritten: a rule's help is shown in the description of each of its
// panels, and reads there as written although Grafana substitutes variables in a
// description and renders it as Markdown.
func TestHelpReadsAsWritten(t *testing.T) {
	for _, help := range []string{
		"Requests by $instance and ${job}, every $__interval.",
		"[[window]] and [[job:raw]] and ${instance:csv} and ${job.text}",
		"Time nginx spent on requests ($request_time); _window_events counts them.",
		"*bold* _it_ `code` <b>tag</b> [link](http://x) &amp; a\\b ~~gone~~ a|b",
		"- not a list\n1. nor this\n# nor a heading\n> nor a quote",
		"costs $5 and $$ and a lone $",
	} {
		t.Run(help, func(t *testing.T) {
			cfg, _ := load(t, `
rules:
  - name: requests
    help: `+strconvQuote(help)+`
    match: '^(?P<method>\S+)'
    labels: {method: '${method}'}
`)
			out, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join(strings.Fields(help), " ")
			panels := 0
			for _, p := range decode(t, out).Panels {
				if p.Type == "row" {
					if p.Description != "" {
						t.Errorf("row %q has a description, which Grafana's rows do not show", p.Title)
					}
					continue
				}
				if strings.HasPrefix(p.Title, "Exporter") || !strings.Contains(p.Targets[0].Expr, "requests_") {
					continue
				}
				panels++
				help, _, _ := strings.Cut(p.Description, "\n\n")
				if got := shown(help); got != want {
					t.Errorf("panel %q shows the help as %q, want %q", p.Title, got, want)
				}
				if m := markdownSyntax.FindString(characterReference.ReplaceAllString(help, "")); m != "" {
					t.Errorf("panel %q: the help's description holds Markdown %q: %q", p.Title, m, help)
				}
			}
			if panels == 0 {
				t.Error("no panel of the rule")
			}
		})
	}
}

// strconvQuote quotes s for a YAML double-quoted scalar, whose escapes are JSON's.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRowsAsGrafanaSchemaHasThem: Grafana's schema requires `collapsed` and `panels` of a
// row panel (RowPanel in @grafana/schema), and a panel of another type has neither: every
// row is written open, `"collapsed": false, "panels": []` in the JSON itself.
func TestRowsAsGrafanaSchemaHasThem(t *testing.T) {
	cfg, _ := load(t, `
rules:
  - name: requests
    match: '^(?P<method>\S+)'
    labels: {method: '${method}'}
`)
	out, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []map[string]json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, p := range d.Panels {
		collapsed, hasCollapsed := p["collapsed"]
		panels, hasPanels := p["panels"]
		switch string(p["type"]) {
		case `"row"`:
			rows++
			if string(collapsed) != "false" || string(panels) != "[]" {
				t.Errorf("row %s: collapsed %q, panels %q; want false and []", p["title"], collapsed, panels)
			}
		default:
			if hasCollapsed || hasPanels {
				t.Errorf("panel %s of type %s has collapsed %s or panels %s, which only rows have", p["title"], p["type"], collapsed, panels)
			}
		}
	}
	if rows < 2 {
		t.Fatalf("%d rows, want the rule's and the exporter's", rows)
	}
}

// TestManyWindows: the window variable of rules that have many distinct windows between
// them (a file may hold 10,000 rules of 100 windows each) is made in work linear in them;
// 300,000 took most of a minute, each compared with every one before it, and a million
// hours. The work is counted, not timed (a bound of 20 s failed on a loaded machine): see
// growth.Linear, whose runs are of rules of 100 windows each; and every window is an
// option. The search of the windows before each, which allocated nothing, is not counted:
// they are kept in a map for that.
func TestManyWindows(t *testing.T) {
	growth.Linear(t, 800, 8, func(rules int) {
		cfg := &config.Config{File: "rules.yaml"}
		for i := range rules {
			r := &config.Rule{Name: fmt.Sprintf("r%d", i)}
			for j := range 100 {
				r.Windows = append(r.Windows, time.Duration(i*100+j+1)*time.Second)
			}
			cfg.Rules = append(cfg.Rules, r)
		}
		vars := variables(cfg)
		if got := len(vars[len(vars)-1].Options); got != rules*100 {
			t.Errorf("%d window options, want %d", got, rules*100)
		}
	})
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n int }

var errFull = fmt.Errorf("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errFull
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteStreams: the dashboard is written a rule's row at a time, not built whole
// first: a writer that fails early (a full disk, a closed pipe) ends the work there, with
// its error, where the whole dashboard of 500 rules with long helps (each heads every panel
// of its rule) was built and held before its first byte was written.
func TestWriteStreams(t *testing.T) {
	var file strings.Builder
	file.WriteString("rules:\n")
	for i := range 500 {
		fmt.Fprintf(&file, "  - name: r%d_seconds\n    help: '%s'\n    match: '(?P<s>\\d+) (?P<t>\\S+)'\n"+
			"    value: t\n    labels: {status: '${s}'}\n    aggregations: [window, per_second, events, max, min, mean]\n",
			i, strings.Repeat("$_* ", 300))
	}
	cfg, err := config.Parse([]byte(file.String()), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(whole) {
		t.Fatal("the dashboard is not valid JSON")
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.TotalAlloc
	}
	before := heap()
	if err := Write(io.Discard, cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	written := heap() - before
	before = heap()
	if err := Write(&failAfter{n: 64 << 10}, cfg, Options{}); !errors.Is(err, errFull) {
		t.Errorf("a writer that fails: %v, want its error", err)
	}
	if failed := heap() - before; failed > written/20 {
		t.Errorf("a writer that fails after 64 KiB of %d: %d bytes allocated, as much as %d for all of it", len(whole), failed, written)
	}
}

// TestRefIDs: a panel's queries are named as Grafana names them, A to Z, then AA, AB ...:
// a rule of 99 quantiles has panels of 99 queries, whose names past Z were the
// characters after it ([, \, `, a ... and control characters).
func TestRefIDs(t *testing.T) {
	qs := make([]string, 99)
	for i := range qs {
		qs[i] = fmt.Sprintf("0.%02d", i+1)
	}
	cfg, err := config.Parse([]byte("rules:\n  - name: a_seconds\n    match: '(?P<v>\\S+)'\n    value: v\n"+
		"    aggregations: [quantiles]\n    buckets: [1]\n    quantiles: ["+strings.Join(qs, ", ")+"]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	letters := regexp.MustCompile(`^[A-Z]+$`)
	long := 0
	for _, p := range decode(t, out).Panels {
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if !letters.MatchString(tg.RefID) || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q, not capital letters or not unique", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if len(p.Targets) == 99 {
			long++
			if last := p.Targets[98].RefID; last != "CU" {
				t.Errorf("panel %q: the 99th refId is %q, want CU", p.Title, last)
			}
		}
	}
	if long != 2 {
		t.Errorf("%d panels of 99 queries, want the quantiles' two", long)
	}
	for i, want := range map[int]string{0: "A", 25: "Z", 26: "AA", 51: "AZ", 52: "BA", 701: "ZZ", 702: "AAA"} {
		if got := refID(i); got != want {
			t.Errorf("refID(%d) = %q, want %q", i, got, want)
		}
	}
}

// statistic finds a query of a rule's max, mean or min.
var statistic = regexp.MustCompile(`_window_(max|mean|min)\{`)

// TestStatisticsTitle: the panel of a value rule's max, mean and min names in its title
// those of them the rule exports, the ones it shows, and no other; its description says
// how the mean adds up over instances only when it shows one.
func TestStatisticsTitle(t *testing.T) {
	for _, c := range []struct {
		aggregations, title string
		mean                bool // the description tells of the mean
	}{
		{"[max]", "Max over $window", false},
		{"[mean, min]", "Mean, min over $window", true},
		{"[window, max, mean]", "Max, mean over $window", true},
		{"[max, min]", "Max, min over $window", false},
		{"[max, min, mean]", "Max, mean, min over $window", true},
	} {
		t.Run(c.aggregations, func(t *testing.T) {
			cfg, _ := load(t, "rules:\n  - name: response_bytes\n    match: ' (?P<bytes>\\d+)$'\n    value: bytes\n    aggregations: "+c.aggregations+"\n")
			out, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var titles []string
			for _, p := range decode(t, out).Panels {
				if slices.ContainsFunc(p.Targets, func(tg target) bool { return statistic.MatchString(tg.Expr) }) {
					titles = append(titles, p.Title)
					if got := strings.Contains(p.Description, "average of their means"); got != c.mean {
						t.Errorf("description %q tells of the mean: %v, want %v", p.Description, got, c.mean)
					}
				}
			}
			if !slices.Equal(titles, []string{c.title}) {
				t.Errorf("panels %q, want one titled %q", titles, c.title)
			}
		})
	}
}

// TestGroupingLabelsParse checks that every label a query groups by is written as PromQL
// reads a label there: a name the lexer takes for a label (any keyword but without; not
// inf or nan, which it reads as numbers), else quoted.
func TestGroupingLabelsParse(t *testing.T) {
	identifier := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, _ := load(t, c.rules)
			out, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range decode(t, out).Panels {
				for _, tg := range p.Targets {
					for _, g := range groupedBy.FindAllStringSubmatch(tg.Expr, -1) {
						for _, l := range strings.Split(g[1], ", ") {
							if _, err := strconv.Unquote(l); err == nil {
								continue
							}
							// The lexer reads them in any case.
							switch strings.ToLower(l) {
							case "without", "inf", "nan":
								t.Errorf("panel %q groups by %s unquoted, which PromQL does not read as a label: %s", p.Title, l, tg.Expr)
							}
							if !identifier.MatchString(l) {
								t.Errorf("panel %q groups by %q: %s", p.Title, l, tg.Expr)
							}
						}
					}
				}
			}
		})
	}
}
