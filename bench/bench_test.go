package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestMain removes the exporters testexec.BuildExporter built for the tests.
func TestMain(m *testing.M) {
	os.Exit(testexec.Main(m))
}

// line builds an access-log line of the generator's format.
func line(method, target, status, bytes, timings string) string {
	return `203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "` + method + ` ` + target + ` HTTP/1.1" ` +
		status + ` ` + bytes + ` "-" "Mozilla/5.0 (X11; Linux x86_64)" ` + timings
}

func TestSplitAccess(t *testing.T) {
	cases := []struct {
		name string
		line string
		want access
		ok   bool
	}{
		{"upstream", line("GET", "/api/v1/users/4821", "200", "1532", "0.034 0.032"),
			access{method: "GET", path: "/api/v1/users/4821", status: "200", bytes: 1532, requestTime: 0.034, upstream: "0.032"}, true},
		{"query and no upstream", line("HEAD", "/search?q=a&page=2", "304", "0", "0.000 -"),
			access{method: "HEAD", path: "/search", status: "304", bytes: 0, requestTime: 0, upstream: "-"}, true},
		{"retried upstream", line("POST", "/api/v1/cart", "502", "157", "0.050 0.004, 0.045"),
			access{method: "POST", path: "/api/v1/cart", status: "502", bytes: 157, requestTime: 0.05, upstream: "0.004"}, true},
		{"no request", `203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "-" 400 0 "-" "-" 0.000 -`, access{}, false},
		{"no timings", line("GET", "/", "200", "10", ""), access{}, false},
		{"bad bytes", line("GET", "/", "200", "x", "0.1 0.1"), access{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := splitAccess(tc.line)
			if ok != tc.ok || ok && got != tc.want {
				t.Errorf("splitAccess = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestExampleTotals(t *testing.T) {
	tl := newTally()
	for _, l := range []string{
		line("GET", "/a?x=1", "200", "100", "0.5 0.4"),
		line("GET", "/a", "200", "50", "0.25 -"),
		line("POST", "/b", "503", "7", "1 0.5, 0.25"),
		"garbage",
	} {
		tl.add(l)
	}
	want := samples{
		`nginx_http_requests_total{method="GET",status="200",status_class="2xx"}`:        2,
		`nginx_http_requests_total{method="POST",status="503",status_class="5xx"}`:       1,
		`nginx_http_requests_copy1_total{method="GET",status="200",status_class="2xx"}`:  2,
		`nginx_http_requests_copy1_total{method="POST",status="503",status_class="5xx"}`: 1,
		`nginx_http_server_errors_total{status="503"}`:                                   1,
		`nginx_http_response_body_bytes_total{status_class="2xx"}`:                       150,
		`nginx_http_response_body_bytes_total{status_class="5xx"}`:                       7,
		`nginx_http_request_duration_seconds_total{status_class="2xx"}`:                  0.75,
		`nginx_http_request_duration_seconds_total{status_class="5xx"}`:                  1,
		`nginx_http_upstream_response_time_seconds_total{}`:                              0.9,
		`nginx_http_path_requests_total{}`:                                               3,
		`nginx_http_path_server_errors_total{}`:                                          1,
	}
	got := tl.exampleTotals(1)
	if tl.lines != 4 || tl.unparsed != 1 {
		t.Errorf("lines %d, unparsed %d; want 4, 1", tl.lines, tl.unparsed)
	}
	if err := got.check(want); err != nil {
		t.Error(err)
	}
	paths := tl.pathTotals(1)
	if err := paths.check(samples{
		pathRuleName + `_total{path="/a"}`:           2,
		pathRuleName + `_total{path="__overflow__"}`: 1,
	}); err != nil {
		t.Error(err)
	}
	if n := tl.pathSeries(1); n != 2 {
		t.Errorf("pathSeries(1) = %d, want 2", n)
	}
}

// TestCheck shows the check fails on every kind of difference: a benchmark whose check
// cannot fail proves nothing.
func TestCheck(t *testing.T) {
	want := newExpected("a_total", "b_total")
	want.set(3, "a_total", "k", "x")
	want.set(0.1+0.2, "b_total")
	cases := []struct {
		name  string
		expo  string
		fails string // substring of the error; "" for none
	}{
		{"equal, other labels order, prog ignored, other families ignored",
			"a_total{prog=\"p\",k=\"x\"} 3\nb_total 0.30000000000000004\nc_total 9\n", ""},
		{"sum in another order", "a_total{k=\"x\"} 3\nb_total 0.3\n", ""},
		{"missing", "a_total{k=\"x\"} 3\n", "missing b_total{}"},
		{"different", "a_total{k=\"x\"} 4\nb_total 0.3\n", `a_total{k="x"} = 4, want 3`},
		{"extra", "a_total{k=\"x\"} 3\na_total{k=\"y\"} 1\nb_total 0.3\n", `unexpected a_total{k="y"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseExposition(strings.NewReader(tc.expo))
			if err != nil {
				t.Fatal(err)
			}
			err = want.check(s.values)
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Errorf("error %v, want one mentioning %q", err, tc.fails)
			}
		})
	}
}

func TestCheckWindows(t *testing.T) {
	cases := []struct {
		name string
		expo string
		ok   bool
	}{
		{"equal", "r_total{s=\"1\"} 5\nr_window{s=\"1\",window=\"24h\"} 5\nr_window{s=\"1\",window=\"1m\"} 2\n", true},
		{"no label", "r_total 5\nr_window{window=\"24h\"} 5\n", true},
		{"lost lines", "r_total{s=\"1\"} 5\nr_window{s=\"1\",window=\"24h\"} 4\n", false},
		{"no total", "r_window{s=\"1\",window=\"24h\"} 4\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseExposition(strings.NewReader(tc.expo))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.checkWindows(); (err == nil) != tc.ok {
				t.Errorf("checkWindows() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestRedate(t *testing.T) {
	in := line("GET", "/", "200", "1", "0.1 0.1") + "\n" +
		strings.Replace(line("GET", "/", "200", "1", "0.1 0.1"), "12:00:00", "12:00:59", 1) + "\n"
	var out bytes.Buffer
	tl, err := redate(strings.NewReader(in), &out, 25*time.Hour+30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(in, "01/Mar/2024:12:00:00", "02/Mar/2024:13:00:30")
	want = strings.ReplaceAll(want, "01/Mar/2024:12:00:59", "02/Mar/2024:13:01:29")
	if out.String() != want {
		t.Errorf("redate wrote\n%s\nwant\n%s", out.String(), want)
	}
	if tl.lines != 2 || tl.unparsed != 0 {
		t.Errorf("counted %d lines, %d unparsed; want 2, 0", tl.lines, tl.unparsed)
	}
}

// TestBenchConfig loads the configs the benchmark writes with the exporter's own loader,
// from the example in both its forms: the log format's, and the regex's.
func TestBenchConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		c         benchConfig
		rules     []string
		maxSeries int
		// sketches is how many rules have distinct: or top:.
		sketches int
	}{
		{"example rules, two inputs", benchConfig{inputs: []string{"/a.log", "/b.log"}},
			[]string{"nginx_http_requests", "nginx_http_server_errors", "nginx_http_clients", "nginx_http_response_body_bytes",
				"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
				"nginx_http_path_requests", "nginx_http_path_server_errors"}, 10000, 3},
		{"path rule", benchConfig{inputs: []string{"/a.log"}, pathRule: true, maxSeries: 123},
			[]string{pathRuleName}, 123, 0},
		{"extra rules", benchConfig{inputs: []string{"/a.log"}, extraRules: 2},
			[]string{"nginx_http_requests", "nginx_http_server_errors", "nginx_http_clients", "nginx_http_response_body_bytes",
				"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
				"nginx_http_path_requests", "nginx_http_path_server_errors",
				"nginx_http_requests_copy1", "nginx_http_requests_copy2"}, 10000, 3},
		{"like mtail", benchConfig{inputs: []string{"/a.log"}, likeMtail: true},
			[]string{"nginx_http_requests", "nginx_http_server_errors", "nginx_http_response_body_bytes",
				"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
				"nginx_http_path_requests", "nginx_http_path_server_errors"}, 10000, 0},
		// The first rule holds the anchor of the others' timestamp: they keep it.
		{"without the first rule", benchConfig{inputs: []string{"/a.log"}, without: []string{"nginx_http_requests"}},
			[]string{"nginx_http_server_errors", "nginx_http_clients", "nginx_http_response_body_bytes",
				"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
				"nginx_http_path_requests", "nginx_http_path_server_errors"}, 10000, 3},
		{"without the sketch rules", benchConfig{inputs: []string{"/a.log"}, without: []string{"nginx_http_clients", "nginx_http_path_requests"}},
			[]string{"nginx_http_requests", "nginx_http_server_errors", "nginx_http_response_body_bytes",
				"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
				"nginx_http_path_server_errors"}, 10000, 1},
	}
	for _, src := range []string{filepath.Join("..", "example-rules.yaml"), "example-rules-regex.yaml"} {
		orig, err := config.Load(src)
		if err != nil {
			t.Fatal(err)
		}
		hasFormat := orig.Inputs[0].LogFormat != nil
		for _, tc := range cases {
			t.Run(filepath.Base(src)+"/"+tc.name, func(t *testing.T) {
				dst := filepath.Join(dir, "rules.yaml")
				if err := tc.c.write(src, dst); err != nil {
					t.Fatal(err)
				}
				cfg, err := config.Load(dst)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				sketches := 0
				for _, r := range cfg.Rules {
					names = append(names, r.Name)
					if r.Timestamp == nil {
						t.Errorf("rule %s lost its timestamp", r.Name)
					}
					if r.Top != nil || r.DistinctItem != 0 {
						sketches++
					}
					// mtail's program keeps the path rules' counts without the path.
					if tc.c.likeMtail && strings.HasPrefix(r.Name, "nginx_http_path_") && len(r.Labels) > 0 {
						t.Errorf("rule %s kept %d labels", r.Name, len(r.Labels))
					}
				}
				if sketches != tc.sketches {
					t.Errorf("%d rules with distinct: or top:, want %d", sketches, tc.sketches)
				}
				if strings.Join(names, " ") != strings.Join(tc.rules, " ") {
					t.Errorf("rules %v, want %v", names, tc.rules)
				}
				if cfg.Global.MaxSeriesPerRule != tc.maxSeries {
					t.Errorf("max_series_per_rule %d, want %d", cfg.Global.MaxSeriesPerRule, tc.maxSeries)
				}
				if len(cfg.Inputs) != len(tc.c.inputs) {
					t.Fatalf("%d inputs, want %d", len(cfg.Inputs), len(tc.c.inputs))
				}
				for i, in := range cfg.Inputs {
					if in.File == nil || in.File.Path != tc.c.inputs[i] || in.File.StartAt != config.StartAtBeginning {
						t.Errorf("input %d = %s, want %s from the beginning", i, in.Source(), tc.c.inputs[i])
					}
					if (in.LogFormat != nil) != hasFormat {
						t.Errorf("input %d has log format %v; the example has one: %v", i, in.LogFormat, hasFormat)
					}
				}
			})
		}
	}
}

// TestBenchConfigWithoutUnknown checks that -without of a rule the file lacks fails: it
// would measure nothing.
func TestBenchConfigWithoutUnknown(t *testing.T) {
	cases := []struct {
		name string
		c    benchConfig
		want string
	}{
		{"no such rule", benchConfig{inputs: []string{"/a.log"}, without: []string{"nginx_http_clients", "nginx_http_nosuch"}},
			"has no rule nginx_http_nosuch"},
		// The file has the rule, but not after -like-mtail.
		{"removed by like-mtail", benchConfig{inputs: []string{"/a.log"}, likeMtail: true, without: []string{"nginx_http_clients"}},
			"has no rule nginx_http_clients left by -like-mtail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.write(filepath.Join("..", "example-rules.yaml"), filepath.Join(t.TempDir(), "rules.yaml"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming the rule", err)
			}
		})
	}
}

// generator returns tools/gen-nginx-log.py (or $LOGWINDOW_NGINX_LOG_GEN), or skips.
func generator(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		tb.Skip("python3 is not installed: it runs gen-nginx-log.py")
	}
	gen, err := nginxlog.Generator()
	if err != nil {
		tb.Skip(err)
	}
	return gen
}

// TestHarness runs the benchmark on a small log in both modes, with two files, and the
// scrape benchmark with a budget the log exceeds: it passes only when every `_total` of
// the real binary equals the generated log's counts.
func TestHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter")
	}
	gen := generator(t)
	bin := testexec.BuildExporter(t, false)
	common := []string{"-gen", gen, "-bin", bin, "-config", filepath.Join("..", "example-rules.yaml"), "-runs", "1", "-timeout", "30s"}
	cases := []struct {
		name  string
		args  []string
		want  []string
		needs string // a program the case runs besides the exporter
	}{
		{"live", []string{"-lines", "20000"}, []string{"logwindow live  median", "(20000 lines)"}, ""},
		{"replay", []string{"-lines", "5000", "-mode", "replay"}, []string{"logwindow replay  median", "(5000 lines)"}, ""},
		{"two files", []string{"-lines", "5000", "-files", "2"}, []string{"GOMAXPROCS=2", "(10000 lines)"}, ""},
		{"one file on two cores", []string{"-lines", "5000", "-files", "1", "-procs", "2", "-runs", "2"},
			[]string{"GOMAXPROCS=2", "(5000 lines)", "logwindow live, 1 input  median", "1 input on 2 cores (shards: 2) / on 1 core"}, ""},
		// Summed over the pods, the node's series count what the files hold.
		{"node", []string{"-lines", "5000", "-files", "3", "-node", "-procs", "2", "-runs", "2"},
			[]string{"3 pods' nginx logs in CRI lines", "(15000 lines)", "3 pod logs on one input, 2 cores / 1 pod log on 1 core",
				"the CPU per line; per round, median (range): ",
				"logwindow live, 3 pod logs on 1 core  median", "of which the parallelism, 3 pod logs on 2 cores / on 1 core", "and the pods' series, 3 pod logs / 1 pod log"}, ""},
		{"scrape", []string{"-lines", "5000", "-scrape", "-series", "300", "-scrapes", "2"},
			[]string{"301 series of nginx_http_requests_by_path (budget 300)", "exporter CPU per scrape"}, ""},
		// The mtail program and its extra blocks must count what the rules count.
		{"mtail, extra rules", []string{"-lines", "5000", "-mtail", "-rules", "2"},
			[]string{"plus 2 copies", "mtail  median", "mtail / logwindow live (medians)"}, "mtail"},
		{"mtail, like mtail", []string{"-lines", "5000", "-mtail", "-like-mtail"},
			[]string{"without the distinct: rules and top: (-like-mtail)", "mtail  median", "mtail / logwindow live (medians)"}, "mtail"},
		{"two rule files", []string{"-lines", "5000", "-config", "example-rules-regex.yaml"},
			[]string{"logwindow live example-rules.yaml  median", "logwindow live example-rules-regex.yaml  median",
				"logwindow live example-rules-regex.yaml / logwindow live example-rules.yaml (medians)"}, ""},
		{"rewrite", []string{"-lines", "5000", "-rewrite"},
			[]string{"(-rewrite: " + pathRewrite + ")", "logwindow live example-rules.yaml rewrite  median",
				"logwindow live example-rules.yaml rewrite / logwindow live example-rules.yaml (medians)"}, ""},
		{"without rules", []string{"-lines", "5000", "-without", "nginx_http_clients", "-without", "nginx_http_requests,nginx_http_path_requests"},
			[]string{"example-rules.yaml also without nginx_http_clients (-without)",
				"example-rules.yaml also without nginx_http_requests, nginx_http_path_requests (-without)",
				"logwindow live example-rules.yaml without nginx_http_clients  median",
				"logwindow live example-rules.yaml without nginx_http_requests, nginx_http_path_requests / logwindow live example-rules.yaml (medians)"}, ""},
		{"two builds", []string{"-lines", "5000", "-bin", bin},
			[]string{"logwindow live logwindow_exporter  median", "/ logwindow live logwindow_exporter (medians)"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if _, err := exec.LookPath(tc.needs); err != nil {
					t.Skipf("%s is not installed", tc.needs)
				}
			}
			var out, errOut bytes.Buffer
			if code := run(append(common, tc.args...), &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestQuiet checks the end of a run's wall time: a process that sleeps is quiet at once,
// one that keeps a thread busy never is.
func TestQuiet(t *testing.T) {
	// A sleeper is given long: on a loaded machine its start (sh, then exec of sleep) may
	// wait for a CPU well past a busy loop's bound, and quiet returns once it sleeps.
	cases := []struct {
		name     string
		shell    string
		quiet    bool
		deadline time.Duration
	}{
		{"sleeping", "exec sleep 30", true, 20 * time.Second},
		{"busy", "while :; do :; done", false, 200 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.shell)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			// The busy loop never stops: its deadline only bounds the test.
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			start := time.Now()
			end, err := quiet(ctx, cmd.Process.Pid, time.Millisecond)
			switch {
			case tc.quiet && err != nil:
				t.Fatalf("quiet: %v", err)
			case tc.quiet && end.Before(start):
				t.Fatalf("quiet at %v, before the first poll at %v", end, start)
			case !tc.quiet && !errors.Is(err, context.DeadlineExceeded):
				t.Fatalf("quiet = %v, %v; want the deadline", end, err)
			}
		})
	}
}

// TestRanSince checks that threads are compared one by one: a thread that ended cannot
// hide, by taking its time out of a sum, the run of another.
func TestRanSince(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name        string
		before, now map[string]time.Duration
		want        time.Duration
	}{
		{"none ran", map[string]time.Duration{"1": 5 * ms, "2": 7 * ms}, map[string]time.Duration{"1": 5 * ms, "2": 7 * ms}, 0},
		{"one ran", map[string]time.Duration{"1": 5 * ms, "2": 7 * ms}, map[string]time.Duration{"1": 5 * ms, "2": 9 * ms}, 2 * ms},
		{"a new one", map[string]time.Duration{"1": 5 * ms}, map[string]time.Duration{"1": 5 * ms, "3": 3 * ms}, 3 * ms},
		{"one ended while another ran", map[string]time.Duration{"1": 5 * ms, "2": 7 * ms}, map[string]time.Duration{"1": 6 * ms}, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ranSince(tc.before, tc.now); got != tc.want {
				t.Errorf("ranSince = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"bad mode", []string{"-mode", "stream"}, 2},
		{"zero lines", []string{"-lines", "0"}, 2},
		{"stray argument", []string{"x"}, 2},
		{"help", []string{"-h"}, 0},
		{"node with mtail", []string{"-node", "-mtail"}, 2},
		{"rewrite of json", []string{"-rewrite", "-formats", "text,json"}, 2},
		{"without of json", []string{"-without", "nginx_http_clients", "-formats", "json"}, 2},
		{"instructions of a replay", []string{"-instructions", "-mode", "replay"}, 2},
		{"instructions of mtail", []string{"-instructions", "-mtail"}, 2},
		{"instructions of scrapes", []string{"-instructions", "-scrape"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, errOut.String())
			}
		})
	}
}

// TestRoundOrder checks that every round runs each program once and that, over as many
// rounds as programs, each program takes each place in a round once.
func TestRoundOrder(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			places := make([]map[int]bool, n)
			for j := range places {
				places[j] = map[int]bool{}
			}
			for i := range n {
				order := roundOrder(i, n)
				seen := map[int]bool{}
				for place, j := range order {
					if j < 0 || j >= n || seen[j] {
						t.Fatalf("round %d: order %v", i, order)
					}
					seen[j] = true
					places[j][place] = true
				}
				if len(seen) != n {
					t.Fatalf("round %d: order %v runs %d programs of %d", i, order, len(seen), n)
				}
			}
			for j, p := range places {
				if len(p) != n {
					t.Errorf("program %d took places %v over %d rounds", j, p, n)
				}
			}
		})
	}
}
