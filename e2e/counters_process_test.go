package e2e

// Counters and series the way Prometheus users expect, through the built binary on
// loopback: counters outlive their windows, label-less rules and initial label sets exist
// from the start, window labels are as written.

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/hardening"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
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
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath, "--input.poll-interval=50ms")
	status := func(s string) map[string]string { return map[string]string{"status": s} }
	window := func(w string) map[string]string { return map[string]string{"window": w} }

	t.Run("0 samples at start", func(t *testing.T) {
		m := p.Scrape(t)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_server_errors_total", Labels: nil, Want: 0},
			{Family: "http_server_errors_window", Labels: window("2s"), Want: 0},
			{Family: "http_server_errors_window", Labels: window("90s"), Want: 0},
			{Family: "http_server_errors_window", Labels: window("24h"), Want: 0},
			{Family: "http_server_errors_window_per_second", Labels: window("24h"), Want: 0},
			{Family: "http_requests_total", Labels: status("503"), Want: 0},
			{Family: "http_requests_window", Labels: metrictest.WithLabel(status("503"), "window", "2s"), Want: 0},
		})
	})

	t.Run("window labels as written", func(t *testing.T) {
		m := p.Scrape(t)
		got := metrictest.LabelValues(m, "http_server_errors_window", "window")
		if fmt.Sprint(got) != "[24h 2s 90s]" {
			t.Errorf("window labels %v, want [24h 2s 90s]", got)
		}
	})

	t.Run("counters outlive their windows", func(t *testing.T) {
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 500 5 "-" "-"`, 7)
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 200 5 "-" "-"`, 3)
		p.WaitLines(t, 10)
		// Within 2 s the window held the lines; then it expires and is released.
		m := p.WaitFor(t, "the 2s windows of status 500 are released", func(m metrictest.Families) bool {
			return metrictest.Value(m, "http_requests_window", metrictest.WithLabel(status("500"), "window", "2s")) == -1
		})
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: status("500"), Want: 7},
			{Family: "http_requests_total", Labels: status("200"), Want: 3},
			{Family: "http_requests_total", Labels: status("503"), Want: 0},
			{Family: "http_requests_window", Labels: metrictest.WithLabel(status("503"), "window", "2s"), Want: 0},
			{Family: "http_server_errors_total", Labels: nil, Want: 7},
		})
		// The label-less rule keeps exporting its windows, at 0 once they are empty.
		m = p.WaitFor(t, "the label-less rule's 2s window is back to 0", func(m metrictest.Families) bool {
			return metrictest.Value(m, "http_server_errors_window", window("2s")) == 0
		})
		metrictest.Check(t, m, []metrictest.Sample{{Family: "http_server_errors_total", Labels: nil, Want: 7}})
		// A new line revives the label set: the counter goes on from where it was.
		writeFileLines(t, logPath, `1.2.3.4 - - [x] "GET / HTTP/1.1" 500 5 "-" "-"`, 2)
		m = p.WaitLines(t, 12)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: status("500"), Want: 9},
			{Family: "http_server_errors_total", Labels: nil, Want: 9},
		})
	})
}

