package parser

import (
	"regexp"
	"slices"
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
// regexp does: an upstream list that ends at a " : " when read whole it does not fit.
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
		{"p : q;r", 1},
		{"p : q;r", 1},
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
