package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// fakeClock is the injected processing-time clock: it moves only when the test says so.
type fakeClock struct {
	nanos atomic.Int64
	// pause, when set, is taken by the next reading, which waits in it: the reader (an
	// input goroutine) is frozen mid-line, as by a suspend, until the test resumes it.
	pause atomic.Pointer[clockPause]
}

// clockPause is one frozen reading: reached closes when a reader is waiting, resume lets it go.
type clockPause struct{ reached, resume chan struct{} }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.nanos.Store(t.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time {
	if p := c.pause.Swap(nil); p != nil {
		close(p.reached)
		<-p.resume
	}
	return time.Unix(0, c.nanos.Load())
}

func (c *fakeClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

// PauseNextReading freezes whoever reads the clock next, inside the reading; the caller
// must not read the clock itself (nor scrape) until it resumes the reader.
func (c *fakeClock) PauseNextReading() *clockPause {
	p := &clockPause{reached: make(chan struct{}), resume: make(chan struct{})}
	c.pause.Store(p)
	return p
}

// e2eRules counts requests by status over 1m and 5m, sums bytes, and keeps at most two
// paths so the third folds into the overflow series.
const e2eRules = `
global:
  windows: [1m, 5m]
  max_series_per_rule: 2
inputs:
  - name: web
    path: %s
patterns:
  REQ: '"(?P<method>[A-Z]+) (?P<path>[^ "]*) [^"]*" (?P<status>[0-9]{3}) (?P<bytes>[0-9]+)'
rules:
  - name: http_requests
    help: Requests by status.
    match: '%%{REQ}'
    labels: {status: '${status}'}
  - name: http_response_bytes
    match: '%%{REQ}'
    value: bytes
  - name: http_requests_by_path
    match: '%%{REQ}'
    labels: {path: '${path}'}
`

// exporterUnderTest is the real HTTP handler over a real pipeline following a real file.
type exporterUnderTest struct {
	t       testing.TB
	dir     string
	logPath string
	cfgPath string
	clock   *fakeClock
	url     string
	written int
	p       *pipeline.Pipeline
}

// startExporter runs the exporter on e2eRules.
func startExporter(t *testing.T, lifecycle bool) *exporterUnderTest {
	t.Helper()
	return startExporterWith(t, func(logPath string) string { return fmt.Sprintf(e2eRules, logPath) }, lifecycle)
}

// startExporterWith runs the exporter on the config text rules returns for the path of
// the (empty) log file it follows.
func startExporterWith(t testing.TB, rules func(logPath string) string, lifecycle bool) *exporterUnderTest {
	t.Helper()
	dir := t.TempDir()
	e := &exporterUnderTest{
		t:       t,
		dir:     dir,
		logPath: filepath.Join(dir, "access.log"),
		cfgPath: filepath.Join(dir, "rules.yaml"),
		// A second boundary, so that "the same second" is unambiguous in the assertions.
		clock: newFakeClock(time.Unix(1_700_000_000, 0)),
	}
	e.writeConfig(rules(e.logPath))
	if err := os.WriteFile(e.logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := promslog.NewNopLogger()
	p, err := pipeline.Start(cfg, pipeline.Options{Now: e.clock.Now, Logger: logger, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	e.p = p
	coll := p.Collector()
	reg := NewRegistry(coll)
	srv := httptest.NewServer(NewMux(p, coll, reg, Options{Logger: logger, MetricsPath: "/metrics", Lifecycle: lifecycle}))
	t.Cleanup(srv.Close)
	e.url = srv.URL
	e.waitFor(func(map[string]*dto.MetricFamily) bool { return e.get("/-/ready") == http.StatusOK }, "ready")
	// Benchmarks hold tens of thousands of series, where promlint's duplicate check, which
	// compares every pair of samples, would take minutes; the tests lint every scrape state.
	if _, bench := t.(*testing.B); !bench {
		t.Cleanup(func() {
			if problems, err := testutil.GatherAndLint(metrictest.Scraped(exporter.Handler(coll, reg, nil))); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %v", err, problems)
			}
		})
	}
	return e
}

func (e *exporterUnderTest) writeConfig(text string) {
	e.t.Helper()
	if err := os.WriteFile(e.cfgPath, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// request appends n access-log lines and waits until the exporter has read them all.
func (e *exporterUnderTest) request(n int, method, path string, status, bytes int) {
	e.t.Helper()
	lines := make([]string, n)
	for i := range lines {
		lines[i] = accessLine(method, path, status, bytes)
	}
	e.appendLines(lines...)
}

// accessLine is a combined-format line at the fake clock's start time.
func accessLine(method, path string, status, bytes int) string {
	return fmt.Sprintf("10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] \"%s %s HTTP/1.1\" %d %d \"-\" \"curl/8\"", method, path, status, bytes)
}

// appendLines appends lines (any bytes but newlines) to the log and waits until the
// exporter has read them all, counting those skipped for their length.
func (e *exporterUnderTest) appendLines(lines ...string) {
	e.t.Helper()
	e.writeLines(lines...)
	want := float64(e.written)
	e.waitFor(func(m map[string]*dto.MetricFamily) bool {
		return metrictest.Sum(m, "logwindow_input_lines_total")+metrictest.Sum(m, "logwindow_input_too_long_lines_total") == want
	}, fmt.Sprintf("%v lines read", want))
}

// writeLines appends lines to the log without waiting for the exporter.
func (e *exporterUnderTest) writeLines(lines ...string) {
	e.t.Helper()
	var buf strings.Builder
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	f, err := os.OpenFile(e.logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(buf.String()); err != nil {
		e.t.Fatal(err)
	}
	e.written += len(lines)
}

func (e *exporterUnderTest) get(path string) int {
	resp, err := http.Get(e.url + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (e *exporterUnderTest) post(path string) int {
	resp, err := http.Post(e.url+path, "text/plain", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// scrape fetches /metrics over HTTP and parses the exposition text.
func (e *exporterUnderTest) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("scrape: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("scrape: %v", err)
	}
	return families
}

// waitFor scrapes until cond holds: the follower reads files on its own goroutine.
func (e *exporterUnderTest) waitFor(cond func(map[string]*dto.MetricFamily) bool, what string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if cond(e.scrape()) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndToEndWindowsOverHTTP(t *testing.T) {
	e := startExporter(t, false)
	ok := map[string]string{"status": "200"}
	window := func(w string) map[string]string { return map[string]string{"status": "200", "window": w} }

	e.request(10, "GET", "/a", 200, 100)
	e.request(3, "GET", "/a", 500, 10)
	m := e.scrape()
	metrictest.Check(t, m, []metrictest.Sample{
		{Family: "http_requests_total", Labels: ok, Want: 10},
		{Family: "http_requests_window", Labels: window("1m"), Want: 10},
		{Family: "http_requests_window", Labels: window("5m"), Want: 10},
		{Family: "http_requests_window", Labels: map[string]string{"status": "500", "window": "1m"}, Want: 3},
		// One second observed so far: the rate divides by it, not by the window.
		{Family: "http_requests_window_per_second", Labels: window("1m"), Want: 10},
		{Family: "http_response_bytes_total", Labels: nil, Want: 1030},
		{Family: "http_response_bytes_window", Labels: map[string]string{"window": "5m"}, Want: 1030},
		{Family: "http_response_bytes_window_events", Labels: map[string]string{"window": "5m"}, Want: 13},
	})

	// Two minutes later the first burst has left the 1m window but not the 5m one.
	e.clock.Advance(2 * time.Minute)
	e.request(5, "GET", "/a", 200, 100)
	m = e.scrape()
	metrictest.Check(t, m, []metrictest.Sample{
		{Family: "http_requests_total", Labels: ok, Want: 15},
		{Family: "http_requests_window", Labels: window("1m"), Want: 5},
		{Family: "http_requests_window", Labels: window("5m"), Want: 15},
		{Family: "http_requests_window", Labels: map[string]string{"status": "500", "window": "1m"}, Want: 0},
		{Family: "http_requests_window_per_second", Labels: window("1m"), Want: 5.0 / 60},
		{Family: "http_requests_window_per_second", Labels: window("5m"), Want: 15.0 / 121},
	})

	// Idle past the longest window (5m): every series loses its windows, and keeps its
	// _total; the label-less rule keeps every family, at 0.
	e.clock.Advance(6 * time.Minute)
	m = e.scrape()
	if got := metrictest.LabelValues(m, "http_requests_window", "status"); len(got) != 0 {
		t.Errorf("after idle: windows of %v still exported, want released", got)
	}
	metrictest.Check(t, m, []metrictest.Sample{
		{Family: "http_requests_total", Labels: ok, Want: 15},
		{Family: "http_requests_total", Labels: map[string]string{"status": "500"}, Want: 3},
		{Family: "http_response_bytes_total", Labels: nil, Want: 1530},
		{Family: "http_response_bytes_window", Labels: map[string]string{"window": "5m"}, Want: 0},
	})
}

func TestEndToEndOverflowSeries(t *testing.T) {
	e := startExporter(t, false)
	for i, path := range []string{"/a", "/b", "/c", "/d"} {
		e.request(i+1, "GET", path, 200, 1)
	}
	m := e.scrape()
	if got, want := strings.Join(metrictest.LabelValues(m, "http_requests_by_path_total", "path"), ","), "/a,/b,__overflow__"; got != want {
		t.Fatalf("paths = %s, want %s", got, want)
	}
	if got := metrictest.Value(m, "http_requests_by_path_total", map[string]string{"path": "__overflow__"}); got != 3+4 {
		t.Errorf("overflow total = %v, want 7 (the lines of /c and /d)", got)
	}
	if got := metrictest.Value(m, "logwindow_rule_series", map[string]string{"rule": "http_requests_by_path"}); got != 3 {
		t.Errorf("series gauge = %v, want 3 (two plus overflow)", got)
	}
}

func TestEndToEndLifecycle(t *testing.T) {
	t.Run("reload disabled", func(t *testing.T) {
		e := startExporter(t, false)
		if code := e.post("/-/reload"); code != http.StatusForbidden {
			t.Errorf("POST /-/reload without --web.enable-lifecycle = %d, want 403", code)
		}
		for _, path := range []string{"/-/healthy", "/-/ready", "/"} {
			if code := e.get(path); code != http.StatusOK {
				t.Errorf("GET %s = %d, want 200", path, code)
			}
		}
	})
	t.Run("bad config keeps the old one", func(t *testing.T) {
		e := startExporter(t, true)
		e.request(4, "GET", "/a", 200, 1)
		e.writeConfig("rules: [{name: broken, match: '('}]\n")
		if code := e.post("/-/reload"); code != http.StatusBadRequest {
			t.Errorf("reload of a bad config = %d, want 400", code)
		}
		m := e.scrape()
		if got := metrictest.Value(m, "logwindow_config_last_reload_successful", nil); got != 0 {
			t.Errorf("reload successful = %v, want 0", got)
		}
		e.request(1, "GET", "/a", 200, 1)
		if got := metrictest.Value(e.scrape(), "http_requests_window", map[string]string{"status": "200", "window": "1m"}); got != 5 {
			t.Errorf("after failed reload, 1m window = %v, want 5: the old rules must keep running", got)
		}
		if code := e.get("/-/reload"); code != http.StatusMethodNotAllowed {
			t.Errorf("GET /-/reload = %d, want 405", code)
		}
	})
	// A page of another site can have a browser POST a form to the exporter, with the
	// basic auth credentials the browser holds for it: a reload no one asked for. Browsers
	// say where the form came from (Sec-Fetch-Site, Origin); curl and scripts say nothing.
	t.Run("reload from another site's page refused", func(t *testing.T) {
		e := startExporter(t, true)
		e.writeConfig("rules: [{name: broken, match: '('}]\n") // a reload fails: 400
		for _, tc := range []struct {
			name    string
			headers map[string]string
			want    int
		}{
			{"cross-site form", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, http.StatusForbidden},
			{"same-site form", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://evil.example.com"}, http.StatusForbidden},
			{"form of an older browser", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
			{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusBadRequest},
			{"curl", nil, http.StatusBadRequest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodPost, e.url+"/-/reload", strings.NewReader("a=b"))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range tc.headers {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("HTTP %d %s; want %d", resp.StatusCode, body, tc.want)
				}
			})
		}
	})
	t.Run("good reload keeps unchanged rules' windows", func(t *testing.T) {
		e := startExporter(t, true)
		e.request(4, "GET", "/a", 200, 1)
		// Drop the bytes rule and change the path rule; http_requests is unchanged.
		text := fmt.Sprintf(e2eRules, e.logPath)
		text = text[:strings.Index(text, "  - name: http_response_bytes")] + `  - name: http_requests_by_method
    match: '%{REQ}'
    labels: {method: '${method}'}
`
		e.writeConfig(text)
		if code := e.post("/-/reload"); code != http.StatusOK {
			t.Fatalf("reload = %d, want 200", code)
		}
		m := e.scrape()
		if got := metrictest.Value(m, "http_requests_window", map[string]string{"status": "200", "window": "5m"}); got != 4 {
			t.Errorf("unchanged rule's 5m window after reload = %v, want 4", got)
		}
		if _, ok := m["http_response_bytes_total"]; ok {
			t.Error("removed rule still exported")
		}
		if got := metrictest.Value(m, "logwindow_config_last_reload_successful", nil); got != 1 {
			t.Errorf("reload successful = %v, want 1", got)
		}
		e.request(2, "POST", "/b", 200, 1)
		if got := metrictest.Value(e.scrape(), "http_requests_by_method_window", map[string]string{"method": "POST", "window": "1m"}); got != 2 {
			t.Errorf("new rule's window = %v, want 2", got)
		}
	})
}

// An input renamed by a reload, with start_at changed as well, keeps its follower: its
// lines are neither read again from the beginning nor skipped, and rules follow the new name.
func TestReloadRenamedInputKeepsItsPlace(t *testing.T) {
	e := startExporter(t, true)
	e.request(3, "GET", "/a", 200, 1)
	text := strings.Replace(fmt.Sprintf(e2eRules, e.logPath), "  - name: web\n    path: "+e.logPath+"\n",
		"  - name: site\n    path: "+e.logPath+"\n    start_at: beginning\n", 1)
	text += `  - name: site_requests
    match: '%{REQ}'
    inputs: [site]
`
	e.writeConfig(text)
	if code := e.post("/-/reload"); code != http.StatusOK {
		t.Fatalf("reload = %d, want 200", code)
	}
	e.writeLines(accessLine("GET", "/a", 200, 1), accessLine("GET", "/a", 200, 1))
	e.waitFor(func(m map[string]*dto.MetricFamily) bool {
		return metrictest.Value(m, "logwindow_input_lines_total", map[string]string{"input": "site"}) == 5
	}, "5 lines read by the renamed input")
	m := e.scrape()
	if got := metrictest.Value(m, "http_requests_total", map[string]string{"status": "200"}); got != 5 {
		t.Errorf("http_requests_total = %v, want 5: the unchanged rule counts each line once", got)
	}
	if got := metrictest.Value(m, "site_requests_total", nil); got != 2 {
		t.Errorf("site_requests_total = %v, want 2: a rule restricted to the new name sees the new lines", got)
	}
	if got := metrictest.LabelValues(m, "logwindow_input_lines_total", "input"); strings.Join(got, ",") != "site" {
		t.Errorf("inputs exported = %v, want only the new name", got)
	}
}

// TestTelemetryPathUnreachableRefused: a metrics path no scraper's request reaches was
// taken, and the exporter started to serve the metrics nowhere, every scrape answered
// 404: one not clean ("//metrics" of a template joining "/" and "/metrics", "/a/../b"),
// whose requests the mux redirects to the path cleaned, or holding a query ("?": a
// scraper sends what follows as the query of the path before it). One holding a wildcard
// ("{x}") served the metrics at every path of its shape. Each is refused, with why.
func TestTelemetryPathUnreachableRefused(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"//metrics", `redirected to "/metrics"`},
		{"/probe/../metrics", `redirected to "/metrics"`},
		{"/probe/./metrics", `redirected to "/probe/metrics"`},
		{"/metrics//", `redirected to "/metrics/"`},
		{"/metrics?format=text", "query"},
		{"/metrics#top", "fragment"},
		{"/{x}", "wildcard"},
		{"/probe/{target}", "wildcard"},
		{"/metrics/{$}", "wildcard"},
		// The exporter's own paths: the mux's panic named them with the lines of the
		// build machine's source files that registered them.
		{"/", "is the exporter's own"},
		{"/-/healthy", "is the exporter's own"},
		{"/-/explain", "is the exporter's own"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := CheckTelemetryPath(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ".go:") {
				t.Errorf("%v; want refused, saying %q, naming no source file", err, tc.want)
			}
		})
	}
}

func TestTelemetryPathAccepted(t *testing.T) {
	for _, path := range []string{"/metrics", "/probe/metrics", "/-/metrics", "/metrics/"} {
		if err := CheckTelemetryPath(path); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
