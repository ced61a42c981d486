package explain

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDisplay: whatever a file name or a line holds, what an explanation shows of it has
// no control, formatting or separator character (stderr's escaping leaves it as it is)
// and reads back to it: as it is when it has none, else Go-quoted; a name Go-quoted also
// when it opens with a quote, so that one shown as it is never reads as one quoted, or
// holds ": " or is "...", so that it never reads as a shorter name and a text after it.
func FuzzDisplay(f *testing.F) {
	for _, s := range []string{"/logs/a.log", "/logs/a\nline 9: x.log", "a\xffb", "\ufeff{}", "GET /\u202egnp.exe", `"/logs/a\nb"`, "a\u2028b", "\u0085", "é\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, escaped := display([]byte(s))
		if name, quoted := displayName(s); quoted != (escaped || strings.HasPrefix(s, `"`) || strings.Contains(s, ": ") || s == "...") || !quoted && name != d || Display(s) != name {
			t.Fatalf("Display(%q) = %q (escaped %v), display %q", s, name, quoted, d)
		} else if back, err := strconv.Unquote(name); quoted && (err != nil || back != s) {
			t.Fatalf("name %q shown as %q, which reads back as %q (%v)", s, name, back, err)
		}
		// Among names parted by ", ", one shown as it is holds none.
		if among := Display(s, ", "); among == s && strings.Contains(s, ", ") {
			t.Fatalf("%q shown among names as it is, though it holds their separator", s)
		} else if back, err := strconv.Unquote(among); among != s && (err != nil || back != s) {
			t.Fatalf("%q shown among names as %q, which reads back as %q (%v)", s, among, back, err)
		}
		for _, r := range d {
			if !unicode.IsGraphic(r) || !escaped && r == utf8.RuneError {
				t.Fatalf("%q shown as %q, which holds %U", s, d, r)
			}
		}
		if !escaped {
			if d != s {
				t.Fatalf("%q shown as %q, not escaped", s, d)
			}
			return
		}
		if back, err := strconv.Unquote(d); err != nil || back != s {
			t.Fatalf("%q shown as %q, which reads back as %q (%v)", s, d, back, err)
		}
		if clean := utf8.ValidString(s) && !hasControl(s); clean {
			t.Fatalf("%q escaped as %q, though it has no control or formatting character", s, d)
		}
	})
}

// hasControl reports whether s holds a character that is not graphic (control,
// formatting, separator), or U+FFFD.
func hasControl(s string) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}
