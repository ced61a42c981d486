package parser

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser/formatscan"
)

// TestFormatGroupsScan checks that every group reading a text log format of the shipped
// configurations and of auto's candidates (every preset) cuts its lines with the format's
// scanner, on the parser's default engine, and that a format the scanner cannot read
// (Apache's %U%q: a value with no text before the next) keeps its regex.
func TestFormatGroupsScan(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     func(t *testing.T) *config.Config
		scanned bool
	}{
		{"example-rules.yaml", func(t *testing.T) *config.Config { return loadExample(t) }, true},
		{"auto", func(t *testing.T) *config.Config { return mustParse(t, autoRules) }, true},
		{"apache %U%q", func(t *testing.T) *config.Config {
			return mustParse(t, "inputs:\n  - {name: a, path: /x, apache_log_format: '%h %U%q %>s'}\nrules:\n  - name: r\n    labels: {s: '${s}'}\n")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg(t).Rules)
			if err != nil {
				t.Fatal(err)
			}
			formats := 0
			for _, g := range p.groups {
				if g.format == nil || g.format.JSON() {
					continue
				}
				formats++
				_, full := g.m.matcher.(*formatscan.Scanner)
				_, parse := g.parse.matcher.(*formatscan.Scanner)
				if full != c.scanned || parse != c.scanned {
					t.Errorf("%s: scanner %v (Parse's %v), want %v", g.format.Describe(), full, parse, c.scanned)
				}
			}
			if formats == 0 {
				t.Fatal("no group reads a text log format")
			}
		})
	}
}

// TestScannerRegexMadeOnUse checks that the regex behind a format's scanner is made at
// the first line the scanner leaves undecided, not before, and then reads that line as
// regexp does: an upstream list that ends at a " : " when read whole it does not fit,
// where the scanner reads it itself, and at the first of more " : " than its 16 reads of
// a line (undecidedLine).
func TestScannerRegexMadeOnUse(t *testing.T) {
	cfg := mustParse(t, "inputs:\n  - {name: a, path: /x, log_format: '$upstream_addr $http_x;$http_y'}\n"+
		"rules:\n  - name: r\n    labels: {u: '${upstream_addr}', x: '${http_x}'}\n")
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.groups) != 1 {
		t.Fatalf("%d groups, want 1", len(p.groups))
	}
	g := p.groups[0]
	s, ok := g.m.matcher.(*formatscan.Scanner)
	if !ok {
		t.Fatalf("matcher %T, want the format's scanner", g.m.matcher)
	}
	regex, ok := s.Regex().(lazyMatcher)
	if !ok {
		t.Fatalf("the scanner's regex is %T, want one made on use", s.Regex())
	}
	built := 0
	counted := s.WithRegex(lazily(func() matcher { built++; return regex.get() }))
	re := cfg.Rules[0].Regexp
	for _, c := range []struct {
		line  string
		built int
	}{
		{"10.0.0.1:80 a;b", 0},
		{"10.0.0.1:80, 10.0.0.2:80 a;b", 0},
		{"p : q;r", 0},
		{undecidedLine, 1},
		{undecidedLine, 1},
	} {
		caps := make([]int, g.m.ncap)
		want := re.FindStringSubmatchIndex(c.line)
		if got := counted.Match([]byte(c.line), caps); got != (want != nil) || got && !slices.Equal(caps, want) {
			t.Errorf("%q: Match %v %v, regexp %v", c.line, got, caps, want)
		}
		if built != c.built {
			t.Errorf("after %q the regex was made %d times, want %d", c.line, built, c.built)
		}
	}
}

// undecidedLine is a line of '$upstream_addr $http_x;$http_y' the scanner leaves to the
// regex: its list fits ending at its first " : " alone, which the scanner comes to after
// reading the line from 20 later ends, past its 16 reads.
var undecidedLine = "p : q;r" + strings.Repeat(" : p", 20)

