package config

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// nameReference is the shape isName checks, as a regex: the reference it is tested against.
var nameReference = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// TestIsName checks isName against the regex of a name on the edge cases of its classes
// and on random strings over an alphabet of every class and of bytes just outside them.
func TestIsName(t *testing.T) {
	cases := []string{
		"", "_", "a", "Z", "0", "a0", "_9", "9a", "__name__", "rule_total", "a:b", "a-b", "a b",
		"a\n", "\na", "é", "aé", "a\x00", "\xff", "a\xff", "@", "[", "`", "{", "/", ":", "a.b",
	}
	alphabet := []byte("azAZ09_@[`{/:-. \x00\x7f\x80\xc3\xa9\xff")
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		t.Run(s, func(t *testing.T) {
			if got, want := isName(s), nameReference.MatchString(s); got != want {
				t.Errorf("isName(%q) = %v, the regex says %v", s, got, want)
			}
		})
	}
}

// FuzzIsName checks isName against the regex of a name on fuzzed strings.
func FuzzIsName(f *testing.F) {
	for _, s := range []string{"", "a", "_a9", "9a", "a:b", "aé", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isName(s), nameReference.MatchString(s); got != want {
			t.Errorf("isName(%q) = %v, the regex says %v", s, got, want)
		}
	})
}
