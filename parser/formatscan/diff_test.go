package formatscan

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/parser/fastmatch"
)

// regexpMatcher is the reference: regexp itself, filling caps.
type regexpMatcher struct{ re *regexp.Regexp }

func (m regexpMatcher) Match(line []byte, caps []int) bool {
	loc := m.re.FindSubmatchIndex(line)
	copy(caps, loc)
	return loc != nil
}

// format compiles an nginx format (esc) or, with apache, an Apache one.
func format(tb testing.TB, text string, esc logformat.Escape, apache bool) *logformat.Format {
	tb.Helper()
	var f *logformat.Format
	var err error
	if apache {
		f, err = logformat.ParseApache(text)
	} else {
		f, err = logformat.ParseNginx(text, esc)
	}
	if err != nil {
		tb.Fatalf("%q: %v", text, err)
	}
	return f
}

// presets are every preset of both servers, the nginx ones with each escaping of a text
// format.
func presets(tb testing.TB) []*logformat.Format {
	var out []*logformat.Format
	for _, name := range sortedKeys(logformat.NginxPresets) {
		for _, esc := range []logformat.Escape{logformat.EscapeDefault, logformat.EscapeJSON, logformat.EscapeNone, logformat.EscapeEither} {
			out = append(out, format(tb, name, esc, false))
		}
	}
	for _, name := range sortedKeys(logformat.ApachePresets) {
		out = append(out, format(tb, name, 0, true))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// customFormats cover each piece kind and stop the presets do not: stops that are escape
// characters, non-ASCII text, repeated variables, lists and headers at the end, Apache's
// %t followed by a value.
var customFormats = []struct {
	text   string
	esc    logformat.Escape
	apache bool
}{
	{`$remote_addr "$http_user_agent" ${status}x$msec`, logformat.EscapeDefault, false},
	{`$remote_addr "$http_user_agent" ${status}x$msec`, logformat.EscapeJSON, false},
	{`$a"$b"$c`, logformat.EscapeJSON, false},
	{`$a"$b"$c`, logformat.EscapeEither, false},
	{`$http_x A$http_y 0$http_z`, logformat.EscapeDefault, false},
	{`$http_x n$http_y u$http_z`, logformat.EscapeJSON, false},
	{`$upstream_addr $upstream_status $upstream_response_time`, logformat.EscapeDefault, false},
	{`$upstream_addr : $status`, logformat.EscapeDefault, false},
	{`$upstream_addr "$upstream_status" [$upstream_response_time]`, logformat.EscapeDefault, false},
	{`$time_local $status $time_local|$uri`, logformat.EscapeDefault, false},
	{`été $remote_addr é$uri€$status`, logformat.EscapeNone, false},
	{`$status\$uri`, logformat.EscapeNone, false},
	{`$uri, $args $http_referer`, logformat.EscapeDefault, false},
	{`%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i" %{ms}T %D`, 0, true},
	{`%t%q %{X-Forwarded-For}i`, 0, true},
	{`%v:%p %h \"%r\" %>s %{Cookie}n`, 0, true},
	{`%h x%{X}ix%>s`, 0, true},
	// X-Forwarded-For out of quotes, whose value holds ", ": before text that starts like
	// the value goes on (a word, a dash) or not, and at the end of the line.
	{`$http_x_forwarded_for - $remote_user [$time_local] "$request" $status`, logformat.EscapeDefault, false},
	{`$http_x_forwarded_for - $status`, logformat.EscapeDefault, false},
	{`$http_x_forwarded_for $status $proxy_add_x_forwarded_for`, logformat.EscapeNone, false},
	{`%{X-Forwarded-For}i %l %u %t "%r" %>s %b`, 0, true},
	// X-Forwarded-For out of quotes before variables a line may leave out, whose value
	// takes the fewest items the line fits with (an item ending with a comma, as a
	// client's header may, before a space, is its last), twice; and before a header read
	// to the end of the line, where it takes the most.
	{`$remote_addr "$http_user_agent" $http_x_forwarded_for $request_time $upstream_response_time`, logformat.EscapeDefault, false},
	{`$http_x_forwarded_for $proxy_add_x_forwarded_for $status`, logformat.EscapeDefault, false},
	{`$http_x_forwarded_for - $remote_user $request_time`, logformat.EscapeDefault, false},
	{`$remote_addr $http_x_forwarded_for $status $host`, logformat.EscapeDefault, false},
	// Times of a strftime format holding spaces, before text that starts with a space and
	// looks like the next part of the time.
	{`%h %{%Y-%m-%d %H:%M:%S}t %>s`, 0, true},
	{`%{%a %b %d %H:%M:%S %Y}t %h %{%Y %m}t`, 0, true},
	{`%{%a %b %d %T %Y}t - %{%r}t %>s`, 0, true},
	// The text after a number of 7, 8 and 9 bytes, its stop's included: the scanner compares
	// one of at most 8 bytes as a word where 8 bytes of the line are left, the one at the
	// end of the line among them.
	{`$remote_addr $status 123456$body_bytes_sent`, logformat.EscapeDefault, false},
	{`$remote_addr $status 1234567$body_bytes_sent`, logformat.EscapeDefault, false},
	{`$remote_addr $status 12345678$body_bytes_sent`, logformat.EscapeDefault, false},
	{`$remote_addr $request_time ;abcdef`, logformat.EscapeDefault, false},
	{`$remote_addr $request_time ;abcdefg`, logformat.EscapeDefault, false},
	// nginx's $date_local and $date_gmt, of three spaces, before a space and at the end.
	{`$date_gmt $status $date_local`, logformat.EscapeDefault, false},
	// Request lines before text that starts with a byte of a target in absolute form.
	{`$request:$status $request_time`, logformat.EscapeDefault, false},
	{`$remote_addr "$request"/$status@$host`, logformat.EscapeNone, false},
	{`[$request]$status`, logformat.EscapeDefault, false},
	{`%h %r@%>s %b`, 0, true},
	// Directives named apart, read once each, and one written twice, read twice.
	{`%h %s %>s %!200,304s "%<U" "%>U" %{%d}t %{%D}t %h`, 0, true},
}

// compiled is f's regexp and its scanner over it.
func compiled(t *testing.T, f *logformat.Format) (*regexp.Regexp, *Scanner) {
	t.Helper()
	re := regexp.MustCompile(f.Regex)
	s, err := Compile(f, regexpMatcher{regexp.MustCompile(f.MisfitRegex())})
	if err != nil {
		t.Fatal(err)
	}
	return re, s
}

// formats are the presets and the custom formats, each with its scanner.
func formats(tb testing.TB) []*logformat.Format {
	out := presets(tb)
	for _, c := range customFormats {
		out = append(out, format(tb, c.text, c.esc, c.apache))
	}
	return out
}

// snippets are the pieces of text adversarial values are made of: separators, quotes,
// escapes valid and not, brackets, list separators, dashes, non-ASCII and invalid bytes.
var snippets = []string{
	"", "-", "a", "GET", " ", `"`, `\"`, `\\`, `\`, `\x22`, `\x5C`, `\xZZ`, `\x2`, `\xa9`, `\u00e9`, `\u00E9`, `\u12`,
	`\n`, `\t`, "\\\xff", "\\é", "[", "]", ",", ", ", " : ", ":", ";", "é", "€", "\xff", "\xc3", "\n", "\t", "x", "A", "0",
	"?", "|", "/a?b=c", "10.0.0.1:80", "0.001", "HTTP/1.1", "\ufffd", "\x00",
}

// requestTargets are the targets of the request lines value writes: in origin form, in
// absolute form (RFC 9112's, "http://host:port/path?query", which a client may send to any
// server: its ':', '/', '@' and brackets are stops of the formats above), its forms nginx
// refuses (userinfo, one slash, a space), and the asterisk.
var requestTargets = []string{"/", "/a/b?c=d", "/%7E", "http://example.com:8080/p?q=1", "http://h", "http://h?q", "HTTP://H:80",
	"http://u@h/p", "http://u:pw@h:80/p", "http:/h/p", "http://[::1]:8080/p", "http://[::1", "https://h/p?x#y", "http://h /a b", "*"}

// value writes a value for piece p, of the capture name: clean (of the shape the server
// writes) or any snippets.
func value(r *rand.Rand, p logformat.Piece, name string, esc logformat.Escape) string {
	var b strings.Builder
	clean := r.IntN(3) > 0
	switch {
	case clean && (name == "request" || name == "r") && p.Stop != ' ':
		// A request line ($request, Apache's %r), whose spaces a value that stops at one
		// would end; its stop in it or not.
		b.WriteString([]string{"GET", "POST", "M-SEARCH", "get"}[r.IntN(4)] + " " + requestTargets[r.IntN(len(requestTargets))])
		if r.IntN(4) > 0 {
			b.WriteString(" " + []string{"HTTP/1.1", "HTTP/1.0", "HTTP/2.0"}[r.IntN(3)])
		}
		if r.IntN(2) == 0 {
			// Most lines fit: the stop is taken out of half of them.
			return strings.ReplaceAll(b.String(), string(p.Stop), "")
		}
		return b.String()
	case clean && p.Kind == logformat.PieceList:
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString([]string{", ", " : "}[r.IntN(2)])
			}
			b.WriteString([]string{"10.0.0.1:80", "-", "0.001", "502", ""}[r.IntN(5)])
		}
		return b.String()
	case clean && p.Kind == logformat.PieceSpaced:
		return "01/Mar/2024:12:00:00" + strings.Repeat(" +0000", p.Spaces)
	case clean && p.Kind == logformat.PieceJoined:
		// Addresses joined by ", " or ",", with a comma at the end now and then (a client's
		// own header), whose space the text after the value then starts with.
		for i := range 1 + r.IntN(4) {
			if i > 0 {
				b.WriteString([]string{", ", ","}[r.IntN(2)])
			}
			b.WriteString([]string{"203.0.113.7", "10.0.0.1", "-", "unknown", "2001:db8::1", ""}[r.IntN(6)])
		}
		if r.IntN(3) == 0 {
			b.WriteString(",")
		}
		return b.String()
	case clean && p.Kind == logformat.PieceBracketed:
		return "[01/Mar/2024:12:00:00 +0000]"
	}
	for range r.IntN(5) {
		s := snippets[r.IntN(len(snippets))]
		if clean {
			s = strings.NewReplacer(string(p.Stop), "", `\`, "", "\n", "").Replace(s)
			if p.Kind == logformat.PieceUntilEscaped && r.IntN(3) == 0 {
				s = map[logformat.Escape]string{logformat.EscapeDefault: `\x22`, logformat.EscapeJSON: `\"`,
					logformat.EscapeApache: `\"`, logformat.EscapeEither: `\u00E9`}[esc]
			}
		}
		b.WriteString(s)
	}
	return b.String()
}

