// Package e2e holds the black-box tests: each runs the built binary as a process, started
// and scraped through testexec.Exporter, with real programs around it where the test is
// about them. By subject: the process under attack and killed (hardening), counters and
// series over time (counters), rule files updated as the kubelet does (configwatch), the
// status page in a browser and its line tester over HTTP (status, browser), --explain
// (explain), replays against reference models (*_replay), nginx sending syslog (syslog),
// two exporters behind one Prometheus (fleet), and, in this file, the deployment as it
// runs: a real nginx writes its access log in the example's format, the exporter follows
// it with example-rules.yaml, and a real Prometheus scrapes it and evaluates the example's
// alerting rules and dashboard queries; the test sends known requests, rotates the log
// once, and reads everything back through Prometheus's HTTP API. A test that needs a
// program which is not installed skips, unless LOGWINDOW_E2E=1 (set by .ci/run) requires
// it.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestMain removes the exporters testexec.BuildExporter built for the tests.
func TestMain(m *testing.M) {
	os.Exit(testexec.Main(m))
}

// job is the scrape job's name, which the dashboard's $job matches.
const job = "logwindow"

// window is the window the exact checks and the dashboard read: every request of the
// test falls within it.
const window = "1m"

// Timeouts are generous for a loaded CI machine; a passing run takes a fraction of them.
const (
	startTimeout    = 20 * time.Second // a program answers on its port
	convergeTimeout = 30 * time.Second // Prometheus shows what the test sent
)

// batch is a run of identical requests and the status nginx must answer each with.
type batch struct {
	path    string
	status  int
	n       int
	proxied bool // nginx passes it upstream and logs an $upstream_response_time
}

// The traffic: 4xx and 5xx among 200s, a rotation between the two parts. Together they
// pass NginxHighServerErrorRatio's floor of 100 requests with 5xx above its 5%, so its
// expression returns a value and the rule goes pending.
var (
	beforeRotation = []batch{
		{path: "/", status: 200, n: 80},
		{path: "/missing", status: 404, n: 7},
		{path: "/boom", status: 500, n: 5},
		{path: "/bad-gateway", status: 502, n: 3, proxied: true},
	}
	afterRotation = []batch{
		{path: "/", status: 200, n: 10},
		{path: "/boom", status: 500, n: 2},
	}
)

// nativeOnly reports whether expr reads window distributions from native histograms only:
// it selects a window distribution family itself, which only a native histogram answers,
// and not its classic _bucket series.
func nativeOnly(expr string) bool {
	return strings.Contains(expr, "_window_distribution{") && !strings.Contains(expr, "_window_distribution_bucket{")
}