// An input whose path matches no file: a warning at start, at reload and from
// --config.check; logwindow_input_files 0 until the file appears, then 1; the exporter is
// ready meanwhile. Lines no rule matches are counted exactly.
func TestProcessMissingInputAndUnmatchedLines(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "acess.log") // the typo the warning is for
	cfgPath := filepath.Join(dir, "rules.yaml")
	rules := strings.ReplaceAll(`
inputs: [{name: web, path: LOGFILE}]
rules:
  - {name: http_server_errors, match: '" (?P<status>[0-9]{3}) ', where: {status: '^5'}}
`, "LOGFILE", logPath)
	if err := os.WriteFile(cfgPath, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	warning := fmt.Sprintf(`input "web": path %q matches no file; it is followed once one appears, and logwindow_input_files{input="web"} is 0 until then`, logPath)

	t.Run("config.check", func(t *testing.T) {
		out, err := exec.Command(bin, "--config.file="+cfgPath, "--config.check").CombinedOutput()
		if err != nil {
			t.Fatalf("--config.check: %v\n%s", err, out)
		}
		if want := cfgPath + ": warning: " + warning + "\n"; !strings.Contains(string(out), want) {
			t.Errorf("--config.check said:\n%s\nwant the line:\n%s", out, want)
		}
	})

	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath, "--input.poll-interval=50ms", "--web.enable-lifecycle")
	warnings := func() int {
		n := 0
		for _, l := range strings.Split(p.Log(), "\n") {
			var entry struct{ Level, Msg string }
			if json.Unmarshal([]byte(l), &entry) == nil && entry.Level == "WARN" && entry.Msg == warning {
				n++
			}
		}
		return n
	}
	// Listening is logged after the inputs started, so the start's warning is in already.
	if n := warnings(); n != 1 {
		t.Errorf("%d warnings at start, want 1:\n%s", n, p.Log())
	}
	if code := httpStatus(t, p.URL()+"/-/ready", http.MethodGet); code != http.StatusOK {
		t.Errorf("/-/ready = %d with the input's file missing, want 200", code)
	}
	m := p.Scrape(t)
	metrictest.Check(t, m, []metrictest.Sample{{Family: "logwindow_input_files", Labels: map[string]string{"input": "web"}, Want: 0}})
	if code := httpStatus(t, p.URL()+"/-/reload", http.MethodPost); code != http.StatusOK {
		t.Fatalf("reload = %d", code)
	}
	// The reload answers before it logs: wait for its own message before counting.
	p.WaitLogged(t, `"msg":"configuration reloaded"`)
	if n := warnings(); n != 2 {
		t.Errorf("%d warnings after a reload, want 2:\n%s", n, p.Log())
	}

	lines := []string{
		`1.2.3.4 - - [x] "GET / HTTP/1.1" 500 5 "-" "-"`,
		`1.2.3.4 - - [x] "GET / HTTP/1.1" 200 5 "-" "-"`, // matched by the regex, not by where
		`garbage`,
		`1.2.3.4 - - [x] "GET / HTTP/1.1" 503 5 "-" "-"`,
		``,
	}
	writeFileLines(t, logPath, strings.Join(lines, "\n"), 10)
	p.WaitLines(t, 50)
	// The rule's counter may show its lines a scrape after the input's own counters do
	// (seen about once in ten runs right after the file appears, never lines lost), so the
	// exact counts are waited for rather than read from the first scrape with every line.
	p.WaitCheck(t, func(m metrictest.Families) error {
		return metrictest.Match(m, []metrictest.Sample{
			{Family: "logwindow_input_files", Labels: map[string]string{"input": "web"}, Want: 1},
			{Family: "logwindow_input_unmatched_lines_total", Labels: map[string]string{"input": "web"}, Want: 30},
			{Family: "http_server_errors_total", Labels: nil, Want: 20},
		})
	})
}

