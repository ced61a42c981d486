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
	s, err := Compile(f, regexpMatcher{re})
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

// sameAsRegexp checks the scanner of f against regexp and fastmatch on line: the same fit,
// the same captures; and that the scanner leaves undecided only lines with " : " (an
// upstream list's) or ", " (values joined by it, X-Forwarded-For's) in them.
func sameAsRegexp(t *testing.T, f *logformat.Format, s *Scanner, re *regexp.Regexp, fm *fastmatch.Matcher, line []byte) {
	t.Helper()
	want := re.FindSubmatchIndex(line)
	caps := make([]int, 2*(len(f.Captures)+1))
	switch res := s.scan(line, caps); {
	case res == undecided:
		if !bytes.Contains(line, listColon) && !bytes.Contains(line, listComma) {
			t.Fatalf("%s: %q: undecided without a list's \" : \" or a joined value's \", \"", f.Regex, line)
		}
	case (res == matched) != (want != nil) || res == matched && !slices.Equal(caps, want):
		t.Fatalf("%s: %q: scan %v %v, regexp %v", f.Regex, line, res == matched, caps, want)
	}
	got := s.Match(line, caps)
	if got != (want != nil) || got && !slices.Equal(caps, want) {
		t.Fatalf("%s: %q: Match %v %v, regexp %v", f.Regex, line, got, caps, want)
	}
	if fm != nil {
		fcaps := make([]int, len(caps))
		if ok := fm.Match(line, fcaps); ok != got || ok && !slices.Equal(fcaps, caps) {
			t.Fatalf("%s: %q: fastmatch %v %v, scanner %v %v", f.Regex, line, ok, fcaps, got, caps)
		}
	}
}

// TestDifferential reads generated lines of every preset and custom format, clean and
// damaged, and a generated nginx log with each format, with the scanner, regexp and
// fastmatch: they must agree on every line.
func TestDifferential(t *testing.T) {
	logLines := nginxlog.Lines(t, 1000, 7)
	// Lines that fit with a target in absolute form in them (a request's, mostly).
	absolute := 0
	defer func() {
		if !t.Failed() && absolute < 1000 {
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
			for range 1500 {
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
			if fits < 250 {
				t.Errorf("only %d of 1500 generated lines fit", fits)
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

// TestListColon is the choice the scanner hands to the regex: an upstream list that ends
// at a " : " when read whole it does not fit, and regexp ends it earlier.
func TestListColon(t *testing.T) {
	f := format(t, `$upstream_addr $a;$b`, logformat.EscapeDefault, false)
	re, s := compiled(t, f)
	line := []byte("p : q;r")
	caps := make([]int, 2*(len(f.Captures)+1))
	if res := s.scan(line, caps); res != undecided {
		t.Fatalf("scan: %v, want undecided", res)
	}
	if !s.Match(line, caps) || !slices.Equal(caps, re.FindSubmatchIndex(line)) {
		t.Fatalf("Match: %v, regexp %v", caps, re.FindSubmatchIndex(line))
	}
	if got := string(line[caps[2]:caps[3]]); got != "p" {
		t.Fatalf("the list is %q, want %q", got, "p")
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
