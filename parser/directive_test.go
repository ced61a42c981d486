package parser

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
)

// pastedRules is a rule file whose inputs give their format as an nginx.conf has it,
// pasted into a YAML block: the generator's main format as a directive over three lines,
// a JSON template as an escape=json directive, and the same template alone with no
// escaping declared. Each input has a rule counting its lines by status, method and user
// agent and summing the body bytes.
const pastedRules = `
inputs:
  - name: text
    path: /a
    log_format: |
      log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                        '$status $body_bytes_sent "$http_referer" '
                        '"$http_user_agent" $request_time $upstream_response_time';
  - name: json
    path: /b
    log_format: |
      log_format json escape=json
          '{"time_local":"$time_local","remote_addr":"$remote_addr",'
          '"request":"$request","status":"$status","body_bytes_sent":"$body_bytes_sent",'
          '"http_referer":"$http_referer","http_user_agent":"$http_user_agent",'
          '"request_time":"$request_time","upstream_response_time":"$upstream_response_time"}';
  - name: template
    path: /c
    log_format: |
      {"time_local":"$time_local","remote_addr":"$remote_addr","request":"$request","status":"$status","body_bytes_sent":"$body_bytes_sent","http_referer":"$http_referer","http_user_agent":"$http_user_agent","request_time":"$request_time","upstream_response_time":"$upstream_response_time"}
rules:
%s`

// pastedRecord is one request of the generated log: the values nginx had.
type pastedRecord struct {
	addr, user, time, request, status, bytes, referer, agent, rt, urt string
}

// generatedRecords reads the generator's lines back into the values nginx had, and gives
// some of them user agents that each escaping writes in its own way.
func generatedRecords(t testing.TB, n int) []pastedRecord {
	t.Helper()
	re := regexp.MustCompile(`^(\S+) - (\S+) \[([^\]]+)\] "([^"]*)" (\d+) (\d+) "([^"]*)" "([^"]*)" (\S+) (.+)$`)
	agents := []string{`say "hi"`, `back\slash "and" é`, "tab\tand\x01control", "not UTF-8 \xff\xfe\xc3 \"q\"", "not UTF-8 \xff\xfe\xc3"}
	var out []pastedRecord
	for i, l := range nginxlog.Lines(t, n, 7) {
		m := re.FindStringSubmatch(string(l))
		if m == nil {
			t.Fatalf("a generated line the test does not read: %q", l)
		}
		r := pastedRecord{m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]}
		if i%7 == 0 {
			r.agent = agents[i/7%len(agents)]
		}
		out = append(out, r)
	}
	return out
}

// nginxValue writes a value as nginx does with escaping esc, "-" being no value: what the
// default escaping writes for it, and nothing for escape=json.
func nginxValue(v, esc string) string {
	if v == "-" && esc == "json" {
		return ""
	}
	return nginxEscape(v, esc)
}

// mainLine writes a record in the main format with timings, as nginx does.
func mainLine(r pastedRecord) string {
	e := func(v string) string { return nginxValue(v, "default") }
	return fmt.Sprintf(`%s - %s [%s] "%s" %s %s "%s" "%s" %s %s`, e(r.addr), e(r.user), r.time, e(r.request), r.status, r.bytes, e(r.referer), e(r.agent), r.rt, e(r.urt))
}

// templateLine writes records with the JSON template of pastedRules and escaping esc.
func templateLine(esc string) func(r pastedRecord) string {
	return func(r pastedRecord) string {
		e := func(v string) string { return nginxValue(v, esc) }
		return fmt.Sprintf(`{"time_local":"%s","remote_addr":"%s","request":"%s","status":"%s","body_bytes_sent":"%s","http_referer":"%s","http_user_agent":"%s","request_time":"%s","upstream_response_time":"%s"}`,
			r.time, e(r.addr), e(r.request), r.status, r.bytes, e(r.referer), e(r.agent), r.rt, e(r.urt))
	}
}

