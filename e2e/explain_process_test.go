package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// explainRules has a rule for each reason a line may not count. Its event-time rule keeps
// 1m, so with the newest line at 12:10:00 a line of 12:00:00 is late; its budget is two
// label sets, so a third method folds into the overflow series.
const explainRules = `
global:
  windows: [1m]
  max_series_per_rule: 2
inputs:
  - {name: web, path: %s}
  - {name: other, path: /nonexistent/other.log}
patterns:
  LINE: '^(?P<method>[A-Z]+) (?P<path>/\S*) (?P<status>\d{3}) (?P<took>\S+) \[(?P<ts>[^\]]+)\]$'
rules:
  - name: requests
    match: '%{LINE}'
    labels: {method: '${method}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: server_errors
    match: '%{LINE}'
    where: {status: '^5'}
  - name: duration_seconds
    match: '%{LINE}'
    value: took
  - name: other_errors
    match: 'level=error'
    inputs: [other]
  - name: hot_paths
    match: '%{LINE}'
    labels: {method: '${method}', path: '${path}'}
    top: {label: path, k: 3}
  - name: clients
    match: '%{LINE}'
    distinct: '${method} ${path}'
`

// explainLines are the log, one line per case of TestExplainThroughBinary, in order.
var explainLines = []string{
	"GET /a 503 0.25 [2026-11-24T12:10:00Z]",   // 1: counted by all three
	"GET /a 200 0.25 [2026-11-24T12:10:00Z]",   // 2: where fails on status
	"POST /a 500 - [2026-11-24T12:10:00Z]",     // 3: no value
	"PUT /a 500 fast [2026-11-24T12:10:00Z]",   // 4: bad number; third method: folded
	"GET /a 500 0.1 [24/Nov/2026:12:10:00]",    // 5: bad timestamp
	"GET /a 500 0.1 [2026-11-24T12:00:00Z]",    // 6: late
	"GET /a 5x0 0.1 [2026-11-24T12:10:00Z]",    // 7: no match, in capture status
	"GET /<script>alert(1)</script> 200 0.1 [", // 8: no match at the end
	"\xff\xfe GET", // 9: invalid UTF-8, shown escaped
}

