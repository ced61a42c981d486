package parser

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
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

// TestParseUsual holds parseUsual, which apply reads a value with before readValue (the
// path it had), to that path: for every input, with and without a list, the value apply
// reads (usualValue) has readValue's verdict, drop reason and bits. What parseUsual reads
// must also be what parseNumber reads, and no empty value, "-", list of more than one item
// or negative number, which readValue drops. Every string of up to five bytes of digits and
// the bytes around nginx's values, every "d.ddd", integers up to the 15 digits parseUsual
// takes and past them, and the shapes near its own: signs, points, exponents, other bases,
// digits not ASCII, bytes after a value, lists, long runs of digits.
func TestParseUsual(t *testing.T) {
	var inputs []string
	var grow func(prefix string)
	grow = func(prefix string) {
		inputs = append(inputs, prefix)
		if len(prefix) == 5 {
			return
		}
		for _, c := range "09.-, :/e" {
			grow(prefix + string(c))
		}
	}
	grow("")
	for i := range 10000 {
		inputs = append(inputs, fmt.Sprintf("%d.%03d", i/1000, i%1000))
	}
	for _, n := range []uint64{0, 1, 99, 460, 123456, 999999999999999, 1000000000000000, 9007199254740993} {
		inputs = append(inputs, strconv.FormatUint(n, 10), strconv.FormatUint(n, 10)+".000")
	}
	inputs = append(inputs, "99999999999999999999", "18446744073709551617", "0.004, 0.045", "0.004 : 0.045", "12.345", "1.2345", "00.123", "-0.000", "1.0")
	inputs = append(inputs, usualEdges...)
	read := 0
	for _, s := range inputs {
		for _, list := range []bool{false, true} {
			got, gotReason, gotOK := usualValue([]byte(s), list)
			want, wantReason, wantOK := readValue([]byte(s), list)
			if gotOK != wantOK || gotReason != wantReason || math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%q (list %v): read as %v, %v, %v; readValue gives %v, %v, %v", s, list, got, gotReason, gotOK, want, wantReason, wantOK)
			}
		}
		got, ok := parseUsual([]byte(s))
		if !ok {
			continue
		}
		read++
		want, wantOK := parseNumber([]byte(s))
		if !wantOK || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: parseUsual = %v; parseNumber gives %v, %v", s, got, want, wantOK)
		}
		if _, reason, ok := readValue([]byte(s), true); !ok || string(firstOfList([]byte(s))) != s {
			t.Fatalf("%q: parseUsual = %v, where readValue drops it (%v) or reads a list's first item", s, got, reason)
		}
	}
	// Every "d.ddd" and the integers are read without readValue.
	if want := 10000 + 9 + 11; read < want {
		t.Errorf("parseUsual read %d values, want at least %d", read, want)
	}
}

// usualEdges are values near parseUsual's two shapes that it must read as readValue does
// or leave to it.
var usualEdges = []string{
	"0.1234", "1.", ".5", "+1", "-0.5", "-1", "-0", "007", "0007.000", "0.000", "9.999", "10.000",
	"1e3", "1E3", "0.1e3", "0x10", "0b1", "0o7", "1_000", "1.2.3", "1..2", "1.-23", "-.123", "+.123",
	"123456789012345", "999999999999999", "1234567890123456", "9999999999999999", "12345678901234567",
	"99999999999999999", "9007199254740993", "9007199254740992", "18446744073709551615",
	"18446744073709551617", "99999999999999999999", "0.00:", "0.0:0", "0.:00", ":.000", "0.00/", "/.000",
	"0.123 ", " 0.123", "460 ", " 460", "0.123,", "460,", "0.123\n", "460\x00", "0.12\x00",
	"0.004, 0.045", "0.004,0.045", "460, 512", "0.004 : 0.045", "-, 0.045", "0.004, -", "-", "", ",", ":",
	strings.Repeat("9", 400), strings.Repeat("0", 400), "0." + strings.Repeat("1", 400), strings.Repeat("1", 400) + ".5",
	"\u0663", "\uFF11\uFF12\uFF13", "0.\uFF11\uFF12\uFF13", "\u0661.\u0662\u0663\u0664", "\u00bd", "\xff", "1\xff", "0.12\xff",
	"NaN", "Inf", "1e999", "4.9e-324",
}

// usualValue is apply's value read: parseUsual, then readValue for what it does not read.
func usualValue(raw []byte, list bool) (float64, DropReason, bool) {
	if v, ok := parseUsual(raw); ok {
		return v, 0, true
	}
	return readValue(raw, list)
}

// FuzzParseUsual checks apply's value read (parseUsual first) against readValue, the path
// it had: the same verdict, drop reason and bits for any capture, in a list or not.
func FuzzParseUsual(f *testing.F) {
	for _, s := range usualEdges {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, list bool) {
		got, gotReason, gotOK := usualValue([]byte(s), list)
		want, wantReason, wantOK := readValue([]byte(s), list)
		if gotOK != wantOK || gotReason != wantReason || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q (list %v): read as %v, %v, %v; readValue gives %v, %v, %v", s, list, got, gotReason, gotOK, want, wantReason, wantOK)
		}
	})
}