// BenchmarkLogFormatEscape parses the same lines (one in seven with escapes in its user
// agent) by a format whose escaping is declared and by the same format without: the main
// format's lines (read with nginx's default either way), and the JSON template's written
// with escape=json (read as JSON when declared, as text with the escapes of both nginx's
// default and escape=json when not). One op is one line.
func BenchmarkLogFormatEscape(b *testing.B) {
	records := generatedRecords(b, 3000)
	write := func(f func(pastedRecord) string) [][]byte {
		var out [][]byte
		for _, r := range records {
			out = append(out, []byte(f(r)))
		}
		return out
	}
	text, json := write(mainLine), write(templateLine("json"))
	mainFormat := "'" + logformat.NginxPresets["combined"] + " $request_time $upstream_response_time'"
	template := "'" + strings.TrimSpace(pastedRules[strings.LastIndex(pastedRules, "\n      {")+1:strings.Index(pastedRules, "\nrules:")]) + "'"
	for _, c := range []struct {
		name, format, escape string
		lines                [][]byte
	}{
		{"main/declared", mainFormat, "log_format_escape: default", text},
		{"main/undeclared", mainFormat, "", text},
		{"template/declared", template, "log_format_escape: json", json},
		{"template/undeclared", template, "", json},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := mustParse(b, fmt.Sprintf("inputs: [{name: nginx, path: /a, log_format: %s, %s}]\nrules:\n"+
				"  - {name: r, labels: {status: '${status}', method: '${request_method}', agent: '${http_user_agent}'}, value: body_bytes_sent}\n", c.format, c.escape))
			p, err := New(cfg.Rules)
			if err != nil {
				b.Fatal(err)
			}
			sink := newSeriesSink(len(cfg.Rules))
			for _, l := range c.lines {
				p.Parse("nginx", l, sink)
			}
			if sink.drops != 0 || len(sink.series[0]) == 0 {
				b.Fatalf("warm-up: %d drops, %d series", sink.drops, len(sink.series[0]))
			}
			parseLoop(b, p, c.lines, sink)
		})
	}
}

// TestPastedDirective loads the directives pasted as they are through config.Load and
// parses the generator's lines written in each input's format: every line counts, under
// the status, method and user agent nginx had (bytes that are not UTF-8 in it as a JSON
// reader has them, whatever the escaping), with the body bytes it sent. The template
// with no escaping declared reads lines of escape=json (\") and of the default (\x22).
func TestPastedDirective(t *testing.T) {
	records := generatedRecords(t, 3000)
	var rules strings.Builder
	for _, in := range []string{"text", "json", "template"} {
		fmt.Fprintf(&rules, "  - {name: %s_requests, inputs: [%[1]s], labels: {status: '${status}', method: '${request_method}', agent: '${http_user_agent}'}, value: body_bytes_sent, timestamp: {capture: time_local}}\n", in)
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(pastedRules, rules.String())), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Inputs[0].LogFormat.Describe() + " " + cfg.Inputs[1].LogFormat.Describe(); got != "main json" {
		t.Errorf("the formats are described as %q, want the directives' names", got)
	}
	for _, m := range matchers {
		p, err := build(cfg.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			input, esc string
			write      func(pastedRecord) string
			rule       int
		}{
			{"text", "default", mainLine, 0},
			{"json", "json", templateLine("json"), 1},
			{"template", "json", templateLine("json"), 2},
			{"template", "default", templateLine("default"), 2},
		} {
			t.Run(m.name+"/"+c.input+"/"+c.esc, func(t *testing.T) {
				counted, bytes, want := 0, 0.0, 0.0
				for _, r := range records {
					line := c.write(r)
					sink := &eventSink{}
					p.Parse(c.input, []byte(line), sink)
					method, _, _ := strings.Cut(r.request, " ")
					// The user agent as a JSON reader has it: each byte that is not UTF-8 is U+FFFD.
					agent := testUnescape(nginxEscape(r.agent, "json"), "json")
					if agent == "-" {
						agent = ""
					}
					if len(sink.events) != 1 || sink.events[0].rule != c.rule {
						t.Fatalf("%q: events %+v, want one of rule %d", line, sink.events, c.rule)
					}
					if got, wantLabels := sink.events[0].labels, []string{agent, method, r.status}; strings.Join(got, "\x00") != strings.Join(wantLabels, "\x00") {
						t.Errorf("%q: labels %q, want %q (agent, method, status)", line, got, wantLabels)
					}
					counted++
					bytes += sink.events[0].value
					var b float64
					fmt.Sscan(r.bytes, &b)
					want += b
				}
				if counted != len(records) || bytes != want {
					t.Errorf("%d of %d lines counted, %v body bytes of %v", counted, len(records), bytes, want)
				}
			})
		}
	}
}

// eventSink keeps each event's rule, labels and value.
type eventSink struct {
	events []struct {
		rule   int
		labels []string
		value  float64
	}
}

func (s *eventSink) Event(e *Event) {
	var ls []string
	for _, l := range e.Labels {
		ls = append(ls, string(l))
	}
	s.events = append(s.events, struct {
		rule   int
		labels []string
		value  float64
	}{e.Rule, ls, e.Value})
}

func (s *eventSink) Drop(int, DropReason) {}
