package parser

import (
	"bytes"
	"math"
	"strconv"
)

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseNumber reads a value capture as a finite float64, a negative zero ("-0", "-0.0",
// "-1e-400") as 0, so that the value rules' one test for a negative value (v < 0) lets it
// through as the zero it is and no extremum reads "-0". Plain decimals of up to 15
// digits (byte counts, "0.004" seconds: nearly every log value) take a direct path; it
// computes exactly what strconv does for them (an integer mantissa below 2^52 divided by
// an exact power of ten is correctly rounded), and everything else goes to strconv.
func parseNumber(b []byte) (float64, bool) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i = 1
	}
	var mant uint64
	start := i
	for ; i < len(b) && b[i]-'0' <= 9; i++ {
		mant = mant*10 + uint64(b[i]-'0')
	}
	digits, frac := i-start, -1
	if i < len(b) && b[i] == '.' {
		i++
		start = i
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			mant = mant*10 + uint64(b[i]-'0')
		}
		frac = i - start
		digits += frac
	}
	// Anything after the digits, no digits, a point without digits after it or more
	// digits than a float64 holds exactly: strconv decides.
	if i < len(b) || digits == 0 || frac == 0 || digits > 15 {
		return parseNumberSlow(b)
	}
	f := float64(mant)
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg && mant != 0 {
		f = -f
	}
	return f, true
}

// parseUsual reads the two shapes nearly every value has, nginx's times of under ten
// seconds, written "%d.%03d" ("0.123"), and an integer of up to 15 digits (a byte count),
// with none of parseNumber's general steps: a time's four digits at once, an integer's in
// one loop. ok is false for anything else (a sign, "-", a list, another fraction), which
// parseNumber reads. The mantissa and the division are parseNumber's, so the bits are too.
func parseUsual(b []byte) (float64, bool) {
	if len(b) == 5 && b[1] == '.' {
		d0, d1, d2, d3 := b[0]-'0', b[2]-'0', b[3]-'0', b[4]-'0'
		if d0 > 9 || d1 > 9 || d2 > 9 || d3 > 9 {
			return 0, false
		}
		return float64(uint64(d0)*1000+uint64(d1)*100+uint64(d2)*10+uint64(d3)) / 1e3, true
	}
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var mant uint64
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		mant = mant*10 + uint64(d)
	}
	return float64(mant), true
}

func parseNumberSlow(b []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if f == 0 {
		f = 0 // -0 too
	}
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// unixSeconds reads seconds since the epoch with a fraction (nginx's $msec,
// "1709294400.123"), floored to a second.
func unixSeconds(b []byte) (int64, bool) {
	f, ok := parseNumber(b)
	if !ok || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(math.Floor(f)), true
}

// firstOfList returns the first item of an nginx upstream variable that lists one value
// per upstream tried, "0.004, 0.045" (" : " between the upstream groups of an internal
// redirect): the upstream the request went to first.
func firstOfList(b []byte) []byte {
	for i, c := range b {
		if c == ',' || c == ':' {
			return bytes.TrimSpace(b[:i])
		}
	}
	return b
}
