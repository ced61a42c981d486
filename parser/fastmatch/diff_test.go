package fastmatch

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// nginxMain is the NGINX_MAIN pattern of the example rules, anchored as the example rules use it.
const nginxMain = `^(?P<remote_addr>\S+) \S+ (?P<remote_user>\S+) \[(?P<time_local>[^\]]+)\] "(?P<method>[A-Z]+) (?P<path>[^ "?]*)[^ "]* (?P<protocol>[^"]*)" (?P<status>\d{3}) (?P<body_bytes_sent>\d+) "(?P<referer>[^"]*)" "(?P<user_agent>[^"]*)" (?P<request_time>[\d.]+) (?P<upstream_time>\S+(?:, \S+)*)$`

// combined is a combined-format regex as commonly written for nginx/Apache,
// unanchored at the end (the log has more fields).
const combined = `^(\S+) \S+ (\S+) \[([^\]]+)\] "(\S+) (\S+) (\S+)" (\d+) (\d+) "([^"]*)" "([^"]*)"`

// pair compiles expr with both engines; m is nil when fastmatch rejects it.
func pair(t testing.TB, expr string) (*regexp.Regexp, *Matcher) {
	t.Helper()
	re, rerr := regexp.Compile(expr)
	m, err := Compile(expr)
	if rerr != nil {
		if err == nil || errors.Is(err, ErrUnsupported) {
			t.Fatalf("Compile(%q) = %v, want regexp's syntax error %v", expr, err, rerr)
		}
		return nil, nil
	}
	if err != nil {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Compile(%q): error %v does not wrap ErrUnsupported", expr, err)
		}
		return re, nil
	}
	return re, m
}

// sameAsRegexp checks that the matcher agrees with regexp on line, both
// through Match and through the matcher alone (exec with a budget far above
// Match's, so that a wrong answer cannot hide behind the fallback). It reports
// whether the matcher answered without falling back, and whether it matched.
func sameAsRegexp(t testing.TB, re *regexp.Regexp, m *Matcher, line []byte) (decided, ok bool) {
	t.Helper()
	want := re.FindSubmatchIndex(line)
	caps := make([]int, 2*(re.NumSubexp()+1))
	switch m.exec(line, caps, testBudget) {
	case matched:
		if !slices.Equal(caps, want) {
			t.Fatalf("%q on %q: matcher gives %v, regexp %v", re, line, caps, want)
		}
		decided = true
	case noMatch:
		if want != nil {
			t.Fatalf("%q on %q: matcher finds no match, regexp %v", re, line, want)
		}
		decided = true
	}
	for i := range caps {
		caps[i] = -2
	}
	got := m.Match(line, caps)
	if got != (want != nil) || got && !slices.Equal(caps, want) {
		t.Fatalf("%q on %q: Match = %v %v, regexp %v", re, line, got, caps, want)
	}
	return decided, got
}

// testBudget lets the matcher decide alone on all but exponential cases.
const testBudget = 1 << 20