// TestExplainThroughBinary runs --explain on the built binary over a line per reason and
// checks, in its JSON, what each rule made of the line; the text output is checked for
// the same facts.
func TestExplainThroughBinary(t *testing.T) {
	bin := testexec.BuildExporter(t, testexec.Race)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "web.log")
	if err := os.WriteFile(logPath, []byte(strings.Join(explainLines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(explainRules, "%s", logPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runExplain(t, bin, "--config.file="+cfgPath, "--explain="+logPath, "--explain.format=json")
	var lines []explain.Line
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var l explain.Line
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		lines = append(lines, l)
	}
	if len(lines) != len(explainLines) {
		t.Fatalf("%d lines explained, want %d", len(lines), len(explainLines))
	}

	cases := []struct {
		name string
		line int
		rule string
		want string // see short
	}{
		{"counted with labels and time", 1, "requests", "counted method=GET t=2026-11-24T12:10:00Z placed at=2026-11-24T12:10:00Z"},
		{"counted by a filter rule", 1, "server_errors", "counted placed at=2026-11-24T12:10:00Z"},
		{"counted with a value", 1, "duration_seconds", "counted value=0.25 placed at=2026-11-24T12:10:00Z"},
		{"where fails on its capture", 2, "server_errors", `where status="200" !~ ^5`},
		{"no value", 3, "duration_seconds", `no_value took="-"`},
		{"bad number", 4, "duration_seconds", `bad_number took="fast"`},
		{"folded into overflow", 4, "requests", "counted method=PUT t=2026-11-24T12:10:00Z placed at=2026-11-24T12:10:00Z folded"},
		{"bad timestamp", 5, "requests", `bad_timestamp ts="24/Nov/2026:12:10:00" layout=2006-01-02T15:04:05Z07:00`},
		{"late", 6, "requests", "counted method=GET t=2026-11-24T12:00:00Z late at=2026-11-24T12:10:00Z"},
		{"regex fails inside a capture", 7, "requests", `no_match 0-8 "GET /a 5" then "x" expected [0-9] in status`},
		{"regex fails at the end", 8, "server_errors", `no_match 0-40 "GET /<script>alert(1)</script> 200 0.1 [" then "" expected [^\]] in ts`},
		{"other input", 1, "other_errors", "other_input"},
		{"ranked under its top label", 1, "hot_paths", "counted method=GET top path=/a placed at=2026-11-24T12:10:00Z"},
		{"counted once per distinct text", 1, "clients", `counted distinct="GET /a" placed at=2026-11-24T12:10:00Z`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := lines[c.line-1]
			for _, r := range l.Rules {
				if r.Name == c.rule {
					if got := short(r); got != c.want {
						t.Errorf("line %d, rule %s:\ngot  %s\nwant %s", c.line, c.rule, got, c.want)
					}
					return
				}
			}
			t.Fatalf("line %d: rule %s not explained", c.line, c.rule)
		})
	}

	t.Run("unmatched lines are marked", func(t *testing.T) {
		for i, l := range lines {
			if want := i+1 >= 7; l.Unmatched != want || l.Counted == want {
				t.Errorf("line %d: unmatched %v counted %v, want unmatched %v", i+1, l.Unmatched, l.Counted, want)
			}
		}
	})
	t.Run("invalid UTF-8 is shown escaped", func(t *testing.T) {
		if l := lines[8]; !l.Escaped || l.Text != `"\xff\xfe GET"` {
			t.Errorf("text %s escaped %v", l.Text, l.Escaped)
		}
	})
	t.Run("text output says the same", func(t *testing.T) {
		text := string(runExplain(t, bin, "--config.file="+cfgPath, "--explain="+logPath, "--explain.lines=7"))
		for _, want := range []string{
			`line 2 (input web): GET /a 200 0.25 [2026-11-24T12:10:00Z]`,
			`  - server_errors: where status: "200" does not match ^5`,
			`  + requests{method="PUT"} time 2026-11-24T12:10:00Z: placed at 2026-11-24T12:10:00Z; FOLDED into the __overflow__ series`,
			`  - duration_seconds: dropped, bad number: took "fast"`,
			`  - requests: dropped, bad timestamp: ts "24/Nov/2026:12:10:00" does not parse with layout "2006-01-02T15:04:05Z07:00"`,
			`  + requests{method="GET"} time 2026-11-24T12:00:00Z: LATE, older than every window at 2026-11-24T12:10:00Z`,
			"line 7 (input web): GET /a 5x0 0.1 [2026-11-24T12:10:00Z]\n  UNMATCHED: no rule matches this line",
			`      then at byte 8 expects [0-9], but the line has "x" (inside capture status)`,
			`  - other_errors: reads other inputs only`,
			`  + hot_paths{method="GET"} top {path="/a"}: placed at `,
			`  + clients distinct "GET /a": placed at `,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("text output lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "line 8") {
			t.Error("--explain.lines=7 explained an eighth line")
		}
	})
}

// explainJSONRules reads a JSON input by fields, with a where_not filter.
const explainJSONRules = `
inputs:
  - {name: app, path: %s, format: json}
rules:
  - name: app_requests
    inputs: [app]
    fields: {route: http.route, status: status}
    labels: {status: '${status}'}
    where_not: {route: '^/health'}
`

// TestExplainFieldsThroughBinary: the explanation of a fields rule over JSON lines, for
// lines counted, dropped by where_not and not JSON.
func TestExplainFieldsThroughBinary(t *testing.T) {
	bin := testexec.BuildExporter(t, testexec.Race)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "app.log")
	log := `{"status":503,"http":{"route":"/api"}}` + "\n" + `{"status":200,"http":{"route":"/healthz"}}` + "\n" + "status=200 route=/api\n"
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(explainJSONRules, "%s", logPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runExplain(t, bin, "--config.file="+cfgPath, "--explain="+logPath, "--explain.format=json")
	var got []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var l explain.Line
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		r := l.Rules[0]
		s := short(r)
		if r.Format != "" {
			s += " " + r.Format
		}
		got = append(got, fmt.Sprintf("%s unmatched=%v", s, l.Unmatched))
	}
	want := []string{
		"counted status=503 placed at=" + "*",
		`where_not route="/healthz" !~ ^/health unmatched=false`,
		"malformed json unmatched=true",
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "counted status=503 placed at=") || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	text := string(runExplain(t, bin, "--config.file="+cfgPath, "--explain="+logPath))
	for _, want := range []string{
		`  - app_requests: where_not route: "/healthz" matches ^/health`,
		"  UNMATCHED: no rule matches this line\n  - app_requests: the line is not json",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

// runExplain runs the binary to its end and returns its standard output.
func runExplain(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, stderr.String())
	}
	return stdout.Bytes()
}

// short is a rule's explanation in one comparable line.
func short(r explain.Rule) string {
	var b strings.Builder
	b.WriteString(r.Outcome)
	switch {
	case r.Fate != nil:
		for _, l := range r.Labels {
			b.WriteString(" " + l.Name + "=" + l.Value)
		}
		if r.Top != nil {
			b.WriteString(" top " + r.Top.Name + "=" + r.Top.Value)
		}
		if r.Distinct != nil {
			b.WriteString(" distinct=" + quote(*r.Distinct))
		}
		if r.Value != nil {
			b.WriteString(" value=" + strconv.FormatFloat(*r.Value, 'g', -1, 64))
		}
		if r.Time != "" {
			b.WriteString(" t=" + r.Time)
		}
		b.WriteString(" " + r.Fate.Placement + " at=" + r.Fate.At)
		if r.Fate.Folded {
			b.WriteString(" folded")
		}
	case r.Filter != nil:
		b.WriteString(" " + r.Filter.Capture + "=" + quote(r.Filter.Value) + " !~ " + r.Filter.Regex)
	case r.Drop != nil:
		b.WriteString(" " + r.Drop.Capture + "=" + quote(r.Drop.Value))
		if r.Drop.Layout != "" {
			b.WriteString(" layout=" + r.Drop.Layout)
		}
	case r.Miss != nil:
		m := r.Miss
		b.WriteString(" " + itoa(m.Start) + "-" + itoa(m.End) + " " + quote(m.Read) + " then " + quote(strings.Trim(m.Found, `"`)) + " expected " + strings.Join(m.Expected, "|"))
		if m.Inside != "" {
			b.WriteString(" in " + m.Inside)
		}
	}
	return b.String()
}

func quote(s string) string { return strconv.Quote(s) }
func itoa(i int) string     { return strconv.Itoa(i) }