// TestLazily checks that a lazy matcher is built at its first Match and only once, from
// however many goroutines.
func TestLazily(t *testing.T) {
	var built atomic.Int32
	m := lazily(func() matcher {
		built.Add(1)
		return compile(regexp.MustCompile(`a(b)`), viaFastmatch, nil).matcher
	})
	if n := built.Load(); n != 0 {
		t.Fatalf("built %d times before any Match", n)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			caps := make([]int, 4)
			if !m.Match([]byte("xab"), caps) || !slices.Equal(caps, []int{1, 3, 2, 3}) {
				t.Errorf("Match: %v", caps)
			}
		})
	}
	wg.Wait()
	if n := built.Load(); n != 1 {
		t.Fatalf("built %d times, want 1", n)
	}
}

// TestScannerRegexFirstUseConcurrent checks that goroutines meeting the first undecided
// line of a format all at once (inputs read by goroutines of their own, --explain beside
// them) each read it as a parser that made the regex before them does: Parse through the
// matcher recording only the groups the rules read, Explain through the one recording
// all. Run under -race it also checks that the regex is made without a data race.
func TestScannerRegexFirstUseConcurrent(t *testing.T) {
	cfg := mustParse(t, "inputs:\n  - {name: a, path: /x, log_format: '$upstream_addr $http_x;$http_y'}\n"+
		"rules:\n  - name: r\n    labels: {u: '${upstream_addr}', x: '${http_x}'}\n")
	lines := []string{undecidedLine, "10.0.0.1:80, 10.0.0.2:80 a;b", "p : q", "p : q;r;s"}
	warm, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		parsed []record
		rules  []RuleResult
	}
	read := func(p *Parser, line string) result {
		rec := &recorder{t: t, rules: cfg.Rules}
		p.Parse("a", []byte(line), rec)
		return result{rec.got, p.Explain("a", []byte(line)).Rules}
	}
	want := make([]result, len(lines))
	for i, l := range lines {
		want[i] = read(warm, l)
	}
	// The first line is one the scanner leaves undecided (TestScannerRegexMadeOnUse).
	re := cfg.Rules[0].Regexp
	m := re.FindStringSubmatch(lines[0])
	if m == nil || len(want[0].parsed) != 1 || want[0].parsed[0].Labels != "u="+m[re.SubexpIndex("upstream_addr")]+",x="+m[re.SubexpIndex("http_x")] {
		t.Fatalf("%q parsed as %v, regexp reads %q", lines[0], want[0].parsed, m)
	}
	for round := range 20 {
		p, err := New(cfg.Rules)
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				<-start
				for i := range lines {
					k := (i + g) % len(lines)
					if got := read(p, lines[k]); !reflect.DeepEqual(got, want[k]) {
						t.Errorf("round %d, goroutine %d, %q: %+v, want %+v", round, g, lines[k], got, want[k])
					}
				}
			})
		}
		close(start)
		wg.Wait()
	}
}

// TestScannerRegexRecordsOnlyRead checks that the regex made on use behind the scanner
// Parse runs records only the groups the rules read, as the fastmatch matcher made at
// build did, while the one behind Explain's scanner records them all.
func TestScannerRegexRecordsOnlyRead(t *testing.T) {
	cfg := mustParse(t, "inputs:\n  - {name: a, path: /x, log_format: '$upstream_addr $http_x;$http_y'}\n"+
		"rules:\n  - name: r\n    labels: {u: '${upstream_addr}', x: '${http_x}'}\n")
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	g := p.groups[0]
	re := cfg.Rules[0].Regexp
	unread := re.SubexpIndex("http_y")
	line := undecidedLine
	want := re.FindStringSubmatchIndex(line)
	for _, c := range []struct {
		name string
		m    compiled
		read bool
	}{
		{"parse", g.parse, false},
		{"explain", g.m, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := make([]int, g.m.ncap)
			if !c.m.Match([]byte(line), caps) {
				t.Fatal("no match")
			}
			got := caps[2*unread : 2*unread+2]
			if wantY := want[2*unread : 2*unread+2]; c.read && !slices.Equal(got, wantY) || !c.read && !slices.Equal(got, []int{-1, -1}) {
				t.Errorf("http_y at %v (regexp's %v), recorded: want %v", got, wantY, c.read)
			}
		})
	}
}
