package parser

import (
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// TestEventsGolden holds what the parser makes of the lines of a log format, event by
// event and byte by byte, to what it made of them when the golden file was written: the
// per-line work of a group (scan, dashes, escapes, request parts, labels, items, filters,
// values, times) may be made faster, never different. The lines are generated (the same
// seed gives the same lines) and damaged: escapes, dashes, non-ASCII and invalid UTF-8,
// values past the label cap, requests nginx could not parse, lines cut short or with a
// byte more. Each line is read by the rules of testdata/golden-rules.yaml (its format with
// nginx's default escaping, and with none) and by those of example-rules.yaml, on the
// scanner, fastmatch and regexp, which must agree; the golden file has a digest of the
// events of each line per rule file, and a failure shows the events of the first line
// that differs. The digests are FNV-1a of the events written out in full (dumpSink).
func TestEventsGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden-rules.yaml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "example-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	configs := []struct{ name, text string }{
		{"default", string(text)},
		{"none", strings.Replace(string(text), "    log_format: ", "    log_format_escape: none\n    log_format: ", 1)},
		{"example-rules.yaml", string(example)},
	}
	type reading struct {
		rules   []*config.Rule
		parsers []*Parser
	}
	var readings []reading
	for _, e := range configs {
		cfg, err := config.Parse([]byte(e.text), path)
		if err != nil {
			t.Fatal(err)
		}
		rd := reading{rules: cfg.Rules}
		for _, m := range matchers {
			p, err := build(cfg.Rules, m.engine)
			if err != nil {
				t.Fatal(err)
			}
			rd.parsers = append(rd.parsers, p)
		}
		readings = append(readings, rd)
	}
	lines := goldenLines(2000)
	var got strings.Builder
	for i, line := range lines {
		for k, rd := range readings {
			var first string
			for j, p := range rd.parsers {
				sink := &dumpSink{t: t, rules: rd.rules}
				p.Parse("nginx", line, sink)
				if j == 0 {
					first = sink.b.String()
				} else if s := sink.b.String(); s != first {
					t.Fatalf("line %d %q, rules %s: %s gives\n%s\n%s gives\n%s", i, line, configs[k].name, matchers[0].name, first, matchers[j].name, s)
				}
			}
			h := fnv.New64a()
			h.Write([]byte(first))
			fmt.Fprintf(&got, "%016x", h.Sum64())
			if k < len(readings)-1 {
				got.WriteByte(' ')
			}
		}
		got.WriteByte('\n')
		if t.Failed() {
			return
		}
	}
	golden := filepath.Join("testdata", "events.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestEventsGolden -update writes it)", err)
	}
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	if len(gotLines) != len(wantLines) {
		t.Fatalf("%d digests, the golden file has %d", len(gotLines), len(wantLines))
	}
	for i := range gotLines {
		if gotLines[i] == wantLines[i] {
			continue
		}
		var now strings.Builder
		for k, rd := range readings {
			sink := &dumpSink{t: t, rules: rd.rules}
			rd.parsers[0].Parse("nginx", lines[i], sink)
			fmt.Fprintf(&now, "rules %s:\n%s", configs[k].name, sink.b.String())
		}
		t.Fatalf("line %d %q: digests %s, golden %s; it now gives\n%s", i, lines[i], gotLines[i], wantLines[i], now.String())
	}
}

// dumpSink writes every Sink call in full: rule, key, labels, items, value bits, time.
type dumpSink struct {
	t     *testing.T
	rules []*config.Rule
	b     strings.Builder
}

