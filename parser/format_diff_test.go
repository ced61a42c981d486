package parser

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// The differential test of log formats: random nginx formats built from nginx's variables
// and random Apache ones from mod_log_config's directives, with literal text, random lines
// the server would write for them (values with spaces, escapes, non-ASCII, missing values),
// and three readings that must agree: the values the line was written from, the parser (the format compiled to its matcher, on its scanner, on
// fastmatch and on regexp, with its escapes undone and its derived captures), and a regex the test builds
// from the same format on its own (each variable a lazy group) run by Go's regexp and
// decoded by the test.

// genVar is a variable the generator puts in formats: an nginx variable, or an Apache
// directive (directive set), whose capture is name.
type genVar struct {
	name      string
	directive string
	builtin   bool // written as it is: never "-" (nginx's own log variables), or not escaped (Apache's numbers)
	list      bool // one value per upstream, ", " or " : " between them
	spaced    bool // the value holds a space ($time_local)
	joined    bool // a space after a comma is in the value (X-Forwarded-For)
	bracketed bool // the value is in brackets, read to its ']' (Apache's %t)
	dashZero  bool // "-" is the value 0 (Apache's %b)
	value     func(r *rand.Rand) (string, bool)
}

// textPieces make up the values of header-like variables: what a client may send.
var textPieces = []string{"a", "Mozilla/5.0", " ", "(x; y)", `"`, `\`, "é", "€", "\t", "\x01", "\v", "\b", "-", "[", "]", ",", ":", "=",
	"|", "{", "}", "→", "x", "2", "F", "%20", "?", "u00"}

func textValue(r *rand.Rand) (string, bool) {
	if r.IntN(6) == 0 {
		return "", false
	}
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(textPieces[r.IntN(len(textPieces))])
	}
	return b.String(), true
}

func pick(vs ...string) func(r *rand.Rand) (string, bool) {
	return func(r *rand.Rand) (string, bool) { return vs[r.IntN(len(vs))], true }
}

func number(r *rand.Rand) (string, bool) {
	return strconv.Itoa(r.IntN(100000)), true
}

// requestValue is a request line made of parts, or a line nginx could not parse.
func requestValue(r *rand.Rand) (string, bool) {
	switch r.IntN(8) {
	case 0:
		return pick("", "\x16\x03\x01\x00\xa5", "GARBAGE", "-", `"`, "/only")(r)
	case 1:
		return "", false
	}
	// Methods nginx takes and, in other cases, refuses (400), spaces around the target
	// as a client may send them (nginx takes more than one), and after the protocol.
	m, _ := pick("GET", "POST", "HEAD", "PROPFIND", "M-SEARCH", "GET_X", "get", "Get")(r)
	path, _ := pick("/", "/a/b", "/café", `/q"x`, "/a b", "/%7E", "/x\\y")(r)
	if r.IntN(2) == 0 {
		q, _ := pick("", "x=1", "a=1&b=2", "q=a b", `s="`)(r)
		path += "?" + q
	}
	spaces := pick(" ", " ", " ", "  ")
	sp, _ := spaces(r)
	req := m + sp + path
	if r.IntN(6) > 0 {
		p, _ := pick("HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/1.1 ")(r)
		sp, _ := spaces(r)
		req += sp + p
	}
	return req, true
}

// upstreamValue is a list of values of one upstream variable.
func upstreamValue(item func(r *rand.Rand) string) func(r *rand.Rand) (string, bool) {
	return func(r *rand.Rand) (string, bool) {
		if r.IntN(4) == 0 {
			return "", false
		}
		var b strings.Builder
		for i := range 1 + r.IntN(3) {
			if i > 0 {
				sep, _ := pick(", ", " : ")(r)
				b.WriteString(sep)
			}
			b.WriteString(item(r))
		}
		return b.String(), true
	}
}

