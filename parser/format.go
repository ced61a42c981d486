package parser

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// formatPost is what a group reading a web server's log format does to its captures once
// the line is matched (or its JSON fields read), before any rule sees them:
//
//   - a value the server wrote as "-" for "none" (nginx's default escaping, Apache) reads
//     as empty;
//   - an escaped value holding a backslash is unescaped into the scratch, so that labels
//     show what the server had ("é", not "\xC3\xA9");
//   - the derived captures are computed: the parts of a request line are sub-slices of
//     its capture, a status's class ("2xx") is three bytes written to the scratch.
//
// The request is split here rather than by groups of the format's regex because that
// needs an alternative for requests nginx could not parse, and a choice in the regex
// would make the matcher save every capture set after it in case it has to come back;
// splitting in code costs a few byte searches, the same for regex and JSON formats.
// Decoded and derived bytes are written to the scratch and indexed as if they followed
// the line (text), as a JSON line's decoded strings are, so the line is never copied.
// Only the captures the group's rules read (and their sources) are processed.
type formatPost struct {
	dash []int
	// zero are the captures whose "-" is a zero (logformat.Capture.DashZero).
	zero    []int
	escape  logformat.Escape
	escaped []int
	// derive lists the derived captures; compile makes requests and classes of them.
	derive   []derivation
	requests []requestSplit
	classes  []derivation
	// method marks the bytes of a method of the format's server.
	method *[256]bool
	// status is the capture of nginx's $status, which tells a request line nginx may have
	// refused (nginxVerdict); 0 for a format without it, -1 for Apache's, whose lines are
	// split as they are.
	status int
}

// derivation is one derived capture: its kind, its source and its own index in caps.
type derivation struct {
	kind     logformat.DeriveKind
	from, to int
}

// requestSplit is the parts derived from one request capture: to[kind] is the index in
// caps of each part derived (by logformat.RequestMethod ... ServerProtocol), 0 for one
// that is not.
type requestSplit struct {
	from int
	to   [4]int
	// method marks the bytes a method is made of, as the server reads one.
	method *[256]bool
	// status is formatPost.status.
	status int
}

// statusSource is the capture a format's status class is derived from, its $status: 0
// when it has none.
func statusSource(derived []config.Derived) int {
	for _, d := range derived {
		if d.Kind == logformat.StatusClass {
			return d.From
		}
	}
	return 0
}

// newFormatPost is the processing of a regex group reading the log format f, whose rules
// read the captures keep reports true for (groups 1..len(f.Captures), then derived).
func newFormatPost(f *logformat.Format, derived []config.Derived, keep func(int) bool) *formatPost {
	p := &formatPost{escape: f.Escape, method: &tchar, status: -1}
	if f.Server == logformat.Nginx {
		p.method, p.status = &nginxMethod, statusSource(derived)
	}
	for k, c := range f.Captures {
		i := k + 1
		if !keep(i) {
			continue
		}
		// nginx's own log variables ($status, $request_time, ...) are never "-".
		switch {
		case c.DashZero:
			p.zero = append(p.zero, i)
		case f.Escape == logformat.EscapeApache || (f.Escape == logformat.EscapeDefault || f.Escape == logformat.EscapeEither) && c.Escaped:
			p.dash = append(p.dash, i)
		}
		if c.Escaped && f.Escape != logformat.EscapeNone {
			p.escaped = append(p.escaped, i)
		}
	}
	for j, d := range derived {
		if to := len(f.Captures) + 1 + j; keep(to) {
			p.derive = append(p.derive, derivation{kind: d.Kind, from: d.From, to: to})
		}
	}
	p.compile()
	return p
}

// compile groups the derived captures by what computes them: one split per request
// capture for all its parts, a class per status capture.
func (p *formatPost) compile() {
	p.requests, p.classes = nil, nil
	for _, d := range p.derive {
		if d.kind == logformat.StatusClass {
			p.classes = append(p.classes, d)
			continue
		}
		k := slices.IndexFunc(p.requests, func(r requestSplit) bool { return r.from == d.from })
		if k < 0 {
			k = len(p.requests)
			p.requests = append(p.requests, requestSplit{from: d.from, method: p.method, status: p.status})
		}
		p.requests[k].to[d.kind] = d.to
	}
}

// empty reports whether the post does nothing.
func (p *formatPost) empty() bool {
	return p == nil || len(p.dash)+len(p.zero)+len(p.escaped)+len(p.derive) == 0
}

// isDash reports whether capture i of caps is a "-" of line (not of what was decoded
// after it).
func isDash(line []byte, caps []int, i int) bool {
	lo := caps[2*i]
	return lo >= 0 && lo < len(line) && caps[2*i+1] == lo+1 && line[lo] == '-'
}