// line writes a line of f: its pieces with generated values, ending early at an optional
// piece now and then.
func line(r *rand.Rand, f *logformat.Format) []byte {
	var b []byte
	for _, p := range f.Pieces {
		if p.Optional && r.IntN(4) == 0 {
			break
		}
		if p.Kind == logformat.PieceLiteral {
			b = append(b, p.Lit...)
		} else {
			name := ""
			if p.Group > 0 {
				name = f.Captures[p.Group-1].Name
			}
			b = append(b, value(r, p, name, f.Escape)...)
		}
	}
	return b
}

// mutate damages a line: truncates it, inserts or deletes a snippet's worth, or repeats it
// into a very long line.
func mutate(r *rand.Rand, l []byte) []byte {
	l = slices.Clone(l)
	at := r.IntN(len(l) + 1)
	switch r.IntN(5) {
	case 0:
		return l[:at]
	case 1:
		return slices.Insert(l, at, []byte(snippets[r.IntN(len(snippets))])...)
	case 2:
		if at < len(l) {
			return slices.Delete(l, at, at+1)
		}
	case 3:
		return append(bytes.Repeat(l[:at], 50), l[at:]...)
	}
	return l
}

// scan is what Match tells of line before it asks the regex, if it does: undecided when
// the line was read maxItems times from a value's next ends (see misfit).
func (s *Scanner) scan(line []byte, caps []int) result {
	res, _ := s.scanWith(line, caps, maxItems)
	return res
}