// TestNginxPrometheus runs nginx, the built exporter following its access log across a
// rotation, and every Prometheus testexec.Prometheuses finds (a current release twice, one
// scraping OpenMetrics and one protobuf): each returns the exact counts, answers every
// dashboard query and alert expression, and evaluates the alerting rules; the two formats
// give the same series to every dashboard query.
func TestNginxPrometheus(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs nginx, the built exporter and Prometheus")
	}
	tools := testexec.LookTools(t, "Debian: apt-get install nginx prometheus", "nginx", "promtool")
	began := time.Now()
	dir := t.TempDir() // created first, so removed after every program has stopped
	bin := testexec.BuildExporter(t, testexec.Race)
	ngx := startNginx(t, tools["nginx"], dir)
	exporter := startExporter(t, bin, dir, ngx.accessLog)
	exporterAddr := exporter.Addr()
	proms := startPrometheuses(t, dir, true, exporterAddr)
	ctx := t.Context()

	// One scrape before any traffic: by the time the counts are right, every self-metric
	// has the two samples the dashboard's rate() panels need.
	up := exact{fmt.Sprintf("up{job=%q}", job), map[string]float64{series("__name__", "up", "instance", exporterAddr, "job", job): 1}}
	for _, p := range proms {
		waitExact(ctx, t, p.api, []exact{up})
	}
	t.Logf("set-up (build, nginx, exporter, %d Prometheus servers, first scrape) took %v", len(proms), since(began))

	trafficBegan := time.Now()
	s := newSent()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	s.send(t, client, ngx.base, beforeRotation)
	ngx.rotate(t)
	s.send(t, client, ngx.base, afterRotation)
	t.Logf("sent %d requests with a rotation in %v: by status %v, body bytes by class %v", s.requests, since(trafficBegan), s.byStatus, s.bodyBytes)

	// nginx's side: the rotation split the lines between the two files exactly.
	waitLines(t, ngx.accessLog+".1", requests(beforeRotation))
	waitLines(t, ngx.accessLog, requests(afterRotation))

	qs, err := deploytest.DashboardQueries(repoFile(t, "deploy/grafana-dashboard.json"), deploytest.Vars{Job: job, Instance: exporterAddr, Window: window, RateInterval: "1m"})
	if err != nil {
		t.Fatal(err)
	}
	// answers[server][query] is the series a dashboard query returned on that server.
	answers := map[string]map[string][]string{}
	for _, p := range proms {
		t.Run("prometheus "+p.name, func(t *testing.T) {
			converging := time.Now()
			checks := append(s.exactChecks(), up)
			at := waitExact(ctx, t, p.api, checks)
			converged := time.Now()
			t.Logf("Prometheus %s returned the exact counts %v after it was asked", p.name, since(converging))
			for _, c := range checks {
				t.Logf("%s => %s", c.query, formatSeries(c.want))
			}

			t.Run("dashboard", func(t *testing.T) {
				answers[p.name] = map[string][]string{}
				for _, q := range qs {
					got, err := query(ctx, p.api, q.Expr, at)
					if err != nil {
						t.Errorf("%s: %s: %v", q.Source, q.Expr, err)
						continue
					}
					t.Logf("%s: %s => %s", q.Source, q.Expr, formatSeries(got))
					// These servers scrape no native histograms: the fleet-wide quantiles of a
					// rule without buckets show nothing here (TestFleetNativeHistograms has them).
					if len(got) == 0 && !nativeOnly(q.Expr) {
						t.Errorf("%s returned no data", q.Source)
					}
					for series, v := range got {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							t.Errorf("%s returned %v for %s", q.Source, v, series)
						}
					}
					answers[p.name][q.Expr] = slices.Sorted(maps.Keys(got))
				}
			})

			t.Run("alert expressions", func(t *testing.T) {
				qs, err := deploytest.AlertQueries(repoFile(t, "deploy/alerts.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range qs {
					want := map[string]float64{}
					if strings.Contains(q.Source, `"NginxHighServerErrorRatio"`) {
						want[target(exporterAddr)] = s.serverErrors() / float64(s.requests)
					}
					got, err := query(ctx, p.api, q.Expr, at)
					if err != nil {
						t.Errorf("%s: %v", q.Source, err)
						continue
					}
					t.Logf("%s: %s => %s", q.Source, strings.Join(strings.Fields(q.Expr), " "), formatSeries(got))
					if !maps.Equal(got, want) {
						t.Errorf("%s returned %s, want %s", q.Source, formatSeries(got), formatSeries(want))
					}
				}
			})

			t.Run("alerting rules", func(t *testing.T) {
				// Prometheus evaluates deploy/alerts.yaml itself: each rule must be healthy once
				// evaluated on the final data, and only the 5xx ratio alert be pending (its for:
				// keeps it from firing within the test).
				checkRules(ctx, t, p.api, converged, map[string]string{"NginxHighServerErrorRatio": "pending"})
			})
		})
	}

	t.Run("the same series by every exposition format", func(t *testing.T) {
		compared := 0
		for _, a := range proms {
			for _, b := range proms {
				release, format, ok := strings.Cut(a.name, " ")
				if !ok || format != scrapeProtocols[0].name || b.name != release+" "+scrapeProtocols[1].name {
					continue
				}
				compared++
				for _, q := range qs {
					if x, y := answers[a.name][q.Expr], answers[b.name][q.Expr]; !slices.Equal(x, y) {
						t.Errorf("%s: %s\n%s: %v\n%s: %v", q.Source, q.Expr, a.name, x, b.name, y)
					}
				}
				t.Logf("Prometheus %s: the %d dashboard queries return the same series scraping %s and %s", release, len(qs), scrapeProtocols[0].name, scrapeProtocols[1].name)
			}
		}
		if compared == 0 && testexec.Required {
			t.Errorf("no Prometheus among %d servers scraped both formats", len(proms))
		}
	})

	t.Run("promtool check metrics", func(t *testing.T) {
		body := exporter.Get(t, "/metrics")
		cmd := exec.Command(tools["promtool"], "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
		t.Logf("promtool check metrics: no findings in a scrape of %d bytes, %d families", len(body), bytes.Count(body, []byte("\n# TYPE ")))
	})
	t.Logf("end-to-end run took %v before the programs are stopped", since(began))
}

