package parser

import (
	"bytes"
	"reflect"
	"regexp"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// fuzzRules are the shipped nginx rules plus rules over a key=value shape that fastmatch
// and the literal prefilter both see differently from the nginx pattern (unanchored, with
// literals, labels mixing text and captures).
const fuzzRules = `
rules:
  - name: kv_requests
    match: 'status=(?P<status>[0-9]+) path=(?P<path>[^ ]*)(?: took=(?P<took>[^ ]+)ms)?'
    labels: {route: 'r:${path}', code: '${status}'}
  - name: kv_took
    match: 'status=(?P<status>[0-9]+) path=(?P<path>[^ ]*)(?: took=(?P<took>[^ ]+)ms)?'
    where: {status: '^[45]'}
    value: took
  - name: kv_when
    match: '^(?P<ts>\S+) (?:(?i)level)=(?P<level>\w+)'
    labels: {level: '${level}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`

// exampleAndFuzzRules is the example's rules followed by the fuzz rules.
func exampleAndFuzzRules(tb testing.TB) []*config.Rule {
	return append(append([]*config.Rule{}, loadExample(tb).Rules...), mustParse(tb, fuzzRules).Rules...)
}

// FuzzParse feeds random lines to the parser: it must never panic, every event must pass
// the recorder's checks (valid UTF-8 capped labels, key = labels joined by 0xff), and the
// parser of scanners and fastmatch must agree exactly with the plain regexp one, and with
// one of its own rules that renders every label set by render alone (renderAlone).
func FuzzParse(f *testing.F) {
	rules := exampleAndFuzzRules(f)
	fast, err := build(rules, viaScanner)
	if err != nil {
		f.Fatal(err)
	}
	slow, err := build(rules, viaRegexp)
	if err != nil {
		f.Fatal(err)
	}
	plain, err := build(rules, viaScanner)
	if err != nil {
		f.Fatal(err)
	}
	if renderAlone(plain) == 0 {
		f.Fatal("no rule renders its labels a word a value")
	}
	for _, seed := range []string{
		`23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/cart HTTP/1.1" 200 460 "-" "Mozilla/5.0" 0.022 0.019`,
		`10.0.0.1 - alice [01/Mar/2024:13:00:01 +0100] "POST /x?y=1 HTTP/1.1" 502 173 "-" "okhttp/4.12.0" 0.045 0.004, 0.041`,
		`93.184.216.34 - - [01/Mar/2024:12:00:03 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "Mozilla/5.0"`,
		"2024-03-01T12:00:00Z LEVEL=warn status=503 path=/a\xff\xfe took=12.5ms",
		"status=404 path= took=-ms",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		a := &recorder{t: t, rules: rules}
		b := &recorder{t: t, rules: rules}
		fast.Parse("nginx", line, a)
		slow.Parse("nginx", line, b)
		if !reflect.DeepEqual(a.got, b.got) {
			t.Fatalf("line %q:\nscanner %v\nregexp  %v", line, a.got, b.got)
		}
		c := &recorder{t: t, rules: rules}
		plain.Parse("nginx", line, c)
		if !reflect.DeepEqual(a.got, c.got) {
			t.Fatalf("line %q:\nlabels a word a value %v\nby render alone      %v", line, a.got, c.got)
		}
		if !bytes.Equal(line, orig) {
			t.Fatalf("Parse changed the line")
		}
		if got, want := string(appendValidUTF8(nil, line)), validLabel(string(line)); got != want {
			t.Fatalf("appendValidUTF8(%q) = %q, want %q", line, got, want)
		}
	})
}

// renderAlone makes every rule of p render its labels by render, none by renderCaptures,
// and returns how many did: the reference that writing a label set a word a value is held
// to. Every program of p shares its groups' rules.
func renderAlone(p *Parser) int {
	n := 0
	for i := range p.groups {
		for j := range p.groups[i].rules {
			if r := &p.groups[i].rules[j]; r.labelCaptures != nil {
				r.labelCaptures = nil
				n++
			}
		}
	}
	return n
}

// FuzzRequiredLiteral checks the prefilter is sound: a line the regex matches always
// contains the literal the prefilter looks for.
func FuzzRequiredLiteral(f *testing.F) {
	f.Add(`^(?P<ip>[^ ]+) \[(?P<t>[^\]]+)\] "GET `, []byte(`1.2.3.4 [x] "GET /`))
	f.Add(`level=(error|warn) code=\d+`, []byte(`level=warn code=5`))
	f.Add(`x(?:ab)+y(?:cd){2,}`, []byte(`xababycdcdcd`))
	f.Add(`(?m)^abc$\ndef`, []byte("abc\ndef"))
	f.Add(`a\x{FFFD}b`, []byte("a\xffb"))
	f.Fuzz(func(t *testing.T, expr string, line []byte) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		lit := requiredLiteral(re)
		if lit != nil && re.Match(line) && !bytes.Contains(line, lit) {
			t.Fatalf("%q matches %q, which lacks the required literal %q", expr, line, lit)
		}
	})
}

// FuzzExplain feeds random lines to Explain: it must never panic, it must take the same
// decisions as Parse (the same events and drops), and every stretch it reports for a regex
// that does not match must lie within the line, and within the part it follows.
func FuzzExplain(f *testing.F) {
	rules := exampleAndFuzzRules(f)
	p, err := New(rules)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want := &recorder{t: t, rules: rules}
		p.Parse("nginx", line, want)
		got := &recorder{t: t, rules: rules}
		for _, res := range p.Explain("nginx", line).Rules {
			switch res.Outcome {
			case Counted:
				got.Event(&res.Event)
			case Dropped:
				got.Drop(res.Rule, res.Drop)
			case NoMatch:
				pr := res.Prefix
				if pr.Start < 0 || pr.Start > pr.End || pr.End > min(len(line), MaxPrefixBytes) {
					t.Fatalf("line %q, rule %s: stretch %d-%d", line, rules[res.Rule].Name, pr.Start, pr.End)
				}
			}
		}
		if !reflect.DeepEqual(got.got, byRule(rules, want.got)) {
			t.Fatalf("line %q:\nexplain %v\nparse   %v", line, got.got, want.got)
		}
	})
}
