package fastmatch

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
)

// TestGeneratedLines checks realistic lines: every one matches, gives
// regexp's captures, and is decided by the matcher within Match's own budget.
func TestGeneratedLines(t *testing.T) {
	lines := nginxlog.Lines(t, 2000, 1)
	for _, expr := range []string{nginxMain, combined, lazyCombined} {
		t.Run(expr[:20], func(t *testing.T) {
			re, m := pair(t, expr)
			caps := make([]int, 2*(re.NumSubexp()+1))
			for _, l := range lines {
				if _, ok := sameAsRegexp(t, re, m, l); !ok {
					t.Fatalf("no match on %q", l)
				}
				if r := m.exec(l, caps, m.budget(l)); r != matched {
					t.Fatalf("exec = %v within Match's budget on %q", r, l)
				}
			}
		})
	}
}

// TestLinearSearch covers unanchored searches that stay linear without
// regexp's help: a leading x* resumes the search past what it reached.
func TestLinearSearch(t *testing.T) {
	long := strings.Repeat("abc def ", 500)
	cases := []struct{ expr, line string }{
		{`.*foo`, long},
		{`.*foo`, long + "foo"},
		{`(.*?) took (\d+)ms`, long + " took 15ms"},
		{`(?s)(.*)x`, long},
		{`[^\n]*(ERROR|WARN)`, long + "\n" + long + " WARN"},
		{`\w*z`, long},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			re, m := pair(t, c.expr)
			line := []byte(c.line)
			sameAsRegexp(t, re, m, line)
			caps := make([]int, 2*(re.NumSubexp()+1))
			if r := m.exec(line, caps, m.budget(line)); r == giveUp {
				t.Fatal("exec gave up within Match's budget")
			}
		})
	}
}

// TestFallback covers lines the matcher gives up on: exponential
// backtracking and a stack deeper than its own. Match must still give
// regexp's answer.
func TestFallback(t *testing.T) {
	cases := []struct {
		name, expr, line string
	}{
		{"exponential", `^(\S+,?)+$`, strings.Repeat("a", 40) + " "},
		{"nested loops", `^(?:(a+)+)+b`, strings.Repeat("a", 30)},
		{"deep stack", `^(?:(\w+),)*x`, strings.Repeat("ab,", 200) + "x"},
		{"deep stack no match", `^(?:(\w+),)*x`, strings.Repeat("ab,", 200) + "y"},
		{"quadratic search", `\d+ms`, strings.Repeat("1", 500) + " 5ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			re, m := pair(t, c.expr)
			if m == nil {
				t.Fatal("rejected")
			}
			line := []byte(c.line)
			caps := make([]int, 2*(re.NumSubexp()+1))
			if r := m.exec(line, caps, m.budget(line)); r != giveUp {
				t.Fatalf("exec = %v, want giveUp", r)
			}
			want := re.FindSubmatchIndex(line)
			if got := m.Match(line, caps); got != (want != nil) || got && !slices.Equal(caps, want) {
				t.Fatalf("Match = %v %v, regexp %v", got, caps, want)
			}
		})
	}
}

// TestAnalysis pins the compile-time decisions that make the usual log
// expressions fast: how many runs may give back runes and how many choices
// cannot be decided by one rune.
func TestAnalysis(t *testing.T) {
	cases := []struct {
		expr                  string
		backtrackRuns, splits int
	}{
		// Only the two \S+ of upstream_time (", " can follow them).
		{nginxMain, 2, 0},
		// (\S+)" : \S takes the quote too.
		{combined, 1, 0},
		{`^(\S+) (\S+)$`, 0, 0},
		{`(?P<path>[^ "?]*)[^ "]* `, 0, 0}, // the second run takes back whatever the first gives
		{`([^ "?]*)[^ "]+ `, 1, 0},         // not with a minimum
		{`(GET|POST|PUT|DELETE) `, 0, 0},
		{`(\w+,|\d+;)`, 0, 1},
		{`(\d+)(?:\.(\d+))?s`, 0, 0},
		{`(.*?)x`, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			m, err := Compile(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			runs, splits := 0, 0
			for _, in := range m.prog {
				if in.op == opRun && !in.poss && in.min != in.max {
					runs++
				}
				if in.op == opSplit && in.peek == nil {
					splits++
				}
			}
			if runs != c.backtrackRuns || splits != c.splits {
				t.Errorf("%d runs that can backtrack, %d undecided splits; want %d, %d", runs, splits, c.backtrackRuns, c.splits)
			}
		})
	}
}