// sent is what the test sent and nginx answered, as the rules should count it.
type sent struct {
	requests  int
	byStatus  map[string]float64 // status code → requests
	bodyBytes map[string]float64 // status class ("5xx") → response body bytes read
	proxied   int                // requests that went upstream
}

func newSent() *sent {
	return &sent{byStatus: map[string]float64{}, bodyBytes: map[string]float64{}}
}

// send sends the batches' requests one at a time, taking one from each batch in turn, and
// fails the test when nginx answers one with another status than planned.
func (s *sent) send(t *testing.T, client *http.Client, base string, plan []batch) {
	t.Helper()
	left := make([]int, len(plan))
	for i, b := range plan {
		left[i] = b.n
	}
	for more := true; more; {
		more = false
		for i, b := range plan {
			if left[i] == 0 {
				continue
			}
			left[i]--
			more = true
			resp, err := client.Get(base + b.path)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("GET %s: %v", b.path, err)
			}
			if resp.StatusCode != b.status {
				t.Fatalf("GET %s: %s, want %d", b.path, resp.Status, b.status)
			}
			code := strconv.Itoa(b.status)
			s.requests++
			s.byStatus[code]++
			s.bodyBytes[code[:1]+"xx"] += float64(n)
			if b.proxied {
				s.proxied++
			}
		}
	}
}

// serverErrors is the number of 5xx answers.
func (s *sent) serverErrors() float64 {
	var n float64
	for code, c := range s.byStatus {
		if code[0] == '5' {
			n += c
		}
	}
	return n
}

// exactChecks are the queries whose results must equal what was sent, exactly, once
// Prometheus has scraped it all.
func (s *sent) exactChecks() []exact {
	byStatus, serverErrors, bodyBytes := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for code, n := range s.byStatus {
		byStatus[series("status", code)] = n
		if code[0] == '5' {
			serverErrors[series("status", code)] = n
		}
	}
	for class, n := range s.bodyBytes {
		bodyBytes[series("status_class", class)] = n
	}
	all := func(n float64) map[string]float64 { return map[string]float64{series(): n} }
	nginxInput := func(n float64) map[string]float64 { return map[string]float64{series("input", "nginx"): n} }
	w := fmt.Sprintf("{window=%q}", window)
	return []exact{
		{"sum by (status) (nginx_http_requests_window" + w + ")", byStatus},
		{"sum by (status) (nginx_http_requests_total)", byStatus},
		{"sum by (status) (nginx_http_server_errors_window" + w + ")", serverErrors},
		{"sum by (status) (nginx_http_server_errors_total)", serverErrors},
		{"sum by (status_class) (nginx_http_response_body_bytes_window" + w + ")", bodyBytes},
		{"sum by (status_class) (nginx_http_response_body_bytes_total)", bodyBytes},
		{"sum(nginx_http_request_duration_seconds_window_events" + w + ")", all(float64(s.requests))},
		{"sum(nginx_http_upstream_response_time_seconds_window_events" + w + ")", all(float64(s.proxied))},
		{"sum by (input) (logwindow_input_lines_total)", nginxInput(float64(s.requests))},
		{"sum by (input) (logwindow_input_rotations_total)", nginxInput(1)},
		// Nothing dropped (all zero, but present for every rule and reason), nothing unread.
		{"sum(logwindow_rule_dropped_lines_total)", all(0)},
		{"max(logwindow_input_behind_bytes)", all(0)},
	}
}

