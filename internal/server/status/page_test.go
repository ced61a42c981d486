package status

import (
	"context"
	"errors"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/windows"
)

// pageRules are rules of every kind the rules table describes: a regex with a pattern, a
// log format's captures, a value, a distinct count and top values, an event-time rule,
// and windows without 5m.
const pageRules = `
global: {windows: [1m, 5m]}
inputs:
  - {name: web, path: /web.log, log_format: combined}
  - {name: app, path: /app.log}
patterns:
  WORD: '[a-z]+'
rules:
  - name: app_lines
    inputs: [app]
    match: 'level=(?P<level>%{WORD})'
    labels: {level: '${level}'}
  - name: web_requests
    inputs: [web]
    labels: {method: '${request_method}', status_class: '${status_class}'}
    where: {status: '^5'}
  - name: web_body_bytes
    inputs: [web]
    value: body_bytes_sent
    aggregations: [window, max]
    timestamp: {capture: time_local}
  - name: web_clients
    inputs: [web]
    distinct: '${remote_addr}'
    windows: [1m, 1h]
  - name: web_paths
    inputs: [web]
    labels: {path: '${uri}'}
    top: {label: path, k: 10}
    windows: [10s, 1m]
  - name: web_ok
    inputs: [web]
    where: {status: '^2'}
    windows: [60s, 300s, 90m]
`

// fakeWindows serves fixed window sums, counting the reads.
type fakeWindows struct {
	sums  []scrape.WindowSums
	reads int
}

func (f *fakeWindows) WindowSums() []scrape.WindowSums {
	f.reads++
	return f.sums
}

// getPage renders the page of o and returns it as text, its markup removed and entities
// decoded, with the raw HTML.
func getPage(t *testing.T, o Options) (text, raw string) {
	t.Helper()
	mux := http.NewServeMux()
	Register(mux, o)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /: HTTP %d: %.300s", rec.Code, rec.Body)
	}
	raw = rec.Body.String()
	text = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(raw, "")
	return html.UnescapeString(text), raw
}

// rulesRows are the cells of the rules table, as text with spaces collapsed, by rule.
func rulesRows(t *testing.T, raw string) map[string][]string {
	t.Helper()
	table := raw[strings.Index(raw, `<h2 id="rules">`):]
	table = table[:strings.Index(table, "</table>")]
	rows := map[string][]string{}
	for _, tr := range strings.Split(table, "<tr>")[2:] {
		var cells []string
		for _, td := range strings.Split(tr, "<td")[1:] {
			td = td[strings.Index(td, ">")+1:]
			td = regexp.MustCompile(`<br>`).ReplaceAllString(td, " / ")
			td = html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(td, ""))
			cells = append(cells, strings.Join(strings.Fields(td), " "))
		}
		rows[cells[0]] = cells
	}
	return rows
}

