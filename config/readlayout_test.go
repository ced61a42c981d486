package config

import (
	"testing"
	"time"
)

// TestAnyFraction: only what Go's layouts read as a fraction of fixed digits is rewritten.
func TestAnyFraction(t *testing.T) {
	for layout, want := range map[string]string{
		"2006-01-02T15:04:05.000Z07:00":   "2006-01-02T15:04:05.999Z07:00",
		"2006-01-02 15:04:05,000000":      "2006-01-02 15:04:05,999999",
		"2006-01-02T15:04:05.999Z07:00":   "2006-01-02T15:04:05.999Z07:00",
		"2006.01.02 15:04:05":             "2006.01.02 15:04:05", // .01 is a month
		"02.01.2006 15:04:05.0 -0700":     "02.01.2006 15:04:05.9 -0700",
		"2006-01-02 15:04:05.000 2006.00": "2006-01-02 15:04:05.999 2006.99",
		"15:04:05.":                       "15:04:05.",
	} {
		if got := anyFraction(layout); got != want {
			t.Errorf("anyFraction(%q) = %q, want %q", layout, got, want)
		}
		// What Go reads of a time so written is the same to the second.
		at := time.Date(2024, 3, 1, 12, 34, 56, 789_000_000, time.UTC)
		a, errA := time.Parse(layout, at.Format(layout))
		b, errB := time.Parse(anyFraction(layout), at.Format(layout))
		if (errA == nil) != (errB == nil) || a.Unix() != b.Unix() {
			t.Errorf("%q: %v %v, rewritten %v %v", layout, a, errA, b, errB)
		}
	}
}