var genVars = []genVar{
	{name: "remote_addr", value: pick("10.0.0.1", "::1", "2001:db8::7")},
	{name: "remote_user", value: textValue},
	{name: "time_local", builtin: true, spaced: true, value: pick("01/Mar/2024:12:00:00 +0000", "29/Feb/2024:23:59:59 -0700")},
	{name: "time_iso8601", builtin: true, value: pick("2024-03-01T12:00:00+00:00")},
	{name: "msec", builtin: true, value: pick("1709294400.123", "1709294400.000")},
	{name: "request", value: requestValue},
	{name: "status", builtin: true, value: pick("200", "302", "404", "499", "502")},
	{name: "body_bytes_sent", builtin: true, value: number},
	{name: "bytes_sent", builtin: true, value: number},
	{name: "request_length", builtin: true, value: number},
	{name: "request_time", builtin: true, value: pick("0.000", "0.004", "12.345")},
	{name: "http_referer", value: textValue},
	{name: "http_user_agent", value: textValue},
	{name: "http_x_forwarded_for", joined: true, value: textValue},
	{name: "host", value: pick("example.com", "a.b")},
	{name: "args", value: textValue},
	{name: "upstream_addr", list: true, value: upstreamValue(func(r *rand.Rand) string { v, _ := pick("10.1.0.5:8080", "unix:/s.sock", "backend")(r); return v })},
	{name: "upstream_response_time", list: true, value: upstreamValue(func(r *rand.Rand) string { v, _ := pick("0.001", "0.045", "-")(r); return v })},
	{name: "upstream_status", list: true, value: upstreamValue(func(r *rand.Rand) string { v, _ := pick("200", "502", "-")(r); return v })},
}

// apacheGenVars are the Apache directives the generator puts in formats: their values are
// escaped by ap_escape_logitem but for the numbers, and a missing one is "-".
var apacheGenVars = []genVar{
	{name: "h", directive: "%h", value: pick("10.0.0.1", "::1", "host.example")},
	{name: "u", directive: "%u", value: textValue},
	{name: "t", directive: "%t", builtin: true, bracketed: true, value: pick("[01/Mar/2024:12:00:00 +0000]", "[29/Feb/2024:23:59:59 -0700]")},
	{name: "r", directive: "%r", value: requestValue},
	{name: "s", directive: "%>s", builtin: true, value: pick("200", "302", "404", "400", "502")},
	{name: "b", directive: "%b", builtin: true, dashZero: true, value: func(r *rand.Rand) (string, bool) {
		if r.IntN(4) == 0 {
			return "", false
		}
		return number(r)
	}},
	{name: "D", directive: "%D", builtin: true, value: number},
	{name: "T_ms", directive: "%{ms}T", builtin: true, value: number},
	{name: "i_referer", directive: "%{Referer}i", value: textValue},
	{name: "i_user_agent", directive: "%{User-agent}i", value: textValue},
	{name: "i_x_forwarded_for", directive: "%{X-Forwarded-For}i", joined: true, value: textValue},
	{name: "v", directive: "%v", value: pick("example.com", "a.b")},
	{name: "m", directive: "%m", value: pick("GET", "POST", "get")},
	{name: "U", directive: "%U", value: textValue},
}

// genLiterals are the texts between variables.
var genLiterals = []string{" ", " - ", " [", "] ", ` "`, `" `, `"`, "|", ",", ";", "=", "\t", "→", "{", "}", " x=", `" "`, ":", "x", "2", "F"}