// apply processes the captures of m (of the line, or of a JSON line and its decoded
// strings) in place: what it unescapes or derives goes to the end of m.src.more, in the
// scratch's vals. The match is changed where it is, not returned, as a copy of it would
// be read back just after its fields were written.
func (p *formatPost) apply(m *match, s *scratch) {
	line, caps := m.src.line, m.caps
	n := len(line)
	more := m.src.more
	if more == nil {
		more = s.vals[:0]
	}
	for _, i := range p.dash {
		if isDash(line, caps, i) {
			caps[2*i], caps[2*i+1] = -1, -1
		}
	}
	for _, i := range p.zero {
		if isDash(line, caps, i) {
			more = append(more, '0')
			caps[2*i], caps[2*i+1] = n+len(more)-1, n+len(more)
		}
	}
	// One look at the line spares looking into each capture of the nearly every line
	// that has no escape; with one capture to unescape, looking into it is less.
	if len(p.escaped) == 1 || len(p.escaped) > 1 && bytes.IndexByte(line, '\\') >= 0 {
		for _, i := range p.escaped {
			lo, hi := caps[2*i], caps[2*i+1]
			if lo < 0 || lo >= n || bytes.IndexByte(line[lo:hi], '\\') < 0 {
				continue
			}
			start := n + len(more)
			more = appendUnescaped(more, line[lo:hi], p.escape)
			caps[2*i], caps[2*i+1] = start, n+len(more)
		}
	}
	for i := range p.requests {
		r := &p.requests[i]
		for _, to := range r.to {
			if to > 0 {
				caps[2*to], caps[2*to+1] = -1, -1
			}
		}
		if lo := caps[2*r.from]; lo >= 0 {
			req, v := capture(&text{line, more}, caps, r.from), lineRead
			switch {
			case r.status > 0:
				// A status of the line of three bytes, neither 4xx nor 5xx (nearly every
				// line's), is of a line nginx read: told where the scanner left it,
				// without a capture's slice (nginxVerdict's first test).
				if lo, hi := caps[2*r.status], caps[2*r.status+1]; lo < 0 || lo >= n || hi-lo != 3 || line[lo]|1 == '5' {
					v = nginxVerdict(req, capture(&text{line, more}, caps, r.status))
				}
			case r.status == 0:
				v = nginxVerdict(req, nil)
			}
			splitRequest(req, lo, caps, &r.to, r.method, v)
		}
	}
	for _, d := range p.classes {
		caps[2*d.to], caps[2*d.to+1] = -1, -1
		if v := capture(&text{line, more}, caps, d.from); len(v) > 0 && v[0] >= '0' && v[0] <= '9' {
			more = appendClass(more, v[0])
			caps[2*d.to], caps[2*d.to+1] = n+len(more)-3, n+len(more)
		}
	}
	s.vals = more
	m.src.more = more
}

// appendClass appends the class of a status whose first digit is d ("2xx"). With room for
// a word it is written as one word, the bytes past it left to what follows: renderCaptures
// reads a short value as the word at its start, which a word stored there hands over at
// once, where a read of three byte stores waits for them to reach the cache.
func appendClass(more []byte, d byte) []byte {
	if n := len(more); cap(more)-n >= 8 {
		binary.LittleEndian.PutUint64(more[n:n+8], uint64(d)|'x'<<8|'x'<<16)
		return more[:n+3]
	}
	return append(more, d, 'x', 'x')
}

// splitRequest splits a request line r, "GET /a?b HTTP/1.1", which starts at offset at of
// the text caps index, into the parts to names (its capture index per kind, 0 for a part
// not wanted), as nginx's parser reads it: the method is the first word, the target
// follows it after one or more spaces, the protocol is the last word when it starts with
// HTTP/ (none for "GET /"), after one or more spaces, the spaces after it included (nginx's
// $server_protocol has them), the target what is between them, the path the target up to
// its first '?' or space. A line whose first word is not a method of the server's
// (method: the bytes it is made of; for nginx capitals, '_' and '-', so "get" is none,
// which nginx answers with 400), or with nothing after it (what nginx logs for a request
// it could not parse: "-", binary noise, an empty line), or that v, what nginx made of
// it, says nginx refused, gives no part at all, as nginx's own $request_method is then
// empty; one whose path nginx refused gives its method and protocol alone. The parts'
// captures are left as they are (unset) when not found.
func splitRequest(r []byte, at int, caps []int, to *[4]int, method *[256]bool, v requestVerdict) {
	sp := 0
	for sp < len(r) && r[sp] != ' ' {
		if !method[r[sp]] {
			return
		}
		sp++
	}
	start := sp + 1
	for start < len(r) && r[start] == ' ' {
		start++
	}
	if sp == 0 || start >= len(r) || v == lineRefused {
		return
	}
	set := func(kind logformat.DeriveKind, lo, hi int) {
		if c := to[kind]; c > 0 {
			caps[2*c], caps[2*c+1] = at+lo, at+hi
		}
	}
	set(logformat.RequestMethod, 0, sp)
	// A target in origin form (nearly every one) is left as it is by originForm.
	slash := -1
	if r[start] != '/' {
		start, slash = originForm(r, start)
	}
	if to[logformat.URI] > 0 && v != pathRefused {
		if slash >= 0 {
			set(logformat.URI, slash, slash+1)
		} else {
			set(logformat.URI, start, pathEnd(r, start))
		}
	}
	if to[logformat.RequestURI] > 0 || to[logformat.ServerProtocol] > 0 {
		end := len(r)
		for r[end-1] == ' ' {
			end--
		}
		if last := bytes.LastIndexByte(r[:end], ' '); last >= start && bytes.HasPrefix(r[last+1:], []byte("HTTP/")) {
			set(logformat.ServerProtocol, last+1, len(r))
			end = last
			for r[end-1] == ' ' {
				end--
			}
		}
		if end == start && slash >= 0 {
			start, end = slash, slash+1
		}
		if v != pathRefused {
			set(logformat.RequestURI, start, end)
		}
	}
}

