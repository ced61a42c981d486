package pipeline

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/parser"
)

// nginxPodLog is a pod's CRI log as the official nginx image writes it: the access log
// on stdout, the error log on stderr, some messages split into parts.
const nginxPodLog = `2024-03-01T12:00:00.000000001Z stdout F 10.0.0.1 "GET / HTTP/1.1" 200
2024-03-01T12:00:00.000000002Z stderr P 2024/03/01 12:00:00 [error] 29#29: *1 open() "/usr/share/nginx/html/x"
2024-03-01T12:00:00.000000003Z stdout P 10.0.0.2 "GET /a HTTP/1.1"
2024-03-01T12:00:00.000000004Z stderr F  failed (2: No such file or directory)
2024-03-01T12:00:00.000000005Z stdout F  404
2024-03-01T12:00:00.000000006Z stderr F 2024/03/01 12:00:01 [notice] 1#1: signal process started
2024-03-01T12:00:00.000000007Z stdout F 10.0.0.3 "GET /b HTTP/1.1" 200
`

// A cri input reading only stdout neither reads nor counts as unmatched the lines of
// stderr, joined or not, following or replaying; one reading both gives rules each
// message's stream.
func TestCRIStreams(t *testing.T) {
	const rules = `
inputs: [{name: pods, path: LOG, wrapper: cri%s}]
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}', stream: '${stream}'}}
`
	for _, tc := range []struct {
		name, streams string
		unmatched     uint64
		want          []string
		summary       string
	}{
		{"stdout", ", streams: [stdout]", 0,
			[]string{`requests_total{status="200",stream="stdout"} 2`, `requests_total{status="404",stream="stdout"} 1`},
			"input pods: 3 of 3 lines fit (3 lines of other streams skipped)"},
		{"both", "", 2,
			[]string{`requests_total{status="200",stream="stdout"} 2`, `requests_total{status="404",stream="stdout"} 1`},
			`input pods: 3 of 5 lines fit (first misfit at line 4: rule requests's regex reads up to byte `},
		{"stderr", ", streams: [stderr]", 2, nil,
			"input pods: 0 of 2 lines fit (first misfit at line 4: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, log := startFile(t, fmt.Sprintf(rules, tc.streams))
			appendTo(t, log, nginxPodLog)
			if got := waitRead(t, p, 7); got.Unmatched != tc.unmatched || got.MalformedLines != 0 {
				t.Errorf("unmatched %d, malformed %d; want %d, 0", got.Unmatched, got.MalformedLines, tc.unmatched)
			}
			var out, summary bytes.Buffer
			err := Replay(p.gen.Load().cfg, []string{log}, Options{Now: time.Now, Summary: &summary}, &out)
			if (err != nil) != (tc.want == nil) {
				t.Errorf("replay: %v; want an error %v", err, tc.want == nil)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want+"\n") {
					t.Errorf("replay lacks %s:\n%s", want, out.String())
				}
			}
			if !strings.HasPrefix(summary.String(), tc.summary) {
				t.Errorf("summary %q, want it to start %q", summary.String(), tc.summary)
			}
		})
	}
}