// scanWith is scan reading the line up to tries times from a value's next ends, in the
// scan and then in moreWords each; used is the most either read it. A line of a format
// with a value of words the scan leaves undecided is the regex's, as Match's, before
// moreWords.
func (s *Scanner) scanWith(line []byte, caps []int, tries int) (res result, used int) {
	left := tries
	res = s.scanFrom(line, caps, 0, 0, &left)
	used = tries - left
	if res == matched || s.head == nil {
		return res, used
	}
	if res == undecided && s.regex.Match(line, caps) {
		return matched, used
	}
	left = tries
	res = s.moreWords(line, caps, &left)
	return res, max(used, tries-left)
}

// uncapped is the tries a scan is given to read lines as if it had no cap: lines that
// need more, a list of " : " after a value of words repeated 50 times, are not compared.
const uncapped = 1 << 12

// sameAsRegexp checks the scanner of f against regexp and fastmatch on line. Read without
// its cap, the scan gives the regex's fit and captures; with it, the same or undecided,
// which only a line that takes more than maxItems reads is. Match gives the regex's
// answer, but for such a line of a format with a value of words, which does not fit. It
// returns the scan's result.
func sameAsRegexp(t *testing.T, f *logformat.Format, s *Scanner, re *regexp.Regexp, fm *fastmatch.Matcher, line []byte) result {
	t.Helper()
	want := re.FindSubmatchIndex(line)
	caps := make([]int, 2*(len(f.Captures)+1))
	// A line decided within the cap is read as without it: the same reads in the same
	// order, the first ones.
	res := s.scan(line, caps)
	exact := res
	if res == undecided {
		var used int
		if exact, used = s.scanWith(line, caps, uncapped); used <= maxItems {
			t.Fatalf("%s: %q: undecided, though %d reads decide it", f.Regex, line, used)
		}
	}
	if exact != undecided && ((exact == matched) != (want != nil) || exact == matched && !slices.Equal(caps, want)) {
		t.Fatalf("%s: %q: scan %v %v, regexp %v", f.Regex, line, exact == matched, caps, want)
	}
	fits := want != nil && (res != undecided || s.head == nil)
	got := s.Match(line, caps)
	if got != fits || got && !slices.Equal(caps, want) {
		t.Fatalf("%s: %q: Match %v %v, regexp %v (scan %v)", f.Regex, line, got, caps, want, res)
	}
	if fm != nil {
		fcaps := make([]int, len(caps))
		if ok := fm.Match(line, fcaps); ok != (want != nil) || ok && !slices.Equal(fcaps, want) {
			t.Fatalf("%s: %q: fastmatch %v %v, regexp %v", f.Regex, line, ok, fcaps, want)
		}
	}
	return res
}

