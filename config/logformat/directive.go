package logformat

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// directiveKeyword starts a log_format: value that is the directive as nginx.conf has it
// rather than the format string alone.
const directiveKeyword = "log_format"

// ParseNginxValue compiles what an input's log_format: holds: a preset's name, the format
// string, or the log_format directive pasted from nginx.conf (`log_format NAME
// [escape=...] '...' '...';`, over as many lines as it takes). Whitespace around a preset
// or a format string is no part of it (a YAML block's final newline); a format whose
// lines end in a space is written as the directive, whose quotes say where it ends.
//
// declared tells whether log_format_escape: gave esc. The directive says the escaping
// itself (escape=, or nginx's default without it), and a declared esc that differs is an
// error. Without a declared escaping, a format string that is a JSON object template is
// read as text with the escapes of both nginx's default and escape=json (EscapeEither),
// which are told apart by what follows each backslash: its lines are written with one or
// the other, and reading JSON would lose the default's. Any other format string or preset
// is read with nginx's default, as nginx writes it without escape=: reading both would
// cost every line a slower scan of each quoted value (a '\' to look for besides the '"').
//
// An error is an *Error whose offset is into value.
func ParseNginxValue(value string, esc Escape, declared bool) (*Format, error) {
	if IsAccessLog(value) {
		return nil, &Error{len(value) - len(skipComments(value)), "this is nginx's access_log directive, which names the format its log is written in (access_log PATH NAME): give the log_format directive of that name"}
	}
	if key := ingressEntry(value); key != "" {
		return nil, &Error{len(value) - len(strings.TrimLeft(value, " \t\r\n")), fmt.Sprintf("this is the ingress-nginx controller's ConfigMap entry %s; give only its value, the format string", key)}
	}
	trimmed := strings.TrimSpace(value)
	lead := strings.Index(value, trimmed)
	if !IsDirective(trimmed) {
		if !declared && isTemplate(trimmed) {
			esc = EscapeEither
		}
		f, err := ParseNginx(trimmed, esc)
		return f, shiftError(err, func(off int) int { return lead + off })
	}
	d, err := parseDirective(value)
	if err != nil {
		return nil, err
	}
	if declared && esc != d.escape {
		return nil, &Error{d.escapeAt, fmt.Sprintf("log_format_escape: %s contradicts the directive's %s, which is what nginx writes its lines with; drop log_format_escape:", esc, d.escapeText())}
	}
	f, err := ParseNginx(d.text, d.escape)
	if err != nil {
		return nil, shiftError(err, d.source)
	}
	f.Directive = d.name
	return f, nil
}

// IsDirective reports whether a trimmed log_format: value is the directive: its first
// word, after the comments nginx.conf may have above it, is log_format, which no format
// string starts with (a variable or literal text would not be followed by a space and a
// name).
func IsDirective(s string) bool {
	rest, ok := strings.CutPrefix(skipComments(s), directiveKeyword)
	return ok && rest != "" && strings.IndexByte(" \t\r\n", rest[0]) >= 0
}

// IsAccessLog reports whether a log_format: value is nginx's access_log directive, pasted
// from the line beside the log_format one: it names a format, and as a format string
// itself would fit no line.
func IsAccessLog(s string) bool {
	rest, ok := strings.CutPrefix(skipComments(s), "access_log")
	return ok && rest != "" && strings.IndexByte(" \t\r\n", rest[0]) >= 0
}

// ingressFormatKeys are the ingress-nginx controller's ConfigMap keys whose value is an
// nginx format string.
var ingressFormatKeys = []string{"log-format-upstream", "log-format-stream"}

// ingressEntry returns the key when a log_format: value is an entry of the ingress-nginx
// controller's ConfigMap pasted whole (log-format-upstream: '...'), which no format string
// starts with; "" when it is not.
func ingressEntry(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	for _, k := range ingressFormatKeys {
		if strings.HasPrefix(s, k+":") {
			return k
		}
	}
	return ""
}