var trickyLines = []string{
	``,
	` `,
	`a`,
	`abc`,
	`a b c`,
	`0.001, 0.020`,
	`0.001, 0.020, 0.3`,
	`0.001,`,
	`0.001, `,
	`0.001,, 0.2`,
	`-`,
	`x, y, `,
	`GET /a?b=c HTTP/1.1`,
	`GET /a HTTP/1.1`,
	`GET  HTTP/1.1`,
	`"quoted" "x"`,
	`[01/Mar/2024:12:00:00 +0000]`,
	"caf\u00e9 cr\u00e8me",
	"\u00e9\u00e9\u00e9",
	"\xff\xfe abc",
	"a\xc3 b",
	"a\xc3\xa9 b",
	"\xe2\x82 \xe2\x82\xac",
	"\ufffd \xef\xbf\xbd \xef\xbf",
	"line\nnext",
	"end\n",
	"K \u212a k",
	"word_1 word-2",
	`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET /api/v1/users/4821 HTTP/1.1" 200 1532 "-" "Mozilla/5.0 (X11)" 0.034 0.032`,
	`203.0.113.7 - bob [01/Mar/2024:12:00:00 +0000] "GET /api/v1/users?id=4821&x=1 HTTP/2.0" 502 0 "https://x/" "curl/8, like Gecko" 1.034 0.001, 1.020`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET /caf` + "\u00e9\xff" + ` HTTP/1.1" 404 0 "-" "` + "\xc3(" + `" 0.000 -`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 0 "-" "ua" 0.034 0.032 trailing`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "get / HTTP/1.1" 200 0 "-" "ua" 0.034 0.032`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 2000 0 "-" "ua" 0.034 0.032`,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 0 "-" "ua" 0.034 0.032, `,
	`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET /a b HTTP/1.1" 200 0 "-" "ua" 0.034 -`,
}

func TestDifferential(t *testing.T) {
	cases := []struct {
		expr   string
		accept bool
	}{
		{nginxMain, true},
		{combined, true},
		{`^(?P<ip>[\d.]+) - (?P<user>\S+) \[(?P<ts>.*?)\] "(?P<req>.*?)" (?P<status>\d+)`, true},
		{`(\S+)`, true},
		{`^(\S*)(\S*)$`, true},
		{`^(\S+(?:, \S+)*)$`, true},
		{`(\S+(?:, \S+)*)`, true},
		{`(\S+?(?:, \S+)*?)`, true},
		{`^([^ "?]*)([^ "]*) (.*)$`, true},
		{`^(a*)(a*)(a+)!$`, true},
		{`(a*?)(a+?)(a*)`, true},
		{`(\d{3})`, true},
		{`(\d{2,3}?)(\d{1,2})`, true},
		{`^(?:(\w+)[ _-]?)*$`, true},
		{`^(?:(\w+)(?:[ _-]|$))+$`, true},
		{`(?:(a)|b)+`, true},
		{`(a|ab)(c|bcd)?`, true},
		{`(GET|POST|PUT|PATCH) (/[^ ?]*)`, true},
		{`\b(\w+)\b`, true},
		{`\B(\w)`, true},
		{`(?m)^(\w+)$`, true},
		{`(?i)(get|post) (\S+)`, true},
		{`(?i)k+`, true},
		{`(?s)(.+)$`, true},
		{`(.+)$`, true},
		{`(.*)\n`, true},
		{`([^\x{FFFD}]+)`, true},
		{`(\x{FFFD}+)`, true},
		{"(\ufffd)", true},
		{`([\x80-\x{10FFFF}]+)`, true},
		{`([^\x00-\x7f]+)(\S*)`, true},
		{`(\pL+) (\PL+)`, true},
		{`([é-ü]+)`, true},
		{`(é+) (€)`, true},
		{`()`, true},
		{`(a?)`, true},
		{`(?:)`, true},
		{`x*`, true},
		{`^$`, true},
		{`$`, true},
		{`(a)?(b)?(c)?`, true},
		{`(?:a(b)?)*`, true},
		{`(?:(\d+)\.)?(\d+)`, true},
		{`(\S+) (\S+)?$`, true},
		{`(a){2}(b){0}`, true},
		{`(a+)+b`, true},
		{`(?U)(a+)(a*)`, true},
		{`(a*)*`, false},
		{`(a|)+`, false},
		{`(?:a?)*b`, false},
		{`[^\x00-\x{10FFFF}]`, false},
		{`(?:$)*`, false},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			re, m := pair(t, c.expr)
			if (m != nil) != c.accept {
				_, err := Compile(c.expr)
				t.Fatalf("accepted = %v, want %v (%v)", m != nil, c.accept, err)
			}
			if m == nil {
				return
			}
			for _, l := range trickyLines {
				sameAsRegexp(t, re, m, []byte(l))
			}
		})
	}
}