// originForm is where the part of a target in absolute form starting at r[start]
// ("http://host:port/p?q", RFC 9112's, which a client may send to any server) that nginx's
// $request_uri has starts ("/p?q"): at the '/' or '?' after the host, or the end of the
// host when neither follows it. For a target without a path ("http://host?q",
// "http://host") slash is where a '/' of "://" is, which nginx takes as its $uri, and as
// its $request_uri when no query follows either; else -1. A target of any other form is
// left as it is (start).
func originForm(r []byte, start int) (from, slash int) {
	i := start
	for i < len(r) && (r[i]|0x20 >= 'a' && r[i]|0x20 <= 'z' || i > start && (r[i] >= '0' && r[i] <= '9' || r[i] == '+' || r[i] == '-' || r[i] == '.')) {
		i++
	}
	if i == start || !bytes.HasPrefix(r[i:], []byte("://")) {
		return start, -1
	}
	slash = i + 1
	for i += 3; i < len(r); i++ {
		switch r[i] {
		case '/':
			return i, -1
		case '?', ' ':
			return i, slash
		}
	}
	return i, slash
}

// pathEnd is where the path of a request target starting at r[from] ends: at the first
// '?' or space, else the end of r. A path is mostly short, and two searches would each
// cost more to start than the bytes it has: it is read in one pass, 8 bytes at a time.
func pathEnd(r []byte, from int) int {
	end := from
	for ; end+8 <= len(r); end += 8 {
		w := binary.LittleEndian.Uint64(r[end : end+8 : end+8])
		// A byte of sp (q) is zero where r holds a space ('?'); the lowest byte flagged is
		// the first such (a flag above a zero byte may be false, one below never is).
		sp, q := w^(lows*' '), w^(lows*'?')
		if found := ((sp-lows)&^sp | (q-lows)&^q) & highs; found != 0 {
			return end + bits.TrailingZeros64(found)/8
		}
	}
	for ; end < len(r); end++ {
		if r[end] == ' ' || r[end] == '?' {
			return end
		}
	}
	return end
}

// nginxMethod marks the bytes nginx takes in a method (ngx_http_parse_request_line).
var nginxMethod = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'A' && c <= 'Z' || c == '_' || c == '-'
	}
	return t
}()

// tchar marks the bytes of an HTTP token (RFC 9110), which a method is.
var tchar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), byte(c)) >= 0
	}
	return t
}()

// appendUnescaped appends v with the server's escapes undone: nginx's \xHH (escape=default),
// JSON's (escape=json), Apache's (\" \\ \n \r \t \b \v and \xhh), or for a JSON template
// given without its escaping (EscapeEither) both nginx's \xHH and the JSON escapes nginx
// writes (\u00HH and one letter). An escape that is none of these is kept as it is.
func appendUnescaped(dst, v []byte, esc logformat.Escape) []byte {
	if esc == logformat.EscapeJSON {
		start := len(dst)
		if out, ok := appendUnquoted(dst, v, false); ok {
			return out
		}
		return append(dst[:start], v...)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			dst = append(dst, c)
			continue
		}
		if v[i+1] == 'x' && i+3 < len(v) {
			if h, ok := hexByte(v[i+2], v[i+3]); ok {
				dst = append(dst, h)
				i += 3
				continue
			}
		}
		if esc == logformat.EscapeEither && v[i+1] == 'u' && i+5 < len(v) && v[i+2] == '0' && v[i+3] == '0' {
			if h, ok := hexByte(v[i+4], v[i+5]); ok {
				// JSON's \u00HH is the character U+00HH, two bytes from 0x80 on (nginx
				// writes only those below 0x20; a byte of its own is \xHH).
				dst = utf8.AppendRune(dst, rune(h))
				i += 5
				continue
			}
		}
		if e, ok := letterEscapes[esc][v[i+1]]; ok {
			dst = append(dst, e)
			i++
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// letterEscapes are the one-letter escapes of ap_escape_logitem, and for EscapeEither
// those of ngx_escape_json.
var letterEscapes = map[logformat.Escape]map[byte]byte{
	logformat.EscapeApache: {'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'v': '\v'},
	logformat.EscapeEither: {'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f'},
}

func hexByte(hi, lo byte) (byte, bool) {
	h, ok1 := hexDigit(hi)
	l, ok2 := hexDigit(lo)
	return h<<4 | l, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