// In node mode the workload of each pod is its Deployment's, DaemonSet's or
// StatefulSet pod's name, read from the pod's path.
func TestNodeWorkload(t *testing.T) {
	k := kubeletTree{t: t, root: t.TempDir()}
	pods := map[string]int{"web-7d4b9c8f6d-x2kqz": 2, "web-7d4b9c8f6d-p9m4t": 1, "web-0": 4, "agent-5lz9w": 1}
	var files []string
	for pod, n := range pods {
		k.write("shop", pod, "nginx", repeat("200", n), false)
		files = append(files, filepath.Join(k.dir("shop", pod, "nginx"), "0.log"))
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
inputs:
  - {name: pods, path: '%s/*/nginx/*.log', wrapper: cri, path_captures: '/(?P<namespace>[^_/]+)_(?P<pod>[^_/]+)_[^/]+/nginx/'}
rules:
  - {name: by_workload, match: ' (?P<status>\d{3})$', labels: {workload: '${namespace}/${workload}', stream: '${stream}'}}
`, k.root)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Replay(cfg, files, Options{Now: time.Now}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`by_workload_total{stream="stdout",workload="shop/web"} 3`,
		`by_workload_total{stream="stdout",workload="shop/web-0"} 4`,
		`by_workload_total{stream="stdout",workload="shop/agent"} 1`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("replay lacks %s:\n%s", want, out.String())
		}
	}
}

// Many nginx sending to one socket are told apart by the hostname and tag of their
// datagrams' headers, RFC 3164 and 5424 alike; a datagram without a header has neither.
func TestSyslogHeaderCaptures(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nginx.sock")
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
inputs: [{name: sock, syslog: 'unixgram://%s'}]
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {host: '${syslog_hostname}', tag: '${syslog_tag}'}}
`, sock)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	self := prometheus.NewPedanticRegistry()
	coll := p.Collector()
	self.MustRegister(coll)
	reg := metrictest.Scraped(exporter.Handler(coll, self, nil))
	syslogtest.Send(t, "unixgram", sock,
		"<190>Nov 24 05:28:09 web-1 nginx: GET / 200",
		"<190>Nov 24 05:28:10 web-1 nginx: GET / 200",
		"<190>Nov 24 05:28:09 web-2 nginx_shop[12]: GET / 200",
		"<190>Nov 24 05:28:09 nginx: GET / 200",
		"<165>1 2026-11-24T05:28:09Z web-3 nginx 42 - - GET / 200",
		"<165>1 2026-11-24T05:28:09Z - - - - - GET / 200",
		"GET / 200")
	for _, c := range []struct {
		host, tag string
		want      float64
	}{
		{"web-1", "nginx", 2},
		{"web-2", "nginx_shop", 1},
		{"", "nginx", 1},
		{"web-3", "nginx", 1},
		{"", "", 2},
	} {
		waitSample(t, reg, "requests_total", map[string]string{"host": c.host, "tag": c.tag}, c.want)
	}
}