// skipComments is s after the space and the # comments it starts with.
func skipComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if !strings.HasPrefix(s, "#") {
			return s
		}
		s = s[lineEnd(s, 0):]
	}
}

// shiftError moves the offset of a format error by at (nil stays nil).
func shiftError(err error, at func(int) int) error {
	if e, ok := err.(*Error); ok {
		return &Error{at(e.Offset), e.Msg}
	}
	return err
}

// directive is a log_format directive as nginx reads it.
type directive struct {
	name   string
	escape Escape
	// escapeAt is the offset of the escape= argument, of the format's first string when
	// there is none.
	escapeAt  int
	hasEscape bool
	// text is the format string: the directive's strings joined; at[i] is the offset in
	// the directive of text's byte i, at[len(text)] that of the end of the last string.
	text string
	at   []int
}

// escapeText says the directive's escaping for a message.
func (d *directive) escapeText() string {
	if d.hasEscape {
		return "escape=" + d.escape.String()
	}
	return "escape=default (nginx's when the directive has no escape=)"
}

// source is the offset in the directive of byte off of the format string.
func (d *directive) source(off int) int {
	return d.at[min(max(off, 0), len(d.at)-1)]
}

// word is an argument of a directive: its text as nginx reads it (quotes removed, escapes
// undone), where it starts, and at[i] the directive's offset of its byte i; quote is the
// quote it was in (0 for none), escapedQuote whether that quote was escaped inside it.
type word struct {
	text         string
	start        int
	at           []int
	quote        byte
	escapedQuote bool
}

// parseDirective reads a log_format directive the way nginx's configuration reader
// splits a directive into arguments, then as its log module reads them: the name, an
// optional escape=, and the format's strings, joined with nothing between them.
func parseDirective(s string) (*directive, error) {
	words, end, err := directiveWords(s)
	if err != nil {
		return nil, err
	}
	// isDirective saw the keyword, so words[0] is it.
	if len(words) < 2 {
		return nil, &Error{end, "the directive has no name and no format string: log_format NAME [escape=default|json|none] '...';"}
	}
	d := &directive{name: words[1].text}
	if d.name == "combined" {
		return nil, &Error{words[1].start, `nginx refuses a log_format named "combined": it is nginx's own format (give log_format: combined for it)`}
	}
	args := words[2:]
	if len(args) > 0 {
		d.escapeAt = args[0].start
		if v, ok := strings.CutPrefix(args[0].text, "escape="); ok {
			if d.escape, ok = ParseEscape(v); !ok {
				return nil, &Error{args[0].start, fmt.Sprintf("escape=%s is not one of nginx's escape= values (%s)", v, strings.Join(EscapeNames, ", "))}
			}
			d.hasEscape = true
			args = args[1:]
		}
	}
	if len(args) == 0 {
		return nil, &Error{end, fmt.Sprintf("the directive log_format %s has no format string after its name", d.name)}
	}
	for _, w := range args {
		if w.quote == 0 && w.text == directiveKeyword {
			// nginx would read its words as more of the format's strings.
			return nil, &Error{w.start, "a second log_format directive: the ';' ending the first is missing; give one log_format directive"}
		}
	}
	var b strings.Builder
	var cut error
	for k, w := range args {
		text, at, err := ownVariables(w, k+1 < len(args) && args[k+1].text != "" && isNameByte(args[k+1].text[0]))
		cut = cmp.Or(cut, err)
		b.WriteString(text)
		d.at = append(d.at, at...)
	}
	d.at = append(d.at, end)
	d.text = b.String()
	if cut != nil && checkText(d.text) == nil {
		// A text the format refuses as a whole is told so first, as a format string's is.
		return nil, cut
	}
	return d, nil
}

