package main

import (
	"fmt"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// terminalText writes to w what is written to it, escaped where a terminal would act on
// it rather than show it: what the exporter writes to stderr names files a glob matched,
// whose names anyone who can write in their directory chooses, and holds the errors of
// reading them. An escape sequence there could set the terminal's clipboard (OSC 52),
// hide a link (OSC 8) or clear the screen; a carriage return rewrite the line; a bidi
// override reorder it. Control and formatting characters, line and paragraph separators
// and what else is not graphic are written as JSON escapes them (\u001b, \u202e), so that
// a JSON log line stays JSON with the same values, and invalid bytes as \xff; text,
// newlines and tabs as they are. The logger quotes such characters in its text format and
// leaves only some of them raw in JSON. Each Write is escaped on its own: the writers of
// stderr write whole lines.
type terminalText struct{ w io.Writer }

func (t terminalText) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && shown(p[i:]) {
		_, n := utf8.DecodeRune(p[i:])
		i += n
	}
	if i == len(p) {
		return t.w.Write(p)
	}
	out := append(make([]byte, 0, len(p)+16), p[:i]...)
	for i < len(p) {
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case shown(p[i:]):
			out = append(out, p[i:i+n]...)
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// shown reports whether the rune p starts with reaches a terminal as it is.
func shown(p []byte) bool {
	if c := p[0]; c < utf8.RuneSelf {
		return c == '\n' || c == '\t' || ' ' <= c && c < 0x7f
	}
	r, n := utf8.DecodeRune(p)
	return !(r == utf8.RuneError && n == 1) && unicode.IsGraphic(r)
}
