package parser

import (
	"bytes"
	"slices"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/logformat"
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
// Decoded and derived bytes are written after the line in one buffer, so captures are
// offsets into one text as everywhere; the line is copied only when some were written.
// Only the captures the group's rules read (and their sources) are processed.
type formatPost struct {
	dash    []int
	escape  logformat.Escape
	escaped []int
	// derive lists the derived captures, those of one source next to each other, so that
	// a request is split once for its parts.
	derive []derivation
}

// derivation is one derived capture: its kind, its source and its own index in caps.
type derivation struct {
	kind     logformat.DeriveKind
	from, to int
}

// newFormatPost is the processing of a regex group reading the log format f, whose rules
// read the captures keep reports true for (groups 1..len(f.Captures), then derived).
func newFormatPost(f *logformat.Format, derived []config.Derived, keep func(int) bool) *formatPost {
	p := &formatPost{escape: f.Escape}
	for k, c := range f.Captures {
		i := k + 1
		if !keep(i) {
			continue
		}
		if f.Escape == logformat.EscapeDefault || f.Escape == logformat.EscapeApache {
			p.dash = append(p.dash, i)
		}
		if c.Escaped && f.Escape != logformat.EscapeNone {
			p.escaped = append(p.escaped, i)
		}
	}
	for j, d := range derived {
		if to := len(f.Captures) + 1 + j; keep(to) {
			p.derive = append(p.derive, derivation{d.Kind, d.From, to})
		}
	}
	p.sortDerive()
	return p
}

func (p *formatPost) sortDerive() {
	slices.SortStableFunc(p.derive, func(a, b derivation) int { return a.from - b.from })
}

// empty reports whether the post does nothing.
func (p *formatPost) empty() bool {
	return p == nil || len(p.dash)+len(p.escaped)+len(p.derive) == 0
}

// apply processes the captures of base (the line, or what a JSON read returned) in caps
// and returns what they index then.
func (p *formatPost) apply(base []byte, caps []int, s *scratch) []byte {
	n := len(base)
	extra := s.extra[:0]
	for _, i := range p.dash {
		if lo := caps[2*i]; lo >= 0 && caps[2*i+1] == lo+1 && base[lo] == '-' {
			caps[2*i], caps[2*i+1] = -1, -1
		}
	}
	if len(p.escaped) > 0 && bytes.IndexByte(base, '\\') >= 0 {
		for _, i := range p.escaped {
			lo, hi := caps[2*i], caps[2*i+1]
			if lo < 0 || bytes.IndexByte(base[lo:hi], '\\') < 0 {
				continue
			}
			start := len(extra)
			extra = appendUnescaped(extra, base[lo:hi], p.escape)
			caps[2*i], caps[2*i+1] = n+start, n+len(extra)
		}
	}
	split, splitFrom := requestParts{}, -1
	for _, d := range p.derive {
		lo, hi := caps[2*d.from], caps[2*d.from+1]
		caps[2*d.to], caps[2*d.to+1] = -1, -1
		if lo < 0 {
			continue
		}
		v := base[min(lo, n):min(hi, n)]
		if lo >= n {
			v = extra[lo-n : hi-n]
		}
		if d.kind == logformat.StatusClass {
			if len(v) > 0 && v[0] >= '0' && v[0] <= '9' {
				extra = append(extra, v[0], 'x', 'x')
				caps[2*d.to], caps[2*d.to+1] = n+len(extra)-3, n+len(extra)
			}
			continue
		}
		if d.from != splitFrom {
			split, splitFrom = splitRequest(v), d.from
		}
		if part := split[d.kind]; part[0] >= 0 {
			caps[2*d.to], caps[2*d.to+1] = lo+part[0], lo+part[1]
		}
	}
	s.extra = extra
	if len(extra) == 0 {
		return base
	}
	s.post = append(append(s.post[:0], base...), extra...)
	return s.post
}

// requestParts are the method, target, path and protocol of a request line (indexed by
// logformat.RequestMethod ... ServerProtocol) as offsets into it, -1 for a missing part.
type requestParts [4][2]int

// noRequest is the split of a line that is not a request.
var noRequest = requestParts{{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}}

// splitRequest splits a request line, "GET /a?b HTTP/1.1": the method is the first word,
// the protocol the last when it starts with HTTP/ (none for "GET /"), the target what
// is between them (spaces included, which nginx answers with 400), the path the target up
// to its '?'. A line whose first word is not an HTTP method token (what nginx logs for a
// request it could not parse: "-", binary noise, an empty line) gives no part at all, as
// nginx's own $request_method is then empty.
func splitRequest(r []byte) requestParts {
	sp := bytes.IndexByte(r, ' ')
	if sp <= 0 {
		return noRequest
	}
	for _, c := range r[:sp] {
		if !tchar[c] {
			return noRequest
		}
	}
	parts := requestParts{{0, sp}, {sp + 1, len(r)}, {}, {-1, -1}}
	if last := bytes.LastIndexByte(r, ' '); last > sp && bytes.HasPrefix(r[last+1:], []byte("HTTP/")) {
		parts[logformat.RequestURI][1] = last
		parts[logformat.ServerProtocol] = [2]int{last + 1, len(r)}
	}
	target := parts[logformat.RequestURI]
	path := target
	if q := bytes.IndexByte(r[target[0]:target[1]], '?'); q >= 0 {
		path[1] = target[0] + q
	}
	parts[logformat.URI] = path
	return parts
}

// tchar marks the bytes of an HTTP token (RFC 9110), which a method is.
var tchar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), byte(c)) >= 0
	}
	return t
}()

// appendUnescaped appends v with the server's escapes undone: nginx's \xHH (escape=default),
// JSON's (escape=json), Apache's (\" \\ \n \r \t \b \v and \xhh). An escape that is none
// of these is kept as it is.
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
		if esc == logformat.EscapeApache {
			if e, ok := apacheEscapes[v[i+1]]; ok {
				dst = append(dst, e)
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// apacheEscapes are the one-letter escapes of ap_escape_logitem.
var apacheEscapes = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'v': '\v'}

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