// TestRulesTable: each rule says what it computes, what it reads (the regex with its
// patterns expanded, or its log format and the captures it uses) and its value now.
func TestRulesTable(t *testing.T) {
	cfg, err := config.Parse([]byte(pageRules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	windows := &fakeWindows{sums: []scrape.WindowSums{
		{Rule: "app_lines", Windows: []time.Duration{time.Minute, 5 * time.Minute}, Totals: sums(4, 312)},
		{Rule: "web_requests", Windows: []time.Duration{time.Minute, 5 * time.Minute}, Totals: sums(1, 2)},
		{Rule: "web_body_bytes", Windows: []time.Duration{time.Minute, 5 * time.Minute}, Totals: sums(10, 1.5e9)},
		{Rule: "web_clients", Windows: []time.Duration{time.Minute, time.Hour}, Totals: sums(3, 7)},
		// web_paths is read from a store whose windows are not the config's: not shown.
		{Rule: "web_paths", Windows: []time.Duration{10 * time.Second}, Totals: sums(9)},
		{Rule: "web_ok", Windows: []time.Duration{time.Minute, 5 * time.Minute, 90 * time.Minute}, Totals: sums(1, 5, 8)},
	}}
	_, raw := getPage(t, Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: prometheus.NewRegistry(),
		MetricsPath: "/metrics", Windows: windows})
	rows := rulesRows(t, raw)
	// rule, computes, the value now and its window, reads.
	want := map[string][4]string{
		"app_lines": {"counts lines; per window: matched lines, per-second rate", "312 / matched lines in 5m",
			"(?P<level>(?:[a-z]+))", "level=(?P<level>(?:[a-z]+)) / as written level=(?P<level>%{WORD})"},
		"web_requests": {"counts lines; per window: matched lines, per-second rate", "2 / matched lines in 5m",
			"", "log_format: combined / captures status, request_method, status_class"},
		"web_body_bytes": {"sums body_bytes_sent; per window: sum of body_bytes_sent, largest body_bytes_sent; by the line's time_local",
			"1500000000 / sum of body_bytes_sent in 5m", "", "log_format: combined / captures time_local, body_bytes_sent"},
		"web_clients": {"counts lines; per window: matched lines, per-second rate, different distinct: values", "7 / matched lines in 1h",
			"", "log_format: combined / captures remote_addr"},
		"web_paths": {"counts lines; per window: matched lines, per-second rate, top 10 path by matched lines", "– / matched lines in 1m",
			"", "log_format: combined / captures uri"},
		// Windows are named as written, as their label names them.
		"web_ok": {"counts lines; per window: matched lines, per-second rate", "5 / matched lines in 300s",
			"", "log_format: combined / captures status"},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			row := rows[name]
			if len(row) != 10 {
				t.Fatalf("row %q", row)
			}
			if row[1] != w[0] {
				t.Errorf("computes %q\nwant %q", row[1], w[0])
			}
			if row[5] != w[1] {
				t.Errorf("now %q, want %q", row[5], w[1])
			}
			reads := w[3]
			if w[2] != "" && !strings.Contains(reads, w[2]) {
				t.Fatalf("bad test: %q does not hold %q", reads, w[2])
			}
			if row[9] != reads {
				t.Errorf("reads %q\nwant %q", row[9], reads)
			}
		})
	}
	if ws := rows["web_ok"][7]; ws != "60s 300s 90m" {
		t.Errorf("web_ok's windows %q, want them as written, 60s 300s 90m", ws)
	}
	if windows.reads != 1 {
		t.Errorf("the windows were read %d times for one page", windows.reads)
	}
}

// TestReloadErrors: a refused reload shows why, each problem as text (never markup), at
// most maxReloadErrors of them, each at most maxErrorBytes long.
func TestReloadErrors(t *testing.T) {
	cfg := testConfig(t)
	_, loadErr := config.Parse([]byte("rules:\n  - name: a\n    match: '(?P<x'\n  - name: b\n    matc: '<script>alert(1)</script>'\n"), "rules.yaml")
	if loadErr == nil {
		t.Fatal("the broken file loads")
	}
	var many []string
	for i := range maxReloadErrors + 5 {
		many = append(many, fmt.Sprintf("rules.yaml:%d: rule %q: %s", i+1, "r", strings.Repeat("x", 2*maxErrorBytes)))
	}
	cases := []struct {
		name      string
		err       error
		want      []string // lines of the page's text
		more      string
		maxLength int
	}{
		{"loaded", nil, nil, "", 0},
		{"config problems", loadErr, strings.Split(loadErr.Error(), "\n"), "", 0},
		{"too many, too long", errors.New(strings.Join(many, "\n")), nil, "and 5 more problems", maxErrorBytes + len(" …")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			text, raw := getPage(t, Options{Name: "test", Source: &fakeSource{cfg: cfg, reloadErr: c.err}, Gatherer: reg, MetricsPath: "/metrics"})
			if strings.Contains(raw, "<script>") {
				t.Errorf("a problem's text is markup in the page")
			}
			if c.err == nil {
				if strings.Contains(raw, "reload-errors") {
					t.Errorf("a config that loaded shows reload errors")
				}
				return
			}
			pre := raw[strings.Index(raw, `<pre class="bad" id="reload-errors">`):]
			pre = html.UnescapeString(pre[strings.Index(pre, ">")+1 : strings.Index(pre, "</pre>")])
			lines := strings.Split(strings.TrimSuffix(pre, "\n"), "\n")
			for _, w := range c.want {
				if !strings.Contains(pre, w) {
					t.Errorf("the page lacks the problem %q:\n%s", w, pre)
				}
			}
			if c.maxLength > 0 {
				if len(lines) != maxReloadErrors {
					t.Errorf("%d problems shown, want %d", len(lines), maxReloadErrors)
				}
				for _, l := range lines {
					if len(l) > c.maxLength {
						t.Errorf("a problem of %d bytes shown", len(l))
					}
				}
			}
			if !strings.Contains(text, c.more) {
				t.Errorf("the page does not say %q", c.more)
			}
		})
	}
}