// TestDifferential reads generated lines of every preset and custom format, clean and
// damaged, and a generated nginx log with each format, with the scanner, regexp and
// fastmatch: they must agree on every line.
func TestDifferential(t *testing.T) {
	generated, logged := 1500, 1000
	if race.Enabled {
		// The scan is one goroutine's, and .ci/run reads every line without the race
		// detector, under which regexp's reading of the lines, of a value of words the
		// most, takes the most of the time: it is given a tenth.
		generated, logged = 150, 100
	}
	logLines := nginxlog.Lines(t, logged, 7)
	// Lines that fit with a target in absolute form in them (a request's, mostly).
	absolute := 0
	defer func() {
		if !t.Failed() && absolute < generated*2/3 {
			t.Errorf("only %d lines that fit hold a target in absolute form", absolute)
		}
		t.Logf("%d lines that fit hold a target in absolute form", absolute)
	}()
	for i, f := range formats(t) {
		t.Run(fmt.Sprintf("%d %s %s", i, f.Describe(), f.Escape), func(t *testing.T) {
			re, s := compiled(t, f)
			fm, err := fastmatch.Compile(f.Regex)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 1))
			fits := 0
			for range generated {
				l := line(r, f)
				if r.IntN(2) == 0 {
					l = mutate(r, l)
				}
				sameAsRegexp(t, f, s, re, fm, l)
				if re.Match(l) {
					fits++
					if bytes.Contains(l, []byte("://")) {
						absolute++
					}
				}
			}
			for _, l := range logLines {
				sameAsRegexp(t, f, s, re, fm, l)
				sameAsRegexp(t, f, s, re, fm, mutate(r, l))
			}
			// Most clean lines fit: the generator does exercise the captures.
			if fits < generated/6 {
				t.Errorf("only %d of %d generated lines fit", fits, generated)
			}
		})
	}
}

// TestLinesCutInTheirBuffer reads every prefix of generated lines where the follower's
// buffer holds it: the rest of the line, and the next, after its end, at every alignment.
// A line that ends inside a number, or right before the text after it, or within 8 bytes
// of its start, is read as regexp reads it: the scanner's word loads never see past the
// line's end, though the buffer goes on.
func TestLinesCutInTheirBuffer(t *testing.T) {
	for i, f := range formats(t) {
		t.Run(fmt.Sprintf("%d %s %s", i, f.Describe(), f.Escape), func(t *testing.T) {
			re, s := compiled(t, f)
			r := rand.New(rand.NewPCG(uint64(i), 2))
			for range 10 {
				l := line(r, f)
				for n := range len(l) + 1 {
					at := n % 8
					buf := slices.Concat(bytes.Repeat([]byte{'x'}, at), l, []byte{'\n'}, l)
					sameAsRegexp(t, f, s, re, nil, buf[at:at+n])
				}
			}
		})
	}
}

// TestCompile tells which formats the scanner reads and which it leaves to the regex.
func TestCompile(t *testing.T) {
	for _, f := range presets(t) {
		t.Run(f.Describe()+" "+f.Escape.String(), func(t *testing.T) {
			if _, err := Compile(f, nil); err != nil {
				t.Fatalf("a preset is left to the regex: %v", err)
			}
		})
	}
	for _, c := range []struct {
		name   string
		text   string
		esc    logformat.Escape
		apache bool
	}{
		{"value before a value", `%h %U%q %H`, 0, true},
		{"escaped value stops at a backslash", `$http_x\$status`, logformat.EscapeDefault, false},
		{"stop U+FFFD", "$uri\ufffd$status", logformat.EscapeNone, false},
		{"text holds U+FFFD", "\ufffd$uri", logformat.EscapeNone, false},
		{"JSON template", `{"s":"$status"}`, logformat.EscapeJSON, false},
		{"time padded with a space", `%h %{%e/%b/%Y %H:%M}t %>s`, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(format(t, c.text, c.esc, c.apache), nil)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Compile: %v, want ErrUnsupported", err)
			}
		})
	}
}

