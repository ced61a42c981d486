package parser

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
)

const explainRules = `
inputs:
  - {name: web, path: /a.log}
  - {name: app, path: /b.log}
rules:
  - name: requests
    match: '^(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<took>\S+) \[(?P<ts>[^\]]+)\]$'
    labels: {method: '${method}', status: '${status}'}
  - name: server_errors
    match: '^(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<took>\S+) \[(?P<ts>[^\]]+)\]$'
    where: {status: '^5', path: '^/api'}
  - name: duration
    match: '^(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<took>\S+) \[(?P<ts>[^\]]+)\]$'
    value: took
  - name: dated
    match: '^(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<took>\S+) \[(?P<ts>[^\]]+)\]$'
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: app_only
    match: 'level=error'
    inputs: [app]
`

// TestExplainOutcomes runs a line per outcome through Explain on each matcher and checks
// each rule's outcome and what it was decided on.
func TestExplainOutcomes(t *testing.T) {
	cfg := mustParse(t, explainRules)
	cases := []struct {
		name, line string
		want       map[string]string // rule -> outcome and detail, see describe
	}{
		{"all counted", "GET /api/x 503 0.25 [2026-11-24T05:00:00Z]", map[string]string{
			"requests": "counted method=GET,status=503 1", "server_errors": "counted  1",
			"duration": "counted  0.25", "dated": "counted  1 t=1795496400", "app_only": "other_input"}},
		{"where fails on status", "GET /api/x 200 0.25 [2026-11-24T05:00:00Z]", map[string]string{
			"requests": "counted method=GET,status=200 1", "server_errors": "where_failed status=200",
			"duration": "counted  0.25", "dated": "counted  1 t=1795496400", "app_only": "other_input"}},
		{"where fails on path", "GET /static/x 500 0.25 [2026-11-24T05:00:00Z]", map[string]string{
			"requests": "counted method=GET,status=500 1", "server_errors": "where_failed path=/static/x",
			"duration": "counted  0.25", "dated": "counted  1 t=1795496400", "app_only": "other_input"}},
		{"no value and bad timestamp", "GET /api 200 - [yesterday]", map[string]string{
			"requests": "counted method=GET,status=200 1", "server_errors": "where_failed status=200",
			"duration": "dropped no_value", "dated": "dropped bad_timestamp", "app_only": "other_input"}},
		{"bad number", "GET / 200 fast [2026-11-24T05:00:00Z]", map[string]string{
			"requests": "counted method=GET,status=200 1", "server_errors": "where_failed path=/",
			"duration": "dropped bad_number", "dated": "counted  1 t=1795496400", "app_only": "other_input"}},
		{"no match", "GET / 20x 0.1 [2026-11-24T05:00:00Z]", map[string]string{
			"requests": "no_match 0-8 in status", "server_errors": "no_match 0-8 in status",
			"duration": "no_match 0-8 in status", "dated": "no_match 0-8 in status", "app_only": "other_input"}},
	}
	for _, m := range matchers {
		p, err := build(cfg.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) { wantOutcomes(t, cfg, p, "web", c.line, c.want) })
		}
	}
}

// wantOutcomes checks what Explain says of each rule for a line of input, in describe's
// form, by rule name.
func wantOutcomes(t *testing.T, cfg *config.Config, p *Parser, input, line string, want map[string]string) {
	t.Helper()
	for i, res := range p.Explain(input, []byte(line)).Rules {
		name := cfg.Rules[i].Name
		if got := describe(cfg.Rules[i], res); got != want[name] {
			t.Errorf("%s: got %q, want %q", name, got, want[name])
		}
	}
}

// describe is a rule result in the tests' short form.
func describe(rule *config.Rule, res RuleResult) string {
	switch res.Outcome {
	case Counted:
		var pairs []string
		for i, l := range res.Event.Labels {
			pairs = append(pairs, rule.Labels[i].Name+"="+string(l))
		}
		s := fmt.Sprintf("counted %s %g", strings.Join(pairs, ","), res.Event.Value)
		if res.Event.HasTime {
			s += fmt.Sprintf(" t=%d", res.Event.Time)
		}
		return s
	case WhereFailed:
		w := rule.Where[res.Where]
		for _, c := range res.Captures {
			if c.Name == w.CaptureName {
				return fmt.Sprintf("where_failed %s=%s", c.Name, c.Value)
			}
		}
		return "where_failed on a capture not shown"
	case Dropped:
		return "dropped " + res.Drop.String()
	case NoMatch:
		s := "no_match"
		if res.Prefix != nil {
			s += fmt.Sprintf(" %d-%d in %s", res.Prefix.Start, res.Prefix.End, res.Prefix.Open)
		}
		if res.Format != nil {
			s += " of " + res.Format.Describe()
		}
		return s
	case OtherFormat:
		return fmt.Sprintf("other_format %s lacks %s", res.Format.Describe(), strings.Join(res.Lacks, ","))
	}
	return res.Outcome.String()
}

