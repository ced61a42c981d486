package parser

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// apacheEscape is a value as mod_log_config writes it (ap_escape_logitem): '"' and '\'
// after a backslash, the control characters C names by a letter so, and any other byte
// that is not printable ASCII as \xhh, in lower case.
func apacheEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\v':
			b.WriteString(`\v`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// apacheRecord is one request as Apache's combined format logs it, and its status.
type apacheRecord struct{ line, status string }

// apacheLog is an Apache log of n requests in the combined format, whose agents and paths
// are plain ASCII for its first plain lines (which fit nginx's combined as well) and then
// hold a quote or a byte that is no printable ASCII now and then, which Apache escapes.
func apacheLog(r *rand.Rand, n, plain int) []apacheRecord {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	out := make([]apacheRecord, n)
	for i := range out {
		agent, path := pick("curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "-"), pick("/", "/a?b=1", "/api/v1/cart")
		if i >= plain {
			agent = pick(agent, `Mozilla/5.0 "compatible" bot`, "caf\u00e9 agent", "tab\there", `back\slash "q"`)
			path = pick(path, "/caf\u00e9", `/q"uote`)
		}
		status := pick("200", "304", "404", "500")
		size := pick("-", "612", "5120")
		out[i] = apacheRecord{
			line: fmt.Sprintf(`203.0.113.%d - %s [01/Mar/2024:12:00:%02d +0000] "GET %s HTTP/1.1" %s %s "%s" "%s"`,
				1+r.IntN(200), pick("-", "alice"), i%60, apacheEscape(path), status, size, pick("-", "https://example.com/"), apacheEscape(agent)),
			status: status,
		}
	}
	return out
}

// An Apache log under auto whose first lines hold no escape is read as nginx's combined,
// which they fit as well as Apache's combined, listed after it; its later lines that hold
// one of Apache's escapes in a quoted field (a \" nginx never writes) fit only
// apache_combined, and are read by it, line by line, whatever lines no candidate fits
// come among them: every line is parsed once, and counted by the rules that apply to the
// format that read it, none lost.
func TestSessionReadsTiedCandidate(t *testing.T) {
	c := mustParse(t, autoRules+`
  - name: classes
    labels: {class: '${status_class}'}
`)
	p := newOfInputs(t, c)
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		name         string
		plain, lines int
		garbage      bool // a line of no format after every tenth
	}{
		{"escapes after the first line", 1, 200, false},
		{"escapes after MaxHeld lines", MaxHeld + 4, 200, false},
		{"misfits among them", 30, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, files, rec, count := autoSession(t, p, c)
			want := map[string]int{}
			fed, quoted := 0, 0
			for i, a := range apacheLog(r, tc.lines, tc.plain) {
				s.ParseFile("access.log", "pods", []byte(a.line), nil, rec, count.done)
				fed++
				want["classes class="+a.status[:1]+"xx"]++
				if strings.Contains(a.line, `\"`) {
					quoted++
					want["apache_requests status="+a.status]++
				} else {
					want["requests status="+a.status]++
				}
				if tc.garbage && i%10 == 9 {
					s.ParseFile("access.log", "pods", []byte("[Fri Mar 01 12:00:00 2024] [error] AH00124: request exceeded the limit"), nil, rec, count.done)
					fed++
				}
			}
			if f := files.Formats(); !maps.Equal(f, map[string]int{"combined": 1}) {
				t.Errorf("formats %v, want the file read as combined", f)
			}
			s.CloseFile("access.log", "pods", rec, count.done)
			if quoted == 0 {
				t.Fatal("no line holds an escaped quote: the tie is not exercised")
			}
			got := map[string]int{}
			for _, e := range rec.take() {
				if e.Rule != "request_seconds" {
					got[e.Rule+" "+e.Labels]++
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("events %v\nwant %v (%d lines with \\\")", got, want, quoted)
			}
			if count.lines != fed || count.malformed != 0 {
				t.Errorf("%d lines parsed (%d malformed), want %d, none", count.lines, count.malformed, fed)
			}
		})
	}
}

// BenchmarkParseFileTied is a line's cost in a file whose format tied with another when
// it was chosen (an Apache log read as nginx's combined): a line that fits the format
// (plain) against the same in a file without the tie (untied, as every file was read
// before ties were kept), and a line that only the tied candidate fits (quoted).
func BenchmarkParseFileTied(b *testing.B) {
	c := mustParse(b, autoRules)
	p, err := New(c.Rules)
	if err != nil {
		b.Fatal(err)
	}
	p.SetInputs(c.Inputs)
	r := rand.New(rand.NewPCG(13, 14))
	var plain, quoted [][]byte
	for _, a := range apacheLog(r, 4096, 4096) {
		plain = append(plain, []byte(a.line))
	}
	for _, a := range apacheLog(r, 4096, 0) {
		if strings.Contains(a.line, `\"`) {
			quoted = append(quoted, []byte(a.line))
		}
	}
	sink := discard{}
	for _, tc := range []struct {
		name  string
		lines [][]byte
		tied  bool
	}{{"plain/untied", plain, false}, {"plain/tied", plain, true}, {"quoted/tied", quoted, true}} {
		s := p.NewSession()
		s.SetFormats(c.Inputs[0].LogFormats, NewFiles())
		var count countingDone
		s.ParseFile("f", "pods", plain[0], nil, sink, count.done)
		if got := s.last.tied; len(got) != 1 {
			b.Fatalf("the file's format tied with %d candidates, want apache_combined", len(got))
		}
		if !tc.tied {
			s.last.tied = nil
		}
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				s.ParseFile("f", "pods", tc.lines[i%len(tc.lines)], nil, sink, count.done)
				i++
			}
			if s.Holds() {
				b.Fatal("lines are held: not every line was read")
			}
		})
	}
}