// sums are windows' totals of the sums given, as scrape.WindowSums reads them of a rule
// exporting `_window`.
func sums(v ...float64) []windows.Stats {
	out := make([]windows.Stats, len(v))
	for i := range v {
		out[i] = windows.Stats{Sum: v[i], Max: math.NaN(), Min: math.NaN()}
	}
	return out
}

// TestNowOfWhatIsExported: a rule that does not export `_window` (its aggregations
// leave it out) showed its `_window` summed over its series as its value now, which
// /metrics has not: it shows the first of its families that is one number over its
// series, summed or their extreme, or none.
func TestNowOfWhatIsExported(t *testing.T) {
	cfg, err := config.Parse([]byte(`
global: {windows: [1m, 5m]}
rules:
  - {name: lines, match: 'x'}
  - {name: rate, match: 'x', aggregations: [per_second]}
  - {name: events, match: 'x (?P<v>\d+)', value: v, aggregations: [events, mean]}
  - {name: largest, match: 'x (?P<v>\d+)', value: v, aggregations: [max, min, quantiles]}
  - {name: smallest, match: 'x (?P<v>\d+)', value: v, aggregations: [min]}
  - {name: smallest_empty, match: 'x (?P<v>\d+)', value: v, aggregations: [min]}
  - {name: quantiles, match: 'x (?P<v>\d+)', value: v, aggregations: [quantiles]}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	five := []time.Duration{time.Minute, 5 * time.Minute}
	// Each window's totals, the 5m one shown; every total differs from the others.
	totals := []windows.Stats{{}, {Sum: 600, Events: 30, PerSecond: 2, Max: 90, Min: 3}}
	empty := []windows.Stats{{}, {Max: math.NaN(), Min: math.NaN()}}
	var read []scrape.WindowSums
	for _, r := range cfg.Rules {
		ts := totals
		if r.Name == "smallest_empty" {
			ts = empty
		}
		read = append(read, scrape.WindowSums{Rule: r.Name, Windows: five, Totals: ts})
	}
	_, raw := getPage(t, Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: prometheus.NewRegistry(),
		MetricsPath: "/metrics", Windows: &fakeWindows{sums: read}})
	rows := rulesRows(t, raw)
	for rule, want := range map[string]string{
		"lines":          "600 / matched lines in 5m",
		"rate":           "2 / per-second rate of matched lines in 5m",
		"events":         "30 / matched lines in 5m",
		"largest":        "90 / largest v in 5m",
		"smallest":       "3 / smallest v in 5m",
		"smallest_empty": "– / smallest v in 5m",
		"quantiles":      "– / nothing it exports sums over series in 5m",
	} {
		if got := rows[rule][5]; got != want {
			t.Errorf("%s: now %q, want %q", rule, got, want)
		}
	}
}

// blockingWindows holds each read until the test releases it, reporting it on entered.
type blockingWindows struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingWindows) WindowSums() []scrape.WindowSums {
	b.entered <- struct{}{}
	<-b.release
	return []scrape.WindowSums{{Rule: "r", Windows: []time.Duration{time.Minute, 5 * time.Minute}, Totals: sums(1, 7)}}
}

// TestWindowsReadOneAtATime: pages asked for at once gather the registry and read the
// windows one after the other, and a page whose client leaves while it waits is not
// made, rather than keeping a read for no one.
func TestWindowsReadOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		windows := &blockingWindows{entered: make(chan struct{}, 10), release: make(chan struct{})}
		mux := http.NewServeMux()
		Register(mux, Options{Name: "test", Source: &fakeSource{cfg: testConfig(t)}, Gatherer: prometheus.NewRegistry(), MetricsPath: "/metrics", Windows: windows})
		get := func(ctx context.Context) string {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil))
			return rec.Body.String()
		}
		first := make(chan string, 1)
		go func() { first <- get(t.Context()) }()
		synctest.Wait()
		left, leave := context.WithCancel(t.Context())
		second := make(chan string, 1)
		go func() { second <- get(left) }()
		synctest.Wait()
		if n := len(windows.entered); n != 1 {
			t.Fatalf("%d pages read the windows at once, want 1", n)
		}
		leave()
		if got := <-second; got != "" {
			t.Errorf("the page of a client that left was made: %.200q", got)
		}
		close(windows.release)
		if got, want := rulesRows(t, <-first)["r"][5], "7 / matched lines in 5m"; got != want {
			t.Errorf("now %q, want %q", got, want)
		}
	})
}

// TestPageOfManyRules: the page's rows read each rule's self-metrics from that rule's
// samples, not by a search of every rule's: a rule file of thousands of rules (10,000
// are allowed) made each page view take minutes of a core, as many as anyone asked for.
// Each row's lookups are held to its own samples, not the page's time: a ratio of two
// pages' times failed one run in three on a busy machine, where a page of four times the
// rules misses the caches more than four times as often.
func TestPageOfManyRules(t *testing.T) {
	const n = 1000
	var rules strings.Builder
	rules.WriteString("rules:\n")
	reg := prometheus.NewRegistry()
	perRule := []selfmetric.Metric{selfmetric.RuleMatchedLines, selfmetric.RuleSeries, selfmetric.RuleSeriesLimit, selfmetric.SeriesOverflow}
	vecs := map[string]*prometheus.GaugeVec{}
	for _, m := range perRule {
		vecs[m.Name] = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: m.Name, Help: "x"}, []string{"rule"})
		reg.MustRegister(vecs[m.Name])
	}
	dropped := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: selfmetric.RuleDroppedLines.Name, Help: "x"}, []string{"rule", "reason"})
	reg.MustRegister(dropped)
	reasons := []string{"late", "future", "no_value"}
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		fmt.Fprintf(&rules, "  - {name: %s, match: x}\n", name)
		for _, v := range vecs {
			v.WithLabelValues(name).Set(float64(i))
		}
		for _, reason := range reasons {
			dropped.WithLabelValues(name, reason).Set(1)
		}
	}
	cfg, err := config.Parse([]byte(rules.String()), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Name: "test", Source: &fakeSource{cfg: cfg}, Gatherer: reg, MetricsPath: "/metrics", reading: make(chan struct{}, 1)}
	v := o.view(context.Background(), "/")
	if len(v.Rules) != n || v.Rules[n-1].Matched != fmt.Sprint(n-1) || len(v.Rules[n-1].Dropped) != len(reasons) {
		last := v.Rules[len(v.Rules)-1]
		t.Fatalf("%d rules: the view has %d rows, the last %s matched %s with %d drop reasons", n, len(v.Rules), last.Name, last.Matched, len(last.Dropped))
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(families)
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		for _, f := range append(perRule, selfmetric.RuleDroppedLines) {
			want := 1
			if f.Name == selfmetric.RuleDroppedLines.Name {
				want = len(reasons)
			}
			got := m.samples(f.Name, "rule", name)
			if len(got) != want || slices.ContainsFunc(got, func(s *dto.Metric) bool { return label(s, "rule") != name }) {
				t.Fatalf("rule %s's row reads %d samples of %s, want its own %d", name, len(got), f.Name, want)
			}
		}
	}
}

// TestHeadOfPageReadsNothing: a HEAD of the page (an uptime probe's) gathered the
// registry, read every rule's windows and made the whole page for a body it does not
// send, as a GET does, in turn with the pages asked for and in the server's bound on the
// requests in flight: a page of thousands of rules costs a core a good part of a second.
// It gets the GET's headers at once, reading nothing and taking no place; another path
// is still not found.
func TestHeadOfPageReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		windows := &blockingWindows{entered: make(chan struct{}, 10), release: make(chan struct{})}
		admitted := 0
		mux := http.NewServeMux()
		Register(mux, Options{Name: "test", Source: &fakeSource{cfg: testConfig(t)}, Gatherer: prometheus.NewRegistry(), MetricsPath: "/metrics", Windows: windows,
			Admit: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					admitted++
					h.ServeHTTP(w, r)
				})
			}})
		do := func(method, path string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			return rec
		}
		head := make(chan *httptest.ResponseRecorder, 1)
		go func() { head <- do(http.MethodHead, "/") }()
		synctest.Wait()
		if n := len(windows.entered); n != 0 || admitted != 0 {
			t.Errorf("a HEAD read the windows %d times and took %d places; want none", n, admitted)
		}
		close(windows.release)
		got, get := <-head, do(http.MethodGet, "/")
		if got.Code != http.StatusOK || got.Body.Len() != 0 {
			t.Errorf("HEAD: %d with %d bytes; want 200 with none", got.Code, got.Body.Len())
		}
		for _, name := range []string{"Content-Type", "X-Content-Type-Options", "Content-Security-Policy", "Cache-Control"} {
			if got.Header().Get(name) != get.Header().Get(name) {
				t.Errorf("HEAD's %s: %q; want the GET's, %q", name, got.Header().Get(name), get.Header().Get(name))
			}
		}
		if code := do(http.MethodHead, "/nothing").Code; code != http.StatusNotFound {
			t.Errorf("HEAD of another path: %d; want 404", code)
		}
	})
}
