package reference

import (
	"testing"
	"time"
)

func TestSummaryEdge(t *testing.T) {
	for _, tc := range []struct {
		now    int64
		window time.Duration
		want   int64
	}{
		{1000, time.Minute, 940},              // oldest second 941, in the slot from 940
		{1009, time.Minute, 950},              // oldest 950 starts its slot
		{-5, time.Minute, -70},                // before the epoch, slots stay aligned
		{1000, 5 * time.Minute, 700},          // 701 → 700
		{1000, 301 * time.Second, 660},        // minute slots past 5m: 700 → 660
		{7300, time.Hour, 3660},               // 3701 → 3660
		{7300, time.Hour + time.Second, 3600}, // hour slots past 1h: 3700 → 3600
		{2000000, 301 * time.Hour, 864000},    // day slots past 300h: 916401 → 864000
	} {
		if got := SummaryEdge(tc.now, tc.window); got != tc.want {
			t.Errorf("SummaryEdge(%d, %v) = %d, want %d", tc.now, tc.window, got, tc.want)
		}
	}
}