// TestListColon: an upstream list that ends at a " : " when read whole it does not fit is
// read again ending at each " : " before, the latest first, as regexp ends it: by the
// scan itself, not the regex.
func TestListColon(t *testing.T) {
	f := format(t, `$upstream_addr $a;$b`, logformat.EscapeDefault, false)
	re, s := compiled(t, f)
	for _, c := range []struct{ line, list string }{
		{"p : q;r", "p"},
		{"p : q : s;r", "p : q"},
		{"p, q : s, t : u;r", "p, q : s, t"},
		{"p : q : s t;r", "p : q : s"},
	} {
		line := []byte(c.line)
		caps := make([]int, 2*(len(f.Captures)+1))
		if res := s.scan(line, caps); res != matched {
			t.Fatalf("%q: scan: %v, want matched", line, res)
		}
		if !slices.Equal(caps, re.FindSubmatchIndex(line)) {
			t.Fatalf("%q: scan %v, regexp %v", line, caps, re.FindSubmatchIndex(line))
		}
		if got := string(line[caps[2]:caps[3]]); got != c.list {
			t.Fatalf("%q: the list is %q, want %q", line, got, c.list)
		}
	}
}

// TestFewestItems: X-Forwarded-For out of quotes before the variables a line may leave out
// reads as nginx wrote it, its items ending with a comma included (a client's
// "X-Forwarded-For: 203.0.113.7,"), the lines as nginx 1.22 wrote them; and the scanner
// reads it so itself, past the items it first tried, up to maxItems.
func TestFewestItems(t *testing.T) {
	f := format(t, `$remote_addr "$http_user_agent" $http_x_forwarded_for $request_time $upstream_response_time`, logformat.EscapeDefault, false)
	re, s := compiled(t, f)
	many := strings.Repeat("10.0.0.1, ", maxItems) + "10.0.0.2"
	for _, c := range []struct {
		line, xff, requestTime string
		res                    result
	}{
		{`127.0.0.1 "-" 203.0.113.7, 0.000 -`, "203.0.113.7,", "0.000", matched},
		{`127.0.0.1 "-" 203.0.113.7,  0.000 -`, "203.0.113.7, ", "0.000", matched},
		{`127.0.0.1 "-" 203.0.113.7, 10.0.0.1 0.000 -`, "203.0.113.7, 10.0.0.1", "0.000", matched},
		{`127.0.0.1 "-" 203.0.113.7, 10.0.0.1, 10.0.0.2 0.000 -`, "203.0.113.7, 10.0.0.1, 10.0.0.2", "0.000", matched},
		{`127.0.0.1 "-" - 0.000 -`, "-", "0.000", matched},
		// A line of a shorter format: the fewest items leave an address to $request_time.
		{`127.0.0.1 "-" 203.0.113.7, 10.0.0.1 0.000`, "203.0.113.7,", "10.0.0.1", matched},
		{`127.0.0.1 "-" ` + many + ` 0.000 -`, many, "0.000", undecided},
	} {
		caps := make([]int, 2*(len(f.Captures)+1))
		if res := s.scan([]byte(c.line), caps); res != c.res {
			t.Errorf("%q: scan %v, want %v", c.line, res, c.res)
		}
		sameAsRegexp(t, f, s, re, nil, []byte(c.line))
		if !s.Match([]byte(c.line), caps) {
			t.Fatalf("%q: no match", c.line)
		}
		if xff, rt := c.line[caps[6]:caps[7]], c.line[caps[8]:caps[9]]; xff != c.xff || rt != c.requestTime {
			t.Errorf("%q: $http_x_forwarded_for %q, $request_time %q; want %q, %q", c.line, xff, rt, c.xff, c.requestTime)
		}
	}
}

// TestFewestItemsBound: the tries of two X-Forwarded-For values out of quotes, the second's
// made for each of the first's, count together against maxItems, past which the line is
// the regex's: a line crafted to fail them reads its rest maxItems times, not maxItems².
func TestFewestItemsBound(t *testing.T) {
	f := format(t, `$http_x_forwarded_for $http_x_forwarded_for $status $request_time`, logformat.EscapeDefault, false)
	re, s := compiled(t, f)
	for _, c := range []struct {
		name, line string
		res        result
	}{
		// 2 tries of the first value, 1 and 2 of the second's.
		{"within", "a, a a, a 1 2", matched},
		// 5 tries of the first value, 4+3+2+1+5 of the second's.
		{"past", "a, a, a, a, a a, a, a, a, a 1 2", undecided},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps := make([]int, 2*(len(f.Captures)+1))
			if res := s.scan([]byte(c.line), caps); res != c.res {
				t.Errorf("scan %v, want %v", res, c.res)
			}
			sameAsRegexp(t, f, s, re, nil, []byte(c.line))
		})
	}
}