// Each one-shot says per input how many lines fit its format and where the first that
// does not stopped fitting; a replay or a sample in which an input's lines all misfit
// fails, saying so.
func TestOneShotFits(t *testing.T) {
	dir := t.TempDir()
	const good = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	write := func(name, text string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mixed := write("mixed.log", good+"10.0.0.2 - - [01/Mar/2024:12:00:00 +0000] \"GET / HTTP/1.1\" 200\n"+good)
	json := write("json.log", `{"status":200}`+"\n"+`{"status":404}`+"\n")
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s/*.log', log_format: combined}
rules:
  - {name: requests, labels: {status: '${status}'}, where: {status: '^5'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		files   []string
		summary string
		fails   bool
	}{
		{"some fit", []string{mixed}, "input web: 2 of 3 lines fit (first misfit at line 2: at byte 62, in $status or the text after it, the log format expects [^ ] or ' ', but the line has the end of the line)", false},
		{"none fit", []string{json}, "input web: 0 of 2 lines fit (first misfit at line 1: at byte 14, in $remote_addr or the text after it, the log format expects [^ ] or ' ', but the line has the end of the line)", true},
		{"two files of one input", []string{mixed, json}, "input web: 2 of 5 lines fit (first misfit at line 2 of " + mixed + ": ", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"replay", "sample"} {
				var summary bytes.Buffer
				opts := Options{Now: time.Now, Summary: &summary}
				var err error
				if mode == "replay" {
					err = Replay(cfg, tc.files, opts, &bytes.Buffer{})
				} else {
					err = Sample(cfg, tc.files, opts)
				}
				if got := summary.String(); !strings.HasPrefix(got, tc.summary) || strings.Count(got, "\n") != 1 {
					t.Errorf("%s: summary %q, want one line starting %q", mode, got, tc.summary)
				}
				if tc.fails != (err != nil) || tc.fails && !strings.Contains(err.Error(), mode+": input web read 2 lines and none is of its format") {
					t.Errorf("%s: %v; want an error %v", mode, err, tc.fails)
				}
			}
		})
	}

	var summary bytes.Buffer
	lines, err := explainAll(cfg, mixed, 1, Options{Now: time.Now, Summary: &summary})
	if err != nil || len(lines) != 1 || !strings.HasPrefix(summary.String(), "input web: 2 of 3 lines fit (first misfit at line 2: ") {
		t.Errorf("explain: %d lines, %v, summary %q; want 1 line and the file's 3 lines summed up", len(lines), err, summary.String())
	}
}

// Inputs without a name, of different formats, are each read by their own: a rule reading
// them all (one with candidates) counts every line, live and in a one-shot, where each
// input's lines fit.
func TestUnnamedInputs(t *testing.T) {
	dir := t.TempDir()
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	files := map[string]string{"a.log": combined, "b.log": "status=200 from 10.0.0.1", "c.log": `{"status":"200"}`}
	var paths []string
	for name, line := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(line+"\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {path: '%[1]s/a.log', log_format: combined, start_at: beginning}
  - {path: '%[1]s/b.log', log_format: 'status=$status from $remote_addr', start_at: beginning}
  - {path: '%[1]s/c.log', log_format: [upstreaminfo, json], start_at: beginning}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	var out strings.Builder
	if err := Replay(cfg, paths, Options{Now: time.Now, Summary: &summary}, &out); err != nil {
		t.Error(err)
	}
	if want := `requests_total{status="200"} 6` + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("replay lacks %s:\n%s", want, out.String())
	}
	summary.Reset()
	if err := Sample(cfg, paths, Options{Now: time.Now, Summary: &summary}); err != nil {
		t.Error(err)
	}
	if got := summary.String(); strings.Count(got, ": 2 of 2 lines fit\n") != 3 {
		t.Errorf("sample: summary %q, want every input's 2 lines fitting", got)
	}
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitTotal(t, p, "live", `requests_total{status="200"}`, 6)
}

// A one-shot tells of the lines its rules never saw, too long or not CRI lines of a cri
// input, and fails when no line of an input could be read at all: zeros and exit 0 would
// hide a wrong wrapper or a line cap too small.
func TestOneShotUnreadLines(t *testing.T) {
	dir := t.TempDir()
	const good = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	long := `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET /` + strings.Repeat("a", 300) + ` HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	write := func(name string, lines ...string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name, wrapper string
		lines         []string
		summary, err  string
	}{
		{"one too long", "", []string{good, long, good}, "input web: 2 of 2 lines fit (1 line longer than --input.max-line-bytes skipped)", ""},
		{"all too long", "", []string{long, long}, "input web: 0 of 0 lines fit (2 lines longer than --input.max-line-bytes skipped)",
			"input web read 2 lines and could read none: 2 longer than --input.max-line-bytes, 0 not CRI lines"},
		{"not CRI lines", "cri", []string{good, good}, "input web: 0 of 0 lines fit (2 lines not CRI lines skipped)",
			"input web read 2 lines and could read none: 0 longer than --input.max-line-bytes, 2 not CRI lines"},
		{"one line, not a CRI line", "cri", []string{good}, "input web: 0 of 0 lines fit (1 line not a CRI line skipped)",
			"input web read 1 line and could read none: 0 longer than --input.max-line-bytes, 1 not a CRI line"},
		{"a CRI message too long", "cri", []string{"2024-03-01T12:00:00Z stdout F " + good, "2024-03-01T12:00:00Z stdout P " + long[:150], "2024-03-01T12:00:00Z stdout F " + long[150:]},
			"input web: 1 of 1 lines fit (1 line longer than --input.max-line-bytes skipped)", ""},
		// A message whose last part the file does not have yet (copied while the
		// container wrote it) is one the rules never saw.
		{"a CRI message unfinished", "cri", []string{"2024-03-01T12:00:00Z stdout F " + good, "2024-03-01T12:00:00Z stdout P " + good[:40]},
			"input web: 1 of 1 lines fit (1 message unfinished at the end of their file skipped)", ""},
		{"a CRI message too long and unfinished", "cri", []string{"2024-03-01T12:00:00Z stdout F " + good, "2024-03-01T12:00:00Z stdout P " + long[:150], "2024-03-01T12:00:00Z stdout P " + long[150:300]},
			"input web: 1 of 1 lines fit (1 message unfinished at the end of their file skipped)", ""},
		{"a CRI message of a part too long, unfinished", "cri", []string{"2024-03-01T12:00:00Z stdout F " + good, "2024-03-01T12:00:00Z stdout P " + long},
			"input web: 1 of 1 lines fit (1 line longer than --input.max-line-bytes skipped)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := write(strings.ReplaceAll(tc.name, " ", "_")+".log", tc.lines...)
			wrapper := ""
			if tc.wrapper != "" {
				wrapper = ", wrapper: " + tc.wrapper
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined%s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", log, wrapper), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"replay", "sample"} {
				var summary bytes.Buffer
				opts := Options{Now: time.Now, Summary: &summary, MaxLineBytes: 200}
				if mode == "replay" {
					err = Replay(cfg, []string{log}, opts, &bytes.Buffer{})
				} else {
					err = Sample(cfg, []string{log}, opts)
				}
				if got, want := summary.String(), tc.summary+"\n"; got != want {
					t.Errorf("%s: summary %q, want %q", mode, got, want)
				}
				if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != mode+": "+tc.err) {
					t.Errorf("%s: %v, want error %q", mode, err, tc.err)
				}
			}
		})
	}
}

// --explain reads a cri input's file as the input does: the messages of its streams,
// joined, each numbered by its last line, its rules timed by cri_time reading the
// wrapper's time.
func TestExplainCRI(t *testing.T) {
	log := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(log, []byte(nginxPodLog), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs: [{name: pods, path: '%s', wrapper: cri, streams: [stdout]}]
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [pods], timestamp: {capture: cri_time, layout: '2006-01-02T15:04:05Z07:00'}}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := explainAll(cfg, log, 10, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		n    int
		text string
	}{{1, `10.0.0.1 "GET / HTTP/1.1" 200`}, {5, `10.0.0.2 "GET /a HTTP/1.1" 404`}, {7, `10.0.0.3 "GET /b HTTP/1.1" 200`}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines explained, want %d: %+v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l.Number != w.n || l.Text != w.text || !l.Counted || l.Rules[0].Time != "2024-03-01T12:00:00Z" {
			t.Errorf("line %d: %+v; want line %d %q counted at 2024-03-01T12:00:00Z", i, l, w.n, w.text)
		}
	}
}

// --explain gives a line the captures its input gives it besides its own, as --replay and
// the running exporter do: those of its file's path (path_captures) and, of a cri input,
// its stream. Labels of them read otherwise empty where the output counts them.
func TestExplainInputCaptures(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "web_alpha", "0.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(nginxPodLog), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs: [{name: pods, path: '%s/*/*.log', wrapper: cri, streams: [stdout, stderr], path_captures: '/web_(?P<site>[a-z]+)/'}]
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}', site: '${site}', stream: '${stream}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{log, filepath.Join(dir, "*", "*.log")} {
		lines, err := explainAll(cfg, file, 10, Options{Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			if l.Counted {
				for _, lb := range l.Rules[0].Labels {
					got = append(got, lb.Name+"="+lb.Value)
				}
			}
		}
		want := "site=alpha status=200 stream=stdout site=alpha status=404 stream=stdout site=alpha status=200 stream=stdout"
		if strings.Join(got, " ") != want {
			t.Errorf("%s: labels %s, want %s", file, strings.Join(got, " "), want)
		}
	}
}

// The line tester explains a line pasted for a cri input as the input reads it, as
// --explain does: a complete CRI line's message, its rules timed by cri_time reading the
// line's time; a line that is not one (a message pasted alone, a part) is explained as it
// is.
func TestExplainPastedCRILine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs: [{name: pods, path: '%s', wrapper: cri}, {name: plain, path: '%s.plain'}, {name: out, path: '%s.out', wrapper: cri, streams: [stdout]}]
rules:
  - {name: timed, match: ' (?P<status>\d{3})$', inputs: [pods], timestamp: {capture: cri_time, layout: '2006-01-02T15:04:05Z07:00'}}
  - {name: anchored, match: '^10\.0\.0\.1 ', inputs: [pods, plain, out]}
`, log, log, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 3, 1, 12, 0, 5, 0, time.UTC)
	p, err := Start(cfg, Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	const message = `10.0.0.1 "GET / HTTP/1.1" 200`
	for _, tc := range []struct {
		name, input, line string
		text              string
		outcomes          []string // of timed, anchored
	}{
		{"a CRI line", "pods", "2024-03-01T12:00:00.000000001Z stdout F " + message, message, []string{"counted", "counted"}},
		{"a message alone", "pods", message, message, []string{"bad_timestamp", "counted"}},
		{"a part", "pods", "2024-03-01T12:00:00Z stdout P " + message, "2024-03-01T12:00:00Z stdout P " + message, []string{"bad_timestamp", "no_match"}},
		{"a CRI line for an input without a wrapper", "plain", "2024-03-01T12:00:00Z stdout F " + message, "2024-03-01T12:00:00Z stdout F " + message, []string{"other_input", "no_match"}},
		// The input skips a line of a stream it does not read before it is joined: no
		// message of it is counted.
		{"a CRI line of a stream the input does not read", "out", "2024-03-01T12:00:00Z stderr F " + message, "2024-03-01T12:00:00Z stderr F " + message, []string{"other_input", "no_match"}},
		{"a CRI line of a stream the input reads", "out", "2024-03-01T12:00:00Z stdout F " + message, message, []string{"other_input", "counted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := p.Explain(tc.input, []byte(tc.line))
			var got []string
			for _, r := range l.Rules {
				got = append(got, r.Outcome)
			}
			if l.Text != tc.text || !slices.Equal(got, tc.outcomes) {
				t.Errorf("explained %q with outcomes %q; want %q with %q", l.Text, got, tc.text, tc.outcomes)
			}
		})
	}
}

// The line tester tells a line longer than --input.max-line-bytes skipped, as its input
// skips it, whatever the input's kind (a file's line, a CRI line, a datagram): told how
// the rules read it, it was shown counted where the input counts it as too long. A line
// of the cap is read.
func TestExplainPastedLineTooLong(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs: [{name: plain, path: '%[1]s/a.log'}, {name: pods, path: '%[1]s/0.log', wrapper: cri}, {name: sock, syslog: 'unixgram://%[1]s/s.sock'}, {path: '%[1]s/b.log'}]
rules:
  - {name: lines, match: '^(?P<x>x+)$'}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const maxLine = 40
	p, err := Start(cfg, Options{Now: time.Now, MaxLineBytes: maxLine})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	const cri, header = "2024-03-01T12:00:00Z stdout F ", "<190>Nov 24 05:28:09 web-1 nginx: "
	for _, tc := range []struct {
		name, input, line string
		tooLong           bool
	}{
		{"a file's line of the cap", "plain", strings.Repeat("x", maxLine), false},
		{"a file's line past the cap", "plain", strings.Repeat("x", maxLine+1), true},
		// The follower counts the "\r" before a newline against the cap, then drops it.
		{"a CRLF line of the cap with its CR", "plain", strings.Repeat("x", maxLine-1) + "\r", false},
		{"a CRLF line past the cap by its CR", "plain", strings.Repeat("x", maxLine) + "\r", true},
		{"an unnamed input's line past the cap", dir + "/b.log", strings.Repeat("x", maxLine+1), true},
		{"a CRI line of the cap", "pods", cri + strings.Repeat("x", maxLine-len(cri)), false},
		{"a CRI line past the cap, its message within", "pods", cri + strings.Repeat("x", maxLine-len(cri)+1), true},
		{"a datagram of the cap", "sock", strings.Repeat("x", maxLine), false},
		{"a datagram past the cap", "sock", strings.Repeat("x", maxLine+1), true},
		{"a datagram of the cap, with a header", "sock", header + strings.Repeat("x", maxLine-len(header)), false},
		{"a datagram past the cap, its message within", "sock", header + strings.Repeat("x", maxLine-len(header)+1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := p.Explain(tc.input, []byte(tc.line))
			if l.TooLong != tc.tooLong || l.Counted == tc.tooLong || tc.tooLong && len(l.Rules) > 0 {
				t.Errorf("Explain(%q, %d bytes): too long %v, counted %v, %d rules; want too long %v, counted %v, no rule when too long",
					tc.input, len(tc.line), l.TooLong, l.Counted, len(l.Rules), tc.tooLong, !tc.tooLong)
			}
			if l.Input != tc.input || l.Text != strings.TrimSuffix(tc.line, "\r") && tc.tooLong {
				t.Errorf("Explain(%q, %d bytes): input %q, text %.50q", tc.input, len(tc.line), l.Input, l.Text)
			}
		})
	}
}

// --explain.lines of the largest number there is explains every line, as one of the
// file's length does: the lines read past the cut to settle a format are no overflow.
func TestExplainLinesLargest(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte("a 200\nb 404\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s'}]\nrules: [{name: requests, match: ' (?P<status>\\d{3})$', labels: {status: '${status}'}}]\n", log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, math.MaxInt - parser.MaxHeld/2, math.MaxInt} {
		lines, err := explainAll(cfg, log, n, Options{Now: time.Now})
		if err != nil || len(lines) != 2 {
			t.Errorf("--explain.lines=%d: %d lines explained, %v; want 2", n, len(lines), err)
		}
	}
}