// ownVariables is a format string's text as joined to the next (its offsets beside): nginx's
// log module reads the variables of each string apart, so a string ending with a $ or
// within ${ is an error, and a name that runs to the end of its string ends there, written
// in braces when the next string starts with what would go on with it ('$status' '_x' is
// ${status}_x, not $status_x). A string's other mistakes are the joined text's too, which
// tells them.
func ownVariables(w word, nameNext bool) (string, []int, error) {
	toks, err := nginxTokens(w.text)
	if err != nil {
		if fe, ok := err.(*Error); ok && cutVariable(w.text[fe.Offset:]) {
			return w.text, w.at, shiftError(err, func(off int) int { return w.at[off] })
		}
		return w.text, w.at, nil
	}
	last := len(toks) - 1
	if !nameNext || last < 0 || toks[last].v == nil || strings.HasPrefix(toks[last].v.text, "${") {
		return w.text, w.at, nil
	}
	i := toks[last].at + 1 // the name's first byte
	text := w.text[:i] + "{" + w.text[i:] + "}"
	at := slices.Concat(w.at[:i], []int{w.at[i-1]}, w.at[i:], []int{w.at[len(w.at)-1]})
	return text, at, nil
}

// cutVariable reports whether the end of a string, from a $, is a variable its end cuts:
// a $ alone, or ${ and a name without its }.
func cutVariable(s string) bool {
	rest, braced := strings.CutPrefix(s, "${")
	if !braced {
		return s == "$"
	}
	return strings.IndexFunc(rest, func(r rune) bool { return r >= utf8.RuneSelf || !isNameByte(byte(r)) }) < 0
}

// isSpace is nginx's separator of a directive's arguments.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// directiveWords splits a directive into its arguments as nginx's configuration reader
// does: an argument is quoted ('...' or "...", followed by a space or the ';') or runs to
// the next space or ';'; a backslash keeps the next character from ending it; # starts a
// comment where an argument could start. The ';' may be left out, but only space and
// comments may follow it: a second directive is no part of this one. end is the offset
// after the last argument.
func directiveWords(s string) (words []word, end int, err error) {
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case isSpace(c):
			i++
		case c == '#':
			i = lineEnd(s, i)
		case c == ';':
			return words, end, onlyComments(s, i+1)
		case c == '{' || c == '}':
			return nil, 0, &Error{i, fmt.Sprintf("unexpected %q: a log_format directive has no block", c)}
		default:
			w, next, err := directiveWord(s, i)
			if err != nil {
				return nil, 0, err
			}
			words = append(words, w)
			i, end = next, next
		}
	}
	return words, end, nil
}

// lineEnd is the offset of the end of the line holding s[i] (its '\n', or len(s)).
func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// onlyComments checks that s from off holds nothing but space and comments.
func onlyComments(s string, off int) error {
	for i := off; i < len(s); i++ {
		switch {
		case s[i] == '#':
			i = lineEnd(s, i)
		case !isSpace(s[i]):
			return &Error{i, "text after the directive's ';': give one log_format directive"}
		}
	}
	return nil
}

// unescapes are the escapes nginx's configuration reader undoes in an argument; it keeps
// a backslash before any other character.
var unescapes = map[byte]byte{'"': '"', '\'': '\'', '\\': '\\', 't': '\t', 'r': '\r', 'n': '\n'}