// TestWordsValue: $remote_user, which nginx writes with the spaces any client's
// Authorization header gives it, is read as one word by the scan, and with its next ends
// when the line does not fit so: by the scan, not the regex.
func TestWordsValue(t *testing.T) {
	combined := format(t, `combined`, logformat.EscapeDefault, false)
	common := format(t, `common`, 0, true)
	const rest = ` [30/Nov/2026:23:19:46 +0000] "GET / HTTP/1.1" 401 157 "-" "-"`
	const apacheRest = ` [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 401 -`
	for _, f := range []*logformat.Format{combined, common} {
		re, s := compiled(t, f)
		// One caps for all lines, as the parser's: a line is not told by an earlier one's.
		caps := make([]int, 2*(len(f.Captures)+1))
		for _, c := range []struct {
			name, line, user string
		}{
			{"no user", `127.0.0.1 - -` + rest, "-"},
			{"a user of one word", `127.0.0.1 - alice` + rest, "alice"},
			{"a user with spaces", `127.0.0.1 - a b` + rest, "a b"},
			{"a user with brackets", `127.0.0.1 - a [b] c` + rest, "a [b] c"},
			{"a user holding the text after it", `127.0.0.1 - a [b] "GET / HTTP/1.1" 200 1 "-" "c` + rest, `a [b] "GET / HTTP/1.1" 200 1 "-" "c`},
			{"no text after the user again", `127.0.0.1 - a b "GET / HTTP/1.1" 401 157 "-" "-"`, ""},
			// The slots still hold the last line's user, which this one does not reach.
			{"stops before the user", `127.0.0.1 + a b` + rest, ""},
			{"an Apache user with spaces", `::1 - a b` + apacheRest, "a b"},
			{"an Apache user with brackets", `::1 - a [b] c` + apacheRest, "a [b] c"},
		} {
			t.Run(f.Describe()+" "+c.name, func(t *testing.T) {
				line := []byte(c.line)
				want := re.FindSubmatchIndex(line)
				if res := sameAsRegexp(t, f, s, re, nil, line); res == undecided {
					t.Fatal("undecided")
				}
				user := "" // of a line the format does not fit
				if g := 2 * f.Pieces[slices.IndexFunc(f.Pieces, func(p logformat.Piece) bool { return p.Words })].Group; want != nil {
					user = c.line[want[g]:want[g+1]]
				}
				if strings.HasPrefix(c.line, "::1") == (f == common) && user != c.user {
					t.Fatalf("user %q, want %q", user, c.user)
				}
				if ok := s.Match(line, caps); ok != (want != nil) || ok && !slices.Equal(caps, want) {
					t.Fatalf("Match %v %v, regexp %v", ok, caps, want)
				}
			})
		}
	}
}

// TestWordsCap: a value of words is read to at most maxItems of its next ends, past
// which its line does not fit, though the regex may fit it (its work a client chooses):
// the reads of a line, counted, stay maxItems however many ends it has.
func TestWordsCap(t *testing.T) {
	combined := format(t, `combined`, logformat.EscapeDefault, false)
	const rest = ` [30/Nov/2026:23:19:46 +0000] "GET / HTTP/1.1" 401 157 "-" "-"`
	for _, c := range []struct {
		name string
		f    *logformat.Format
		line string
		// ends are the reads the value's ends after its first word take uncapped; fits,
		// whether the regex fits the line; res, the scan's.
		ends int
		fits bool
		res  result
	}{
		{"within the cap", combined, `127.0.0.1 - a` + strings.Repeat(" [x]", maxItems) + rest, maxItems, true, matched},
		{"past the cap, fitting the regex", combined, `127.0.0.1 - a` + strings.Repeat(" [x]", maxItems+1) + rest, maxItems + 1, true, undecided},
		// Each end reads the rest of the line to the end, where the last quote is missing.
		{"past the cap, 1 KiB", combined, `127.0.0.1 - a` + strings.Repeat(" [x", 1<<10/3) + strings.TrimSuffix(rest, `"`), 1 << 10 / 3, false, undecided},
		{"past the cap, 64 KiB", combined, `127.0.0.1 - a` + strings.Repeat(" [x", 64<<10/3) + strings.TrimSuffix(rest, `"`), 64 << 10 / 3, false, undecided},
		// No end but the user's real one is followed by the text after the user (and an
		// Apache %t's '['): no other is read on from.
		{"words, 64 KiB", combined, `127.0.0.1 - a` + strings.Repeat(" b a", 64<<10/4) + strings.TrimSuffix(rest, `"`), 1, false, noMatch},
		{"Apache words, 64 KiB", format(t, "common", 0, true), `::1 - a` + strings.Repeat(" b a", 64<<10/4) + ` [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 401 - x`, 1, false, noMatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			re, s := compiled(t, c.f)
			line := []byte(c.line)
			caps := make([]int, 2*(len(c.f.Captures)+1))
			// The scan of the user's first word reads nothing again (no list, no joined
			// values): the reads are the value's ends'.
			if res, used := s.scanWith(line, caps, 1<<20); used != c.ends || (res == matched) != c.fits {
				t.Fatalf("uncapped: %v after %d reads, want %d reads and a fit %v", res, used, c.ends, c.fits)
			}
			if re.Match(line) != c.fits {
				t.Fatalf("regexp fits %v, want %v", !c.fits, c.fits)
			}
			res, used := s.scanWith(line, caps, maxItems)
			if res != c.res || used != min(c.ends, maxItems) {
				t.Fatalf("scan %v after %d reads, want %v after %d", res, used, c.res, min(c.ends, maxItems))
			}
			if s.Match(line, caps) != (c.res == matched) {
				t.Fatalf("Match %v, want %v", !(c.res == matched), c.res == matched)
			}
		})
	}
}

