package store_test

import (
	"math"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestSumsStayFinite: finite values whose sums would leave the floats are refused and
// counted as too large, so that no sum a scrape reads (the _total, a window's sum, its
// mean and rate, over one input or several) becomes ±Inf or NaN. Before the bound,
// 1e308 twice made _total +Inf, and -1e308 after it NaN, for good.
func TestSumsStayFinite(t *testing.T) {
	const big = 1e308
	cases := []struct {
		name   string
		values [][]float64 // per sink, written one after the other at one second
		// wantRefused lines are refused; the rest are counted.
		wantRefused uint64
	}{
		// A part's large values may add up to 2^1019 (5.6e306) in magnitude, so that the
		// sums of up to MaxShards parts stay finite.
		{"up then down", [][]float64{{big, big, -big, -big}}, 4},
		{"a second input after", [][]float64{{big, big, -big, -big}, {-big}}, 5},
		{"up then down, smaller", [][]float64{{2e306, 2e306, -2e306, -2e306}}, 2},
		{"mixed signs in one window", [][]float64{{2e306, -2e306, 2e306}}, 1},
		{"small values are untouched", [][]float64{{1, 2, -3, 1e280, -1e280, 1e280}}, 0},
		{"large values add up", [][]float64{{1e300, 1e300, -1e300, -1e300}}, 0},
		{"one line too large on its own", [][]float64{{math.MaxFloat64}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rule := storetest.ValueRule("request_seconds", storetest.MinFive, "path")
			set := newSet(t, storetest.Config(10, rule), nil)
			lines := 0
			for _, values := range tc.values {
				k := set.NewSink()
				for _, v := range values {
					write(k, line{labels: []string{"/"}, now: start, value: v})
					lines++
				}
			}
			v := read(set, 0, start)
			if got := v.drops.TooLarge; got != tc.wantRefused {
				t.Errorf("refused %d lines, want %d", got, tc.wantRefused)
			}
			s := v.series["/"]
			if math.IsInf(s.total, 0) || math.IsNaN(s.total) {
				t.Errorf("_total = %v", s.total)
			}
			for i, w := range s.windows {
				if math.IsInf(w, 0) || math.IsNaN(w) {
					t.Errorf("window %d = %v", i, w)
				}
			}
			if got := v.matched + v.drops.TooLarge; got != uint64(lines) {
				t.Errorf("matched %d + refused %d, want the %d lines written", v.matched, v.drops.TooLarge, lines)
			}
		})
	}
}