// Of candidates that an Apache log's plain lines fit alike, the file (and a line read
// alone) is read by one that a rule applies to: rules reading Apache's names alone count every line of it, as rules
// reading nginx's alone do; the one listed first is chosen when rules read both, or
// neither.
func TestSessionTieGoesToFormatRead(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		name, rules, format string
	}{
		{"Apache's names", "  - {name: requests, labels: {status: '${s}'}}\n", "apache_combined"},
		{"nginx's names", "  - {name: requests, labels: {status: '${status}'}}\n", "combined"},
		{"both", "  - {name: requests, labels: {status: '${status}'}}\n  - {name: apache, labels: {status: '${s}'}}\n", "combined"},
		{"what both give", "  - {name: requests, labels: {class: '${status_class}'}}\n", "combined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, "inputs:\n  - {name: pods, path: /var/log/pods/*.log, log_format: auto}\nrules:\n"+tc.rules)
			p := newOfInputs(t, c)
			s, files, rec, count := autoSession(t, p, c)
			log := apacheLog(r, 40, 40)
			for _, a := range log {
				s.ParseFile("access.log", "pods", []byte(a.line), nil, rec, count.done)
			}
			if f := files.Formats(); !maps.Equal(f, map[string]int{tc.format: 1}) {
				t.Errorf("formats %v, want the file read as %s", f, tc.format)
			}
			requests := 0
			for _, e := range rec.take() {
				if e.Rule == "requests" {
					requests++
				}
			}
			if requests != len(log) || count.lines != len(log) {
				t.Errorf("%d of %d lines parsed, %d requests counted; want every line", count.lines, len(log), requests)
			}
			// A line read alone (the line tester, a warm start's backfill) is read so too.
			p.Parse("pods", []byte(log[0].line), rec)
			p.NewSession().ParseWrapped("pods", []byte(log[0].line), nil, rec)
			if got := len(rec.take()); got != 2 {
				t.Errorf("a line read alone by Parser and Session gave %d events, want 2", got)
			}
		})
	}
}

// A line a tied candidate reads is told of after the lines held before it, in the order
// of the file, as --explain numbers them: misfits, then it; the file keeps a copy of none.
func TestSessionTiedLineAfterHeld(t *testing.T) {
	c := mustParse(t, autoRules)
	p := newOfInputs(t, c)
	s, _, rec, _ := autoSession(t, p, c)
	const garbage = "[Fri Mar 01 12:00:00 2024] [error] AH00124: request exceeded the limit"
	lines := []string{
		`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0"`,
		garbage, garbage,
		`203.0.113.7 - - [01/Mar/2024:12:00:01 +0000] "GET / HTTP/1.1" 404 - "-" "a \"b\" c"`,
	}
	var told []bool
	done := func(_, fitted bool) { told = append(told, fitted) }
	for _, l := range lines {
		s.ParseFile("access.log", "pods", []byte(l), nil, rec, done)
	}
	if want := []bool{true, false, false, true}; !slices.Equal(told, want) {
		t.Errorf("lines told of as fitted %v, want %v", told, want)
	}
	// What the file held is let go of, the line read by the tied candidate too.
	file := s.files.files["access.log"]
	if held := file.held[:cap(file.held)]; slices.ContainsFunc(held, func(l []byte) bool { return l != nil }) {
		t.Errorf("the file keeps %q", held)
	}
}

// A file whose format is chosen again (nginx's main after an Apache log's lines) keeps no
// tie of the format it had: a line of Apache's \" is held as any other misfit.
func TestSessionChosenAgainDropsTie(t *testing.T) {
	c := mustParse(t, autoRules)
	p := newOfInputs(t, c)
	s, files, rec, count := autoSession(t, p, c)
	s.ParseFile("access.log", "pods", []byte(`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0"`), nil, rec, count.done)
	for range MaxHeld {
		s.ParseFile("access.log", "pods", []byte(`203.0.113.7 - - [01/Mar/2024:12:00:01 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0" "-"`), nil, rec, count.done)
	}
	if f := files.Formats(); !maps.Equal(f, map[string]int{"main": 1}) {
		t.Fatalf("formats %v, want the file read as main", f)
	}
	s.ParseFile("access.log", "pods", []byte(`203.0.113.7 - - [01/Mar/2024:12:00:02 +0000] "GET / HTTP/1.1" 404 - "-" "a \"b\" c"`), nil, rec, count.done)
	if !s.Holds() || count.lines != 1+MaxHeld {
		t.Errorf("%d lines parsed, held %v; want %d, the last held", count.lines, s.Holds(), 1+MaxHeld)
	}
}