// directiveWord reads the argument starting at s[i] (no space) and returns it and the
// offset after it.
func directiveWord(s string, i int) (word, int, error) {
	w := word{start: i}
	var b []byte
	quote := byte(0)
	if c := s[i]; c == '"' || c == '\'' {
		quote = c
		i++
	}
	w.quote = quote
	for {
		if i >= len(s) {
			if quote != 0 {
				return word{}, 0, &Error{w.start, fmt.Sprintf("the %c opened here is not closed", quote)}
			}
			break
		}
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			if e, ok := unescapes[s[i+1]]; ok {
				b, w.at = append(b, e), append(w.at, i)
				w.escapedQuote = w.escapedQuote || quote != 0 && e == quote
			} else {
				b, w.at = append(b, c, s[i+1]), append(w.at, i, i+1)
			}
			i += 2
			continue
		}
		if quote != 0 && c == quote {
			i++
			if i < len(s) && !isSpace(s[i]) && s[i] != ';' {
				return word{}, 0, &Error{i, fmt.Sprintf("unexpected %q after a closing %c: nginx wants a space or ';' there", s[i], quote)}
			}
			break
		}
		if quote == 0 {
			if isSpace(c) || c == ';' {
				break
			}
			// ${name} is a variable, any other { would open a block (directiveWords
			// sees a { or } that would start a word).
			if c == '{' && s[i-1] != '$' {
				return word{}, 0, &Error{i, fmt.Sprintf("unexpected %q: a log_format directive has no block", c)}
			}
		}
		b, w.at = append(b, c), append(w.at, i)
		i++
	}
	w.text = string(b)
	return w, i, nil
}

// Pasted is what a format string holds of the log_format directive it was pasted from
// without its keyword (PastedArguments).
type Pasted struct {
	// Name is the format's name before its strings, "" for none.
	Name string
	// Quote is the quote of its first string: ' or ".
	Quote byte
	// Semicolon tells whether the directive's ';' ends it.
	Semicolon bool
	// Escaped tells whether a double-quoted string has its own quotes escaped (\"),
	// which nginx's reader undoes and a format string keeps as a backslash.
	Escaped bool
}

// pastedName is a format's name as nginx.conf's log_format has it before the strings,
// compiled for the first directive pasted whole.
var pastedName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// PastedArguments reports whether a trimmed format string s is a log_format directive's
// arguments after its keyword, as nginx's configuration reader splits them: the format's
// name and escape= perhaps, then strings all in quotes, perhaps ended by the ';'. nginx
// writes a quote or a ';' of a format literally, so s is only taken for pasted when it has
// no piece outside quotes (an unquoted one would be joined to the next with no space, which
// no format pasted from nginx.conf is written for), and a sign that a format seldom has:
// a string in single quotes (nginx's own formats double-quote their fields, as
// "$http_referer" "$http_user_agent" does, and such a run is a format) or the ';' after
// the closing quote, or a double-quoted string with its own quotes escaped (nginx writes
// the backslash), or, after the name, one holding a space (nginx's formats double-quote
// one field at a time). A format with the name and a double-quoted field
// (upstream "$request") is one nginx can write, and is not taken for pasted either.
func PastedArguments(s string) (Pasted, bool) {
	var p Pasted
	var words []word
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case isSpace(c):
			i++
		case c == ';':
			if len(words) == 0 || strings.TrimSpace(s[i+1:]) != "" {
				return p, false
			}
			p.Semicolon = true
			i = len(s)
		case c == '{' || c == '}' || c == '#':
			// nginx would read a block or a comment: no directive's arguments.
			return p, false
		default:
			w, next, err := directiveWord(s, i)
			if err != nil {
				return p, false
			}
			p.Escaped = p.Escaped || w.quote == '"' && w.escapedQuote
			words = append(words, w)
			i = next
		}
	}
	if len(words) > 0 && words[0].quote == 0 && pastedName().MatchString(words[0].text) {
		p.Name, words = words[0].text, words[1:]
		if len(words) > 0 && words[0].quote == 0 && strings.HasPrefix(words[0].text, "escape=") {
			words = words[1:]
		}
	}
	sign := p.Semicolon || p.Escaped
	for _, w := range words {
		if w.quote == 0 {
			return p, false
		}
		sign = sign || w.quote == '\'' || p.Name != "" && strings.ContainsAny(w.text, " \t")
	}
	if len(words) == 0 {
		return p, false
	}
	p.Quote = words[0].quote
	return p, sign
}
