package scrape

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/windows"
)

// TestWindowSums: a rule's window totals are its samples of a scrape at the same instant
// read over its series per window: `_window`, `_window_per_second` and `_window_events`
// summed, the largest `_window_max` and the smallest `_window_min` (NaN where no series
// has one), for a counting rule and a value rule, while series idle and after they keep
// only their counters.
func TestWindowSums(t *testing.T) {
	requests := storetest.CountRule("http_requests", storetest.MinFive, "status")
	duration := storetest.ValueRule("request_seconds", storetest.TenSec, "method")
	set := mustSet(t, storetest.Config(100, requests, duration), nil)
	feed(set.NewSink(), []line{
		{labels: []string{"200"}, now: 1000},
		{labels: []string{"500"}, now: 1100},
		{labels: []string{"200"}, now: 1290},
		{labels: []string{"200"}, now: 1299},
		{rule: 1, labels: []string{"POST"}, now: 1250, value: 0.25},
		{rule: 1, labels: []string{"GET"}, now: 1296, value: 1.5},
	})
	// How each family's samples are read over series, and the total that holds it.
	families := []struct {
		suffix  string
		combine func(a, b float64) float64
		total   func(windows.Stats) float64
	}{
		{"_window", sum, func(s windows.Stats) float64 { return s.Sum }},
		{"_window_per_second", sum, func(s windows.Stats) float64 { return s.PerSecond }},
		{"_window_events", sum, func(s windows.Stats) float64 { return s.Events }},
		{"_window_max", math.Max, func(s windows.Stats) float64 { return s.Max }},
		{"_window_min", math.Min, func(s windows.Stats) float64 { return s.Min }},
	}
	for _, tc := range []struct {
		now  int64
		want map[string]map[string]float64 // rule, window: _window
		// compared: the totals the scrape has samples to compare with; at 1401 the value
		// rule's series keep only their counters, and export no window.
		compared int
	}{
		{1300, map[string]map[string]float64{"http_requests": {"1m": 2, "5m": 3}, "request_seconds": {"10s": 1.5, "1m": 1.75}}, 2*2 + 5*2},
		{1401, map[string]map[string]float64{"http_requests": {"1m": 0, "5m": 2}, "request_seconds": {"10s": 0, "1m": 0}}, 2 * 2},
	} {
		t.Run(fmt.Sprint("at ", tc.now), func(t *testing.T) {
			now := tc.now
			c := collectorAt(fixed(set), &now)
			// The scrape's samples read over series, by family and window.
			scrape := map[string]map[string]float64{}
			mfs, err := scraped(c).Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				for _, f := range families {
					if !strings.HasSuffix(mf.GetName(), f.suffix) || !strings.HasPrefix(mf.GetName(), "http_requests_w") && !strings.HasPrefix(mf.GetName(), "request_seconds_w") {
						continue
					}
					scrape[mf.GetName()] = map[string]float64{}
					for _, m := range mf.GetMetric() {
						for _, lp := range m.GetLabel() {
							if lp.GetName() != "window" {
								continue
							}
							if v, ok := scrape[mf.GetName()][lp.GetValue()]; ok {
								scrape[mf.GetName()][lp.GetValue()] = f.combine(v, m.GetGauge().GetValue())
							} else {
								scrape[mf.GetName()][lp.GetValue()] = m.GetGauge().GetValue()
							}
						}
					}
				}
			}
			read := 0
			for _, ws := range c.WindowSums() {
				if ws.Series != 2 {
					t.Errorf("%s: %d series, want 2", ws.Rule, ws.Series)
				}
				for i, w := range ws.Windows {
					window := model.Duration(w).String()
					if want, ok := tc.want[ws.Rule][window]; ok && ws.Totals[i].Sum != want {
						t.Errorf("%s %s: _window totals %v, want %v", ws.Rule, window, ws.Totals[i].Sum, want)
					}
					for _, f := range families {
						samples, exported := scrape[ws.Rule+f.suffix]
						if !exported {
							continue
						}
						read++
						got := f.total(ws.Totals[i])
						if v, ok := samples[window]; ok && got != v || !ok && !math.IsNaN(got) {
							t.Errorf("%s%s %s: WindowSums %v, the scrape's samples read over series %v (any: %v)", ws.Rule, f.suffix, window, got, v, ok)
						}
					}
				}
			}
			if read != tc.compared {
				t.Errorf("%d totals compared with a scrape's, want %d", read, tc.compared)
			}
		})
	}
}

// sum is a + b.
func sum(a, b float64) float64 { return a + b }

// BenchmarkWindowSums is what the status page reads of 10,000 series × 5 windows, beside
// a text scrape of the same series in the same run: the page's read costs a fraction of
// a scrape.
func BenchmarkWindowSums(b *testing.B) {
	set, now := scrapeSet(b)
	b.Run("WindowSums", func(b *testing.B) {
		c := collectorAt(fixed(set), &now)
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			if sums := c.WindowSums(); len(sums) != 1 || sums[0].Series != 10000 {
				b.Fatalf("read %+v", sums)
			}
		}
		reportCPU(b, cpu)
	})
	b.Run("WriteText", func(b *testing.B) { benchWriteText(b, set, now) })
}