// waitLines waits until nginx has logged want lines to path. nginx logs a request once it
// has sent the answer, so the client can read the answer a moment before the line is
// written.
func waitLines(t *testing.T, path string, want int) {
	t.Helper()
	for deadline := time.Now().Add(startTimeout); ; time.Sleep(20 * time.Millisecond) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Count(data, []byte("\n"))
		if got == want {
			t.Logf("nginx wrote %d lines to %s", got, filepath.Base(path))
			return
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("%s holds %d lines, want %d:\n%s", filepath.Base(path), got, want, data)
		}
	}
}

// requests is the number of requests in a plan.
func requests(plan []batch) int {
	n := 0
	for _, b := range plan {
		n += b.n
	}
	return n
}

// exact is a PromQL query and the result it must return, by series (see series).
type exact struct {
	query string
	want  map[string]float64
}

// series is the key of a series in query results: its labels, given as name, value pairs.
func series(nameValues ...string) string {
	m := model.Metric{}
	for i := 0; i+1 < len(nameValues); i += 2 {
		m[model.LabelName(nameValues[i])] = model.LabelValue(nameValues[i+1])
	}
	return m.String()
}

// target is the key of a series that carries only the scrape target's labels.
func target(addr string) string {
	return series("instance", addr, "job", job)
}

// query runs an instant query at the instant at, which must return a vector without
// warnings.
func query(ctx context.Context, prom promv1.API, q string, at time.Time) (map[string]float64, error) {
	v, warnings, _, err := prom.Query(ctx, q, at)
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("warnings: %v", warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("returned a %s, not an instant vector", v.Type())
	}
	got := make(map[string]float64, len(vec))
	for _, s := range vec {
		got[s.Metric.String()] = float64(s.Value)
	}
	return got, nil
}

