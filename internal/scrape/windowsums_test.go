package scrape

import (
	"fmt"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestWindowSums: a rule's window sums are its `_window` samples of a scrape at the same
// instant summed per window, for a counting rule and a value rule, while series idle and
// after they keep only their counters.
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
	for _, tc := range []struct {
		now  int64
		want map[string]map[string]float64 // rule, window
	}{
		{1300, map[string]map[string]float64{"http_requests": {"1m": 2, "5m": 3}, "request_seconds": {"10s": 1.5, "1m": 1.75}}},
		{1401, map[string]map[string]float64{"http_requests": {"1m": 0, "5m": 2}, "request_seconds": {"10s": 0, "1m": 0}}},
	} {
		t.Run(fmt.Sprint("at ", tc.now), func(t *testing.T) {
			now := tc.now
			c := collectorAt(fixed(set), &now)
			scrape := map[string]map[string]float64{}
			mfs, err := scraped(c).Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				rule := mf.GetName()
				if rule != "http_requests_window" && rule != "request_seconds_window" {
					continue
				}
				rule = rule[:len(rule)-len("_window")]
				scrape[rule] = map[string]float64{}
				for _, m := range mf.GetMetric() {
					for _, lp := range m.GetLabel() {
						if lp.GetName() == "window" {
							scrape[rule][lp.GetValue()] += m.GetGauge().GetValue()
						}
					}
				}
			}
			got := map[string]map[string]float64{}
			for _, ws := range c.WindowSums() {
				got[ws.Rule] = map[string]float64{}
				for i, w := range ws.Windows {
					got[ws.Rule][model.Duration(w).String()] = ws.Sums[i]
				}
				if ws.Series != 2 {
					t.Errorf("%s: %d series, want 2", ws.Rule, ws.Series)
				}
			}
			for rule, want := range tc.want {
				for w, v := range want {
					if got[rule][w] != v || scrape[rule][w] != v {
						t.Errorf("%s %s: WindowSums %v, the scrape's samples sum to %v, want %v", rule, w, got[rule][w], scrape[rule][w], v)
					}
				}
			}
		})
	}
}

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
