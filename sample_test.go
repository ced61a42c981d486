package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// --config.check --sample reads each sample file as the input that reads it would and
// says per input how many of its lines fit its format; it fails when an input read lines
// and none fit, and --sample alone is refused.
func TestConfigCheckSample(t *testing.T) {
	const rules = `
inputs:
  - {name: web, path: 'logs/*.log', log_format: combined}
  - {name: pods, path: 'pods/*.log', wrapper: cri, streams: [stdout]}
  - {name: mixed, path: 'mixed/*.log', log_format: [combined, upstreaminfo]}
  - {name: app, path: 'app/*.log'}
rules:
  - {name: upstreams, labels: {addr: '${upstream_addr}'}, inputs: [mixed]}
  - {name: requests, labels: {status: '${status}'}, inputs: [web]}
  - {name: pod_requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [pods]}
  - name: app_requests
    inputs: [app]
    match: '^(?P<t>\S+ \S+ \S+) (?P<ms>\S+)$'
    timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST'}
  - {name: app_bytes, inputs: [app], match: '^(?P<t>\S+ \S+ \S+) (?P<ms>\S+)$', value: ms}
  - {name: every, match: '^every (?P<n>\S+)$', value: n}
`
	const access = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	files := map[string]string{
		"rules.yaml":     rules,
		"logs/good.log":  access + access,
		"logs/mixed.log": access + "10.0.0.2 - - [01/Mar/2024:12:00:00 +0000] \"GET / HTTP/1.1\" 200\n",
		"logs/json.log":  `{"status":200}` + "\n",
		"pods/0.log":     "2024-03-01T12:00:00Z stdout F GET / 200\n2024-03-01T12:00:00Z stderr F [error] open() failed\n",
		// Of a candidate format, but not of the one the rule applies to.
		"mixed/combined.log": access + access,
		"mixed/upstream.log": strings.TrimSuffix(access, "\n") + " 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab\n",
		// Times of a zone the layout's location (UTC) has no offset for, and values of
		// text or none: each rule matches every line.
		"app/cet.log":   "2024-03-01 13:00:00 CET 5\n2024-03-01 13:00:00 CET 6\n",
		"app/mixed.log": "2024-03-01 12:00:00 UTC 5\n2024-03-01 13:00:00 CET 5ms\n2024-03-01 12:00:00 UTC -\n",
		"app/dash.log":  "2024-03-01 12:00:00 UTC -\n",
		// Read by no input: only the rules of every input read it.
		"other.log":   "every 1\nevery x\n",
		"counted.log": "every 1\n",
		"none.log":    "every -\n",
	}
	cases := []struct {
		name    string
		args    []string
		code    int
		summary []string // lines of stderr
	}{
		{"fits", []string{"--sample=logs/good.log"}, 0, []string{"input web: 2 of 2 lines fit"}},
		{"some fit", []string{"--sample=logs/mixed.log"}, 0, []string{"input web: 1 of 2 lines fit (first misfit at line 2: at byte 62, in $status or the text after it, the log format expects [^ ] or ' ', but the line has the end of the line)"}},
		{"none fit", []string{"--sample=logs/json.log"}, 1, []string{
			`input web: 0 of 1 lines fit (first misfit at line 1: at byte 14, in $remote_addr or the text after it, the log format expects [^ ] or ' ', but the line has the end of the line)`,
			`sample: input web read 1 line and none is of its format (first: at byte 14`}},
		{"a candidate format without what the rules read", []string{"--sample=mixed/combined.log"}, 1, []string{
			"input mixed: 0 of 2 lines fit (first misfit at line 1: the line is of the log format combined, to which no rule applies: it has no upstream_addr (rule upstreams))",
			"sample: input mixed read 2 lines and none is of its format (first: the line is of the log format combined, to which no rule applies"}},
		{"a candidate format with it", []string{"--sample=mixed/upstream.log"}, 0, []string{"input mixed: 1 of 1 lines fit"}},
		// A sample that cannot be read is its error alone: no input's count of no lines.
		{"a missing sample", []string{"--sample=logs/missing.log"}, 1, []string{"sample logs/missing.log: open logs/missing.log: no such file or directory"}},
		{"a missing sample no input reads", []string{"--sample=/nonexistent.log"}, 1, []string{"sample /nonexistent.log: open /nonexistent.log: no such file or directory"}},
		{"a missing sample next to one read", []string{"--sample=logs/good.log", "--sample=logs/missing.log"}, 1, []string{
			"input web: 2 of 2 lines fit",
			"sample logs/missing.log: open logs/missing.log: no such file or directory"}},
		// A rule that matches the lines and drops them for its own layout or value (not
		// a value of none, the log's "-") is told of, and fails the check when it counted
		// none of them.
		{"a rule drops every line for its layout", []string{"--sample=app/cet.log"}, 1, []string{
			"input app: 2 of 2 lines fit",
			"rule app_requests: 2 of 2 lines it matched dropped: 2 bad_timestamp (--explain=FILE says why of each)",
			"sample: rule app_requests counted none of the 2 lines it matched: 2 bad_timestamp"}},
		{"rules drop some lines", []string{"--sample=app/mixed.log"}, 0, []string{
			"input app: 3 of 3 lines fit",
			"rule app_requests: 1 of 3 lines it matched dropped: 1 bad_timestamp",
			"rule app_bytes: 1 of 3 lines it matched dropped: 1 bad_number"}},
		{"values of none are the log's", []string{"--sample=app/dash.log"}, 0, []string{"input app: 1 of 1 lines fit"}},
		{"a file no input reads", []string{"--sample=other.log"}, 0, []string{
			"time=", // the warning that no input reads it
			"file other.log (no input reads it): 2 of 2 lines fit",
			"rule every: 1 of 2 lines it matched dropped: 1 bad_number"}},
		// A rule that matched a line of it, whether it counted it or not, is no error.
		{"a file no input reads, whose line a rule counts", []string{"--sample=counted.log"}, 0, []string{
			"time=", "file counted.log (no input reads it): 1 of 1 lines fit"}},
		{"a file no input reads, whose line gives no value", []string{"--sample=none.log"}, 0, []string{
			"time=", "file none.log (no input reads it): 1 of 1 lines fit"}},
		{"two inputs", []string{"--sample=logs/good.log", "--sample=pods/0.log"}, 0, []string{"input web: 2 of 2 lines fit", "input pods: 1 of 1 lines fit (1 line of other streams skipped)"}},
	}
	t.Chdir(t.TempDir())
	for _, d := range []string{"logs", "pods", "mixed", "app"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=rules.yaml", "--config.check"}, c.args...), &stdout, &stderr)
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if code != c.code || len(lines) != len(c.summary) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %d lines", code, stderr.String(), c.code, len(c.summary))
			}
			for i, want := range c.summary {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("stderr line %d: %q, want it to start %q", i+1, lines[i], want)
				}
			}
			if ok := strings.Contains(stdout.String(), "OK"); ok != (c.code == 0) {
				t.Errorf("stdout %q; want OK only when the sample fits", stdout.String())
			}
		})
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config.file=rules.yaml", "--sample=logs/good.log"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--sample applies to --config.check") {
		t.Errorf("--sample without --config.check: exit %d, stderr %q; want 2 and why", code, stderr.String())
	}
}
