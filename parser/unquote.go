package parser

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// appendUnquoted appends the decoded text of a quoted string's inside (s, without its
// quotes) to dst, with JSON's escapes (\" \\ \/ \b \f \n \r \t \uXXXX, surrogate pairs
// joined), plus \' when apostrophe is set (logfmt takes it). Like encoding/json, each
// invalid UTF-8 byte and each lone surrogate becomes U+FFFD. ok is false for an unknown
// escape, a raw '"' or a control character.
func appendUnquoted(dst, s []byte, apostrophe bool) (_ []byte, ok bool) {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return dst, false
			}
			switch e := s[r+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
				r += 2
			case '\'':
				if !apostrophe {
					return dst, false
				}
				dst = append(dst, e)
				r += 2
			case 'b':
				dst, r = append(dst, '\b'), r+2
			case 'f':
				dst, r = append(dst, '\f'), r+2
			case 'n':
				dst, r = append(dst, '\n'), r+2
			case 'r':
				dst, r = append(dst, '\r'), r+2
			case 't':
				dst, r = append(dst, '\t'), r+2
			case 'u':
				rr := hex4(s[r:])
				if rr < 0 {
					return dst, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, hex4(s[r:])); dec != utf8.RuneError {
						dst = utf8.AppendRune(dst, dec)
						r += 6
						break
					}
					rr = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, rr)
			default:
				return dst, false
			}
		case c == '"' || c < ' ':
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst, true
}

// hex4 reads `\uXXXX` at the start of s; -1 when it is not one.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// needsDecoding reports whether a quoted string's inside differs from its text: it holds
// an escape, or bytes that are not valid UTF-8 (which decoding replaces). From its first
// multibyte character on, both are looked for in what is left.
func needsDecoding(s []byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' {
			return true
		}
		if c >= utf8.RuneSelf {
			return bytes.IndexByte(s[i:], '\\') >= 0 || !utf8.Valid(s[i:])
		}
	}
	return false
}