func TestRequiredLiteral(t *testing.T) {
	cases := []struct{ expr, want string }{
		{nginxMain, `] "`},
		{`level=(\w+) msg="([^"]*)"`, `level=`},
		{`(?:error|warn)`, ``},
		{`(a)(bcd)?(ef)`, `ef`},
		{`(?i)error`, ``},
		{`x+`, ``},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			m, err := Compile(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.required; string(got) != c.want {
				t.Errorf("required literal = %q, want %q", got, c.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	if _, err := Compile(`(unclosed`); err == nil || errors.Is(err, ErrUnsupported) {
		t.Errorf("invalid expression: err = %v, want regexp's syntax error", err)
	}
	if _, err := Compile(`(a*)*`); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "can match empty") {
		t.Errorf("nullable loop: err = %v, want ErrUnsupported saying why", err)
	}
}

func TestMatchAllocs(t *testing.T) {
	m, err := Compile(nginxMain)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(trickyLines[len(trickyLines)-8])
	caps := make([]int, 2*(regexp.MustCompile(nginxMain).NumSubexp()+1))
	if !m.Match(line, caps) {
		t.Fatalf("no match on %q", line)
	}
	if n := testing.AllocsPerRun(100, func() { m.Match(line, caps) }); n != 0 {
		t.Errorf("Match allocates %v times per line", n)
	}
}

func TestShortCapsPanics(t *testing.T) {
	m, err := Compile(`(a)(b)`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Match with 4 ints for 2 groups did not panic")
		}
	}()
	m.Match([]byte("ab"), make([]int, 4))
}

// TestConcurrentMatch shares one Matcher between goroutines (run with -race).
func TestConcurrentMatch(t *testing.T) {
	m, err := Compile(nginxMain)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(nginxMain)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			caps := make([]int, 2*(re.NumSubexp()+1))
			for i := range 200 {
				line := []byte(trickyLines[(g+i)%len(trickyLines)])
				want := re.FindSubmatchIndex(line)
				if got := m.Match(line, caps); got != (want != nil) || got && !slices.Equal(caps, want) {
					t.Errorf("Match(%q) = %v %v, want %v", line, got, caps, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestFromRegexp checks that a matcher made from a compiled regexp is Compile's of its
// expression, and keeps that regexp rather than compiling it again.
func TestFromRegexp(t *testing.T) {
	lines := []string{
		`203.0.113.9 - - [01/Mar/2024:10:00:00 +0000] "GET /a?b=1 HTTP/1.1" 200 512 "-" "curl/8" 0.004 0.003`,
		`203.0.113.9 - bob [01/Mar/2024:10:00:00 +0000] "POST /x HTTP/2.0" 503 0 "r" "ua" 1.5 0.1, 0.2`,
		`not a log line`,
		`aaaa`,
	}
	for _, c := range []struct {
		expr        string
		unsupported bool
	}{
		{nginxMain, false},
		{combined, false},
		{`(\d+)(?:\.(\d+))?s`, false},
		{`(a*)*`, true},
	} {
		t.Run(c.expr, func(t *testing.T) {
			re := regexp.MustCompile(c.expr)
			m, err := FromRegexp(re)
			if c.unsupported {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("FromRegexp: error %v, want one wrapping ErrUnsupported as Compile gives", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.re != re {
				t.Error("the matcher holds a regexp of its own, not the one it was given")
			}
			want, err := Compile(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.prog) != len(want.prog) {
				t.Errorf("program of %d instructions, Compile's has %d", len(m.prog), len(want.prog))
			}
			for _, line := range lines {
				got, exp := make([]int, m.ncap), make([]int, want.ncap)
				if gm, wm := m.Match([]byte(line), got), want.Match([]byte(line), exp); gm != wm || !slices.Equal(got, exp) {
					t.Errorf("%q: FromRegexp's matcher gives %v %v, Compile's %v %v", line, gm, got, wm, exp)
				}
			}
		})
	}
}