// TestExplainCandidates: a rule reading candidate formats is explained by the one the
// line is read by, as Parse reads it: it counts the line, or does not apply to its format,
// which lacks what it reads (a JSON object, the members); a line that fits none is
// followed through the text candidate it fits the farthest.
func TestExplainCandidates(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a, log_format: [combined, upstreaminfo, json, apache_combined]}
  - {name: app, path: /b, log_format: combined}
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: upstream, inputs: [web], labels: {addr: '${upstream_addr}'}}
  - {name: web_agents, inputs: [web], labels: {agent: '${http_user_agent}'}}
  - {name: apache, inputs: [web], labels: {status: '${s}'}}
`)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	cases := []struct {
		name, input, line string
		want              map[string]string // rule -> outcome and detail, see describe
	}{
		{"combined", "web", combined, map[string]string{"requests": "counted status=200 1",
			"upstream": "other_format combined lacks upstream_addr", "web_agents": "counted agent=curl 1", "apache": "other_format combined lacks s"}},
		{"upstreaminfo", "web", combined + ` 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab`, map[string]string{"requests": "counted status=200 1",
			"upstream": "counted addr=10.1.0.5:80 1", "web_agents": "counted agent=curl 1", "apache": "other_format upstreaminfo lacks s"}},
		{"apache", "web", strings.Replace(combined, "- -", "ident -", 1), map[string]string{"requests": "other_format apache_combined lacks status",
			"upstream": "other_format apache_combined lacks upstream_addr", "web_agents": "other_format apache_combined lacks http_user_agent", "apache": "counted status=200 1"}},
		{"json", "web", `{"status":"503","upstream_addr":"10.1.0.5:80"}`, map[string]string{"requests": "counted status=503 1",
			"upstream": "counted addr=10.1.0.5:80 1", "web_agents": "other_format json lacks http_user_agent", "apache": "other_format json lacks s"}},
		{"json without a member", "web", `{"status":"503"}`, map[string]string{"requests": "counted status=503 1",
			"upstream": "other_format json lacks upstream_addr", "web_agents": "other_format json lacks http_user_agent", "apache": "other_format json lacks s"}},
		{"none", "web", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] GET`, map[string]string{"requests": "no_match 0-42 in  of combined",
			"upstream": "no_match 0-42 in  of combined", "web_agents": "no_match 0-42 in  of combined", "apache": "no_match 0-42 in  of combined"}},
		{"another input", "app", combined, map[string]string{"requests": "counted status=200 1",
			"upstream": "other_input", "web_agents": "other_input", "apache": "other_input"}},
	}
	for _, m := range matchers {
		p, err := build(cfg.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) { wantOutcomes(t, cfg, p, c.input, c.line, c.want) })
		}
	}
}

// TestExplainNoInputOfCandidates: where every input has candidate formats, a line of no
// input (a file given to --explain that no input reads) has no log format, and a rule that
// reads only its inputs' formats does not read it: it is explained so, not as a regex of
// nothing that expected nothing at byte 0.
func TestExplainNoInputOfCandidates(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a, log_format: auto}
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: gets, match: '^GET'}
`)
	for _, m := range matchers {
		p, err := build(cfg.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.name, func(t *testing.T) {
			// As a one-shot reads a file no input reads: by no input's formats.
			s := p.NewSession()
			s.SetFormats(nil, nil)
			s.SetFormat("", nil)
			want := map[string]string{"requests": "other_input", "gets": "no_match 0-0 in "}
			for i, res := range s.ExplainWrapped("", []byte("hello world"), nil).Rules {
				if name := cfg.Rules[i].Name; describe(cfg.Rules[i], res) != want[name] {
					t.Errorf("%s: got %q, want %q", name, describe(cfg.Rules[i], res), want[name])
				}
			}
		})
	}
}

// TestExplainPrefix checks how far a regex that does not match got, against stretches
// worked out by hand.
func TestExplainPrefix(t *testing.T) {
	cases := []struct {
		name, re, line string
		start, end     int
		expected, open string
		captures       string
	}{
		{"anchored, fails in a group", `^(?P<a>[a-z]+) (?P<n>\d+)$`, "abc 12x", 0, 6, `[0-9] | end of line ($)`, "n", "a=abc"},
		{"anchored, extra text at the end", `^ab$`, "abc", 0, 2, `end of line ($)`, "", ""},
		{"anchored, fails at once", `^x`, "abc", 0, 0, `'x'`, "", ""},
		{"unanchored, longest attempt", `b(?P<q>"[^"]*")!`, `ab"x" b"yz"?`, 6, 11, `'!'`, "", `q="yz"`},
		{"unanchored, earliest of equal stretches", `ab+c`, "abx abx", 0, 2, `'b' | 'c'`, "", ""},
		{"escaped quote stops a class", `^"(?P<msg>[^"]*)"$`, `"say \"hi\""`, 0, 7, `end of line ($)`, "", `msg=say \`},
		{"a class shown by what it refuses", `^"(?P<m>[^"]*)"$`, `"ab`, 0, 3, `[^"] | '"'`, "m", ""},
		{"empty line", `^GET`, "", 0, 0, `'G'`, "", ""},
		{"case-folded rune", `^(?i)x`, "y", 0, 0, `(?i)'X'`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := longestPrefix(program(regexp.MustCompile(c.re)), []byte(c.line))
			var caps []string
			for _, cp := range p.Captures {
				caps = append(caps, cp.Name+"="+string(cp.Value))
			}
			got := fmt.Sprintf("%d-%d expected %s open %q captures %s", p.Start, p.End, strings.Join(p.Expected, " | "), p.Open, strings.Join(caps, ","))
			want := fmt.Sprintf("%d-%d expected %s open %q captures %s", c.start, c.end, c.expected, c.open, c.captures)
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if regexp.MustCompile(c.re).MatchString(c.line) {
				t.Fatal("the case's regex matches its line")
			}
		})
	}
}

