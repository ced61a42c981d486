package parser

import (
	"math"
	"regexp"
	"strconv"
	"testing"
)

// values are captures where filters commonly see, plus the edge cases of each shape.
var values = []string{"", "5", "500", "503", "200", "404", "GET", "get", "POST", "\n", "\n\n", "a\n",
	"-", "0.004", "x5", "\xff", "\xff5", "é", "\uFFFD", "error: x", "an error", "5\n"}

func TestFilterShapes(t *testing.T) {
	tests := []struct {
		expr string
		kind filterKind
	}{
		{`^5`, hasPrefix},
		{`^50`, hasPrefix},
		{`error`, containsLit},
		{`GET$`, hasSuffix},
		{`^GET$`, equals},
		{`^[0-9]`, firstRuneIn},
		{`^[45]`, firstRuneIn},
		{`^[^0-9]`, firstRuneIn},
		{`^[a-zé]`, firstRuneIn},
		{`^[eE]`, viaMatcher}, // parsed as a case-folded literal
		{`.`, anyButNL},
		{`(?s).`, nonEmptyText},
		{`^(?:GET|POST)$`, viaMatcher},
		{`(?i)get`, viaMatcher},
		{`^\x{FFFD}`, viaMatcher},
		{`^$`, viaMatcher},
		{`^5..$`, viaMatcher},
		{`(?m)^5`, viaMatcher},
	}
	for _, tt := range tests {
		re := regexp.MustCompile(tt.expr)
		for _, m := range matchers {
			f := newFilter(re, m.engine)
			t.Run(m.name+"/"+tt.expr, func(t *testing.T) {
				if f.kind != tt.kind {
					t.Errorf("kind %d, want %d", f.kind, tt.kind)
				}
				caps := make([]int, f.ncap)
				for _, v := range values {
					if got, want := f.match([]byte(v), caps), re.MatchString(v); got != want {
						t.Errorf("%q: %v, regexp says %v", v, got, want)
					}
				}
			})
		}
	}
}

func TestParseNumber(t *testing.T) {
	tests := []string{"0", "7", "460", "0.004", "0.022", "-1.5", "-0", "-0.000", "-0e5", "-1e-400", "007", ".5", "1.", "123456789012345",
		"1234567890123456", "0.1234567890123456789", "1e3", "+2", "0x1p-2", "1_000", "", "-", ".", "1.2.3",
		"NaN", "inf", "1e999", "4.9e-324", "99999999999999.9", "0.30000000000000004"}
	for _, s := range tests {
		t.Run(s, func(t *testing.T) {
			got, ok := parseNumber([]byte(s))
			if want, wantOK := strconvNumber(s); ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("parseNumber = %v, %v; strconv gives %v, %v", got, ok, want, wantOK)
			}
		})
	}
}

// strconvNumber is what parseNumber must read s as: strconv's exact bits for a finite
// number, with a negative zero read as 0.
func strconvNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if f == 0 {
		f = 0
	}
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// FuzzWhereFilter checks the specialised filters against regexp on random regexes and
// values.
func FuzzWhereFilter(f *testing.F) {
	for _, e := range []string{`^5`, `^[0-9]`, `.`, `(?s).`, `GET$`, `^GET$`, `err`, `^[^a-z]`, `^(?i)[k]`} {
		for _, v := range []string{"500", "", "\n", "\xff", "GET", "K"} {
			f.Add(e, v)
		}
	}
	f.Fuzz(func(t *testing.T, expr, v string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		want := re.MatchString(v)
		for _, eng := range []engine{viaFastmatch, viaRegexp} {
			fl := newFilter(re, eng)
			if got := fl.match([]byte(v), make([]int, fl.ncap)); got != want {
				t.Fatalf("%q on %q (kind %d, fastmatch %v): %v, regexp says %v", expr, v, fl.kind, eng == viaFastmatch, got, want)
			}
		}
	})
}

// FuzzParseNumber checks the direct decimal path gives strconv's exact bits (0 for -0).
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0.004", "460", "-1.5", "-0.0", "123456789012345", "1e3", "9007199254740993", ".5", "1."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseNumber([]byte(s))
		if want, wantOK := strconvNumber(s); ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: parseNumber = %v, %v; strconv = %v, %v", s, got, ok, want, wantOK)
		}
	})
}