// nginxEscape writes a value as nginx does with escaping esc (ngx_http_log_escape,
// ngx_escape_json, or none), or as Apache does (ap_escape_logitem) with esc "apache".
func nginxEscape(v, esc string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch esc {
		case "apache":
			if e := strings.IndexByte("\"\\\n\r\t\b\v", c); e >= 0 {
				b.WriteString(`\` + `"\nrtbv`[e:e+1])
				continue
			}
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\x%02x`, c)
				continue
			}
		case "default":
			if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
				fmt.Fprintf(&b, `\x%02X`, c)
				continue
			}
		case "json":
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
			case c == '\n':
				b.WriteString(`\n`)
				continue
			case c == '\t':
				b.WriteString(`\t`)
				continue
			case c < 0x20:
				fmt.Fprintf(&b, `\u%04X`, c)
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// testUnescape undoes nginxEscape, on its own code.
func testUnescape(v, esc string) string {
	switch esc {
	case "apache":
		return regexp.MustCompile(`\\(?:x[0-9a-f]{2}|[\\"nrtbv])`).ReplaceAllStringFunc(v, func(e string) string {
			if e[1] == 'x' {
				n, _ := strconv.ParseUint(e[2:], 16, 8)
				return string([]byte{byte(n)})
			}
			return string("\\\"\n\r\t\b\v"[strings.IndexByte(`\"nrtbv`, e[1])])
		})
	case "default":
		return regexp.MustCompile(`\\x[0-9A-F]{2}`).ReplaceAllStringFunc(v, func(e string) string {
			n, _ := strconv.ParseUint(e[2:], 16, 8)
			return string([]byte{byte(n)})
		})
	case "json":
		var s string
		if err := json.Unmarshal([]byte(`"`+v+`"`), &s); err != nil {
			return "<bad json escape>"
		}
		// encoding/json makes invalid UTF-8 U+FFFD; the parser keeps the bytes, which the
		// generator's values are anyway.
		return s
	}
	return v
}

// testEscapeSeq is the regex of one escape in a written value, for the test's own regex.
var testEscapeSeq = map[string]string{"default": `\\x[0-9A-F]{2}`, "json": `\\(?:u[0-9A-F]{4}|[nt"\\])`, "apache": `\\(?:x[0-9a-f]{2}|[nrtbv"\\])`}

// genFormat is a random format, its variables in order (nil at a literal): nginx's, or
// Apache's when esc is "apache".
type genFormat struct {
	esc    string
	tokens []string // literal text, "$name" or an Apache directive
	vars   []*genVar
}

// text is the format string: ${name} where text starting with a name's letters follows.
func (g genFormat) text() string {
	var b strings.Builder
	for i, tok := range g.tokens {
		v := g.vars[i]
		switch {
		case v == nil:
			b.WriteString(tok)
		case v.directive != "":
			b.WriteString(v.directive)
		case i+1 < len(g.tokens) && regexp.MustCompile(`^[A-Za-z0-9_]`).MatchString(g.tokens[i+1]):
			b.WriteString("${" + v.name + "}")
		default:
			b.WriteString("$" + v.name)
		}
	}
	return b.String()
}

// endsWithRest reports whether the format ends with a variable whose value is read to the
// end of the line: a header (one nginx escapes), no upstream list.
func (g genFormat) endsWithRest() bool {
	v := g.vars[len(g.vars)-1]
	return v != nil && !v.builtin && !v.list
}

func newGenFormat(r *rand.Rand) genFormat {
	g := genFormat{esc: []string{"default", "default", "json", "none", "apache"}[r.IntN(5)]}
	vars := genVars
	if g.esc == "apache" {
		vars = apacheGenVars
	}
	n := 1 + r.IntN(7)
	if r.IntN(2) == 0 {
		g.tokens = append(g.tokens, genLiterals[r.IntN(len(genLiterals))])
		g.vars = append(g.vars, nil)
	}
	for i := range n {
		v := &vars[r.IntN(len(vars))]
		g.tokens = append(g.tokens, "$"+v.name)
		g.vars = append(g.vars, v)
		if i < n-1 || r.IntN(2) == 0 || v.spaced {
			g.tokens = append(g.tokens, genLiterals[r.IntN(len(genLiterals))])
			g.vars = append(g.vars, nil)
		}
	}
	return g
}

// genLine is a line of the format and what each capture must read.
type genLine struct {
	text string
	want map[string]string // capture → value ("" for none)
}

// newGenLine writes a line of g, or reports false when its values came out ambiguous for
// the reading rules (a value holding the character the text after it starts with).
func newGenLine(r *rand.Rand, g genFormat) (genLine, bool) {
	values := map[string]string{}
	found := map[string]bool{}
	var b strings.Builder
	l := genLine{want: map[string]string{}}
	for i, tok := range g.tokens {
		v := g.vars[i]
		if v == nil {
			b.WriteString(tok)
			continue
		}
		if _, ok := values[v.name]; !ok {
			values[v.name], found[v.name] = v.value(r)
		}
		value := values[v.name]
		written := value
		switch {
		case !found[v.name] && (g.esc == "default" || g.esc == "apache"):
			written = "-"
		case !v.builtin:
			written = nginxEscape(value, g.esc)
		}
		next := " " // the last value stops at a space
		if i+1 < len(g.tokens) {
			next = g.tokens[i+1]
		}
		if ambiguous(written, next, g.esc, v, i+1 == len(g.tokens), g.endsWithRest()) {
			return l, false
		}
		b.WriteString(written)
		if _, ok := l.want[v.name]; !ok {
			want := value
			switch {
			case v.dashZero && (!found[v.name] || value == "-"):
				want = "0"
			case !found[v.name] || (g.esc == "default" || g.esc == "apache") && value == "-":
				want = ""
			}
			l.want[v.name] = want
		}
	}
	l.text = b.String()
	request, status := "request", "status"
	if g.esc == "apache" {
		request, status = "r", "s"
	}
	if req, ok := l.want[request]; ok {
		_, hasStatus := values[status]
		m, target, proto, ok := splitByParts(req, g.esc == "apache", !hasStatus)
		l.want["request_method"], l.want["request_uri"], l.want["server_protocol"] = m, target, proto
		// The path ends at the query, or at a space in a target nginx refused.
		l.want["uri"] = target[:strings.IndexAny(target+"?", "? ")]
		if !ok {
			l.want["uri"] = ""
		}
	}
	if st, ok := l.want[status]; ok {
		l.want["status_class"] = st[:1] + "xx"
	}
	return l, true
}

// splitByParts reads what requestValue wrote as nginx's parser reads a request line:
// a method of capitals, '_' and '-' (nginx refuses any other), one or more spaces, the
// target, and the protocol after one or more spaces with the spaces after it; nothing for
// a line whose first word is no such method. checked is for a format without $status,
// whose lines are checked as nginx checks a request line: nothing either for a target
// with a space or a line of HTTP/0.9 (no protocol) of another method than GET, which
// nginx refuses. (genVars' statuses are none nginx answers a line it refused with: a
// format with $status has its lines split as they are.) Apache's request lines are split
// as they are, their method any HTTP token.
func splitByParts(req string, apache, checked bool) (method, target, proto string, ok bool) {
	parts := requestParts
	if apache {
		parts, checked = apacheRequestParts, false
	}
	m := parts.FindStringSubmatch(req)
	if m == nil || checked && (strings.Contains(m[2], " ") || m[3] == "" && m[1] != "GET") {
		return "", "", "", false
	}
	return m[1], m[2], m[3], true
}

var (
	requestParts       = regexp.MustCompile(`^([A-Z_-]+) +([^ ].*?)(?: +(HTTP/[^ ]* *))? *$`)
	apacheRequestParts = regexp.MustCompile("^([!#$%&'*+.^_`|~0-9A-Za-z-]+) +([^ ].*?)(?: +(HTTP/[^ ]* *))? *$")
)

// ambiguous reports whether a written value holds, outside its escapes, the character the
// text after it starts with (for a list or $time_local before a space: only in an item), or
// is one whose reading the test's own lazy regex cannot follow.
func ambiguous(written, next, esc string, v *genVar, last, restAfter bool) bool {
	stop, _ := firstRune(next)
	plain := written
	if e, ok := testEscapeSeq[esc]; ok && !v.builtin {
		plain = regexp.MustCompile(e).ReplaceAllString(written, "")
	}
	switch {
	case v.bracketed:
		return false // read to its own ']', which the value has once
	case (v.list || v.spaced) && stop == ' ':
		// The list's own shape reads past its separators; the lazy regex cannot: keep
		// those to the table tests.
		return true
	case last && v.builtin && strings.ContainsRune(written, ' '):
		return true
	case v.joined && stop == ' ' && strings.HasSuffix(plain, ",") && restAfter:
		// A comma before a space is read as the end of an item, and the value read on
		// past the space where a header read to the end of the line follows, where the
		// lazy regex ends it there.
		return true
	case esc != "none" && !v.builtin && strings.ContainsRune(written, '\\') && plain == written:
		return true
	}
	return strings.ContainsRune(plain, stop)
}

func firstRune(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return 0, false
}

// testRegex is the test's own reading of g: each variable a lazy group (escape sequences
// taken whole), the last one up to the end of the line (a number, up to a space).
func testRegex(g genFormat) (*regexp.Regexp, []string) {
	var b strings.Builder
	var names []string
	b.WriteString("^")
	for i, tok := range g.tokens {
		v := g.vars[i]
		switch {
		case v == nil:
			b.WriteString(regexp.QuoteMeta(tok))
		case v.bracketed:
			b.WriteString(`(\[[^\]]*\])`)
			names = append(names, v.name)
		case i+1 == len(g.tokens) && v.builtin:
			b.WriteString(`([^ ]*)`)
			names = append(names, v.name)
		case i+1 == len(g.tokens):
			b.WriteString(`(.*)`)
			names = append(names, v.name)
		case !v.builtin && testEscapeSeq[g.esc] != "":
			fmt.Fprintf(&b, `((?:[^\\]|%s)*?)`, testEscapeSeq[g.esc])
			names = append(names, v.name)
		default:
			b.WriteString(`(.*?)`)
			names = append(names, v.name)
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String()), names
}

// formatRules is a config over g with a rule labelled by each capture name in labels.
func formatRules(t *testing.T, g genFormat, labels []string) []*config.Rule {
	t.Helper()
	var ls []string
	for _, name := range labels {
		ls = append(ls, fmt.Sprintf("l_%s: '${%s}'", name, name))
	}
	format := g.text()
	if g.esc == "apache" {
		// Apache's format keeps the space around it, which its lines have.
		return genConfig(t, g, fmt.Sprintf("apache_log_format: %s", strconv.Quote(format)), ls)
	}
	if strings.TrimSpace(format) != format {
		// Space around a format string is no part of it; the directive's quotes keep it.
		format = fmt.Sprintf("log_format diff escape=%s '%s';", g.esc, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(format))
	}
	return genConfig(t, g, fmt.Sprintf("log_format: %s, log_format_escape: %s", strconv.Quote(format), g.esc), ls)
}

// genConfig is the rules of a config whose input has the format keys given and whose
// one rule has the labels ls.
func genConfig(t *testing.T, g genFormat, keys string, ls []string) []*config.Rule {
	t.Helper()
	c, err := config.Parse([]byte(fmt.Sprintf("inputs: [{name: web, path: /a, %s}]\nrules:\n  - name: r\n    labels: {%s}\n",
		keys, strings.Join(ls, ", "))), "diff.yaml")
	if err != nil {
		t.Fatalf("format %q: %v", g.text(), err)
	}
	return c.Rules
}

func TestLogFormatDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// The formats are one goroutine's: the race detector is given a few, and .ci/run runs
	// them all without it.
	drawn := 600
	if race.Enabled {
		drawn = 120
	}
	formats, lines, mutated, apache := 0, 0, 0, 0
	for range drawn {
		g := newGenFormat(r)
		if text := g.text(); g.esc == "json" && strings.HasPrefix(text, "{") && strings.HasSuffix(text, "}") {
			continue // a JSON template, read as JSON: see the table tests
		}
		var gl []genLine
		for range 40 {
			if l, ok := newGenLine(r, g); ok {
				gl = append(gl, l)
			}
		}
		if len(gl) == 0 {
			continue
		}
		formats++
		if g.esc == "apache" {
			apache++
		}
		names := make([]string, 0, len(gl[0].want))
		for name := range gl[0].want {
			names = append(names, name)
		}
		all := formatRules(t, g, names)
		// A rule reading one capture: the parser then processes only it (and its source).
		one := formatRules(t, g, names[r.IntN(len(names)):][:1])
		ref, refNames := testRegex(g)
		for _, m := range matchers {
			pAll, err := build(all, m.engine)
			if err != nil {
				t.Fatal(err)
			}
			pOne, err := build(one, m.engine)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range gl {
				lines++
				where := fmt.Sprintf("%s: format %q (escape=%s), line %q", m.name, g.text(), g.esc, l.text)
				got := parsedLabels(pAll, all[0], l.text)
				if got == nil {
					t.Fatalf("%s: not matched", where)
				}
				for name, want := range l.want {
					// Label values are valid UTF-8: invalid bytes read as U+FFFD.
					if want = validLabel(want); got[name] != want {
						t.Errorf("%s: %s = %q, want %q", where, name, got[name], want)
					}
				}
				name := strings.TrimPrefix(one[0].Labels[0].Name, "l_")
				if gotOne := parsedLabels(pOne, one[0], l.text); gotOne[name] != got[name] {
					t.Errorf("%s: read alone, %s = %q, read with all %q", where, name, gotOne[name], got[name])
				}
				sub := ref.FindStringSubmatch(l.text)
				if sub == nil {
					t.Fatalf("%s: the test's regex %s does not match", where, ref)
				}
				for k, name := range refNames {
					v := sub[k+1]
					switch gv := varOf(name); {
					case v == "-" && gv.dashZero:
						v = "0"
					case v == "-" && (g.esc == "default" || g.esc == "apache"):
						v = ""
					case !gv.builtin:
						v = testUnescape(v, g.esc)
					}
					if v = validLabel(v); v != got[name] {
						t.Errorf("%s: %s: the test's regex reads %q, the parser %q", where, name, v, got[name])
					}
				}
			}
		}
		// Lines nginx would not write: the scanner (or fastmatch, for a format it leaves to
		// the regex) and regexp still read them alike.
		pf, _ := build(all, viaScanner)
		pr, _ := build(all, viaRegexp)
		for _, l := range gl {
			bad := []byte(l.text)
			for range 1 + r.IntN(3) {
				i := r.IntN(len(bad) + 1)
				switch r.IntN(3) {
				case 0:
					if i < len(bad) {
						bad = append(bad[:i], bad[i+1:]...)
					}
				default:
					bad = append(bad[:i], append([]byte(textPieces[r.IntN(len(textPieces))]), bad[i:]...)...)
				}
			}
			mutated++
			a, b := parsedLabels(pf, all[0], string(bad)), parsedLabels(pr, all[0], string(bad))
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("format %q, line %q: the scanner reads %v, regexp %v", g.text(), bad, a, b)
			}
		}
	}
	t.Logf("%d formats (%d Apache's), %d lines on each matcher, %d mutated lines", formats, apache, lines, mutated)
	if formats < drawn/2 || apache < drawn/10 {
		t.Errorf("only %d of the formats gave lines, %d of them Apache's: the generator is too strict to test much", formats, apache)
	}
}

// varOf is the variable of a capture, nginx's or Apache's (their names differ).
func varOf(name string) *genVar {
	for _, vars := range [][]genVar{genVars, apacheGenVars} {
		for i := range vars {
			if vars[i].name == name {
				return &vars[i]
			}
		}
	}
	return &genVar{}
}

// parsedLabels parses line with p, whose one rule r labels l_<capture> each capture, and
// returns the captures' values; nil when the line did not match.
func parsedLabels(p *Parser, r *config.Rule, line string) map[string]string {
	sink := &labelSink{}
	p.Parse("web", []byte(line), sink)
	if len(sink.events) == 0 {
		return nil
	}
	out := map[string]string{}
	for i, l := range r.Labels {
		out[strings.TrimPrefix(l.Name, "l_")] = sink.events[0][i]
	}
	return out
}