// httpStatus sends an empty request and returns the status code.
func httpStatus(t *testing.T, url, method string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Warm start: the exporter is killed and started again with start_at: end; at once, before
// any new line, its 1m and 5m windows equal a naive count of the file's lines, and its
// _total counts none of them (they were counted by the process that read them first).
func TestProcessWarmStart(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	cfgPath := filepath.Join(dir, "rules.yaml")
	rules := strings.ReplaceAll(`
global: {windows: [1m, 5m]}
inputs: [{name: web, path: LOGFILE, start_at: end}]
rules:
  - name: http_requests
    match: '^[^ ]+ [^ ]+ [^ ]+ \[(?P<time_local>[^\]]+)\] "[^"]*" (?P<status>[0-9]{3}) '
    labels: {status: '${status}'}
    timestamp: {capture: time_local, layout: '02/Jan/2006:15:04:05 -0700'}
`, "LOGFILE", logPath)
	if err := os.WriteFile(cfgPath, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	var times []int64
	var codes []int
	rng := rand.New(rand.NewPCG(15, 5))
	// write appends n lines spread over the span seconds before now, none ahead of it.
	write := func(n int, span int64) {
		now := time.Now().Unix()
		var b strings.Builder
		for i := range n {
			at := now - span + int64(i)*span/int64(n) + rng.Int64N(11) - 5
			at = min(at, now)
			code := []int{200, 200, 404, 500}[rng.IntN(4)]
			b.WriteString(hardening.EventLine(at, time.UTC, code) + "\n")
			times, codes = append(times, at), append(codes, code)
		}
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--config.file=" + cfgPath, "--input.poll-interval=50ms"}
	write(3000, 400) // older than the process: only a warm start brings them
	first := testexec.StartExporter(t, bin, args...)
	write(200, 20)
	first.WaitLines(t, 200)
	_ = first.Kill()
	write(300, 30) // while no exporter runs

	// Started once ready: every file opened, positioned and backfilled.
	second := testexec.StartExporter(t, bin, args...)
	m, at := second.ScrapeAt(t)
	for _, status := range []int{200, 404, 500} {
		for _, w := range []struct {
			label string
			secs  int64
		}{{"1m", 60}, {"5m", 300}} {
			want := 0.0
			for i, ti := range times {
				if codes[i] == status && ti > at-w.secs && ti <= at {
					want++
				}
			}
			labels := map[string]string{"status": fmt.Sprint(status), "window": w.label}
			if got := metrictest.Value(m, "http_requests_window", labels); got != want {
				t.Errorf("%v at %d = %v, want %v", labels, at, got, want)
			}
		}
		if got := metrictest.Value(m, "http_requests_total", map[string]string{"status": fmt.Sprint(status)}); got != 0 {
			t.Errorf("total of %d = %v, want 0", status, got)
		}
	}
}

// Every link of the status page at / answers 200 (it links no profile, which the exporter
// does not serve), and a build without -ldflags reports the module's version from its
// build info, the one `go version -m` reads from the binary (or, when that is "(devel)",
// the VERSION file's with "-devel").
func TestProcessStatusLinksAndVersion(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte("inputs: [{path: "+filepath.Join(dir, "a.log")+"}]\nrules: [{name: lines, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath)
	pageURL, err := url.Parse(p.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(pageURL.String())
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(string(page), -1)
	checked := 0
	for _, l := range links {
		href := html.UnescapeString(l[1])
		if strings.HasPrefix(href, "http") {
			continue // off-site links
		}
		ref, err := url.Parse(href)
		if err != nil || ref.IsAbs() || strings.HasPrefix(href, "/") {
			t.Errorf("landing page link %q is not relative to the page: it would leave a proxy's path prefix", href)
			continue
		}
		u := pageURL.ResolveReference(ref).String()
		if code := httpStatus(t, u, http.MethodGet); code != http.StatusOK {
			t.Errorf("landing page link %s answers %d", href, code)
		}
		checked++
	}
	if strings.Contains(string(page), "pprof") || checked < 3 {
		t.Errorf("checked %d links; want the metrics, health and readiness links and no profile:\n%s", checked, page)
	}

	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+mod\s+\S+\s+(\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no module version in:\n%s", out)
	}
	want := strings.TrimPrefix(string(m[1]), "v")
	if want == "(devel)" {
		// The toolchain named no version (no VCS information): the binary reports the
		// tree's next release, from the VERSION file, as a development build.
		release, err := os.ReadFile(filepath.Join("..", "VERSION"))
		if err != nil {
			t.Fatal(err)
		}
		want = strings.TrimSpace(string(release)) + "-devel"
	}
	got, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "version "+want+" ") {
		t.Errorf("--version says:\n%s\nwant version %s (the module's, from its build info)", got, want)
	}
	if !strings.Contains(string(page), ">"+html.EscapeString(want)+"<") {
		t.Errorf("the status page does not show version %s", want)
	}
}