func (s *dumpSink) Event(e *Event) {
	if !bytes.Equal(e.Key, bytes.Join(e.Labels, []byte{0xff})) {
		s.t.Errorf("rule %s: key %q is not the labels %q joined by 0xff", s.rules[e.Rule].Name, e.Key, e.Labels)
	}
	for _, v := range slices.Concat(e.Labels, e.Items) {
		if cap(v) != len(v) {
			s.t.Errorf("rule %s: value %q has room after it: a sink appending to it would write over the parser's text", s.rules[e.Rule].Name, v)
		}
	}
	fmt.Fprintf(&s.b, "%s key=%q labels=%q items=%q value=%s time=%d/%v\n", s.rules[e.Rule].Name, e.Key, e.Labels, e.Items,
		strconv.FormatFloat(e.Value, 'g', -1, 64), e.Time, e.HasTime)
}

func (s *dumpSink) Drop(rule int, reason DropReason) {
	fmt.Fprintf(&s.b, "%s drop %s\n", s.rules[rule].Name, reason)
}

// goldenLines generates n lines of the format of testdata/golden-rules.yaml, most of them
// as nginx writes them and the rest damaged, from a fixed seed.
func goldenLines(n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	some := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	long := func(unit string) string { return strings.Repeat(unit, 1100/len(unit)+r.IntN(3)) }
	text := func() string {
		return some("-", "", "Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "https://example.com/a?b=c",
			`a\x22b`, `\x5C`, `\xC3\xA9t\xC3\xA9`, "été", "naïve €", "\xff\xfe", "bad\xc3", `x\y`, `\x`, `\xZZ`,
			" spaced out ", "-x", "--", long("é"), long("ab"), long("a\xff"), "\t", "[]")
	}
	request := func() string {
		switch r.IntN(10) {
		case 0:
			return some("-", "", "\x16\x03\x01", "GARBAGE", "/only", `\x16\x03`, "GET", "GET ")
		case 1:
			return some("GET", "POST") + " " + long("/x") + " HTTP/1.1"
		}
		req := some("GET", "POST", "HEAD", "M-SEARCH", "BREW") + " " +
			some("/", "/a/123", "/api/v1/users/42/orders", "/café", `/q\x22x`, "/a b", "/%7E", `/x\\y`, "/\xff", "/p/7/q/8")
		if r.IntN(2) == 0 {
			req += "?" + some("", "x=1", "a=1&b=2", "q=a b", "?")
		}
		if r.IntN(6) > 0 {
			req += " " + some("HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTPS/1", "http/1.1")
		}
		return req
	}
	second := 0
	var lines [][]byte
	for range n {
		if r.IntN(4) == 0 {
			second += r.IntN(3)
		}
		ts := fmt.Sprintf("%02d/Mar/2024:12:%02d:%02d +0000", 1+second/86400%28, second/60%60, second%60)
		if r.IntN(50) == 0 {
			ts = some("32/Mar/2024:12:00:00 +0000", "01/Foo/2024:12:00:00 +0000", "01/Mar/2024:12:00:00 -0730")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s - %s [%s] \"%s\" %s %s \"%s\" \"%s\"",
			some("10.0.0.1", "::1", "2001:db8::7", "-", "192.168.100.200"), some("-", "alice", `b\x5Cob`, "é", "-"), ts, request(),
			some("200", "204", "301", "404", "499", "500", "502", "503", "-", "2x"), some("0", "512", "1234567", "-", "1e3", "12.5"),
			text(), text())
		switch r.IntN(8) {
		case 0: // combined alone
		case 1:
			b.WriteString(" " + some("0.004", "-", "abc", "12.345"))
		default:
			fmt.Fprintf(&b, " %s %s", some("0.004", "0.000", "-", "1.5", "abc"),
				some("0.003", "-", "0.001, 0.045", "0.1 : 0.2", "-, 0.3", "0.2, -", ", ", "x"))
		}
		line := []byte(b.String())
		switch r.IntN(12) {
		case 0:
			line = line[:r.IntN(len(line)+1)]
		case 1:
			at := r.IntN(len(line) + 1)
			line = append(line[:at:at], append([]byte{some(" ", `"`, `\`, "-", "\n", "\xff", "[", "]")[0]}, line[at:]...)...)
		case 2:
			line = append(line, " extra"...)
		}
		lines = append(lines, line)
	}
	return lines
}