// waitExact polls until every check returns exactly what it wants at one settled instant
// (settled), and returns that instant, at which the test's later queries read the state
// the checks passed on: a query at a later instant may read a scrape that failed since
// (its staleness markers hide the target's series), and one at the instant of a query's
// sending may miss a scrape still in flight that began before it. It fails the test
// with the differences after convergeTimeout. A query error fails it at once: it will
// not pass by waiting.
func waitExact(ctx context.Context, t *testing.T, prom promv1.API, checks []exact) time.Time {
	t.Helper()
	for deadline := time.Now().Add(convergeTimeout); ; {
		at, err := settled(ctx, prom)
		if err != nil {
			t.Fatal(err)
		}
		diffs := []string{"no target scraped yet"}
		if !at.IsZero() {
			diffs = nil
			for _, c := range checks {
				got, err := query(ctx, prom, c.query, at)
				if err != nil {
					t.Fatalf("%s: %v", c.query, err)
				}
				if !maps.Equal(got, c.want) {
					diffs = append(diffs, fmt.Sprintf("%s => %s, want %s", c.query, formatSeries(got), formatSeries(c.want)))
				}
			}
		}
		if len(diffs) == 0 {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, Prometheus still returns:\n%s", convergeTimeout, strings.Join(diffs, "\n"))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// settled returns the latest instant up to which prom holds every sample of the job's
// targets that it will ever hold, or the zero time before it scraped any. A scrape writes
// its samples, up among them, or when it fails the staleness markers of the target's
// series, at the instant it began, and a target's scrapes run one after another: so every
// scrape of a target that began by the instant of its latest up sample is written, and of
// every target by the earliest of those.
func settled(ctx context.Context, prom promv1.API) (time.Time, error) {
	q := fmt.Sprintf("timestamp(up{job=%q})", job)
	scraped, err := query(ctx, prom, q, time.Now())
	if err != nil || len(scraped) == 0 {
		return time.Time{}, err
	}
	earliest := math.Inf(1)
	for _, ts := range scraped {
		earliest = min(earliest, ts)
	}
	return time.UnixMilli(int64(math.Round(earliest * 1000))), nil
}

// checkRules waits until Prometheus has evaluated every alerting rule after converged,
// then wants each healthy and in state inactive, or in the state wantState names.
func checkRules(ctx context.Context, t *testing.T, prom promv1.API, converged time.Time, wantState map[string]string) {
	t.Helper()
	var alerting []promv1.AlertingRule
	for deadline := time.Now().Add(convergeTimeout); ; {
		rules, err := prom.Rules(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		alerting = alerting[:0]
		stale := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				a, ok := r.(promv1.AlertingRule)
				if !ok {
					t.Fatalf("group %s: unexpected rule %#v", g.Name, r)
				}
				alerting = append(alerting, a)
				if !a.LastEvaluation.After(converged) {
					stale++
				}
			}
		}
		if len(alerting) == 0 {
			t.Fatal("Prometheus loaded no alerting rule from deploy/alerts.yaml")
		}
		if stale == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d of %d rules were not evaluated since the data was complete", convergeTimeout, stale, len(alerting))
		}
		time.Sleep(250 * time.Millisecond)
	}
	seen := map[string]bool{}
	for _, a := range alerting {
		seen[a.Name] = true
		want := wantState[a.Name]
		if want == "" {
			want = "inactive"
		}
		var values []string
		for _, al := range a.Alerts {
			values = append(values, al.Value)
		}
		t.Logf("rule %s: health %s, state %s, alert values %v", a.Name, a.Health, a.State, values)
		if a.Health != promv1.RuleHealthGood || a.LastError != "" {
			t.Errorf("rule %s: health %s: %s", a.Name, a.Health, a.LastError)
		}
		if a.State != want {
			t.Errorf("rule %s is %s, want %s", a.Name, a.State, want)
		}
	}
	for name := range wantState {
		if !seen[name] {
			t.Errorf("Prometheus has no rule %s", name)
		}
	}
}

// formatSeries prints query results in a stable order, for logs and failures.
func formatSeries(m map[string]float64) string {
	if len(m) == 0 {
		return "(no data)"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+strconv.FormatFloat(m[k], 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// since is the time since t, rounded for logs.
func since(t time.Time) time.Duration {
	return time.Since(t).Round(time.Millisecond)
}

// repoFile returns a file of the repository, named from its root.
func repoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// nginxLogFormat is the log format of the example deployment's nginx, for an nginx of the
// test's own.
func nginxLogFormat(t *testing.T) string {
	t.Helper()
	_, format, err := deploytest.NginxAccessLogs(string(repoFile(t, "deploy/k8s/nginx.conf")))
	if err != nil {
		t.Fatal(err)
	}
	return format
}

// render executes testdata/name with data into the file out.
func render(t *testing.T, name, out string, data any) {
	t.Helper()
	tmpl, err := template.New(name).Option("missingkey=error").ParseFiles(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nginx is a running nginx and the files it uses.
type nginx struct {
	bin, prefix, conf, errorLog, accessLog string
	base                                   string // its URL
	workers                                int
}

// startNginx runs nginx in the foreground on a free loopback port, with the example's log
// format and its access log under dir.
func startNginx(t *testing.T, bin, dir string) *nginx {
	t.Helper()
	format := nginxLogFormat(t)
	n := &nginx{bin: bin, prefix: filepath.Join(dir, "nginx"), workers: 2}
	if err := os.Mkdir(n.prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	n.conf = filepath.Join(n.prefix, "nginx.conf")
	n.errorLog = filepath.Join(n.prefix, "error.log")
	n.accessLog = filepath.Join(n.prefix, "access.log")
	user := ""
	if os.Geteuid() == 0 {
		user = "root"
	}
	port := testexec.FreePort(t)
	render(t, "nginx.conf.tmpl", n.conf, map[string]any{
		"User":       user,
		"Workers":    n.workers,
		"Dir":        n.prefix,
		"ErrorLog":   n.errorLog,
		"LogFormat":  format,
		"AccessLog":  n.accessLog,
		"Port":       port,
		"ClosedPort": testexec.FreePort(t),
	})
	p := testexec.StartTest(t, dir, "nginx", append(n.args(), "-g", "daemon off;"), n.errorLog)
	n.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	testexec.WaitHTTP(t, p, n.base+"/healthz")
	return n
}

// args are the arguments that point nginx at the test's prefix, config and error log.
func (n *nginx) args() []string {
	return []string{n.bin, "-p", n.prefix, "-c", n.conf, "-e", n.errorLog}
}

// rotate renames the access log away and runs nginx -s reopen, as logrotate does, then
// waits until the master and every worker have logged "reopening logs". A worker logs it
// and reopens in one turn of its event loop, so every request sent after that is logged to
// the new file.
func (n *nginx) rotate(t *testing.T) {
	t.Helper()
	reopened := func() int {
		data, err := os.ReadFile(n.errorLog)
		if err != nil {
			t.Fatal(err)
		}
		// Not the master's "signal 10 (SIGUSR1) received from ..., reopening logs".
		return bytes.Count(data, []byte(": reopening logs\n"))
	}
	want := reopened() + 1 + n.workers
	if err := os.Rename(n.accessLog, n.accessLog+".1"); err != nil {
		t.Fatal(err)
	}
	argv := append(n.args(), "-s", "reopen")
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	for deadline := time.Now().Add(startTimeout); ; {
		got := reopened()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx logged \"reopening logs\" %d times within %v, want %d (master and %d workers)", got, startTimeout, want, n.workers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startExporter runs the built exporter with example-rules.yaml following accessLog from
// its beginning, and returns it ready.
func startExporter(t *testing.T, bin, dir, accessLog string) *testexec.Exporter {
	t.Helper()
	config := deploytest.WriteServedRules(t, repoFile(t, "example-rules.yaml"), dir, accessLog)
	return testexec.StartExporter(t, bin, "--config.file="+config)
}

// promServer is one Prometheus a test runs: its name for subtests ("2.42", "3.16
// protobuf") and a client of its HTTP API.
type promServer struct {
	name string
	api  promv1.API
}

// scrapeProtocols are the exposition formats a Prometheus that can be told which one to
// scrape (2.49 and later) is run with, one server each, when a test asks for both: the
// same queries must answer the same whichever the exporter wrote.
var scrapeProtocols = []struct{ name, protocol string }{
	{"openmetrics", "OpenMetricsText1.0.0"},
	{"protobuf", "PrometheusProto"},
}

// startPrometheuses runs every Prometheus of testexec.Prometheuses (Debian's, and a current
// one in CI) scraping the targets, each in a directory of its own under dir; with
// byProtocol, a release that can be told the format it scrapes runs once per
// scrapeProtocols entry.
func startPrometheuses(t *testing.T, dir string, byProtocol bool, targets ...string) []promServer {
	t.Helper()
	var servers []promServer
	for _, p := range testexec.Prometheuses(t) {
		if !byProtocol || !p.AtLeast(2, 49) {
			servers = append(servers, promServer{p.Name(), startPrometheus(t, p.Path, filepath.Join(dir, "prometheus-"+p.Name()), "", targets...)})
			continue
		}
		for _, s := range scrapeProtocols {
			name := p.Name() + " " + s.name
			servers = append(servers, promServer{name, startPrometheus(t, p.Path, filepath.Join(dir, "prometheus-"+p.Name()+"-"+s.name), s.protocol, targets...)})
		}
	}
	return servers
}

// startPrometheus runs Prometheus in dir (made here) scraping the targets every second,
// in protocol when it is not empty, and evaluating deploy/alerts.yaml, and returns a
// client of its HTTP API once it is ready.
func startPrometheus(t *testing.T, bin, dir, protocol string, targets ...string) promv1.API {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "alerts.yaml")
	if err := os.WriteFile(rules, repoFile(t, "deploy/alerts.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "prometheus.yml")
	render(t, "prometheus.yml.tmpl", config, map[string]any{"Rules": strconv.Quote(rules), "Job": job, "Targets": targets, "Protocol": protocol})
	addr := fmt.Sprintf("127.0.0.1:%d", testexec.FreePort(t))
	p := testexec.StartTest(t, dir, "prometheus", []string{
		bin,
		"--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=" + addr,
	})
	testexec.WaitHTTP(t, p, "http://"+addr+"/-/ready")
	client, err := api.NewClient(api.Config{Address: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(client)
}