// TestWordAtATime puts the byte that ends a run, or that a literal must find, at every
// offset of the first words of a line, among ASCII, multibyte and invalid bytes, so that
// the word-at-a-time run scan and literal compare are checked against regexp at each
// position within a word and at the line's end (where fewer than 8 bytes are left).
func TestWordAtATime(t *testing.T) {
	exprs := []string{
		`([^"]*)"(.*)`,          // one stop: bytes.IndexByte
		`^([^ "]*) (.?)`,        // two stops in a word
		`^([^ "?]*)(.)`,         // three
		`^([^ "?,]*)(.)`,        // four: the table
		`(\S+)(\s|$)`,           // \S: six ASCII bytes are not members, the table again
		`^([^ "]+)$`,            // to the end
		`(ab)(c?)`,              // literals of 1 to 9 bytes
		`(abcdefgh)(.)`,         // a full word
		`(abcdefghi)`,           // longer than a word: bytes.HasPrefix
		`^x(?:abc|abd)([^"]*)"`, // a literal after a choice
	}
	fillers := []string{"a", "é", "\xff", "\x80", "ab\xc3"}
	var lines []string
	for _, f := range fillers {
		for n := range 20 {
			body := strings.Repeat(f, n)
			for _, end := range []string{`"`, " ", "?", ",", "\t", ""} {
				lines = append(lines, body+end, body+end+"rest", "x"+body+end+`q"`)
			}
		}
	}
	for _, lit := range []string{"abcdefghi", "abcdefgh", "abc", "abd", "ab", "a"} {
		for n := range 12 {
			pad := strings.Repeat(" ", n)
			lines = append(lines, pad+lit, pad+lit+"x", "x"+lit+`"`, pad+lit[:len(lit)-1]+"z"+pad)
		}
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			re, m := pair(t, expr)
			if m == nil {
				t.Fatal("rejected")
			}
			matched := 0
			for _, l := range lines {
				if _, ok := sameAsRegexp(t, re, m, []byte(l)); ok {
					matched++
				}
			}
			if matched == 0 {
				t.Error("no line matched")
			}
		})
	}
}

// TestOnly: a matcher recording only some groups matches where regexp does and gives
// regexp's positions for those groups, -1 for the others.
func TestOnly(t *testing.T) {
	exprs := []string{nginxMain, combined, `^(?:(\w+)(?:[ _-]|$))+$`, `(a|ab)(c|bcd)?`, `((a)|b)+`, `(\S+) (\S+)?$`, `(.*?) (x)`}
	keeps := map[string]func(int) bool{
		"none": func(int) bool { return false },
		"odd":  func(g int) bool { return g%2 == 1 },
		"even": func(g int) bool { return g%2 == 0 },
		"all":  func(int) bool { return true },
	}
	for _, expr := range exprs {
		for name, keep := range keeps {
			t.Run(name+"/"+expr, func(t *testing.T) {
				re, full := pair(t, expr)
				m := full.Only(keep)
				caps := make([]int, 2*(re.NumSubexp()+1))
				for _, l := range trickyLines {
					want := re.FindSubmatchIndex([]byte(l))
					for g := 1; want != nil && g <= re.NumSubexp(); g++ {
						if !keep(g) {
							want[2*g], want[2*g+1] = -1, -1
						}
					}
					r := m.exec([]byte(l), caps, testBudget)
					if r != giveUp && ((r == matched) != (want != nil) || r == matched && !slices.Equal(caps, want)) {
						t.Fatalf("%q: exec = %v %v, want %v", l, r, caps, want)
					}
					if ok := m.Match([]byte(l), caps); ok != (want != nil) || ok && !slices.Equal(caps, want) {
						t.Fatalf("%q: Match = %v %v, want %v", l, ok, caps, want)
					}
				}
			})
		}
	}
}