// TestWordsDifferential fills the values that may hold spaces (logformat.Piece.Words) of
// every format that has one with words a client may send: spaces, brackets, quotes, and
// pieces of another line of the format (the text after the value among them, as often as
// a crafted user name or path holds it); the scanner, regexp and fastmatch must agree, but
// on lines past the cap (see sameAsRegexp).
func TestWordsDifferential(t *testing.T) {
	// The race detector is given a tenth, as TestDifferential's.
	n := 1000
	if race.Enabled {
		n = 100
	}
	tested := 0
	// Paths decoded out of quotes (nginx's $uri, Apache's %U), which no preset has; and a
	// user before parts a line may leave out, which a line of more words gives the user.
	all := append(formats(t), format(t, `$remote_addr $request_method $uri $status $request_time`, logformat.EscapeDefault, false),
		format(t, `%h %m %U %>s "%{User-agent}i"`, 0, true), format(t, `$remote_user $uri $status`, logformat.EscapeDefault, false),
		format(t, `$remote_user [$time_local] $upstream_addr $status $http_x_forwarded_for $request_time`, logformat.EscapeDefault, false),
		// Request lines out of quotes, whose spaces every request has.
		format(t, `%h %r %>s %b`, 0, true), format(t, `$remote_addr $request $status $request_time`, logformat.EscapeDefault, false))
	for i, f := range all {
		if !slices.ContainsFunc(f.Pieces, func(p logformat.Piece) bool { return p.Words }) {
			continue
		}
		tested++
		t.Run(fmt.Sprintf("%d %s %s", i, f.Describe(), f.Escape), func(t *testing.T) {
			re, s := compiled(t, f)
			fm, err := fastmatch.Compile(f.Regex)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(i), 3))
			words := []string{" ", "  ", "a", "-", "[", "]", `"`, " [", "] [", "[x]", `\x22`, " - ", ", ", " : "}
			spaced := 0
			defer func() {
				// Lines that fit with a space in such a value: the scan's search of its
				// ends is exercised.
				if !t.Failed() && spaced < n/20 {
					t.Errorf("only %d of %d lines fit with a space in a value of words", spaced, n)
				}
			}()
			for range n {
				var b []byte
				for k, p := range f.Pieces {
					switch {
					case p.Optional && r.IntN(4) == 0:
					case p.Kind == logformat.PieceLiteral:
						b = append(b, p.Lit...)
						continue
					case p.Words:
						other := line(r, f)
						for range 1 + r.IntN(6) {
							if r.IntN(3) == 0 {
								from := r.IntN(len(other) + 1)
								b = append(b, other[from:from+r.IntN(len(other)-from+1)]...)
							} else {
								b = append(b, words[r.IntN(len(words))]...)
							}
						}
						continue
					default:
						name := ""
						if p.Group > 0 {
							name = f.Captures[p.Group-1].Name
						}
						b = append(b, value(r, f.Pieces[k], name, f.Escape)...)
						continue
					}
					break
				}
				sameAsRegexp(t, f, s, re, fm, b)
				if loc := re.FindSubmatchIndex(b); loc != nil {
					for _, p := range f.Pieces {
						if g := 2 * p.Group; p.Words && loc[g] >= 0 && bytes.IndexByte(b[loc[g]:loc[g+1]], ' ') >= 0 {
							spaced++
						}
					}
				}
			}
		})
	}
	if tested < 10 {
		t.Fatalf("%d formats have a value that may hold spaces", tested)
	}
}

