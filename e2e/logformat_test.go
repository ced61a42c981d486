package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// The formats of the log format test's nginx. None holds a single quote: each is written
// into nginx.conf and the rule file between single quotes.
const (
	// customFormat puts $request_time first, so that the test reads it by splitting.
	customFormat = `$request_time $remote_addr [$time_local] "$request" $status $body_bytes_sent "$http_user_agent" "$http_referer"`
	jsonFormat   = `{"time":"$time_iso8601","client":"$remote_addr","req":{"line":"$request","status":$status},"bytes":"$body_bytes_sent","rt":"$request_time","ua":"$http_user_agent"}`
)

// The directives of customFormat and jsonFormat over several lines, in both kinds of
// quotes, as nginx.conf has them: written there and pasted into the rule file as they are.
const (
	pastedDirective = `log_format pasted '$request_time $remote_addr [$time_local] '
        "\"$request\" $status $body_bytes_sent "
        '"$http_user_agent" "$http_referer"';`
	pastedJSONDirective = `log_format pastedjson escape=json
        '{"time":"$time_iso8601","client":"$remote_addr",'
        '"req":{"line":"$request","status":$status},'
        "\"bytes\":\"$body_bytes_sent\",\"rt\":\"$request_time\",\"ua\":\"$http_user_agent\"}";`
)

// formatNames are the inputs of the log format test, each reading the file of its name;
// jsontext is the JSON template's log, read by the template alone, no escaping declared.
var formatNames = []string{"custom", "combined", "upstreaminfo", "json", "pasted", "pastedjson", "jsontext"}

// readsJSON reports whether an input of the test reads its lines as JSON: its format is a
// template with escape=json.
func readsJSON(name string) bool { return name == "json" || name == "pastedjson" }

// formatRequest is a request of the log format test and what nginx answers it with.
type formatRequest struct {
	method, target, agent string
	status                int
}

// The requests: query strings, a '"', a backslash and non-ASCII in user agents, methods
// with and without a body in the answer, answers nginx makes itself and one from a
// refused upstream.
var formatRequests = []formatRequest{
	{"GET", "/", "curl/8.5.0", 200},
	{"GET", "/?a=1&b=2", `say "hi"`, 200},
	{"POST", "/a/b?x=y", "café ünïcode/1.0", 200},
	{"HEAD", "/big?size=1", "curl/8.5.0", 200},
	{"GET", "/big", `back\slash "and" é`, 200},
	{"GET", "/missing?q=1", "curl/8.5.0", 404},
	{"DELETE", "/boom", "python-requests/2.31.0", 500},
	{"GET", "/bad-gateway?z", `a "quoted" agent`, 502},
	{"PUT", "/a/b", "-", 200},
}

