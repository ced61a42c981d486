package explain

import (
	"strconv"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzDisplay: whatever a file name or a line holds, what an explanation shows of it has
// no control or formatting character and reads back to it: as it is when it has none,
// else Go-quoted.
func FuzzDisplay(f *testing.F) {
	for _, s := range []string{"/logs/a.log", "/logs/a\nline 9: x.log", "a\xffb", "\ufeff{}", "GET /\u202egnp.exe", `"/logs/a\nb"`, "\u0085", "é\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, escaped := display([]byte(s))
		if Display(s) != d {
			t.Fatalf("Display(%q) = %q, display %q", s, Display(s), d)
		}
		for _, r := range d {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || !escaped && r == utf8.RuneError {
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

// hasControl reports whether s holds a control or formatting character, or U+FFFD.
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}