// TestExplainTruncatesLongLines: the prefix search follows at most MaxPrefixBytes.
func TestExplainTruncatesLongLines(t *testing.T) {
	line := strings.Repeat("a", MaxPrefixBytes+10) + "!"
	p := longestPrefix(program(regexp.MustCompile(`^a+$`)), []byte(line))
	if !p.Truncated || p.End != MaxPrefixBytes {
		t.Errorf("got end %d truncated %v, want end %d truncated", p.End, p.Truncated, MaxPrefixBytes)
	}
}

// TestExplainAgreesWithParse: on the generated nginx log with the example rules, every
// rule Explain says counted a line is an event Parse gives, with the same labels, value
// and time, and every drop a drop of the same reason.
func TestExplainAgreesWithParse(t *testing.T) {
	cfg := loadExample(t)
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{t: t, rules: cfg.Rules}
	for i, line := range nginxlog.Lines(t, 2000, 19) {
		p.Parse("nginx", line, rec)
		want := rec.take()
		var got []record
		for _, res := range p.Explain("nginx", line).Rules {
			switch res.Outcome {
			case Counted:
				rec.Event(&res.Event)
				got = append(got, rec.take()...)
			case Dropped:
				got = append(got, record{Rule: cfg.Rules[res.Rule].Name, Drop: res.Drop.String()})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(byRule(cfg.Rules, want)) {
			t.Fatalf("line %d %q:\nexplain %v\nparse   %v", i, line, got, want)
		}
	}
}

// TestExplainFields: a fields rule's captures come from the extracted values, by name; a
// line not of the format is malformed; where_not names the filter that matched.
func TestExplainFields(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: app, path: /a.log, format: json}
rules:
  - name: requests
    inputs: [app]
    fields: {route: http.route, status: status}
    labels: {status: '${status}'}
    where_not: {route: '^/health'}
`)
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ line, want string }{
		{`{"status":503,"http":{"route":"/a\"b"}}`, `counted status=503 1 [route="/a\"b" status="503"]`},
		{`{"http":{"route":"/healthz"}}`, `where_not_matched 0 [route="/healthz" status=""]`},
		{`status=200`, `malformed 0 []`},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			res := p.Explain("app", []byte(c.line)).Rules[0]
			var caps []string
			for _, cp := range res.Captures {
				caps = append(caps, fmt.Sprintf("%s=%q", cp.Name, cp.Value))
			}
			got := fmt.Sprintf("%s %d [%s]", res.Outcome, res.Where, strings.Join(caps, " "))
			if res.Outcome == Counted {
				got = fmt.Sprintf("%s [%s]", describe(cfg.Rules[0], res), strings.Join(caps, " "))
			}
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// BenchmarkExplain is the cost of explaining one nginx line with the example rules: one
// every rule counts, and one no regex matches (which adds the search for how far the
// regex got). It is what --explain and the line tester pay per line; Parse does not.
func BenchmarkExplain(b *testing.B) {
	p, err := New(loadExample(b).Rules)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, line string }{
		{"counted", `23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 200 460 "-" "Mozilla/5.0" 0.022 0.019`},
		{"no_match", `23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 2x0 460 "-" "Mozilla/5.0" 0.022 0.019`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Explain("nginx", []byte(c.line))
			}
		})
	}
}