// TestWordsAdversarial fills the value of words of formats that have one with what a
// crafted user name or path holds: the format's own texts and values, escape sequences,
// upstream lists' " : ", X-Forwarded-For's ", "; before lists, joined values and parts
// the line may leave out; the line cut short now and then. The scanner must agree with
// regexp, but on lines past the cap (sameAsRegexp), and read with the slots of the
// captures an earlier line left, as the parser's are, the same as with fresh ones.
func TestWordsAdversarial(t *testing.T) {
	all := formats(t)
	for _, c := range []struct {
		text   string
		esc    logformat.Escape
		apache bool
	}{
		{`$remote_user $upstream_addr $status`, logformat.EscapeDefault, false},
		{`$remote_user $http_x_forwarded_for $request_time`, logformat.EscapeDefault, false},
		{`$uri $status $request_time $upstream_response_time`, logformat.EscapeDefault, false},
		{`$remote_addr $remote_user $request_time`, logformat.EscapeNone, false},
		{`$remote_addr - $remote_user [$time_local] "$request" $status $http_x_forwarded_for`, logformat.EscapeJSON, false},
		{`$document_uri "$http_user_agent" $upstream_addr : $status`, logformat.EscapeEither, false},
		{`$remote_user  $uri  $status`, logformat.EscapeDefault, false},
		{`%h %l %u %t "%r" %>s %b %{X-Forwarded-For}i`, 0, true},
		{`%U %{X-Forwarded-For}i %>s`, 0, true},
	} {
		all = append(all, format(t, c.text, c.esc, c.apache))
	}
	// The race detector is given a tenth, as TestDifferential's.
	n := 1500
	if race.Enabled {
		n = 150
	}
	tested := 0
	for i, f := range all {
		w := slices.IndexFunc(f.Pieces, func(p logformat.Piece) bool { return p.Words })
		if w < 0 {
			continue
		}
		tested++
		t.Run(fmt.Sprintf("%d %s %s", i, f.Describe(), f.Escape), func(t *testing.T) {
			re, s := compiled(t, f)
			r := rand.New(rand.NewPCG(uint64(i), 4))
			alphabet := []string{" ", "a", "-", "[", "]", `"`, `\"`, `\x22`, `\\`, `\`, " : ", ", ", ",", "10.0.0.1:80", "0.001",
				"[01/Mar/2024:12:00:00 +0000]", `"GET / HTTP/1.1"`, "\n"}
			for _, p := range f.Pieces {
				if p.Kind == logformat.PieceLiteral {
					alphabet = append(alphabet, p.Lit)
				}
			}
			reused := make([]int, 2*(len(f.Captures)+1))
			fresh := make([]int, len(reused))
			spaced := 0
			defer func() {
				// The words filled in do reach the scan's search of the value's ends.
				if !t.Failed() && spaced < n/20 {
					t.Errorf("only %d of %d lines fit with a space in the value of words", spaced, n)
				}
			}()
			for range n {
				other := line(r, f)
				var b []byte
				for k, p := range f.Pieces {
					if k != w {
						if p.Optional && r.IntN(4) == 0 {
							break
						}
						if p.Kind == logformat.PieceLiteral {
							b = append(b, p.Lit...)
						} else {
							b = append(b, value(r, p, f.Captures[p.Group-1].Name, f.Escape)...)
						}
						continue
					}
					for range 1 + r.IntN(12) {
						if r.IntN(4) == 0 {
							from := r.IntN(len(other) + 1)
							b = append(b, other[from:from+r.IntN(len(other)-from+1)]...)
						} else {
							b = append(b, alphabet[r.IntN(len(alphabet))]...)
						}
					}
				}
				if r.IntN(4) == 0 {
					b = b[:r.IntN(len(b)+1)]
				}
				sameAsRegexp(t, f, s, re, nil, b)
				okFresh := s.Match(b, fresh)
				if g := 2 * f.Pieces[w].Group; okFresh && fresh[g] >= 0 && bytes.IndexByte(b[fresh[g]:fresh[g+1]], ' ') >= 0 {
					spaced++
				}
				if okReused := s.Match(b, reused); okReused != okFresh || okFresh && !slices.Equal(reused, fresh) {
					t.Fatalf("%s: %q: Match %v %v after another line, %v %v", f.Regex, b, okReused, reused, okFresh, fresh)
				}
			}
		})
	}
	if tested < 15 {
		t.Fatalf("%d formats have a value of words", tested)
	}
}

// TestWordsUndecidedToRegex: a line of a format with a value of words whose upstream list
// the scan leaves undecided past maxItems, reading that value as one word, is the
// regex's, which reads it as one word too, as regexp would first: it fits, as it did
// before values of words; its value is not read past its first word.
func TestWordsUndecidedToRegex(t *testing.T) {
	f := format(t, `$remote_user $upstream_addr $http_x;$http_y`, logformat.EscapeDefault, false)
	re, s := compiled(t, f)
	line := []byte("u p : q;r" + strings.Repeat(" : p", 20))
	caps := make([]int, 2*(len(f.Captures)+1))
	left := maxItems
	if res := s.scanFrom(line, caps, 0, 0, &left); res != undecided {
		t.Fatalf("the scan of the user's first word: %v, want undecided", res)
	}
	if !s.Match(line, caps) || !slices.Equal(caps, re.FindSubmatchIndex(line)) {
		t.Fatalf("Match %v, regexp %v", caps, re.FindSubmatchIndex(line))
	}
	sameAsRegexp(t, f, s, re, nil, line)
}