// TestNginxLogFormats runs a real nginx writing every request to seven access logs in six
// formats (a custom one with $request_time, combined, ingress-nginx's upstreaminfo with
// its variables set as the controller sets them, an escape=json template in two logs, and
// the custom one and the template again as directives over several lines), and one exporter
// configured by those format lines alone, without a regex (the directives pasted as they
// are, in YAML blocks; the template also without its escaping): each input counts
// every request by method, status and path, sums the body bytes and request times nginx
// logged, leaves no line unmatched, and reads the user agents back as they were sent,
// whatever each format's escaping made of them.
func TestNginxLogFormats(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs nginx and the built exporter")
	}
	tools := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")
	dir := t.TempDir()
	bin := testexec.BuildExporter(t, testexec.Race)
	base := startFormatsNginx(t, tools["nginx"], dir)

	logs := map[string]string{}
	for _, name := range formatNames {
		logs[name] = filepath.Join(dir, "nginx", name+".log")
	}
	config := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(config, []byte(formatsRules(logs)), 0o644); err != nil {
		t.Fatal(err)
	}
	exporter := testexec.StartExporter(t, bin, "--config.file="+config)

	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	const rounds = 3
	requests := map[[3]string]float64{} // method, status, path
	agents := map[string]float64{}
	var bodyBytes float64
	for range rounds {
		for _, r := range formatRequests {
			req, err := http.NewRequest(r.method, base+r.target, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("User-Agent", r.agent)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != r.status {
				t.Fatalf("%s %s: %s, %v; want %d", r.method, r.target, resp.Status, err, r.status)
			}
			path, _, _ := strings.Cut(r.target, "?")
			requests[[3]string{r.method, strconv.Itoa(r.status), path}]++
			agents[r.agent]++
			bodyBytes += float64(n)
		}
	}
	lines := float64(rounds * len(formatRequests))
	for _, path := range logs {
		waitLines(t, path, int(lines))
	}

	var wants []metrictest.Sample
	for name := range logs {
		in := map[string]string{"input": name}
		wants = append(wants,
			metrictest.Sample{Family: "logwindow_input_lines_total", Labels: in, Want: lines},
			metrictest.Sample{Family: "logwindow_input_unmatched_lines_total", Labels: in, Want: 0},
			metrictest.Sample{Family: name + "_http_response_body_bytes_total", Want: bodyBytes},
		)
		for k, n := range requests {
			wants = append(wants, metrictest.Sample{Family: name + "_http_requests_total",
				Labels: map[string]string{"method": k[0], "status": k[1], "uri": k[2]}, Want: n})
		}
		for agent, n := range agents {
			// "-" is nginx's mark of no value: the agent reads as empty there.
			if agent == "-" && !readsJSON(name) {
				agent = ""
			}
			wants = append(wants, metrictest.Sample{Family: name + "_http_agent_requests_total",
				Labels: map[string]string{"agent": agent}, Want: n})
		}
		if name != "combined" {
			wants = append(wants, metrictest.Sample{Family: name + "_http_request_duration_seconds_total",
				Want: loggedRequestTime(t, name, logs[name])})
		}
	}
	m := exporter.WaitCheck(t, func(m metrictest.Families) error { return metrictest.Match(m, wants) })
	for name := range logs {
		if got := metrictest.Sum(m, name+"_http_requests_total"); got != lines {
			t.Errorf("%s: %v requests counted in all, want %v", name, got, lines)
		}
	}
	if got := metrictest.Sum(m, "logwindow_rule_dropped_lines_total"); got != 0 {
		t.Errorf("%v lines dropped", got)
	}
	if got := metrictest.Value(m, "upstreaminfo_http_upstream_requests_total", nil); got != rounds {
		t.Errorf("upstreaminfo: %v requests with an upstream, want the %d to /bad-gateway", got, rounds)
	}
	t.Logf("%v requests in %d inputs counted exactly: %d label sets by method, status and path, %d user agents, %v body bytes",
		lines, len(logs), len(requests), len(agents), bodyBytes)

	// --replay of what this nginx wrote: its JSON log read as combined fits no line, and
	// the replay fails saying so; its combined log read as combined fits every line.
	n := int(lines)
	for _, tc := range []struct {
		log  string
		code int
		say  string
	}{
		{logs["json"], 1, fmt.Sprintf("input web: 0 of %d lines fit (first misfit at line 1: ", n)},
		{logs["combined"], 0, fmt.Sprintf("input web: %d of %d lines fit", n, n)},
	} {
		rules := filepath.Join(dir, "replay.yaml")
		text := fmt.Sprintf("inputs:\n  - {name: web, path: '%s', log_format: combined}\nrules:\n  - {name: http_requests, labels: {status: '${status}'}}\n", tc.log)
		if err := os.WriteFile(rules, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config.file="+rules, "--replay="+tc.log)
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		code := 0
		var exit *exec.ExitError
		if err := cmd.Run(); errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.HasPrefix(stderr.String(), tc.say) {
			t.Errorf("--replay of %s: exit %d, stderr:\n%s\nwant exit %d and a first line starting %q", filepath.Base(tc.log), code, stderr.String(), tc.code, tc.say)
		}
	}
}

// formatsRules is the rule file of the log format test: an input per log with its format
// line, and for each the same rules, none with a regex.
func formatsRules(logs map[string]string) string {
	var b strings.Builder
	b.WriteString("global: {windows: [1m, 5m]}\ninputs:\n")
	block := func(directive string) string {
		return "\n    log_format: |\n      " + strings.ReplaceAll(directive, "\n", "\n      ")
	}
	formats := map[string]string{
		"custom":       fmt.Sprintf(" log_format: '%s'", customFormat),
		"combined":     " log_format: combined",
		"upstreaminfo": " log_format: upstreaminfo",
		"json":         fmt.Sprintf(" log_format: '%s'\n    log_format_escape: json", jsonFormat),
		"pasted":       block(pastedDirective),
		"pastedjson":   block(pastedJSONDirective),
		"jsontext":     fmt.Sprintf(" log_format: '%s'", jsonFormat),
	}
	for _, name := range formatNames {
		fmt.Fprintf(&b, "  - name: %s\n    path: %q\n    start_at: beginning\n   %s\n", name, logs[name], formats[name])
	}
	b.WriteString("rules:\n")
	for _, name := range formatNames {
		ts := "time_local"
		if strings.HasPrefix(name, "json") || name == "pastedjson" {
			ts = "time_iso8601"
		}
		fmt.Fprintf(&b, `  - name: %[1]s_http_requests
    inputs: [%[1]s]
    labels: {method: '${request_method}', status: '${status}', uri: '${uri}'}
    timestamp: {capture: %[2]s}
  - name: %[1]s_http_agent_requests
    inputs: [%[1]s]
    labels: {agent: '${http_user_agent}'}
  - name: %[1]s_http_response_body_bytes
    inputs: [%[1]s]
    value: body_bytes_sent
`, name, ts)
		if name != "combined" {
			fmt.Fprintf(&b, "  - {name: %s_http_request_duration_seconds, inputs: [%[1]s], value: request_time}\n", name)
		}
	}
	b.WriteString("  - {name: upstreaminfo_http_upstream_requests, inputs: [upstreaminfo], where: {upstream_addr: '.'}}\n")
	return b.String()
}

// loggedRequestTime sums the $request_time nginx wrote to a log, read without the
// exporter's code: the first field of the custom format, the second after the user agent's
// closing quote in upstreaminfo, the rt member of the JSON one.
func loggedRequestTime(t *testing.T, name, path string) float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var field string
		switch name {
		case "custom", "pasted":
			field = strings.Fields(line)[0]
		case "upstreaminfo":
			field = strings.Fields(line[strings.LastIndex(line, `" `)+2:])[1]
		case "json", "pastedjson", "jsontext":
			var rec struct {
				RT string `json:"rt"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			field = rec.RT
		}
		v, err := strconv.ParseFloat(field, 64)
		if err != nil {
			t.Fatalf("%s: %q: request time %q: %v", name, line, field, err)
		}
		sum += v
	}
	if math.IsNaN(sum) {
		t.Fatal("NaN")
	}
	return sum
}

// startFormatsNginx runs nginx with testdata/nginx-formats.conf.tmpl on a free loopback
// port and returns its URL.
func startFormatsNginx(t *testing.T, bin, dir string) string {
	t.Helper()
	prefix := filepath.Join(dir, "nginx")
	if err := os.Mkdir(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	conf, errorLog := filepath.Join(prefix, "nginx.conf"), filepath.Join(prefix, "error.log")
	user := ""
	if os.Geteuid() == 0 {
		user = "root"
	}
	port := testexec.FreePort(t)
	render(t, "nginx-formats.conf.tmpl", conf, map[string]any{
		"User": user, "Dir": prefix, "ErrorLog": errorLog, "Port": port, "ClosedPort": testexec.FreePort(t),
		"Custom": customFormat, "Upstreaminfo": logformat.NginxPresets["upstreaminfo"], "JSON": jsonFormat,
		"Pasted": pastedDirective, "PastedJSON": pastedJSONDirective,
	})
	p := testexec.StartTest(t, dir, "nginx", []string{bin, "-p", prefix, "-c", conf, "-e", errorLog, "-g", "daemon off;"}, errorLog)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testexec.WaitHTTP(t, p, url+"/healthz")
	return url
}
